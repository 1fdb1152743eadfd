"""LiveQuery: a query result kept current as commits land, with RFC 6902 patches per commit.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"t": {"schema": {"type": "object", "required": ["id"],
...     "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}}, "key": "/id"}}}
>>> doc = {"$for": {"r": "$[*]"}, "$where": {"$gt": ["$r.n", "$min"]},
...        "$orderby": {"$key": "$r.n", "$dir": "desc"}, "$return": "$r.id"}
>>> with jl.open(model=model) as store:
...     live = store["t"].live(doc, min=1)
...     seen = []
...     stop = live.subscribe(lambda patch, seq: seen.append(patch))
...     _ = store["t"].insert({"id": "a", "n": 5})
...     _ = store["t"].insert({"id": "b", "n": 0})
...     live.mode.strategy, live.rows, seen
('window', ['a'], [[{'op': 'add', 'path': '/rows/0', 'value': 'a'}]])
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from jarenlab.arguments import is_flag
from jarenlab.errors import JarenlabError, LiveError, QueryError, StoreError
from jarenlab.live.analyze import plan_live
from jarenlab.live.capture import Record
from jarenlab.live.seed import Build, how_built, matching_rows, seeded, unkeyed
from jarenlab.live.strategies import Accumulator, Groups, Positions, Sorted, make_maintainer
from jarenlab.live.window import Op, diff_values, same
from jarenlab.query.lang.engine import compile_query, unbound_external
from jarenlab.query.lang.values import check_json
from jarenlab.query.planner.run import ColumnSeed, columnar_seed, external_value, narrowed_rows, run_query
from jarenlab.query.planner.temporal import Alignment, align

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.collection import Collection

Subscriber = Callable[[list[Op], int], Any]
ErrorHandler = Callable[[JarenlabError], Any]


class Hub(Protocol):
    """What a live query reads of the store's change hub (:class:`jarenlab.live.hub.ChangeHub`),
    which holds it and delivers each change to it under its lock."""

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """Held while the hub delivers changes (and while a query re-seeds)."""
        ...

    @property
    def max_maintained(self) -> int:
        """The most entries one query may keep."""
        ...

    def high_watermark(self) -> int:
        """The last committed change's sequence number."""
        ...

    def register(self, query: LiveQuery) -> None:
        """Start delivering changes to ``query``."""
        ...

    def unregister(self, query: LiveQuery) -> None:
        """Stop delivering changes to ``query``."""
        ...


@dataclass(frozen=True)
class LiveMode:
    """How a live query is kept current: ``strategy`` and, for ``rerun``, the ``reason``."""

    strategy: str
    reason: str | None = None

    @property
    def incremental(self) -> bool:
        """False only for ``rerun``."""
        return self.strategy != "rerun"

    def __str__(self) -> str:
        return self.strategy if self.reason is None else f"{self.strategy} ({self.reason})"


def _same_values(old: list[Any], new: list[Any]) -> bool:
    return len(old) == len(new) and all(a is b or same(a, b) for a, b in zip(old, new))


def seed_pairs(
    coll: Collection, document: Any, externals: dict[str, Any], positions: Positions | None
) -> list[tuple[Any, dict[str, Any]]]:
    """The ``(key, doc)`` pairs, in storage order, that a maintainer is seeded with.

    Only the rows the planner's pushed conjuncts keep (:func:`jarenlab.query.planner.run.narrowed_rows`:
    rows it skips cannot match and cannot raise), or every row when nothing narrows. With
    narrowing, text-key ``positions`` first number every stored key, as a seed over all rows
    does, so a row that starts to match later takes its storage place.
    """
    rows = narrowed_rows(coll, document, externals)
    if positions is not None and positions.locate is not None:
        positions.number([])  # (the database's own positions: commit order is not storage order)
    if rows is None:
        keys, texts = coll.texts()
        rows = list(zip(keys, texts))
    elif positions is not None and not positions.by_key and positions.locate is None:
        positions.number(coll.stored_keys())
    loads = orjson.loads
    return [(key, loads(text)) for key, text in rows]


