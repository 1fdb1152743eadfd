"""The columnar path of one store (``store.columns``): its columns kept current, the budget, answers.

The planner hands a native plan here (:meth:`Columns.answer`) before it runs SQL; the answer comes
from the collection's columns (:mod:`.columns`), brought to the newest committed change first, or
it is a :class:`~jarenlab.query.planner.preds.Reason` and SQL answers. Inside a transaction the SQL
path answers (it reads the transaction's own writes). An owner's view of a collection reads the
collection's columns with the view's owner test ANDed before everything else the plan does (its
``scope``: no other owner's row is counted, grouped, ordered or returned); the planner does not ask
under a profile (its limits count SQL's rows).
"""

from __future__ import annotations

import contextlib
import functools
import html
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarenlab.arguments import is_progress
from jarenlab.errors import StoreError
from jarenlab.query.columnar.budget import DEFAULT_BUDGET, budget_of
from jarenlab.query.columnar.fresh import OwnCommits, catch_up, probe
from jarenlab.query.columnar.reads import member, needs
from jarenlab.query.planner.plan import conjoin
from jarenlab.query.planner.preds import Field, Pred, Reason
from jarenlab.reprs import table as html_table

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.query.columnar.columns import Table
    from jarenlab.query.planner.plan import Plan
    from jarenlab.query.planner.source import Readable

#: With no index serving a query, a collection of this many rows or more is worth its columns' first
#: build (below it, SQL answers a scan in a few milliseconds anyway).
AUTO_ROWS = 50_000
#: A build of this many rows or more (about a second's work) shows a progress bar (:attr:`Columns.progress`).
PROGRESS_ROWS = 500_000


@dataclass
class Answered:
    """A columnar answer: the items (asked for Arrow, one ``pyarrow.Table``), and what
    ``explain(analyze=True)`` shows of it."""

    items: Any
    columns: list[str]
    warm: bool
    rows: int
    seq: int
    phases: dict[str, float]
    #: With ``freeze``: the table as answered (its arrays, which a later commit replaces and never
    #: changes in place), for a reader that continues from exactly ``seq`` (a live query's seed).
    table: Table | None = None


def scoped(plan: Plan, scope: Pred | None) -> Plan:
    """``plan`` with an owner's view's test ANDed before its own filter."""
    return plan if scope is None else replace(plan, where=conjoin([scope, plan.where]))


def _pointers(fields: Sequence[Field]) -> list[str]:
    return ["/" + "/".join(map(str, f.steps)) for f in fields]


@functools.cache
def _compute() -> tuple[Any, ...]:
    """What answers from the columns (numpy and pyarrow are imported here, on the first answer;
    once, since an import statement in a function costs microseconds on every call)."""
    from jarenlab.query.columnar.answer import evaluate
    from jarenlab.query.columnar.arrow import evaluate_arrow, shape
    from jarenlab.query.columnar.columns import Decline, frozen

    return evaluate, evaluate_arrow, shape, Decline, frozen


#: Plans whose reads are kept (:meth:`Columns._reads`); beyond it they are found again.
READS_KEPT = 512


_HELD = ("collection", "member", "type", "rows", "bytes", "hits", "builds", "patches", "seq", "inexact")


