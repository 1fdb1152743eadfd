"""Store: open and verify a file, connections per thread, transactions through savepoints, close.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"notes": {"schema": {"type": "object",
...     "required": ["id"], "properties": {"id": {"type": "string"}}}, "key": "/id"}}}
>>> with jl.open(model=model) as store:
...     store["notes"].insert({"id": "a"})
...     len(store["notes"])
'a'
1
"""

from __future__ import annotations

import contextlib
import html
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from random import Random
from typing import TYPE_CHECKING, Any

import orjson

import jarenlab.backends as backends
from jarenlab.arguments import is_count, is_flag, is_seconds
from jarenlab.collection import Collection
from jarenlab.database import Change, Database
from jarenlab.errors import ModelError, StoreError
from jarenlab.model import MODEL_VERSION, Model, describe_at, first_difference, load_model, refuse_downgrade
from jarenlab.query.columnar.budget import budget_of
from jarenlab.query.lang.engine import check_operators
from jarenlab.query.planner.diagnose import check_switch
from jarenlab.query.planner.profile import Profile
from jarenlab.query.planner.source import PlannerState
from jarenlab.reprs import table

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.events import Events
    from jarenlab.jobs import Jobs
    from jarenlab.live.hub import ChangeHub
    from jarenlab.migrations import Migration
    from jarenlab.owner import OwnerView
    from jarenlab.query.columnar.path import Columns
    from jarenlab.session import Session

__all__ = ["OPTIONS", "Change", "Store", "Subsystem"]


@dataclass(frozen=True)
class Subsystem:
    """A part of jarenlab that keeps tables in a store and hangs an object off it (jobs, events, ...).

    ``name`` names its statement catalogue (its tables are the catalogue's ``create_*``
    statements, created on open) and the object ``store.subsystem(name)`` returns: ``create(store)``
    makes it, at open when ``eager`` (it registers commit hooks, say), else on first use.
    ``stats(obj)`` adds a section to ``store.stats()``.
    """

    name: str
    create: Callable[[Store], Any]
    eager: bool = False
    stats: Callable[[Any], dict[str, Any]] | None = None


