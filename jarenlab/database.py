"""Database: a store's connections, its one transaction implementation, and its named statements.

Every subsystem reaches the database through the store's :class:`Database` (``store.db``): it runs
**named statements** from the backend's catalogue with named parameters
(``db.one("jobs.by_id", {"id": job_id})``: a missing or unexpected name is JD0003), writes
only inside :meth:`Database.transaction` (savepoints for nesting), and reads a consistent state
with :meth:`Database.snapshot`. Connections are per thread and opened on first use.

A backend whose connections can be lost (PostgreSQL: a server restart, an ended session, a dropped
network; :attr:`~jarenlab.backends.base.Backend.reconnects`) has this thread's connection checked
before each statement outside a transaction and snapshot (:meth:`~jarenlab.backends.base.Backend.lost`,
which sends nothing): a lost one is closed and replaced, so the statement runs on a new connection.
A loss the check cannot see yet (the server is still ending the session, or a network dropped
without a word) shows when a statement is sent. Where nothing can have run, the store tries once
more on a new connection: the ``BEGIN`` of a transaction or a snapshot. A statement outside a
transaction fails with the retryable JD2005 (``condition="connection"``) once (it may have
reached the server: a write is not repeated behind the caller's back), and the next call runs on
a new connection. Inside a transaction or snapshot the connection is never swapped: the
statement fails with that error, and so does everything else in that transaction, which rolls
back; the next transaction gets a new connection.

The SQL lives in the backend (``jarenlab/backends/<name>/sql/<subsystem>.sql``); a statement's
``{fields}`` are filled with identifiers (``table="flights"``, checked and quoted), a number of
placeholders (``kinds=3``) or fragments of the same catalogue (``where=("by_kind", "due")``).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from jarenlab.backends.base import Backend, Fill, Prepared, Row, Watch
from jarenlab.errors import JarenlabError, StoreError, ValidationError, unreachable

#: No parameters (the default of a statement that takes none).
_NONE: Mapping[str, Any] = {}

#: What a driver raises, outside its own error classes, for a value it cannot bind: a string holding
#: a lone surrogate (which has no UTF-8) and an integer beyond the engine's integers.
_UNBINDABLE = (UnicodeEncodeError, OverflowError)


def _translate(backend: Backend, exc: BaseException) -> JarenlabError | None:
    """The coded error for an exception a statement raised: JD2008 for a value no database takes
    (:data:`_UNBINDABLE`), else the backend's translation of its driver's error."""
    if isinstance(exc, UnicodeEncodeError):
        return ValidationError(
            "JD2008", "a string holds a lone surrogate (U+D800 to U+DFFF), which is not text"
        )
    if isinstance(exc, OverflowError):
        return ValidationError("JD2008", "an integer beyond the database's integer range")
    return backend.translate(exc)


#: A change made inside a transaction: (collection, key, document or None when deleted), and from a
#: collection's writes a fourth member, the document's JSON text before the write (None: absent).
Change = tuple[Any, ...]
#: Net changes of one record: collection -> key -> document (None: deleted).
NetChanges = dict[str, dict[Any, "dict[str, Any] | None"]]
#: Per collection, the keys a commit deleted and wrote again (none: the collection is absent).
Moves = dict[str, frozenset[Any]]
#: The old text of a change that did not say what it replaced.
UNKNOWN: Any = object()
#: A commit hook: called with the transaction's changes.
CommitHook = Callable[[list[Change]], None]


def _net(
    changes: Iterable[Change], olds: dict[str, dict[Any, Any]] | None
) -> tuple[NetChanges, dict[str, set[Any]]]:
    """The netting rule, written once: per (collection, key) the last write's document, and the
    keys that **moved** (deleted and written again in the commit); ``olds`` (when given) collects
    each key's old text from its first change (:data:`UNKNOWN` when that change did not say),
    listed in the same order.

    A key written where it was absent goes after every stored row in storage order (insertion
    order; in key order its place is the key), so a moved key is listed where it was last written
    after its delete, and a key new to the store where it was first written: in the order the
    rows now lie. A key that was only changed keeps the place it was first touched at (its order
    among the others does not matter: it did not move). A moved key deleted again has not moved.
    """
    net: NetChanges = {}
    moved: dict[str, set[Any]] = {}
    for change in changes:
        coll, key, doc = change[0], change[1], change[2]
        per = net.get(coll)
        if per is None:
            per = net[coll] = {}
            if olds is not None:
                olds[coll] = {}
        if key in per:
            if doc is None:
                if moved:
                    moved.get(coll, set()).discard(key)
            elif per[key] is None:  # written again after a delete: a new place
                del per[key]
                moved.setdefault(coll, set()).add(key)
                if olds is not None:  # (listed in the same order)
                    olds[coll][key] = olds[coll].pop(key)
        elif olds is not None:
            olds[coll][key] = change[3] if len(change) > 3 else UNKNOWN
        per[key] = doc
    return net, moved


def net_changes(changes: Iterable[Change]) -> tuple[NetChanges, Moves]:
    """One net change per (collection, key), the last write's, listed in the order of
    :func:`_net`, and the keys that moved (deleted and written again). Every commit's delivery
    runs this: the rule's one pass, keeping no old texts.

    >>> net_changes([("t", "a", None), ("t", "b", {"n": 1}), ("t", "a", {"n": 2})])
    ({'t': {'b': {'n': 1}, 'a': {'n': 2}}}, {'t': frozenset({'a'})})
    """
    net, moved = _net(changes, None)
    return net, ({coll: frozenset(keys) for coll, keys in moved.items() if keys} if moved else {})


def net_states(changes: Iterable[Change]) -> dict[str, dict[Any, tuple[Any, Any, bool]]]:
    """Per (collection, key), in the order of :func:`net_changes`: (old text before the first
    write, document after the last write, whether it **moved**: deleted and written again in the
    commit). The change log's netting: the same pass as :func:`net_changes`, keeping the old texts.

    >>> net_states([("t", "a", None, '{"n":0}'), ("t", "b", {"n": 1}, None), ("t", "a", {"n": 2})])
    {'t': {'b': (None, {'n': 1}, False), 'a': ('{"n":0}', {'n': 2}, True)}}
    """
    olds: dict[str, dict[Any, Any]] = {}
    net, moved = _net(changes, olds)
    states: dict[str, dict[Any, tuple[Any, Any, bool]]] = {}
    for coll, per in net.items():
        keys = moved.get(coll)
        flags = map(keys.__contains__, per) if keys else itertools.repeat(False)
        states[coll] = dict(zip(per, zip(olds[coll].values(), per.values(), flags)))
    return states


#: Seconds :meth:`Database.close` waits for statements running on other threads to finish.
CLOSE_WAIT = 10.0


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.conn: Any = None
        self.reader: Any = None
        self.depth = 0
        self.reading = 0
        self.changes: list[Change] = []


class Database:
    """A store's handle on its backend (see the module docstring). The store makes one: ``store.db``.

    Args:
        backend: the engine. queue_timeout: seconds a thread waits for another thread's write
        transaction on a single-writer engine before JD0012.
    """

    def __init__(self, backend: Backend, *, queue_timeout: float = 30.0) -> None:
        self.backend = backend
        self.queue_timeout = queue_timeout
        self._state = _ThreadState()
        self._gate: threading.RLock | None = threading.RLock() if backend.needs_write_gate else None
        self._conns: list[Any] = []
        self._conns_lock = threading.Lock()
        self._closed = False
        self._close_lock = threading.Lock()
        #: Statements running now, on any thread: close() waits for them before it closes the
        #: connections (a SQLite connection closed under a running statement crashes the process).
        self._running = 0
        self._counting = threading.Lock()
        #: Open streams by thread (each also counts as running).
        self._streams: dict[int, int] = {}
        self._before: list[CommitHook] = []
        self._after: list[CommitHook] = []
        self._prepared: dict[Any, Prepared] = {}
        self._ran: set[str] | None = None
        # Bound once: every statement goes through these (the hot path of every read and write).
        self._execute = backend.execute
        self._driver_error = (backend.driver_error, *_UNBINDABLE)
        self._translate = functools.partial(_translate, backend)
        self._lost: Callable[[Any], bool] | None = backend.lost if backend.reconnects else None
        #: How many lost connections were replaced by new ones.
        self.reconnects = 0

    # -- connections --------------------------------------------------------------------------------
    def connection(self) -> Any:
        """This thread's connection (opened on first use). JD2063 once the store is closed.

        For the backend's own helpers and for tests that inspect the file; subsystems run named
        statements instead.
        """
        if self._closed:
            raise StoreError("JD2063", "the store is closed")
        state = self._state
        conn = state.conn
        if conn is None:
            conn = state.conn = self._open(reader=False)
        elif self._lost is not None and not state.depth and not state.reading and self._lost(conn):
            state.conn = None  # a failed reconnect leaves nothing lost behind: the next call tries again
            self._discard(conn)
            conn = state.conn = self._open(reader=False)
        return conn

    def _open(self, *, reader: bool) -> Any:
        conn = self.backend.connect(reader=reader)
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _discard(self, conn: Any) -> None:
        """Close a lost connection and forget it."""
        with self._conns_lock:
            if conn in self._conns:
                self._conns.remove(conn)
            self.reconnects += 1
        self.backend.disconnect(conn)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._closed

    def close(self) -> list[StoreError]:
        """Let the backend tidy up, then release every connection of every thread (once, whichever
        threads call it at the same time). Returns what the tidying could not finish (JD2120: a
        WAL checkpoint another connection kept busy)."""
        with self._close_lock:
            if self._closed:
                return []
            conn = None
            with contextlib.suppress(StoreError):
                conn = self.connection()
            unfinished = self.backend.close(conn)
            own = self._streams.get(threading.get_ident(), 0)
            with self._counting:
                self._closed = True  # no statement starts from here on
            deadline = time.monotonic() + CLOSE_WAIT
            while self._running > own and time.monotonic() < deadline:
                time.sleep(0.001)
            gate = self._gate  # and a write transaction another thread has open ends first
            held = gate is not None and gate.acquire(timeout=CLOSE_WAIT)
            try:
                self.release()
            finally:
                if held and gate is not None:
                    gate.release()
        return [] if unfinished is None else [StoreError("JD2120", unfinished, condition="busy")]

    def release(self) -> None:
        """Close every connection (also used when opening fails half-way)."""
        with self._conns_lock:
            for conn in self._conns:
                self.backend.disconnect(conn)
            self._conns.clear()

    # -- statements ---------------------------------------------------------------------------------
    def sql(self, name: str, **fill: Fill) -> str:
        """The text of a named statement (``"subsystem.statement"``) with its fields filled."""
        return self._prepare(name, fill).text

    def _prepare(self, name: str, fill: dict[str, Fill]) -> Prepared:
        cache_key = (name, *fill.items()) if fill else name
        prepared = self._prepared.get(cache_key)
        if prepared is None:
            subsystem, _, statement = name.partition(".")
            backend = self.backend
            prepared = backend.catalogue(subsystem).prepare(statement, quote=backend.quote, **fill)
            if len(self._prepared) < 4096:
                self._prepared[cache_key] = prepared
        return prepared

    def _fetch(self, sql: str, params: Any, how: int) -> Any:
        """Run one statement on this thread's connection and fetch its answer inside the error
        boundary (SQLite steps lazily: a function can fail on any row). ``how``: 0 the first row,
        1 every row, 2 the changed-row count, 3 (every row, the count)."""
        self._start()
        try:
            cursor = self._execute(self.connection(), sql, params)
            if how == 0:
                return cursor.fetchone()
            if how == 1:
                return cursor.fetchall()
            if how == 2:
                return cursor.rowcount
            return (cursor.fetchall() if cursor.description is not None else []), cursor.rowcount
        except self._driver_error as exc:
            err = self._translate(exc)
            if err is None:
                raise
            raise err from (exc if err.__cause__ is None else err.__cause__)
        finally:
            self._done()

    def _start(self) -> None:
        """Count a statement as running (JD2063 once the store is closing)."""
        with self._counting:
            if self._closed:
                raise StoreError("JD2063", "the store is closed")
            self._running += 1

    def _done(self) -> None:
        with self._counting:
            self._running -= 1

    def _statement(self, name: str, fill: dict[str, Fill]) -> Prepared:
        """The statement a call runs (recorded when :meth:`record_statements` is on)."""
        if self._ran is not None:
            self._record(name, fill)
        return self._prepare(name, fill)

    def _named(self, name: str, params: Mapping[str, Any], fill: dict[str, Fill], how: int) -> Any:
        """Run a named statement with its parameters checked against the names it takes (JD0003
        for a missing or unexpected one, before anything reaches the driver)."""
        prepared = self._statement(name, fill)
        return self._fetch(prepared.text, prepared.bind(name, params), how)

    def one(self, name: str, params: Mapping[str, Any] = _NONE, **fill: Fill) -> Row | None:
        """The first row of a named statement, or None."""
        row: Row | None = self._named(name, params, fill, 0)
        return row

    def all(self, name: str, params: Mapping[str, Any] = _NONE, **fill: Fill) -> list[Row]:
        """Every row of a named statement."""
        rows: list[Row] = self._named(name, params, fill, 1)
        return rows

    def value(self, name: str, params: Mapping[str, Any] = _NONE, **fill: Fill) -> Any:
        """The first column of the first row (None when there is no row)."""
        row = self._named(name, params, fill, 0)
        return None if row is None else row[0]

    def run(self, name: str, params: Mapping[str, Any] = _NONE, **fill: Fill) -> int:
        """Run a named write inside the open transaction; return how many rows it changed."""
        return int(self._named(name, params, fill, 2))

    def many(self, name: str, rows: Sequence[Mapping[str, Any]], **fill: Fill) -> int:
        """Run a named write once per row of parameters (a bulk insert); return the rows changed."""
        prepared = self._statement(name, fill)
        bound = [prepared.bind(name, row) for row in rows]
        try:
            return int(self.backend.executemany(self.connection(), prepared.text, bound).rowcount)
        except self._driver_error as exc:
            err = self._translate(exc)
            if err is None:
                raise
            raise err from (exc if err.__cause__ is None else err.__cause__)

    def write(self, name: str, params: Mapping[str, Any] = _NONE, **fill: Fill) -> tuple[list[Row], int]:
        """One write statement that is a transaction of its own when none is open.

        Returns (rows it returned, rows it changed). Inside an open transaction it joins it;
        outside, it runs alone under the write gate (one statement is atomic by itself).
        """
        if self._state.depth:
            return self._named(name, params, fill, 3)
        with self._gated():
            return self._named(name, params, fill, 3)

    def record_statements(self, ran: set[str] | None) -> None:
        """Add the name of every named statement run from now on to ``ran``, and of the fragments
        joined into it (None: stop). For the test that every statement of every catalogue runs;
        off otherwise."""
        self._ran = ran

    def _record(self, name: str, fill: dict[str, Fill]) -> None:
        assert self._ran is not None
        self._ran.add(name)
        subsystem = name.partition(".")[0]
        for value in fill.values():
            if isinstance(value, tuple):
                self._ran.update(f"{subsystem}.{part}" for part in value)

    def query(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """Run SQL the planner emitted through the backend's dialect (the one caller of raw text)."""
        rows: list[Row] = self._fetch(sql, params, 1)
        return rows

    def stream(self, sql: str, params: Sequence[Any], size: int) -> Iterator[list[Row]]:
        """The rows of a statement the planner emitted, ``size`` at a time, inside the error boundary.

        SQLite steps the statement as the rows are asked for; on PostgreSQL the rows wait in a
        server-side cursor and are fetched a batch at a time (:meth:`Backend.stream`).
        """
        me = threading.get_ident()
        self._start()
        with self._counting:  # a stream this thread leaves open does not hold up its own close()
            self._streams[me] = self._streams.get(me, 0) + 1
        try:
            yield from self.backend.stream(self.connection(), sql, params, size)
        except self._driver_error as exc:
            err = self._translate(exc)
            if err is None:
                raise
            raise err from (exc if err.__cause__ is None else err.__cause__)
        finally:
            with self._counting:
                self._streams[me] -= 1
            self._done()

    def one_built(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row (or None) of a statement the backend built from a model declaration
        (:meth:`~jarenlab.backends.base.Backend.interval_statements`); nothing else runs through here.
        """
        row: Row | None = self._fetch(sql, params, 0)
        return row

    def run_built(self, sql: str) -> None:
        """Run one statement the backend built from a model declaration that returns no rows
        (a migration's :class:`~jarenlab.backends.base.Alteration`), inside the open transaction."""
        self._fetch(sql, (), 2)

    def explain(self, sql: str, params: Sequence[Any]) -> list[Row]:
        """The engine's plan of a statement the planner emitted."""
        return self.backend.explain(self.connection(), sql, params)

    def register_function(self, name: str, arity: int, fn: Callable[..., Any]) -> None:
        """Make a deterministic host function callable from SQL on this thread's connection
        (the planner's UDF hatch registers its functions before each run that calls them)."""
        self.backend.register_function(self.connection(), name, arity, fn)

    def register_aggregate(self, name: str, arity: int, factory: Callable[[], Any]) -> None:
        """Make an aggregate callable from SQL on this thread's connection (the exact float sum)."""
        self.backend.register_aggregate(self.connection(), name, arity, factory)

    def serialize(self, name: str) -> None:
        """Inside a transaction: make appends to ``name`` land in commit order (see the backend)."""
        self.backend.serialize(self.connection(), name)

    def notify(self, name: str) -> None:
        """Inside a transaction: wake other processes' watches of ``name`` once it commits."""
        self.backend.notify(self.connection(), name)

    def watch(self, interval: float, name: str = "live") -> Watch:
        """A :class:`~jarenlab.backends.base.Watch` that wakes when another connection may have
        committed (to ``name``: ``live``, ``events``, ``jobs``)."""
        if self._closed:
            raise StoreError("JD2063", "the store is closed")
        return self.backend.watch(interval, name)

    def translating(self, **fields: Any) -> contextlib.AbstractContextManager[None]:
        """Set ``fields`` (``collection``, ``key``) on a database error raised inside, where unset."""
        return _fields(**fields)

    # -- transactions -------------------------------------------------------------------------------
    @property
    def in_transaction(self) -> bool:
        """True inside :meth:`transaction` on this thread."""
        return self._state.depth > 0

    def on_commit(self, *, before: CommitHook | None = None, after: CommitHook | None = None) -> None:
        """Register hooks called with each top-level transaction's changes: ``before`` inside the
        transaction just before COMMIT (it may write), ``after`` once it committed (a failing
        ``after`` hook warns: the data is committed)."""
        if before is not None:
            self._before.append(before)
        if after is not None:
            self._after.append(after)

    def off_commit(self, hook: CommitHook) -> None:
        """Remove a hook registered with :meth:`on_commit`."""
        for hooks in (self._before, self._after):
            if hook in hooks:
                hooks.remove(hook)

    def record(self, change: Change) -> None:
        """Note a change in the current transaction (commit hooks receive the list)."""
        self._state.changes.append(change)

    @contextlib.contextmanager
    def _gated(self) -> Iterator[None]:
        gate = self._gate
        if gate is None:
            yield
            return
        if not gate.acquire(timeout=self.queue_timeout):
            raise StoreError("JD0012", f"waited {self.queue_timeout}s for another thread's transaction")
        try:
            yield
        finally:
            gate.release()

    @contextlib.contextmanager
    def transaction(self, subject: Any = None) -> Iterator[Any]:
        """The one way to write: a top-level transaction, or a savepoint inside an open one.

        An exception rolls back only its own level and is re-raised. On a single-writer engine a
        top-level transaction holds the write gate, so other threads' writes wait (JD0012 after
        ``queue_timeout``) instead of joining it. ``with db.transaction(x) as y`` gives ``y = x``
        (the store passes itself).
        """
        state = self._state
        backend = self.backend
        conn = self.connection()
        if state.depth:
            name = f"jl_sp{state.depth}"
            mark = len(state.changes)
            backend.savepoint(conn, name)
            state.depth += 1
            try:
                yield subject
            except BaseException:
                backend.rollback_to(conn, name)
                del state.changes[mark:]
                raise
            else:
                backend.release(conn, name)
            finally:
                state.depth -= 1
            return
        changes: list[Change] = []
        gate = self._gate  # inlined, not a nested context manager: this is every write's path
        if gate is not None and not gate.acquire(timeout=self.queue_timeout):
            raise StoreError("JD0012", f"waited {self.queue_timeout}s for another thread's transaction")
        try:
            conn = self._begun(backend.begin, conn, self.connection)
            state.depth, state.changes = 1, changes
            try:
                yield subject
                for hook in self._before:
                    hook(changes)
                backend.commit(conn)
            except BaseException:
                backend.rollback(conn)
                raise
            finally:
                state.depth, state.changes = 0, []
        finally:
            if gate is not None:
                gate.release()
        for after in self._after:
            try:
                after(changes)
            except Exception as exc:  # the data is committed: a failing listener must not say otherwise
                warnings.warn(
                    f"a jarenlab after-commit listener raised {exc!r}", RuntimeWarning, stacklevel=3
                )

    @contextlib.contextmanager
    def snapshot(self, *, own_writes: bool = True) -> Iterator[None]:
        """Read one committed state for the length of the block.

        Inside an open transaction of this thread it reads that transaction (its own writes
        included), unless ``own_writes=False``: then it reads on a second connection of this
        thread that sees only what is committed. A snapshot inside a snapshot reads the outer one.
        """
        state = self._state
        if own_writes:
            if state.depth or state.reading:
                yield
                return
            with contextlib.ExitStack() as stack:
                self._begin_snapshot(stack, reader=False)
                state.reading += 1
                try:
                    yield
                finally:
                    state.reading -= 1
            return
        if self._closed:
            raise StoreError("JD2063", "the store is closed")
        with contextlib.ExitStack() as stack:
            reader = self._begin_snapshot(stack, reader=True)
            previous, state.conn = state.conn, reader
            try:
                yield
            finally:
                state.conn = previous

    def _begun(self, begin: Callable[[Any], Any], conn: Any, connection: Callable[[], Any]) -> Any:
        """``begin(conn)``, and the connection it began on: one lost before it began (its BEGIN
        failed, so nothing ran) is replaced (``connection()``) and begun once more on the new one."""
        try:
            begin(conn)
        except StoreError as err:
            if self._lost is None or not unreachable(err):
                raise
            conn = connection()
            begin(conn)
        return conn

    def _begin_snapshot(self, stack: contextlib.ExitStack, *, reader: bool) -> Any:
        """Open a snapshot on this thread's connection (``reader``: its committed-reads one) in
        ``stack`` (see :meth:`_begun`); returns the connection."""
        connection = self._reader if reader else self.connection
        return self._begun(
            lambda conn: stack.enter_context(self.backend.snapshot(conn)), connection(), connection
        )

    def _reader(self) -> Any:
        """This thread's connection for committed reads (opened on first use, replaced when lost)."""
        state = self._state
        reader = state.reader
        if reader is not None and self._lost is not None and self._lost(reader):
            state.reader = None
            self._discard(reader)
            reader = None
        if reader is None:
            reader = state.reader = self._open(reader=True)
        return reader


@contextlib.contextmanager
def _fields(**fields: Any) -> Iterator[None]:
    try:
        yield
    except StoreError as err:
        for name, value in fields.items():
            if getattr(err, name, None) is None:
                setattr(err, name, value)
        err.args = (err.message,)
        raise
