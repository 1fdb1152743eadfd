"""SQLite: connections, pragmas, WAL, transactions, the capability probe, and the error boundary.

This is the one module in jarenlab that talks to ``sqlite3`` (with its siblings in this folder).
A store is one file in WAL mode; each thread gets its own connection in autocommit mode and
transactions are explicit (``BEGIN IMMEDIATE`` takes the write lock at once, so a write
transaction never fails half-way on a lock upgrade). SQLite allows one writer at a time, so the
store queues its own threads behind a gate (:attr:`SQLiteBackend.needs_write_gate`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jarenlab.backends.base import (
    Alteration,
    Catalogue,
    ErrorBoundary,
    IntervalStatements,
    Row,
    StorageOrder,
    load_catalogue,
    placeholders,
    quote,
    refuse_clashes,
    upgrades,
)
from jarenlab.backends.sqlite import ddl, intervals, paths
from jarenlab.backends.sqlite.dialect import SQLiteDialect
from jarenlab.errors import JarenlabError, StoreError
from jarenlab.model import Model

if TYPE_CHECKING:
    from jarenlab.model import CollectionSpec
    from jarenlab.model.intervals import IntervalSpec

_BUSY = ("database is locked", "database table is locked", "database is busy")


#: ``marks(n)``: n placeholders in this driver's style.
marks = functools.partial(placeholders, "?")
#: ``catalogue(subsystem)``: the named SQLite statements of one subsystem (``sql/<subsystem>.sql`` here).
catalogue = functools.partial(load_catalogue, "jarenlab.backends.sqlite")


def translate(exc: BaseException, **fields: Any) -> JarenlabError | None:
    """Turn a ``sqlite3`` error into a coded :class:`StoreError` (the driver error becomes the cause).

    ``condition`` names what SQLite reported, so callers branch on it, never on the text.
    """
    if not isinstance(exc, sqlite3.Error):
        return None
    text = str(exc)
    if isinstance(exc, sqlite3.IntegrityError) and "UNIQUE constraint failed" in text:
        err = StoreError("JD2001", f"duplicate key ({text})", condition="duplicate", **fields)
    elif any(b in text for b in _BUSY):
        err = StoreError("JD2005", text, retryable=True, condition="busy", **fields)
    elif "readonly" in text or "read-only" in text:
        err = StoreError("JD2005", f"the store is read-only ({text})", condition="read_only", **fields)
    elif "integer overflow" in text:
        err = StoreError("JD2005", text, condition="overflow", **fields)
    elif "user-defined function raised exception" in text or "user-defined aggregate's" in text:
        err = StoreError("JD2005", text, condition="function_failed", **fields)
    else:
        err = StoreError("JD2005", text, condition="other", **fields)
    err.__cause__ = exc
    return err


#: The one error boundary: ``with translating(collection=...):``.
translating = ErrorBoundary(sqlite3.Error, translate)
_translated = translating.translated


def _file_identity(path: str) -> tuple[int, int] | None:
    """The device and inode of the file at ``path`` (None when there is none)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


#: The pause between two reads of a watch's commit counter right after it moved: more commits
#: often follow (a burst of enqueues), and a read of ``PRAGMA data_version`` costs about 5 us (a
#: counter in the WAL's shared memory, no I/O). While nothing changes the pause doubles up to the
#: watch's ``interval``.
_FIRST_PAUSE = 0.001
#: The longest pause of the ``jobs`` watch, whatever the queue's poll: an idle worker in another
#: process starts a job within 20 ms of its enqueue's commit (about 50 reads a second while idle;
#: docs/benchmarks.md has the latency and the idle cost).
_JOBS_PAUSE = 0.02