class Store:
    """An open store: a database (a SQLite file, a PostgreSQL schema), its model and its collections.
    Use :func:`jarenlab.open`; ``backend_options`` are those of the target's backend
    (:data:`jarenlab.backends.OPTIONS`: a PostgreSQL store's ``schema`` and ``notify``)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        model: dict[str, Any] | None = None,
        *,
        read_only: bool = False,
        busy_timeout: float = 5.0,
        queue_timeout: float = 30.0,
        operators: dict[str, Callable[..., Any]] | None = None,
        profile: Any = None,
        statement_cache: int = 128,
        clock: Callable[[], float] | None = None,
        random: int | Random | Callable[[], float] | None = None,
        checks: str = "default",
        columns: Any = True,
        subsystems: Sequence[Subsystem] = (),
        **backend_options: Any,
    ) -> None:
        _check_options(path, read_only, busy_timeout, queue_timeout, operators, profile, statement_cache)
        if clock is not None and not callable(clock):
            raise StoreError("JD0006", f"clock is a function returning epoch seconds, not {clock!r}")
        source = _random_source(random)
        # The backend's own options (a PostgreSQL store's schema, notify) are its registry entry's.
        entry = backends.entry_for(path)
        unknown = sorted(set(backend_options) - {o.name for o in backends.OPTIONS})
        if unknown:
            raise StoreError("JD0006", f"unknown option {unknown[0]!r} (options: {', '.join(OPTIONS)})")
        backends.check_options(entry, backend_options)
        checked = load_model(model) if model is not None else None
        #: The safe profile every query runs under unless a call passes its own (:mod:`jarenlab.query.planner.profile`).
        self.profile = profile
        #: The planner's statement cache, UDF hatch switch and counters (:mod:`jarenlab.query.planner.run`).
        self.planner = PlannerState(statement_cache)
        self.planner.checks = check_switch(checks)
        #: Bytes the columnar path may hold (``columns=``: a budget such as ``"2GB"``, True for the
        #: default, False for none: :mod:`jarenlab.query.columnar`); None when it is off.
        self.column_budget: int | None = budget_of(columns)
        self._temp_dir: str | None = None
        if path is not None:
            # What the target names (SQLite: ":memory:" and file: URIs are a fresh store in a
            # temporary folder, or the file they name).
            path, target_read_only = entry.locate(os.fspath(path))
            read_only = read_only or target_read_only
        if path is None:
            if checked is None:
                raise ModelError(
                    "JD0005", "a fresh store (no path, or ':memory:') needs a model", doc_path=""
                )
            if entry.scratch is None:
                raise StoreError("JD0006", f"a {entry.title} store has no fresh store of its own")
            self._temp_dir = tempfile.mkdtemp(prefix="jarenlab-")
            path = entry.scratch(self._temp_dir)
        #: The file, or the server's URL.
        self.path = os.fspath(path)
        self.read_only = read_only
        self.busy_timeout = busy_timeout
        self.queue_timeout = queue_timeout
        self.operators = dict(operators or {})
        #: The database engine behind the store (:mod:`jarenlab.backends`).
        self.backend = backends.open_backend(
            self.path, read_only=read_only, busy_timeout=busy_timeout, **backend_options
        )
        #: Connections, transactions and named statements (:class:`jarenlab.database.Database`).
        self.db = Database(self.backend, queue_timeout=queue_timeout)
        #: Epoch seconds for the queue's leases and retries and the ledger's stamps: ``clock=`` given
        #: to :func:`jarenlab.open` (a :class:`jarenlab.jobs.VirtualClock` in tests), else the database's.
        self.clock: Callable[[], float] = clock if clock is not None else self.backend.clock
        #: Floats in [0, 1) for retry jitter: ``random=`` (a seed, a ``random.Random`` or a function).
        self.random: Callable[[], float] = source
        self._subsystems = {s.name: s for s in subsystems}
        self._objects: dict[str, Any] = {}
        self._objects_lock = threading.RLock()
        self._closers: list[Callable[[], Iterable[Exception] | None]] = []
        self._model_listeners: list[Callable[[Model, Model], None]] = []
        self._close_lock = threading.RLock()  # a closer may close the store again: that call returns
        try:
            conn = self.db.connection()
            self._capabilities = self.backend.probe(conn)
            self.model = self._open_model(conn, checked)
            internal = ["collection", *self._subsystems]
            if read_only:
                if self.backend.internal_upgrades(conn, internal):
                    raise ModelError(
                        "JD0002",
                        f"{self.backend.target} was made by an earlier version of jarenlab and needs its "
                        "internal tables upgraded: open it once without read_only=True (nothing was altered)",
                    )
            else:
                with self.db.transaction():
                    self.db.serialize("ddl")
                    # A store made by an earlier version is upgraded in place (columns added, the data
                    # that version wrote made readable), then every table is made as this version makes it.
                    for statement in self.backend.internal_upgrades(conn, internal):
                        self.backend.execute(self.db.connection(), statement)
                    for statement in self.backend.internal_ddl(internal):
                        self.backend.execute(self.db.connection(), statement)
        except BaseException:
            self.db.release()
            self._remove_temp()
            # A failed open leaves no new file behind (`jl.open("typo.db")`, a model refused).
            self.backend.discard_if_empty()
            raise
        self._collections = {name: Collection(self, spec) for name, spec in self.model.collections.items()}
        for sub in self._subsystems.values():
            if sub.eager:
                self.subsystem(sub.name)

    # -- subsystems ------------------------------------------------------------------------------
    def subsystem(self, name: str) -> Any:
        """The object a registered :class:`Subsystem` hangs off this store (made on first use)."""
        if self.db.closed:
            raise StoreError("JD2063", "the store is closed")
        obj = self._objects.get(name)
        if obj is None:
            with self._objects_lock:
                obj = self._objects.get(name)
                if obj is None:
                    try:
                        sub = self._subsystems[name]
                    except KeyError:
                        raise StoreError(
                            "JD2010", f"no subsystem {name!r} is registered with this store"
                        ) from None
                    obj = self._objects[name] = sub.create(self)
        return obj

    def on_close(self, fn: Callable[[], Iterable[Exception] | None]) -> None:
        """Call ``fn()`` when the store closes (newest first): live queries, workers, pollers.

        ``fn`` may return what it could not finish (coded errors): :meth:`close` reports them."""
        self._closers.append(fn)

    def stats_sections(self) -> dict[str, Callable[[], dict[str, Any]]]:
        """The subsystems' sections of ``store.stats()``: ``{name: () -> dict}``."""
        return {
            name: (lambda sub=sub: sub.stats(self.subsystem(sub.name)))  # type: ignore[misc]
            for name, sub in self._subsystems.items()
            if sub.stats is not None
        }

    # -- the model -------------------------------------------------------------------------------
    def _open_model(self, conn: Any, model: Model | None) -> Model:
        backend = self.backend
        tables = backend.holds_tables(conn)
        if "_jl_meta" not in tables:
            if model is None:
                raise ModelError("JD0005", f"{self.path} is not a jarenlab store; pass a model to create one")
            if tables:
                foreign = tables[:3]
                raise ModelError(
                    "JD0002",
                    f"{self.path} is a {backends.title(backend.name)} database of something else (tables {', '.join(map(repr, foreign))}), "
                    "not a jarenlab store; nothing was altered",
                )
            if self.read_only:
                raise ModelError("JD0002", f"{self.path} holds no store and the store is read-only")
            with self.db.transaction():
                self.db.serialize("ddl")  # two processes creating one store: the second verifies
                if "_jl_meta" not in backend.holds_tables(conn):
                    backend.create(conn, model)
                    self.db.run(
                        "store.put_meta", {"name": "model", "value": orjson.dumps(model.document).decode()}
                    )
                    self.db.run("store.put_meta", {"name": "model_hash", "value": model.hash})
                    return model
        return self._verify(model)

    def _verify(self, given: Model | None) -> Model:
        """Compare the stored model and physical shape with the given model; refuse any difference."""
        stored = self.stored_model()
        if given is not None:
            refuse_downgrade(stored, given)
            diff = first_difference(stored.document, given.document)
            if diff is not None:
                raise ModelError(
                    "JD0002",
                    f"the model differs from the one stored in {self.backend.target} (first difference at "
                    f"{diff}: {describe_at(stored.document, diff)} stored, {describe_at(given.document, diff)} "
                    "given); nothing was altered. To evolve the store, open it without a model and run "
                    "store.migrate(new_model) (add dry_run=True to see the plan first)",
                    doc_path=diff,
                )
        difference = self.backend.verify(self.db.connection(), stored)
        if difference is not None:
            raise ModelError("JD0002", f"the database's shape differs from its model: {difference}")
        return stored

    def stored_model(self) -> Model:
        """The model the database holds now (read on this thread's connection: inside an open
        transaction, what it sees)."""
        text = self.db.value("store.get_meta", {"name": "model"})
        if text is None:
            raise ModelError("JD0002", "the store's metadata has no model")
        document = orjson.loads(text)
        made = document.get("$model") if isinstance(document, dict) else None
        if made != MODEL_VERSION:
            raise ModelError(
                "JD0002",
                f"{self.backend.target} holds a model in format {made!r} and this version of jarenlab "
                f"reads format {MODEL_VERSION!r} (a newer jarenlab made it?); nothing was altered",
                doc_path="/$model",
            )
        return load_model(document)

    def stored_hash(self) -> str | None:
        """The hash of the model the database holds now (cheaper than :meth:`stored_model`)."""
        value = self.db.value("store.get_meta", {"name": "model_hash"})
        return None if value is None else str(value)

    def write_model(self, model: Model) -> None:
        """Inside an open transaction whose statements gave the database ``model``'s shape (a
        migration): record ``model`` as the store's model; JD0003 (the transaction then rolls
        back) when the shape the statements made is not ``model``'s. This process adopts it with
        :meth:`reload` once the transaction commits."""
        if not self.db.in_transaction:
            raise StoreError("JD0003", "write_model runs inside the migration's transaction")
        self.db.run("store.set_meta", {"name": "model", "value": orjson.dumps(model.document).decode()})
        self.db.run("store.set_meta", {"name": "model_hash", "value": model.hash})
        difference = self.backend.record_shape(self.db.connection(), model)
        if difference is not None:
            raise StoreError("JD0003", f"the migrated shape differs from the new model: {difference}")

    def reload(self, model: Model | None = None) -> Model:
        """Adopt the model the database holds now (after a migration, this process's or
        another's): collections the new model keeps are rebound in place (handles already taken
        follow), new ones appear, the statement cache is emptied, and every listener registered
        with :meth:`on_model` is told. Returns the model in use.

        ``model``: the model this process's migration just committed, its shape verified inside
        the migration's transaction (not read back again)."""
        stored = model if model is not None else self._verify(None)
        old = self.model
        if stored.hash == old.hash:
            return old
        collections = {}
        for name, spec in stored.collections.items():
            coll = self._collections.get(name)
            if coll is None:
                coll = Collection(self, spec)
            else:
                coll.bind(spec)
            collections[name] = coll
        self.model, self._collections = stored, collections
        self.planner.cache.clear()
        for listener in list(self._model_listeners):
            listener(old, stored)
        return stored

    def on_model(self, fn: Callable[[Model, Model], None]) -> None:
        """Call ``fn(old, new)`` when the store adopts a new model (:meth:`reload`)."""
        self._model_listeners.append(fn)

    # -- public surface ------------------------------------------------------------------------
    @property
    def capabilities(self) -> dict[str, Any]:
        """What the database offers here and how this store is set up (frozen at open)."""
        caps = dict(self._capabilities)
        caps.update(validated=True, **self.backend.settings(self.db.connection()))
        caps.update(read_only=self.read_only, operators=sorted(self.operators))
        return caps

    @property
    def collections(self) -> dict[str, Collection]:
        """The declared collections by name."""
        return dict(self._collections)

    def collection(self, name: str) -> Collection:
        """The collection called ``name``; JD2004 when the model does not declare it."""
        self.db.connection()
        try:
            return self._collections[name]
        except (KeyError, TypeError):
            raise StoreError(
                "JD2004",
                f"no collection {name!r} (declared: {', '.join(self._collections)})",
                collection=name,
            ) from None

    __getitem__ = collection

    def __contains__(self, name: object) -> bool:
        return name in self._collections

    def transaction(
        self,
        fn: Callable[[Store], Any] | None = None,
        *,
        idempotency_key: str | None = None,
        fingerprint: Any = None,
    ) -> Any:
        """A write transaction: ``with store.transaction(): ...`` or ``store.transaction(fn)``.

        Transactions nest through savepoints: an exception rolls back only its own level and is
        re-raised. A top-level transaction holds the store's write gate, so writes from other
        threads wait for it instead of joining it; other processes wait on SQLite's lock.
        With ``fn``, runs ``fn(store)`` inside a transaction and returns its result; with an
        ``idempotency_key`` too, a replay returns the stored result without running ``fn``
        (see :mod:`jarenlab.idempotency`).
        """
        if idempotency_key is not None or fingerprint is not None:
            return self.subsystem("idempotency")(fn, idempotency_key, fingerprint)
        if fn is None:
            return self._transaction()
        if not callable(fn):
            raise StoreError(
                "JD2010",
                f"transaction(fn) takes a function of the store, not {type(fn).__name__}; "
                "or use `with store.transaction():`",
            )
        with self._transaction():
            return fn(self)

    def _transaction(self) -> contextlib.AbstractContextManager[Store]:
        return self.db.transaction(self)

    def session(self) -> Session:
        """A unit of work (:mod:`jarenlab.session`): ``with store.session() as s:`` reads tracked
        snapshots, stages replacements, additions and removals, and ``s.save()`` writes them all
        in one transaction, checking the versions of collections that declare one."""
        from jarenlab.session import Session

        return Session(self)

    # -- queries over several collections ---------------------------------------------------------
    def execute(
        self,
        document: Any,
        externals: dict[str, Any] | None = None,
        *,
        pushdown: bool = True,
        strict: bool = False,
    ) -> Any:
        """Run a query document whose ``$`` is the object of every collection (``$.flights[*]``).

        Bindings are nested loops (the engine's semantics); equalities between two bindings'
        typed members run as SQL joins (:mod:`jarenlab.query.joins.plan`). Returns the engine's
        result shape (None, the one item, or a list). A document that reads no collection is JD0033.
        """
        from jarenlab.query.joins.run import execute

        return execute(self, document, externals, pushdown=pushdown, strict=strict)

    def explain(
        self,
        document: Any,
        externals: dict[str, Any] | None = None,
        *,
        analyze: bool = False,
        pushdown: bool = True,
        strict: bool = False,
    ) -> Any:
        """How a store-level document runs: join order, join indexes, SQL, residual (``analyze`` runs it)."""
        from jarenlab.query.joins.explain import explain

        return explain(self, document, externals, analyze=analyze, pushdown=pushdown, strict=strict)

    def live(self, document: Any, **externals: Any) -> Any:
        """A live query of a store-level document (:class:`jarenlab.live.joined.JoinedLive`)."""
        from jarenlab.live.joined import JoinedLive

        return JoinedLive(self, document, externals)

    @property
    def changes(self) -> ChangeHub:
        """The change log: ``store.changes(after=cursor)`` is the public change feed (minimal RFC 6902
        patches per document, :mod:`jarenlab.live.feed`); it also delivers live queries (:mod:`jarenlab.live`)."""
        return self.subsystem("live")

    @property
    def columns(self) -> Columns:
        """The columnar path's columns: what is held, ``warm()``, ``drop()``, the budget
        (:mod:`jarenlab.query.columnar`)."""
        return self.subsystem("columns")

    @property
    def jobs(self) -> Jobs:
        """The durable job queue (:mod:`jarenlab.jobs`)."""
        return self.subsystem("jobs")

    @property
    def events(self) -> Events:
        """The event ledger (:mod:`jarenlab.events`)."""
        return self.subsystem("events")

    def migrate(
        self,
        new_model: dict[str, Any],
        *,
        transforms: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] | None = None,
        renames: dict[str, str] | None = None,
        drop: Sequence[str] | None = None,
        dry_run: bool = False,
        progress: bool = True,
    ) -> Migration:
        """Evolve the store to ``new_model`` in one transaction (see :mod:`jarenlab.migrations`).

        ``transforms={collection: fn}`` rewrites every document (``fn(doc) -> doc``, or None to
        delete it); ``renames={"old": "new"}``; ``drop=[names]`` allows removing collections
        that hold documents. ``dry_run=True`` changes nothing and returns the plan: steps,
        documents affected and the violations the new model would refuse. Returns a
        :class:`~jarenlab.migrations.Migration`.
        """
        return self.subsystem("migrations").migrate(
            new_model, transforms=transforms, renames=renames, drop=drop, dry_run=dry_run, progress=progress
        )

    def migrations(self) -> pd.DataFrame:
        """The store's migration history as a DataFrame, oldest first."""
        return self.subsystem("migrations").history()

    def as_owner(self, owner: str) -> OwnerView:
        """A view that reads and writes only ``owner``'s records in owned collections."""
        return self.subsystem("owner")(owner)

    def stats(self) -> Any:
        """Planner, cache, collection and subsystem statistics (:class:`jarenlab.stats.Stats`)."""
        return self.subsystem("stats")()

    @property
    def in_transaction(self) -> bool:
        """True inside a ``transaction()`` block on this thread."""
        return self.db.in_transaction

    def close(self, *, strict: bool = False) -> None:
        """Close live queries and workers, checkpoint the WAL into the file, release every connection.

        A statement another thread is running finishes first (and a write transaction another
        thread holds open on SQLite ends first), up to ten seconds; from the start of the close no
        statement starts (JD2063), so a handler that outlived the grace period gets a coded error
        for its late write, never a connection closed under it.

        What could not be finished is reported once everything is closed: job handlers still
        running after the grace period (JD2062, naming the jobs) and a WAL checkpoint another
        connection kept busy (JD2120). Each is a ``RuntimeWarning``; with ``strict=True`` the first
        is raised instead (the rest as notes). A second call does nothing; any other call
        afterwards raises JD2063. JD0006: ``strict`` is not True or False (nothing is closed).
        """
        if not is_flag(strict):  # (strict="no" would count as true)
            raise StoreError("JD0006", f"strict must be True or False, not {strict!r}")
        problems: list[Exception] = []
        with self._close_lock:
            if self.db.closed:
                return
            for closer in reversed(self._closers):
                problems.extend(closer() or ())
            problems.extend(self.db.close())
            self._remove_temp()
        if problems and strict:
            first = problems[0]
            for other in problems[1:]:
                first.add_note(str(other))
            raise first
        for problem in problems:
            warnings.warn(str(problem), RuntimeWarning, stacklevel=2)

    def _remove_temp(self) -> None:
        if self._temp_dir:
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self.db.closed

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self._collections)} collections"
        return f"<jarenlab.Store {self.backend.target!r} ({state})>"

    def _repr_html_(self) -> str:
        if self.closed:
            return f"<b>jarenlab store</b> <code>{html.escape(self.backend.target)}</code> (closed)"
        rows = "".join(
            f"<tr><td><code>{html.escape(name)}</code></td><td style='text-align:right'>{c.count():,}</td>"
            f"<td>{html.escape(', '.join(ix.name for ix in c.spec.indexes)) or '&mdash;'}</td></tr>"
            for name, c in self._collections.items()
        )
        caps = self._capabilities
        return (
            f"<div><b>jarenlab store</b> <code>{html.escape(self.backend.target)}</code> "
            f"<small>{html.escape(self.backend.describe(caps))}"
            f"{', read-only' if self.read_only else ''}</small>"
            f"{table(['collection', 'documents', 'indexes'], rows)}</div>"
        )