class LiveQuery:
    """A live query over one collection. Make one with ``collection.live(document, **externals)``
    or ``query.live(**externals)``; ``close()`` it (``store.close()`` closes all of them).

    ``rows`` is the current result (a new list per emission; unchanged rows are the same
    objects), ``seq`` the last change record applied, ``mode`` the strategy, ``error`` the
    coded error that closed it (if any), ``updated_at`` the clock time of the last change.
    A window's order is its ``$orderby`` terms, then the collection key ascending (code points).

    ``stale`` is the retryable error (JD2005, ``condition="connection"``) that keeps it from
    following the store (the database server cannot be reached), None while it follows: ``rows``
    are then the last known rows, not the current ones, and ``state`` says ``"stale"``. Once
    the store is reachable again the query catches up from the change log (or re-seeds from a
    fresh run) and is ``"live"`` again.
    """

    def __init__(
        self,
        collection: Collection,
        document: Any,
        externals: dict[str, Any],
        *,
        clock: Callable[[], float] = time.time,
        columns: bool | None = None,
    ) -> None:
        if columns is not None and not is_flag(columns):
            raise StoreError("JD0006", f"columns must be True, False or None, not {columns!r}")
        store = collection.store
        self.collection = collection
        self.clock = clock
        # Dates compared as the schema declares them, as every run of this query compares them.
        spec = getattr(collection, "spec", None)  # a store-level (joined) query has none
        self._aligned = align(document, spec.schema) if spec is not None else Alignment(document)
        self.document = document = self._aligned.document
        compiled = compile_query(document, operators=store.operators)
        for name in sorted(externals):
            if name not in compiled.externals:  # (as set_externals and bind refuse it)
                raise QueryError("JQ0005", f"${name} is not an external of this query")
        self.externals = self._checked(compiled.externals, externals)
        self._names = compiled.externals
        self._plan = plan_live(document, frozenset(store.operators))
        self.mode = LiveMode(self._plan.strategy, self._plan.reason)
        self._hub: Hub = store.changes
        self._maintainer: Sorted | Accumulator | Groups | None = None
        #: Where the seed may come from the columns: None as the planner chooses, True wherever
        #: they can answer, False never (the ``columns=`` switch of a run).
        self.columns = columns
        self._build: Build | None = None
        self._seeded: dict[str, Any] = {}
        self._subscribers: list[tuple[Subscriber, ErrorHandler | None]] = []
        self._on_state: list[Callable[[str], Any]] = []
        self._observed: list[tuple[Any, Callable[..., Any]]] = []
        self._on_close: list[Callable[[], Any]] = []
        self.rows: list[Any] = []
        self.seq = 0
        self.error: JarenlabError | None = None
        self.stale: JarenlabError | None = None
        #: Clock time the query went stale (None while it follows the store).
        self.stale_since: float | None = None
        self.closed = False
        self.updated_at: float | None = None
        #: How many emissions (one per commit that changed the result) this query has made.
        self.updates = 0
        self._hub.register(self)

    def _checked(self, names: frozenset[str], given: dict[str, Any]) -> dict[str, Any]:
        """The externals this query reads, converted as a run converts them (a ``datetime``, a
        numpy or pandas value) and compared with dates as the schema declares them."""
        for name in sorted(names):
            if name not in given:
                raise unbound_external(name)
        values = {k: external_value(k, given[k]) for k in sorted(names)}
        for name, value in values.items():
            why = check_json(value)
            if why:
                raise QueryError("JQ2011", f"external ${name} is not a JSON value: {why}")
        return self._aligned.bind(values)

    # -- maintenance (called by the hub under its lock) ------------------------------------------
    def reseed(self, *, emit: bool = True, migrated: bool = False) -> None:
        """Start over from a fresh snapshot (registration, a log gap, a compact record, new
        externals, a migration). The store's change hub calls it; so may a user who wants a fresh
        start.

        The high watermark and the rows are read in one snapshot (inside an open transaction of
        this thread: that transaction), so the seed is exactly the state after ``seq``. After a
        migration (``migrated``) a query that fails against the new model closes with JD2111,
        the failure as its cause.
        """
        store, coll = self.collection.store, self.collection
        try:
            with store.db.snapshot():
                seq = self._hub.high_watermark()
                fresh = self._fresh_rows()
        except JarenlabError as err:
            if not emit:
                raise
            if migrated:
                closed = LiveError(
                    "JD2111",
                    f"the query fails against the migrated model ({err.code}: {err.reason})",
                    collection=coll.name,
                )
                closed.__cause__ = err
                err = closed
            self._fail(err)
            return
        # Ops only for a seed that tells its subscribers (a registration's first seed has none to
        # tell: an "add" op per row was most of a large seed's time).
        ops = diff_values(self.rows, fresh)[0] if emit else []
        self.rows, self.seq = fresh, max(seq, self.seq)
        if ops:
            self._emit(ops)

    def _fresh_rows(self) -> list[Any]:
        """The rows of a fresh run, inside the reseed's snapshot (a maintained query's maintainer
        is seeded from the same read: the columns' answer and the table it came from, where the
        planner would answer from the columns, else the rows SQL reads)."""
        store, coll = self.collection.store, self.collection
        self._drop_build()
        self._maintainer = None
        t0 = time.perf_counter()
        if self._plan.strategy == "rerun":
            rows, trace, _ = run_query(
                coll, self.document, self.externals, profile=store.profile, columns=self.columns
            )
            used = {k: v for k, v in (trace.columns or {}).items() if k != "used"}
            source = "columns" if trace.mode == "columnar" else trace.mode
            self._seeded = {"source": source, **used, "seconds": time.perf_counter() - t0}
            return rows
        m = make_maintainer(self._plan, self.externals, store.operators, coll.storage_order)
        if m.positions is not None and not m.positions.by_key and not store.backend.needs_write_gate:
            # Writers commit side by side: a row inserted first may commit last.
            m.positions.locate = coll.positions
        got = self._column_seed()
        if isinstance(got, ColumnSeed):
            matching = matching_rows(got)
            self._check_bound(len(matching))
            how = how_built(m, got)
            self._build = Build(lambda cancelled: seeded(m, got, matching, cancelled, how), how)
            a = got.answered
            self._seeded = {
                "source": "columns", "seq": a.seq, "read": a.columns, "warm": a.warm, "rows": a.rows,
                "kept": len(matching), "seconds": time.perf_counter() - t0,
            }  # fmt: skip
            return got.items
        m.seed(seed_pairs(coll, self.document, self.externals, m.positions))
        self._check_bound(m.size)
        self._maintainer = m
        self._seeded = {"source": "sql", "reason": got, "kept": m.size, "seconds": time.perf_counter() - t0}
        return m.rows

    def _column_seed(self) -> ColumnSeed | str:
        """The columns' answer to this query's document with the table it came from, or why not."""
        coll = self.collection
        if self._plan.orderby and coll.storage_order != "key":
            return "order: a window breaks ties by key, the columns by storage order (insertion order here)"
        got = columnar_seed(coll, self.document, self.externals, columns=self.columns)
        if isinstance(got, ColumnSeed):
            why = unkeyed(got.answered.table)
            if why is not None:
                return why
        return got

    def _drop_build(self) -> None:
        """Abandon a maintainer still being built (a re-seed or close replaces it)."""
        build, self._build = self._build, None
        if build is not None:
            build.cancel()

    @property
    def seeded(self) -> dict[str, Any]:
        """Where the last seed came from: ``source`` (``columns``, or ``sql`` and the ``reason`` the
        columns did not answer; a ``rerun`` says the run's mode), with the columns ``seq`` (the
        change-log record the rows reflect and the query follows from), ``read`` (members), ``warm``,
        ``rows`` (rows the answer read), ``kept`` (rows the maintainer keeps), ``seconds`` (until
        the rows were there) and ``maintainer``: ``building`` while it is built from the columns,
        then ``ready`` with ``build_seconds``."""
        out = dict(self._seeded)
        build = self._build
        if build is not None:
            out["maintainer"] = "ready" if build.ready else "building"
            out.update(build.report)
            if build.seconds is not None:
                out["build_seconds"] = build.seconds
        elif self._maintainer is not None:
            out["maintainer"] = "ready"
        return out

    def wait_seeded(self) -> LiveQuery:
        """Wait until a maintainer built from the columns is ready (at once otherwise); returns the
        query. Its first update waits for it anyway; this only says when."""
        if self._build is not None:
            self._build.wait()
        return self

    def receive(self, rec: Record) -> None:
        """Apply one committed change record (the store's change hub calls this, in seq order)."""
        if self.closed or rec.seq <= self.seq:
            return
        name = self.collection.name
        if rec.changes is None:
            if name in rec.collections:
                self.reseed()
            self.seq = max(self.seq, rec.seq)
            return
        changes = rec.changes.get(name)
        # An owner's view (jarenlab.owner) sees another owner's record as absent.
        owns = getattr(self.collection, "owns", None)
        if changes and owns is not None:
            changes = {key: doc if doc is not None and owns(doc) else None for key, doc in changes.items()}
        if not changes:
            self.seq = rec.seq
            return
        if self._maintainer is None and self._build is not None:
            try:
                self._maintainer = self._build.result()
            except JarenlabError as err:
                self._fail(err)
                return
        if self._maintainer is None:
            self.reseed()
            self.seq = max(self.seq, rec.seq)
            return
        try:
            ops = self._maintainer.apply(changes, rec.moved.get(name, frozenset()))
            self._check_bound(self._maintainer.size)
        except JarenlabError as err:
            self._fail(err)
            return
        self.seq = rec.seq
        rows = self._maintainer.rows
        if len(ops) > 1 and _same_values(self.rows, rows):
            ops = []  # rows only traded places with equal ones: nothing a reader could see changed
        self.rows = rows
        if ops:
            self._emit(ops)

    def _check_bound(self, size: int) -> None:
        limit = self._hub.max_maintained
        if size > limit:
            raise LiveError(
                "JD2060",
                f"the live query keeps {size:,} entries, over max_maintained={limit:,}",
                collection=self.collection.name,
            )

    def _emit(self, ops: list[Op]) -> None:
        self.updated_at = self.clock()
        self.updates += 1
        for fn, _ in list(self._subscribers):
            try:
                fn(ops, self.seq)
            except Exception as exc:  # one subscriber must not starve the others or the writer
                warnings.warn(f"a live query subscriber raised {exc!r}", RuntimeWarning, stacklevel=2)

    def fail(self, err: JarenlabError) -> None:
        """Close the query with a coded error: ``error`` holds it, ``on_error`` subscribers get it."""
        self._fail(err)

    @property
    def state(self) -> str:
        """``"live"`` (following the store), ``"stale"`` (it cannot reach the store: ``rows`` are
        the last known ones) or ``"closed"``."""
        if self.closed:
            return "closed"
        return "live" if self.stale is None else "stale"

    def mark_stale(self, err: JarenlabError) -> bool:
        """The store's change hub cannot reach the database (``err``: retryable JD2005): the
        query is ``stale`` until :meth:`mark_live`. The first call of an outage tells the
        ``on_error`` subscribers (the query stays open) and the ``on_state`` ones; returns
        whether this call was that first one."""
        if self.closed or self.stale is not None:
            return False
        self.stale, self.stale_since = err, self.clock()
        for _, on_error in list(self._subscribers):
            if on_error is not None:
                try:
                    on_error(err)
                except Exception as exc:  # a listener must not stop the others or the hub
                    warnings.warn(f"a live query error listener raised {exc!r}", RuntimeWarning, stacklevel=2)
        self._state_changed()
        return True

    def mark_live(self) -> None:
        """The hub caught up after an outage (the rows are current again): ``state`` is ``live``."""
        if self.closed or self.stale is None:
            return
        self.stale = self.stale_since = None
        self._state_changed()

    def _state_changed(self) -> None:
        state = self.state
        for fn in list(self._on_state):
            try:
                fn(state)
            except Exception as exc:  # a listener must not stop the others or the hub
                warnings.warn(f"a live query state listener raised {exc!r}", RuntimeWarning, stacklevel=2)

    def _fail(self, err: JarenlabError) -> None:
        self.error = err
        subscribers = list(self._subscribers)
        self.close()
        for _, on_error in subscribers:
            if on_error is not None:
                on_error(err)
        if not any(on_error for _, on_error in subscribers):
            warnings.warn(f"live query closed: {err}", RuntimeWarning, stacklevel=2)

    # -- public surface --------------------------------------------------------------------------
    def subscribe(
        self,
        fn: Subscriber,
        *,
        on_error: ErrorHandler | None = None,
        on_close: Callable[[], Any] | None = None,
        on_state: Callable[[str], Any] | None = None,
    ) -> Callable[[], None]:
        """Call ``fn(patch, seq)`` once per commit that changes the result; return ``unsubscribe``.

        ``patch`` is a list of RFC 6902 ops on ``/rows/i``. A coded error that closes the query
        (JD2060 bounds, a query error the fresh run would raise too) goes to ``on_error(err)``,
        and so does, once per outage, the retryable JD2005 (``err.retryable``,
        ``condition="connection"``) of a database server that cannot be reached: the query then
        stays open but ``stale`` until the server is back. ``on_state(state)`` is called with
        ``"stale"`` and ``"live"`` as that happens; ``on_close()`` runs once when the query
        closes (``close()``, an error, the store closing). Raises JD2127 on a closed query.
        """
        if self.closed:
            raise LiveError("JD2127", "the live query is closed", collection=self.collection.name)
        if not callable(fn) or (on_error is not None and not callable(on_error)):
            bad = fn if not callable(fn) else on_error
            raise StoreError(
                "JD2010",
                f"subscribe takes callables fn(patch, seq) and on_error(err), not {type(bad).__name__}",
                collection=self.collection.name,
            )
        for what, given in (("on_state(state)", on_state), ("on_close()", on_close)):
            if given is not None and not callable(given):
                raise StoreError(
                    "JD2010",
                    f"subscribe takes a callable {what}, not {type(given).__name__}",
                    collection=self.collection.name,
                )
        entry = (fn, on_error)
        self._subscribers.append(entry)
        if on_close is not None:
            self._on_close.append(on_close)
        if on_state is not None:
            self._on_state.append(on_state)

        def unsubscribe() -> None:
            if entry in self._subscribers:
                self._subscribers.remove(entry)
            if on_close in self._on_close:
                self._on_close.remove(on_close)
            if on_state in self._on_state:
                self._on_state.remove(on_state)

        return unsubscribe

    def follow(
        self,
        fn: Subscriber,
        *,
        on_error: ErrorHandler | None = None,
        on_close: Callable[[], Any] | None = None,
        on_state: Callable[[str], Any] | None = None,
    ) -> tuple[list[Any], int, Callable[[], None]]:
        """:meth:`subscribe`, and the ``(rows, seq)`` the first patch applies to, taken together
        under the store's delivery lock, so no patch falls between them (what a view needs to
        start from). Returns ``(rows, seq, unsubscribe)``.
        """
        with self._hub.lock:
            return (
                self.rows,
                self.seq,
                self.subscribe(fn, on_error=on_error, on_close=on_close, on_state=on_state),
            )

    def set_externals(self, **values: Any) -> None:
        """Change externals and re-seed from a fresh run (emits the difference as one patch)."""
        if self.closed:
            raise LiveError("JD2127", "the live query is closed", collection=self.collection.name)
        for name in values:
            if name not in self._names:
                raise QueryError("JQ0005", f"${name} is not an external of this query")
        merged = self._checked(self._names, {**self.externals, **values})
        with self._hub.lock:
            self.externals = merged
            self.reseed()

    def bind(self, **controls: Any) -> LiveQuery:
        """Let ipywidgets controls drive externals: ``live.bind(o=dropdown)``; returns the query.

        When the query closes, its controls are released and disabled (a control that no longer
        drives anything says so). Raises JD2127 on a closed query, JQ0005 for a name that is not
        an external, JD0006 for a value that is not a control (no ``observe``); nothing is bound
        then.
        """
        if self.closed:
            raise LiveError("JD2127", "the live query is closed", collection=self.collection.name)
        for name, control in controls.items():
            if name not in self._names:
                raise QueryError("JQ0005", f"${name} is not an external of this query")
            if not callable(getattr(control, "observe", None)):
                raise StoreError(
                    "JD0006",
                    f"{name}= takes a control (an ipywidgets widget with a value), not {control!r}: "
                    f"set a value with set_externals({name}=...)",
                )
        for name, control in controls.items():

            def changed(change: dict[str, Any], name: str = name) -> None:
                if not self.closed:
                    self.set_externals(**{name: change["new"]})

            control.observe(changed, names="value")
            self._observed.append((control, changed))
            if getattr(control, "value", None) is not None and control.value != self.externals.get(name):
                self.set_externals(**{name: control.value})
        return self

    def to_pandas(self) -> pd.DataFrame:
        """The current rows as a DataFrame (scalar rows become one ``value`` column)."""
        import pandas as pd

        from jarenlab.frames import records_to_frame

        rows = self.rows
        if all(type(r) is dict for r in rows):
            return records_to_frame(rows)  # no rows: an empty frame, as Query.to_pandas gives
        return pd.DataFrame({"value": rows})

    def widget(self, **options: Any) -> Any:
        """A live table (one anywidget; see :mod:`jarenlab.widgets.live`) that applies each patch
        in the browser, and shows its last rows as static HTML where no kernel runs."""
        from jarenlab.widgets import require_anywidget

        require_anywidget()
        from jarenlab.widgets.live import LiveTable

        known = [p for p in inspect.signature(LiveTable).parameters if p != "live"]
        for name in options:
            if name not in known:
                raise StoreError(
                    "JD0006",
                    f"widget() takes min_interval= and static_interval= (seconds), not {name}=",
                    collection=self.collection.name,
                )
        return LiveTable(self, **options)

    def close(self) -> None:
        """Stop maintaining; idempotent. Bound controls are released and disabled."""
        if self.closed:
            return
        self.closed = True
        for control, fn in self._observed:
            control.unobserve(fn, names="value")
            if hasattr(control, "disabled"):
                control.disabled = True
        self._observed.clear()
        self._hub.unregister(self)
        self._subscribers.clear()
        self._on_state.clear()
        self._drop_build()
        self._maintainer = None
        closers, self._on_close = self._on_close, []
        for fn in closers:
            try:
                fn()
            except Exception as exc:  # a listener must not keep the query (or the store) open
                warnings.warn(f"a live query close listener raised {exc!r}", RuntimeWarning, stacklevel=2)

    def __enter__(self) -> LiveQuery:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self.rows)} rows at seq {self.seq}"
        if self.stale is not None:
            state = f"stale: {state}, the store cannot be reached"
        return f"<jarenlab.LiveQuery {self.collection.name!r} {self.mode} ({state})>"

    def status(self, *, age_s: float | None = None) -> dict[str, Any]:
        """What a status line says: ``state`` (live/stale/closed), ``rows``, ``seq``, ``strategy``,
        ``age_s`` (given by the caller, who knows its clock) and ``error`` (code and name: the
        error that closed it, or while ``stale`` the one that keeps it from the store)."""
        err = self.error or self.stale
        return {
            "state": self.state,
            "rows": len(self.rows),
            "seq": self.seq,
            "strategy": str(self.mode),
            "age_s": age_s,
            "error": f"{err.code} {err.name}" if err else None,
        }

    def _repr_html_(self) -> str:
        from jarenlab.live.render import live_html

        age = None if self.updated_at is None else self.clock() - self.updated_at
        return live_html(self.collection.name, self.rows, self.status(age_s=age), limit=20)
