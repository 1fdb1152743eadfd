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
import functools
import html
import os
import shutil
import sqlite3
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab import _sqlite, ddl
from jarenlab.arguments import is_count, is_seconds
from jarenlab.collection import Collection
from jarenlab.errors import ModelError, StoreError
from jarenlab.internal import INTERNAL_DDL
from jarenlab.model import Model, first_difference, load_model
from jarenlab.reprs import table

if TYPE_CHECKING:
    from jarenlab.events import Events
    from jarenlab.jobs import Jobs
    from jarenlab.owner import OwnerView

#: A change made inside a transaction: (collection, key, document or None when deleted).
Change = tuple[str, Any, "dict[str, Any] | None"]


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.conn: sqlite3.Connection | None = None
        self.depth = 0
        self.changes: list[Change] = []


class Store:
    """An open store: a SQLite file, its model and its collections. Use :func:`jarenlab.open`."""

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
    ) -> None:
        _check_options(path, read_only, busy_timeout, queue_timeout, operators, profile, statement_cache)
        checked = load_model(model) if model is not None else None
        from jarenlab.query.run import PlannerState

        #: The safe profile every query runs under unless a call passes its own (:mod:`jarenlab.query.profile`).
        self.profile = profile
        #: The planner's statement cache, UDF hatch switch and counters (:mod:`jarenlab.query.run`).
        self.planner = PlannerState(statement_cache)
        #: Named sources ``store.stats()`` reads: ``{name: () -> dict}`` (live queries, jobs, ...).
        self.stats_sources: dict[str, Callable[[], dict[str, Any]]] = {}
        self._temp_dir: str | None = None
        if path is None:
            if checked is None:
                raise ModelError("JD0005", "a fresh store needs a model", doc_path="")
            self._temp_dir = tempfile.mkdtemp(prefix="jarenlab-")
            path = os.path.join(self._temp_dir, "store.db")
        self.path = os.fspath(path)
        created = not os.path.exists(self.path)
        self.read_only = read_only
        self.busy_timeout = busy_timeout
        self.queue_timeout = queue_timeout
        self.operators = dict(operators or {})
        self._closed = False
        self._state = _ThreadState()
        self._gate = threading.RLock()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        #: Called with the list of changes just before a top-level COMMIT, inside the transaction.
        self.before_commit: list[Callable[[list[Change]], None]] = []
        #: Called with the list of changes after a top-level COMMIT, outside the write gate.
        self.after_commit: list[Callable[[list[Change]], None]] = []
        #: Called by close(), newest first: live queries, workers, pollers.
        self.closers: list[Callable[[], None]] = []
        try:
            conn = self._conn()
            self._capabilities = _sqlite.probe(conn)
            self.model = self._open_model(conn, checked)
            if not read_only:
                with self.transaction():
                    for statement in INTERNAL_DDL:
                        self._conn().execute(statement)
        except BaseException:
            self._close_connections()
            self._remove_temp()
            if created and checked is None:
                _remove_if_empty(self.path)  # `jl.open("typo.db")` leaves no stray file behind
            raise
        self._collections = {name: Collection(self, spec) for name, spec in self.model.collections.items()}
        from jarenlab.live.hub import ChangeHub

        #: Change capture and live-query delivery (:mod:`jarenlab.live`).
        self.changes = ChangeHub(self)
        self.stats_sources["live"] = self.changes.stats
        self.stats_sources["jobs"] = lambda: self.jobs.counts()

    # -- connections and the model -------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use). Raises JD2063 once the store is closed."""
        if self._closed:
            raise StoreError("JD2063", "the store is closed")
        conn = self._state.conn
        if conn is None:
            conn = _sqlite.connect(self.path, read_only=self.read_only, busy_timeout=self.busy_timeout)
            with self._conns_lock:
                self._conns.append(conn)
            self._state.conn = conn
        return conn

    def _open_model(self, conn: sqlite3.Connection, model: Model | None) -> Model:
        with _sqlite.translating():
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        if "_jl_meta" not in tables:
            if model is None:
                raise ModelError("JD0005", f"{self.path} is not a jarenlab store; pass a model to create one")
            if tables:
                foreign = tables[:3]
                raise ModelError(
                    "JD0002",
                    f"{self.path} is a SQLite database of something else (tables {', '.join(map(repr, foreign))}), "
                    "not a jarenlab store; nothing was altered",
                )
            if self.read_only:
                raise ModelError("JD0002", f"{self.path} holds no store and the store is read-only")
            with self.transaction():
                conn = self._conn()
                if not conn.execute("SELECT 1 FROM sqlite_master WHERE name='_jl_meta'").fetchone():
                    for statement in ddl.create_statements(model):
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO _jl_meta(name, value) VALUES ('model', ?), ('model_hash', ?)",
                        (orjson.dumps(model.document).decode(), model.hash),
                    )
                    return model
        return self._verify(conn, model)

    def _verify(self, conn: sqlite3.Connection, given: Model | None) -> Model:
        """Compare the stored model and physical shape with the given model; refuse any difference."""
        with _sqlite.translating():
            row = conn.execute("SELECT value FROM _jl_meta WHERE name='model'").fetchone()
        if row is None:
            raise ModelError("JD0002", "the store's metadata has no model")
        stored = load_model(orjson.loads(row[0]))
        if given is not None:
            diff = first_difference(stored.document, given.document)
            if diff is not None:
                raise ModelError(
                    "JD0002",
                    "the model differs from the one stored in the file (first difference at doc_path); "
                    "nothing was altered (evolving a model is a migration)",
                    doc_path=diff,
                )
        with _sqlite.translating():
            found = {
                name: sql
                for name, sql in conn.execute(
                    "SELECT name, sql FROM sqlite_master WHERE type IN ('table','index') AND sql IS NOT NULL"
                )
            }
        difference = ddl.first_shape_difference(stored, found)
        if difference is not None:
            raise ModelError("JD0002", f"the database's shape differs from its model: {difference}")
        return stored

    # -- public surface ------------------------------------------------------------------------
    @property
    def capabilities(self) -> dict[str, Any]:
        """What SQLite offers here and how this store is set up (frozen at open)."""
        caps = dict(self._capabilities)
        caps.update(
            validated=True,
            journal_mode="wal"
            if not self.read_only
            else self._conn().execute("PRAGMA journal_mode").fetchone()[0],
            busy_timeout=self.busy_timeout,
            read_only=self.read_only,
            operators=sorted(self.operators),
        )
        return caps

    @property
    def collections(self) -> dict[str, Collection]:
        """The declared collections by name."""
        return dict(self._collections)

    def collection(self, name: str) -> Collection:
        """The collection called ``name``; JD2004 when the model does not declare it."""
        self._conn()
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
            from jarenlab.idempotency import run_idempotent

            return run_idempotent(self, fn, idempotency_key, fingerprint)
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

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Store]:
        state = self._state
        conn = self._conn()
        if state.depth:
            name = f"jl_sp{state.depth}"
            mark = len(state.changes)
            with _sqlite.translating():
                conn.execute(f"SAVEPOINT {name}")
            state.depth += 1
            try:
                yield self
            except BaseException:
                with _sqlite.translating():
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                del state.changes[mark:]
                raise
            else:
                with _sqlite.translating():
                    conn.execute(f"RELEASE {name}")
            finally:
                state.depth -= 1
            return
        if not self._gate.acquire(timeout=self.queue_timeout):
            raise StoreError("JD0012", f"waited {self.queue_timeout}s for another thread's transaction")
        changes: list[Change] = []
        try:
            with _sqlite.translating():
                conn.execute("BEGIN IMMEDIATE")
            state.depth, state.changes = 1, changes
            try:
                yield self
                for hook in self.before_commit:
                    hook(changes)
                with _sqlite.translating():
                    conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                state.depth, state.changes = 0, []
        finally:
            self._gate.release()
        for after in self.after_commit:
            try:
                after(changes)
            except Exception as exc:  # the data is committed: a failing listener must not say otherwise
                warnings.warn(
                    f"a jarenlab after-commit listener raised {exc!r}", RuntimeWarning, stacklevel=3
                )

    @functools.cached_property
    def jobs(self) -> Jobs:
        """The durable job queue (:mod:`jarenlab.jobs`)."""
        from jarenlab.jobs import Jobs

        self._conn()
        return Jobs(self)

    @functools.cached_property
    def events(self) -> Events:
        """The event ledger (:mod:`jarenlab.events`)."""
        from jarenlab.events import Events

        self._conn()
        return Events(self)

    def as_owner(self, owner: str) -> OwnerView:
        """A view that reads and writes only ``owner``'s records in owned collections."""
        from jarenlab.owner import OwnerView

        self._conn()
        return OwnerView(self, owner)

    def stats(self) -> Any:
        """Planner, cache, collection and subsystem statistics (:class:`jarenlab.stats.Stats`)."""
        from jarenlab.stats import collect

        return collect(self)

    def _record(self, collection: str, key: Any, doc: dict[str, Any] | None) -> None:
        """Note a change in the current transaction (writes always run inside one)."""
        self._state.changes.append((collection, key, doc))

    @property
    def in_transaction(self) -> bool:
        """True inside a ``transaction()`` block on this thread."""
        return self._state.depth > 0

    def close(self) -> None:
        """Close live queries and workers, checkpoint the WAL into the file, release every connection.

        A second call does nothing; any other call afterwards raises JD2063.
        """
        if self._closed:
            return
        for closer in reversed(self.closers):
            closer()
        if not self.read_only:
            with contextlib.suppress(sqlite3.Error):
                self._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._closed = True
        self._close_connections()
        self._remove_temp()

    def _close_connections(self) -> None:
        with self._conns_lock:
            for conn in self._conns:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._conns.clear()

    def _remove_temp(self) -> None:
        if self._temp_dir:
            shutil.rmtree(self._temp_dir, ignore_errors=True)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._closed

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._collections)} collections"
        return f"<jarenlab.Store {self.path!r} ({state})>"

    def _repr_html_(self) -> str:
        if self._closed:
            return f"<b>jarenlab store</b> <code>{html.escape(self.path)}</code> (closed)"
        rows = "".join(
            f"<tr><td><code>{html.escape(name)}</code></td><td style='text-align:right'>{c.count():,}</td>"
            f"<td>{html.escape(', '.join(ix.name for ix in c.spec.indexes)) or '&mdash;'}</td></tr>"
            for name, c in self._collections.items()
        )
        caps = self._capabilities
        return (
            f"<div><b>jarenlab store</b> <code>{html.escape(self.path)}</code> "
            f"<small>SQLite {caps['sqlite_version']}, JSONB {'yes' if caps['jsonb'] else 'no'}"
            f"{', read-only' if self.read_only else ''}</small>"
            f"{table(['collection', 'documents', 'indexes'], rows)}</div>"
        )