#: The options :func:`jarenlab.open` takes: the store's own, then each registered backend's
#: (:data:`jarenlab.backends.OPTIONS`: a PostgreSQL store's ``schema`` and ``notify``).
OPTIONS = (
    "read_only",
    "busy_timeout",
    "queue_timeout",
    "operators",
    "profile",
    "statement_cache",
    "clock",
    "random",
    "checks",
    "columns",
    *(option.name for option in backends.OPTIONS),
)


def _random_source(random: Any) -> Callable[[], float]:
    """A jitter source from ``random=``: a seed, a ``random.Random``, a function, or None (unseeded)."""
    if random is None:
        return Random().random
    if isinstance(random, int) and not isinstance(random, bool):
        return Random(random).random
    if isinstance(random, Random):
        return random.random
    if callable(random):
        return random
    raise StoreError("JD0006", f"random is a seed, a random.Random or a function, not {random!r}")


def _check_options(
    path: Any,
    read_only: Any,
    busy_timeout: Any,
    queue_timeout: Any,
    operators: Any,
    profile: Any,
    statement_cache: Any,
) -> None:
    """Refuse a bad path or option with JD0006 before anything touches the disk."""

    def refuse(reason: str) -> None:
        raise StoreError("JD0006", reason)

    if path is not None and not isinstance(path, str | os.PathLike):
        refuse(f"the path is a str or os.PathLike, not {type(path).__name__}")
    if not isinstance(read_only, bool):
        refuse(f"read_only is True or False, not {read_only!r}")
    for name, value in (("busy_timeout", busy_timeout), ("queue_timeout", queue_timeout)):
        if not is_seconds(value):
            refuse(f"{name} is a finite number of seconds >= 0, not {value!r}")
    if operators is not None:
        if not isinstance(operators, dict):
            refuse(f"operators is a dict of names to callables, not {type(operators).__name__}")
        check_operators(operators)
    if not is_count(statement_cache):
        refuse(f"statement_cache is an integer >= 0, not {statement_cache!r}")
    if profile is not None and not isinstance(profile, Profile):
        refuse(f"profile is a jarenlab.query.planner.profile.Profile, not {type(profile).__name__}")