class _DataVersion:
    """Wakes when another connection committed: reads ``PRAGMA data_version`` on a connection of its
    own, adaptively (:data:`_FIRST_PAUSE` after a change, doubling to ``interval``)."""

    def __init__(self, backend: SQLiteBackend, interval: float) -> None:
        self._backend = backend
        self._longest = max(interval, 0.0)
        self._pause = min(_FIRST_PAUSE, self._longest)
        self._conn = backend.connect(reader=True)
        self._version: int | None = None  # the first wait says "look": see Watch.wait

    def _read(self) -> int:
        with translating():
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            self._backend.check_file()
            now = self._read()
            if now != self._version:
                self._version = now
                self._pause = min(_FIRST_PAUSE, self._longest)  # more may follow soon
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(self._pause, left))
            self._pause = min(self._pause * 2, self._longest)

    def close(self) -> None:
        self._backend.disconnect(self._conn)


class SQLiteBackend:
    """A store in one SQLite file (see the module docstring).

    Args:
        path: the database file. read_only: open it read-only. busy_timeout: seconds a
        statement waits for another process's lock before failing with retryable JD2005.
    """

    name = "sqlite"
    needs_write_gate = True
    statement_atomic = True
    merges_members = True
    reconnects = False
    driver_error = sqlite3.Error

    def __init__(self, path: str, *, read_only: bool = False, busy_timeout: float = 5.0) -> None:
        self.target = path
        self.path = path
        self._existed = os.path.exists(path)
        self.read_only = read_only
        #: Whether a read-only store is read as immutable (its location cannot be written: :meth:`_open`).
        self.immutable = False
        self.busy_timeout = busy_timeout
        self._dialect = SQLiteDialect()
        self._lock = threading.Lock()
        #: The file the store opened (device and inode): :meth:`check_file`.
        self._file: tuple[int, int] | None = None

    @property
    def dialect(self) -> SQLiteDialect:
        return self._dialect

    # -- statements ---------------------------------------------------------------------------------
    def catalogue(self, subsystem: str) -> Catalogue:
        return catalogue(subsystem)

    def quote(self, name: str) -> str:
        return quote(name)

    def marks(self, count: int) -> str:
        return marks(count)

    def execute(self, conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return conn.execute(sql, params)

    def executemany(self, conn: sqlite3.Connection, sql: str, rows: Any) -> sqlite3.Cursor:
        return conn.executemany(sql, rows)

    def stream(
        self, conn: sqlite3.Connection, sql: str, params: Sequence[Any], size: int
    ) -> Iterator[list[Row]]:
        cursor = conn.execute(sql, params)  # (SQLite steps it as the rows are fetched)
        try:
            while rows := cursor.fetchmany(size):
                yield rows
        finally:
            cursor.close()

    def translating(self, **fields: Any) -> contextlib.AbstractContextManager[None]:
        return translating(**fields)

    def translate(self, exc: BaseException, **fields: Any) -> JarenlabError | None:
        return translate(exc, **fields)

    # -- connections and transactions ---------------------------------------------------------------
    def connect(self, *, reader: bool = False) -> sqlite3.Connection:
        """One connection with the store's pragmas: WAL, busy timeout, foreign keys on. A connection
        whose set-up fails is closed at once (never left to the garbage collector)."""
        conn: sqlite3.Connection | None = None
        self.check_file()
        try:
            with translating():
                conn = self._open()
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                if not self.read_only:
                    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal" and self._foreign(
                        conn
                    ):
                        # Another program's database: the open refuses it (Store), so nothing,
                        # not even its journal mode, is changed.
                        return conn
                    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    if mode.lower() != "wal":
                        raise StoreError("JD2005", f"could not switch the journal to WAL (got {mode!r})")
                    conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
                if conn.execute("PRAGMA foreign_keys").fetchone()[0] != 1:
                    raise StoreError("JD2005", "foreign keys did not turn on")
            if self._file is None:
                self._file = _file_identity(self.path)
            return conn
        except StoreError as err:
            if conn is not None:
                conn.close()
            self.check_file()  # the file went away while it was opened: say so, retryably
            self._refuse_unopenable(err)
            if not self.read_only and err.condition in ("other", "read_only") and not self._writable():
                then = (
                    "open it with read_only=True to read it"
                    if os.path.exists(self.path)
                    else "it cannot be made"
                )
                raise StoreError(
                    "JD2005",
                    f"{self.path} is in a read-only location (nothing can be written there): {then}",
                    condition="read_only",
                ) from err.__cause__
            raise
        except BaseException:
            if conn is not None:
                conn.close()
            raise

    @staticmethod
    def _foreign(conn: sqlite3.Connection) -> bool:
        """Whether the file holds tables and none of them is a jarenlab store's."""
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return bool(names) and "_jl_meta" not in names

    def _refuse_unopenable(self, err: StoreError) -> None:
        """Say plainly why a file cannot be opened at all (the driver's words stay the cause)."""
        cause = err.__cause__
        if not isinstance(cause, sqlite3.DatabaseError):
            return
        text = str(cause)
        if "file is not a database" in text:
            raise StoreError(
                "JD2005",
                f"{self.path} is not a SQLite database (or is encrypted); nothing was altered",
                condition="other",
            ) from cause
        if self.read_only and "unable to open database file" in text and not os.path.exists(self.path):
            raise StoreError(
                "JD2005",
                f"{self.path} does not exist: read_only=True opens an existing store and makes none",
                condition="read_only",
            ) from cause

    def _open(self) -> sqlite3.Connection:
        """A connection to the file: read-only ones by a ``mode=ro`` URI. A WAL store in a location
        nothing can be written to (a read-only mount, a folder without write permission) cannot
        make the shared-memory file a ``mode=ro`` reader needs: it is then read as ``immutable``
        (nobody can change the file there; the first connection decides, the others follow)."""
        options = dict(isolation_level=None, check_same_thread=False)
        if not self.read_only and not self._writable():
            # SQLite would quietly open a read-only file read-only: say so now, not at the first write.
            raise StoreError("JD2005", f"{self.path} cannot be written", condition="read_only")
        if not self.read_only and self._file is None:  # the store's first connection may make the file
            return sqlite3.connect(self.path, **options)  # type: ignore[arg-type]
        uri = "file:" + urllib.parse.quote(os.path.abspath(self.path))
        if not self.read_only:  # later ones never make a file that went away
            return sqlite3.connect(uri + "?mode=rw", uri=True, **options)  # type: ignore[arg-type]
        uri += "?mode=ro"
        if self.immutable:
            return sqlite3.connect(uri + "&immutable=1", uri=True, **options)  # type: ignore[arg-type]
        conn = sqlite3.connect(uri, uri=True, **options)  # type: ignore[arg-type]
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            conn.close()  # (at once: a file that is not a database must not stay open)
            if (
                not isinstance(exc, sqlite3.OperationalError)
                or self._writable()
                or not os.path.exists(self.path)
            ):
                raise
            self.immutable = True
            return sqlite3.connect(uri + "&immutable=1", uri=True, **options)  # type: ignore[arg-type]
        return conn

    def check_file(self) -> None:
        """Refuse to go on reading a file that is no longer the store's: the file at the store's
        path was deleted, or replaced by another one (a restored backup, a copy moved over it),
        since the store opened it. The store's connections still read the file it opened, which
        nobody else writes any more, so what they read is silently old: retryable JD2005 (the
        live queries go stale, and current again if the same file comes back)."""
        if self._file is None or self._file == _file_identity(self.path):
            return
        raise StoreError(
            "JD2005",
            f"{self.path} was deleted or replaced by another file since the store opened it: its "
            "connections read the file it opened, which no one else writes; reopen the store",
            retryable=True,
            condition="connection",
        )

    def _writable(self) -> bool:
        """Whether the file's folder (and the file, when it exists) can be written to."""
        folder = os.path.dirname(os.path.abspath(self.path))
        return os.access(folder, os.W_OK) and (not os.path.exists(self.path) or os.access(self.path, os.W_OK))

    def disconnect(self, conn: sqlite3.Connection) -> None:
        with contextlib.suppress(sqlite3.Error):
            conn.close()

    def lost(self, conn: sqlite3.Connection) -> bool:
        """Never: a connection to a file is not ended from outside (:attr:`reconnects` is False)."""
        return False

    def begin(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _translated(exc) from exc

    def commit(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise _translated(exc) from exc

    def rollback(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")

    def savepoint(self, conn: sqlite3.Connection, name: str) -> None:
        with translating():
            conn.execute(f"SAVEPOINT {quote(name)}")

    def release(self, conn: sqlite3.Connection, name: str) -> None:
        with translating():
            conn.execute(f"RELEASE {quote(name)}")

    def rollback_to(self, conn: sqlite3.Connection, name: str) -> None:
        with translating():
            conn.execute(f"ROLLBACK TO {quote(name)}")
            conn.execute(f"RELEASE {quote(name)}")

    def in_transaction(self, conn: sqlite3.Connection) -> bool:
        return conn.in_transaction

    @contextlib.contextmanager
    def snapshot(self, conn: sqlite3.Connection) -> Iterator[None]:
        """A deferred read transaction: SQLite fixes its snapshot at the first read inside it."""
        with translating():
            conn.execute("BEGIN")
        try:
            yield
        finally:
            if conn.in_transaction:
                with translating():
                    conn.execute("COMMIT")

    # -- the model and the shape --------------------------------------------------------------------
    def probe(self, conn: sqlite3.Connection) -> dict[str, Any]:
        """Probe the SQLite library once: version and the features the store relies on."""

        def works(sql: str) -> bool:
            try:
                conn.execute(sql).fetchall()
                return True
            except sqlite3.Error:
                return False

        version = sqlite3.sqlite_version
        info = sqlite3.sqlite_version_info
        caps: dict[str, Any] = {
            "backend": "sqlite",
            "sqlite_version": version,
            "json1": works("SELECT json_extract('{\"a\":1}', '$.a')"),
            "jsonb": works("SELECT jsonb('{}')"),
            "returning": info >= (3, 35, 0),
            "strict_tables": info >= (3, 37, 0),
            "generated_columns": info >= (3, 31, 0),
            "user_functions": True,
            "deterministic_functions": info >= (3, 8, 3),
        }
        missing = [f for f in ("json1", "strict_tables", "generated_columns") if not caps[f]]
        if missing:
            raise StoreError("JD0001", f"SQLite {version} lacks {', '.join(missing)}")
        return caps

    def settings(self, conn: sqlite3.Connection) -> dict[str, Any]:
        with translating():
            mode = "wal" if not self.read_only else conn.execute("PRAGMA journal_mode").fetchone()[0]
        return {"journal_mode": mode, "busy_timeout": self.busy_timeout, "immutable": self.immutable}

    def describe(self, capabilities: Mapping[str, Any]) -> str:
        """One line for the store's HTML repr."""
        jsonb = "yes" if capabilities["jsonb"] else "no"
        return f"SQLite {capabilities['sqlite_version']}, JSONB {jsonb}"

    def model_ddl(self, model: Model) -> list[str]:
        # SQLite compares names without case: "A" is "a", and gx_B is gx_b.
        refuse_clashes(
            model,
            lambda spec: ddl.index_statements(spec) + ddl.extra_statements(spec),
            fold=True,
            columns=True,
        )
        return ddl.create_statements(model)

    def internal_ddl(self, subsystems: Sequence[str]) -> list[str]:
        return [sql for name in subsystems for sql in catalogue(name).schema()]

    def internal_upgrades(self, conn: Any, subsystems: Sequence[str]) -> list[str]:
        return upgrades([catalogue(name) for name in subsystems], lambda table: self._columns(conn, table))

    def _columns(self, conn: Any, table: str) -> set[str]:
        """The columns of ``table`` (empty: no such table)."""
        with translating():
            return {r[1] for r in conn.execute("SELECT * FROM pragma_table_info(?)", (table,))}

    def holds_tables(self, conn: sqlite3.Connection) -> list[str]:
        with translating():
            return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]

    def shape(self, conn: sqlite3.Connection) -> dict[str, str]:
        with translating():
            return {
                name: sql
                for name, sql in conn.execute(
                    "SELECT name, sql FROM sqlite_master WHERE type IN ('table','index') AND sql IS NOT NULL"
                )
            }

    def shape_difference(self, model: Model, shape: Mapping[str, str]) -> str | None:
        """The first way ``shape`` (from :meth:`shape`) differs from what :meth:`model_ddl` creates."""
        return ddl.first_shape_difference(model, dict(shape))

    def create(self, conn: sqlite3.Connection, model: Model) -> None:
        """The store's own table and the model's tables: SQLite keeps their SQL text, which
        :meth:`verify` compares with the model's DDL."""
        with translating():
            for statement in self.internal_ddl(["store"]) + self.model_ddl(model):
                conn.execute(statement)

    def verify(self, conn: sqlite3.Connection, model: Model) -> str | None:
        return self.shape_difference(model, self.shape(conn))

    def alter(self, old: CollectionSpec | None, new: CollectionSpec | None) -> Alteration:
        return ddl.alter(old, new)

    def prepare(self, conn: sqlite3.Connection, model: Model) -> None:
        """Nothing to make: SQLite's JSON functions are all a model needs."""

    def record_shape(self, conn: sqlite3.Connection, model: Model) -> str | None:
        """Nothing to record: SQLite keeps each table's SQL text, which is compared with the
        model's DDL here (:meth:`verify`), so a migration that made the wrong shape rolls back."""
        return self.verify(conn, model)

    # -- statements built from declarations ----------------------------------------------------------
    def json_path(self, segments: tuple[str | int, ...]) -> str:
        return paths.json_path(segments)

    def interval_statements(self, table: str, decl: IntervalSpec) -> IntervalStatements:
        return intervals.statements(table, decl)

    # -- hooks --------------------------------------------------------------------------------------
    def storage_order(self, key_type: type) -> StorageOrder:
        """Rows lie in rowid order: an integer key is the rowid (``"key"``); a text key's row gets
        the next rowid when inserted and keeps it through updates (``"insertion"``)."""
        return "key" if key_type is int else "insertion"

    def serialize(self, conn: sqlite3.Connection, name: str) -> None:
        """Nothing to do: ``BEGIN IMMEDIATE`` already made this the only writer."""

    def notify(self, conn: sqlite3.Connection, name: str) -> None:
        """Nothing to do: a watch reads ``PRAGMA data_version``, which moves on every commit."""

    def watch(self, interval: float, name: str = "live") -> _DataVersion:
        """Reads the file's commit counter adaptively (see :class:`_DataVersion`); the ``jobs``
        watch at least every :data:`_JOBS_PAUSE` seconds, since a job waits on it."""
        return _DataVersion(self, min(interval, _JOBS_PAUSE) if name == "jobs" else interval)

    def clock(self) -> float:
        return time.time()

    def close(self, conn: sqlite3.Connection | None) -> str | None:
        """Checkpoint the WAL into the file; say so when another connection kept it from finishing
        (nothing is lost: the rest stays in the ``-wal`` file for a later checkpoint)."""
        if conn is None or self.read_only:
            return None
        try:
            busy, frames, moved = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            return f"the WAL checkpoint of {self.target} failed: {exc}"
        if busy:
            return (
                f"the WAL checkpoint of {self.target} was busy (another connection reads or writes it): "
                f"{max(moved, 0)} of {max(frames, 0)} frames reached the file, the rest stays in its -wal file"
            )
        return None

    def discard_if_empty(self) -> None:
        """Remove the database file if this store's opening created it and it holds nothing."""
        if self._existed or self.read_only or not os.path.exists(self.path):
            return
        try:
            probe = sqlite3.connect(self.path)
            try:
                empty = probe.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
            finally:
                probe.close()
        except sqlite3.Error:
            return
        if empty:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(OSError):
                    os.remove(self.path + suffix)

    def explain(self, conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[Row]:
        with translating():
            return [tuple(r) for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()]

    def register_aggregate(
        self, conn: sqlite3.Connection, name: str, arity: int, factory: Callable[[], Any]
    ) -> None:
        quote(name)
        conn.create_aggregate(name, arity, factory)

    def register_function(
        self, conn: sqlite3.Connection, name: str, arity: int, fn: Callable[..., Any]
    ) -> None:
        quote(name)
        conn.create_function(name, arity, fn, deterministic=True)