def _remove_if_empty(path: str) -> None:
    """Remove a database file this open created, if it holds nothing (no table, no index)."""
    try:
        probe = sqlite3.connect(path)
        try:
            empty = probe.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        finally:
            probe.close()
    except sqlite3.Error:
        return
    if empty:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.remove(path + suffix)


_OPTIONS = ("read_only", "busy_timeout", "queue_timeout", "operators", "profile", "statement_cache")


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
    if operators is not None and (
        not isinstance(operators, dict)
        or not all(isinstance(k, str) and callable(v) for k, v in operators.items())
    ):
        refuse("operators is a dict of names to callables")
    if not is_count(statement_cache):
        refuse(f"statement_cache is an integer >= 0, not {statement_cache!r}")
    if profile is not None:
        from jarenlab.query.profile import Profile

        if not isinstance(profile, Profile):
            refuse(f"profile is a jarenlab.query.profile.Profile, not {type(profile).__name__}")


def open(
    path: str | os.PathLike[str] | None = None,
    model: dict[str, Any] | None = None,
    **options: Any,
) -> Store:
    """Open (or create) a store.

    ``open("lab.db", model)`` creates the file or verifies it against the model;
    ``open("lab.db")`` opens an existing store with its stored model; ``open(model=model)``
    makes a fresh file in a temporary folder that is removed on ``close()``.
    Options: ``read_only``, ``busy_timeout`` (seconds), ``queue_timeout``, ``operators``,
    ``profile`` (a :class:`jarenlab.query.profile.Profile`), ``statement_cache`` (entries).
    """
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise StoreError("JD0006", f"unknown option {unknown[0]!r} (options: {', '.join(_OPTIONS)})")
    return Store(path, model, **options)