class Columns:
    """The columns of one store (``store.columns``): what is held, warming, dropping, the budget.

    ``warm(collection, members)`` builds columns ahead of the questions; ``drop()`` lets them go;
    ``stats()`` (also in ``store.stats()``) and the HTML and DataFrame forms list each column with
    its bytes, hits, builds, patches and the change-log record it reflects.
    """

    def __init__(self, store: Any, budget: int | None = DEFAULT_BUDGET) -> None:
        self.store = store
        self._budget = budget
        self.tables: dict[str, Table] = {}
        self.lock = threading.RLock()
        self.counters = {
            "builds": 0, "patches": 0, "rebuilds": 0, "evictions": 0, "answered": 0, "restores": 0
        }  # fmt: skip
        #: Where saved columns are read from and saved to (:mod:`.persist`): beside a SQLite file
        #: unless :meth:`load` names another folder.
        path = getattr(store.backend, "path", None)
        self.folder: Path | None = (
            Path(path + ".columns") if isinstance(path, str) and os.path.isfile(path) else None
        )
        #: Per collection, what became of its saved columns (read, or rebuilt and why).
        self.restored: dict[str, str] = {}
        self._progress: bool | None = None
        #: The keys this store's own commits changed (:mod:`.fresh`): no log read after them.
        self.own = OwnCommits()
        #: The change hub (the change log's newest record is the freshness check).
        self.hub = store.subsystem("live")
        self.hub.on_own_commit(self._own_commit)
        #: Per plan (by identity, the plan kept beside): the members it reads and their pointers,
        #: or why the columns cannot take it. A statement-cache entry's plan is the same object on
        #: every run, so a repeated question finds its reads here instead of walking the plan.
        self.reads: dict[int, tuple[Plan, list[Field] | Reason, list[str]]] = {}
        store.on_model(lambda old, new: self.drop())

    @property
    def budget(self) -> int | None:
        """Bytes the columns may hold (None: the columnar path is off). Set as ``jl.open``'s
        ``columns=``: a size (``"2GB"``), a number of bytes, True (the default) or False (off);
        anything else is JD0006."""
        return self._budget

    @budget.setter
    def budget(self, value: int | str | bool | None) -> None:
        self._budget = None if value is None else budget_of(value)

    @property
    def progress(self) -> bool | None:
        """A progress bar on builds: None shows one for builds of :data:`PROGRESS_ROWS` rows or more
        (a notebook widget in Jupyter), True on every build, False never; anything else is JD0006."""
        return self._progress

    @progress.setter
    def progress(self, value: bool | None) -> None:
        if not is_progress(value):
            raise StoreError(
                "JD0006",
                f"store.columns.progress is True (a bar on every build), False (never) or None (builds "
                f"of {PROGRESS_ROWS:,} rows or more), not {value!r}",
            )
        self._progress = value

    def _own_commit(self, seq: int, changes: list[Any] | None) -> None:
        if self.tables:  # (nothing held: nothing to keep current)
            self.own.record(seq, changes)

    # -- answering -------------------------------------------------------------------------------
    def answer(
        self,
        coll: Readable,
        plan: Plan,
        externals: dict[str, Any],
        *,
        force: bool,
        indexed: bool,
        scope: Pred | None = None,
        arrow: bool = False,
        freeze: bool = False,
    ) -> Answered | Reason:
        """The plan's items from the columns, or why SQL answers it. ``force``: wherever the columns
        can (the tests' and a user's ``columns=True``); else only where no index serves the query
        and the columns are warm or the collection holds :data:`AUTO_ROWS` rows or more. ``scope``:
        an owner's view's test, ANDed first into the plan's filter. ``arrow``: the results as one
        Arrow table (:mod:`.arrow`; a row query returning members), not as items. ``freeze``: the
        answer holds the table it was computed from (:func:`.columns.frozen`)."""
        plan = scoped(plan, scope)
        with self.lock:
            held = self._decide(coll, plan, force=force, indexed=indexed, keep=scope is None)
            if isinstance(held, Reason):
                return held
            evaluate, evaluate_arrow, shape, Decline, frozen = _compute()
            if arrow and shape(plan) is None:
                return Reason("output", "only a row query returning members has an Arrow form")
            t0 = time.perf_counter()
            table, warm = self.current(coll, held)
            t1 = time.perf_counter()
            try:
                items = (evaluate_arrow if arrow else evaluate)(plan, table, externals, tuple(held))
            except Decline as why:
                return Reason("data", str(why))
            t2 = time.perf_counter()
            self.counters["answered"] += 1
            return Answered(
                items,
                list(self._reads(plan, keep=scope is None)[2]),
                warm,
                len(table),
                table.seq,
                {"columns": t1 - t0, "compute": t2 - t1},
                frozen(table, held) if freeze else None,
            )

    def preview(
        self, coll: Readable, plan: Plan, *, force: bool, indexed: bool, scope: Pred | None = None
    ) -> dict[str, Any]:
        """What :meth:`answer` would do, without reading anything (``explain()`` without ``analyze``):
        ``{"used": True, "read": [members], "warm": bool}`` or ``{"used": False, "reason": ...}``."""
        plan = scoped(plan, scope)
        with self.lock:
            held = self._decide(coll, plan, force=force, indexed=indexed, keep=scope is None)
            if isinstance(held, Reason):
                return {"used": False, "reason": f"{held.construct}: {held.reason}"}
            table = self.tables.get(coll.name)
            warm = table is not None and all(f in table.columns for f in held)
            return {"used": True, "read": _pointers(held), "warm": warm}

    def _reads(self, plan: Plan, *, keep: bool) -> tuple[Plan, list[Field] | Reason, list[str]]:
        """The members ``plan`` reads (each once, as held) and their pointers, or why the columns
        cannot take it; ``keep``: found once per plan (:attr:`reads`; call inside :attr:`lock`)."""
        got = self.reads.get(id(plan))
        if got is not None and got[0] is plan:
            return got
        fields = needs(plan)
        held = fields if isinstance(fields, Reason) else list(dict.fromkeys(member(f) for f in fields))
        got = (plan, held, [] if isinstance(held, Reason) else _pointers(held))
        if keep:
            if len(self.reads) >= READS_KEPT:
                self.reads.clear()
            self.reads[id(plan)] = got
        return got

    def _decide(
        self, coll: Readable, plan: Plan, *, force: bool, indexed: bool, keep: bool = True
    ) -> list[Field] | Reason:
        """The members the columns would read for ``plan``, or why SQL answers it (``keep``: the
        plan's reads are kept for its next run, see :meth:`_reads`)."""
        if self.budget is None:
            return Reason("columns", "the columnar path is off (columns=False)")
        held = self._reads(plan, keep=keep)[1]
        if isinstance(held, Reason):
            return held
        store = coll.store
        if store.db.in_transaction:
            return Reason(
                "transaction", "inside a transaction SQL answers (it reads the transaction's own writes)"
            )
        if not force:
            if indexed:
                return Reason("index", "an index serves the query: SQL answers it")
            table = self.tables.get(coll.name)
            warm = table is not None and all(f in table.columns for f in held)
            if not warm and self.store[coll.name].count() < AUTO_ROWS:  # the whole table is built
                return Reason("columns", f"cold, and the collection holds fewer than {AUTO_ROWS:,} rows")
        return held

    # -- keeping them current --------------------------------------------------------------------
    def current(self, coll: Readable, fields: Sequence[Field]) -> tuple[Table, bool]:
        """The collection's table holding ``fields``, as of the newest committed change (call inside
        :attr:`lock`); True when every column was held already (warm)."""
        db = self.store.db
        hub = self.hub
        table = self.tables.get(coll.name)
        if table is not None and all(f in table.columns for f in fields) and not db.in_transaction:
            try:
                with db.translating(collection=coll.name):
                    seq = table.seq
                    if probe(self.own, self.counters, coll, table, hub):
                        return self._hit(table, fields, evict=table.seq != seq), True
            except BaseException:
                self.tables.pop(coll.name, None)
                raise
        # Read committed data only: inside a transaction (a warm() there), its writes may roll back.
        try:
            with db.snapshot(own_writes=not db.in_transaction), db.translating(collection=coll.name):
                high = hub.high_watermark()
                table = self.tables.get(coll.name)
                if table is None:
                    table = self._restore(coll)
                if (
                    table is not None
                    and table.seq != high
                    and not catch_up(self.counters, coll, table, hub, high)
                ):
                    self.counters["rebuilds"] += 1
                    table = None
                missing = [f for f in fields if table is None or f not in table.columns]
                warm = not missing
                if table is None:
                    table = self._scan(coll, tuple(dict.fromkeys(fields)), high)
                elif missing:
                    self._add(coll, table, missing)
        except BaseException:
            self.tables.pop(coll.name, None)  # never read a table a failed catch-up may have left
            raise
        self.tables[coll.name] = table
        return self._hit(table, fields), warm

    def _hit(self, table: Table, fields: Sequence[Field], evict: bool = True) -> Table:
        """``table`` read for ``fields``; ``evict``: it may have grown, the budget is looked at."""
        now = time.monotonic()
        for f in fields:
            col = table.columns[f]
            col.hits += 1
            col.used = now
        if evict:
            self._evict(keep=table)
        return table

    def _restore(self, coll: Readable) -> Table | None:
        """The collection's saved table, if one is there and its stamp holds (inside the snapshot);
        else None, and :attr:`restored` says why it was not used."""
        from jarenlab.query.columnar import persist

        path = None if self.folder is None else persist.saved_file(self.folder, coll.name)
        if path is None or not path.is_file():
            return None
        try:
            table = persist.load(path, lambda seq: persist.stamp(self.store, coll.name, seq))
        except persist.Untrusted as why:
            self.restored[coll.name] = f"rebuilt: {why}"
            return None
        self._check_budget(coll.name, table.nbytes)
        self.restored[coll.name] = f"read from {path} (as of change {table.seq})"
        self.counters["restores"] += 1
        return table

    def save(self, folder: str | os.PathLike[str] | None = None) -> list[str]:
        """Write every held table to ``folder`` (by default beside a SQLite store's file, where a
        reopened store reads them): one Arrow IPC file per collection, stamped with the change-log
        record it reflects (:mod:`.persist`). Returns the files written. JD2162: no folder for a
        store without a file, or one that cannot be written."""
        target = _folder(folder) if folder is not None else self.folder
        if target is None:
            raise StoreError(
                "JD2162", "this store has no database file to save its columns beside: save(folder)"
            )
        from jarenlab.query.columnar import persist

        written = []
        with self.lock:
            for name, table in list(self.tables.items()):
                try:
                    written.append(
                        str(persist.save(table, target, persist.stamp(self.store, name, table.seq)))
                    )
                except OSError as exc:
                    raise StoreError("JD2162", f"the columns cannot be saved in {target}: {exc}") from None
        return written

    def load(self, folder: str | os.PathLike[str]) -> Columns:
        """Read saved columns from ``folder`` from now on (a PostgreSQL store's, or another folder):
        each collection's table is read the next time a question needs it, if its stamp holds.
        JD2162: ``folder`` is not a path, not a folder, or holds no saved columns of this store's
        collections."""
        from jarenlab.query.columnar import persist

        target = _folder(folder)
        if not target.is_dir():
            raise StoreError("JD2162", f"there is no folder {target} to read saved columns from")
        if not any(persist.saved_file(target, name).is_file() for name in self.store.collections):
            raise StoreError(
                "JD2162",
                f"{target} holds no saved columns of this store's collections (save them there first)",
            )
        with self.lock:
            self.folder = target
            self.tables.clear()
        return self

    def _scan(self, coll: Readable, fields: tuple[Field, ...], seq: int) -> Table:
        """Read ``fields`` of every row, a batch at a time (nothing half-built is ever kept)."""
        from jarenlab.query.columnar.columns import scan

        with self._bar(coll, fields) as bar:
            table = scan(coll, fields, seq, bar)
        self._check_budget(coll.name, table.nbytes)
        self.counters["builds"] += len(fields)
        return table

    @contextlib.contextmanager
    def _bar(self, coll: Readable, fields: Sequence[Field]) -> Iterator[Any]:
        """A progress bar for a build of ``fields`` (a silent stand-in below the threshold)."""
        from jarenlab import frames

        if self.progress is False:
            yield None
            return
        total = self.store[coll.name].count()
        show = self.progress is True or total >= PROGRESS_ROWS
        bar = frames.progress(total, f"columns of {coll.name}: {', '.join(_pointers(fields))}", show)
        try:
            yield bar
        finally:
            bar.close()

    def _add(self, coll: Readable, table: Table, fields: list[Field]) -> None:
        from jarenlab.query.columnar.columns import scan

        with self._bar(coll, fields) as bar:
            more = scan(coll, tuple(fields), table.seq, bar)
        if len(more) != len(table) or any(more.pos != table.pos):  # (one snapshot: they cannot differ)
            raise StoreError(
                "JD2005", "the collection changed while its columns were read", collection=coll.name
            )
        self._check_budget(coll.name, table.nbytes + sum(c.nbytes for c in more.columns.values()))
        table.columns.update(more.columns)
        self.counters["builds"] += len(fields)

    # -- memory --------------------------------------------------------------------------------
    def _check_budget(self, name: str, nbytes: int) -> None:
        assert self.budget is not None
        if nbytes > self.budget:
            raise StoreError(
                "JD2160",
                f"the columns of {name!r} need {nbytes:,} bytes, more than the budget of "
                f"{self.budget:,}: open the store with a larger columns= budget",
                collection=name,
            )

    def _evict(self, keep: Table) -> None:
        """Drop least recently used columns (never ``keep``'s) until the budget holds them all."""
        assert self.budget is not None
        total = sum(t.nbytes for t in self.tables.values())
        if total <= self.budget:
            return
        held = sorted(
            (
                (c.used, t.name, f)
                for t in self.tables.values()
                if t is not keep
                for f, c in t.columns.items()
            ),
            key=lambda x: x[0],
        )
        for _, name, f in held:
            if total <= self.budget:
                break
            t = self.tables[name]
            total -= t.columns.pop(f).nbytes
            self.counters["evictions"] += 1
            if not t.columns:
                total -= t.nbytes
                del self.tables[name]

    # -- what a user calls -----------------------------------------------------------------------
    def warm(self, collection: str, members: Iterable[str] | None = None) -> Columns:
        """Build the columns of ``members`` (names or JSON pointers of schema-typed members; all of
        the collection's top-level typed members when None) now, so the first question is warm.
        JD2010: ``members`` is not a name or a list of names."""
        coll = self.store[collection]
        if members is not None and not isinstance(members, str):
            given = members
            members = list(given) if isinstance(given, Iterable) else [given]
            if not all(isinstance(m, str) for m in members):
                raise StoreError(
                    "JD2010",
                    "warm() takes members as a name or a list of names such as ['price', '/when'], "
                    f"not {given!r}",
                    collection=coll.name,
                )
        from jarenlab.query.columnar.columns import typed_fields

        fields = typed_fields(coll.spec.schema, members, coll.name)
        if self.budget is None:
            raise StoreError("JD2160", "the columnar path is off (the store was opened with columns=False)")
        with self.lock:
            self.current(coll, fields)
        return self

    def drop(self, collection: str | None = None) -> None:
        """Let go of the columns of ``collection`` (all when None); the next question rebuilds them.
        JD2004: the model declares no such collection."""
        if collection is not None:
            self.store.collection(collection)
        with self.lock:
            if collection is None:
                self.tables.clear()
            else:
                self.tables.pop(collection, None)

    def held(self) -> list[dict[str, Any]]:
        """One row per column held: collection, member, type, rows, bytes, hits, builds, patches,
        the change-log record it reflects, and why it cannot answer (if it cannot)."""
        with self.lock:
            return [
                {
                    "collection": t.name,
                    "member": "/" + "/".join(str(s) for s in f.steps),
                    "type": str(c.values.type),
                    "rows": len(t),
                    "bytes": c.nbytes,
                    "hits": c.hits,
                    "builds": c.builds,
                    "patches": c.patches,
                    "seq": t.seq,
                    "inexact": c.inexact,
                }
                for t in self.tables.values()
                for f, c in t.columns.items()
            ]

    def stats(self) -> dict[str, Any]:
        """The budget, bytes held, counters and the columns (``store.stats()["columns"]``)."""
        with self.lock:
            held = sum(t.nbytes for t in self.tables.values())
        return {
            "budget": self.budget,
            "bytes": held,
            **self.counters,
            "held": self.held(),
            "restored": dict(self.restored),
        }

    def to_pandas(self) -> pd.DataFrame:
        """The held columns as a DataFrame (:meth:`held`)."""
        import pandas as pd

        return pd.DataFrame(self.held(), columns=list(_HELD))

    def _repr_html_(self) -> str:
        s = self.stats()
        budget = "off" if s["budget"] is None else f"{s['bytes']:,} of {s['budget']:,} bytes"
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(r[k]))}</td>" for k in _HELD) + "</tr>" for r in s["held"]
        )
        return f"<div><b>columns</b> <i>{html.escape(budget)}</i>" + html_table(list(_HELD), rows) + "</div>"

    def __repr__(self) -> str:
        s = self.stats()
        lines = [f"columns: {s['bytes']:,} of {s['budget']} bytes"]
        lines += [
            f"  {r['collection']}{r['member']}: {r['type']}, {r['rows']} rows, {r['bytes']:,} bytes"
            for r in s["held"]
        ]
        return "\n".join(lines)


def _folder(folder: Any) -> Path:
    """``folder`` as a path; JD2162 when it is not a ``str`` or ``os.PathLike``."""
    if not isinstance(folder, (str, os.PathLike)):
        raise StoreError(
            "JD2162", f"a folder is a str or os.PathLike path, not {type(folder).__name__} {folder!r}"
        )
    return Path(folder)
