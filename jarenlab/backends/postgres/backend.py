"""PostgreSQL: a store is one schema in one database, shared by many notebooks and worker machines.

``jl.open("postgresql://analyst@db.lab/lab", model, schema="flights")``. Each thread gets its own
connection (psycopg 3, autocommit; transactions are explicit, READ COMMITTED), with the store's
schema first on its ``search_path``. Several writers run at once, so the store needs no write gate;
what SQLite's single writer did for free is done here by row locks, unique and exclusion
constraints, and transaction-scoped advisory locks (:meth:`PostgresBackend.serialize`), so appends
to the change log and the event ledger land in commit order. ``NOTIFY`` wakes readers in other
processes; they poll as well, since a notification is not durable.

This module and its siblings are the only ones that import ``psycopg``.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import select
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import orjson
import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict
from psycopg.types.string import TextLoader

from jarenlab.backends.base import (
    IDENTIFIER,
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
from jarenlab.backends.postgres import ddl, intervals
from jarenlab.backends.postgres.clock import ServerClock
from jarenlab.errors import JarenlabError, StoreError
from jarenlab.model import Model

if TYPE_CHECKING:
    from jarenlab.model import CollectionSpec
    from jarenlab.model.intervals import IntervalSpec

#: SQLSTATEs of failures that succeed when tried again: serialization failure, deadlock, lock
#: timeout, statement cancelled (a lock_timeout).
_RETRYABLE = {"40001", "40P01", "55P03", "57014"}
#: SQLSTATEs that end the session (besides class 08, connection exceptions): an administrator's
#: ``pg_terminate_backend`` or a fast shutdown, a crash or immediate shutdown, a server still
#: starting, the idle-in-transaction and idle-session timeouts. The connection is gone; the next
#: call gets a new one.
_SESSION_ENDED = {"57P01", "57P02", "57P03", "25P03", "57P05"}
_IDLE = pq.TransactionStatus.IDLE
#: ``select.poll`` (not limited to descriptors below 1024, as ``select`` is), where the system has it.
_poll = getattr(select, "poll", None)


#: Names for server-side cursors, unique in this process (a session holds one per open stream).
_STREAMS = itertools.count()

#: ``marks(n)``: n placeholders in this driver's style.
marks = functools.partial(placeholders, "%s")
#: ``catalogue(subsystem)``: the named PostgreSQL statements of one subsystem (``sql/<subsystem>.sql`` here).
catalogue = functools.partial(load_catalogue, "jarenlab.backends.postgres", style="format")


def redact(url: str) -> str:
    """A URL fit to show: the password removed.

    >>> redact("postgresql://me:secret@db.lab:5432/lab")
    'postgresql://me@db.lab:5432/lab'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def translate(exc: BaseException, **fields: Any) -> JarenlabError | None:
    """Turn a ``psycopg`` error into a coded :class:`StoreError` (the driver error becomes the cause).

    The reason is the server's primary message only: its DETAIL can print other records' values
    (an exclusion constraint names the row it collided with), and those never reach an error.
    """
    if not isinstance(exc, psycopg.Error):
        return None
    state = exc.sqlstate or ""
    primary = exc.diag.message_primary if exc.diag is not None else None
    text = primary or (str(exc).strip().splitlines() or ["database error"])[0]
    if state == "23505":
        err = StoreError("JD2001", f"duplicate key ({text})", condition="duplicate", **fields)
    elif state == "23P01":
        err = StoreError("JD2005", text, condition="exclusion", **fields)
    elif state in _RETRYABLE:
        err = StoreError("JD2005", text, retryable=True, condition="busy", **fields)
    elif (
        state in _SESSION_ENDED
        or state.startswith("08")
        or (isinstance(exc, psycopg.OperationalError) and not state)
    ):
        err = StoreError(
            "JD2005",
            f"the connection to the server was lost ({text}); the next call opens a new one",
            retryable=True,
            condition="connection",
            **fields,
        )
    elif state == "25006":
        err = StoreError("JD2005", f"the store is read-only ({text})", condition="read_only", **fields)
    elif state in ("22003", "22P03"):
        err = StoreError("JD2005", text, condition="overflow", **fields)
    elif state == "2201B":
        # A regular expression the planner wrote that the server will not compile (``too
        # complex``: nested counts): the statement's function failed, as SQLite's do.
        err = StoreError("JD2005", text, condition="function_failed", **fields)
    else:
        err = StoreError("JD2005", text, condition="other", **fields)
    err.__cause__ = _primary(exc, text)
    return err


def _primary(exc: psycopg.Error, text: str) -> psycopg.Error:
    """The driver's error as the coded error's cause: of the same class (so its ``sqlstate``), with
    the primary message alone (the server's DETAIL can print other rows' values: never passed on)."""
    try:
        clean = type(exc)(text)
    except Exception:  # (a class that takes other arguments: the root class says as much)
        clean = psycopg.Error(text)
    clean.__traceback__ = exc.__traceback__
    return clean


#: The one error boundary: ``with translating(collection=...):``.
translating = ErrorBoundary(psycopg.Error, translate)
_translated = translating.translated


class _Notifications:
    """Wakes on ``NOTIFY`` to the store's channel, and at least every ``interval`` seconds anyway
    (a notification is not durable: one sent while the listener reconnects is lost).

    A lost listening connection raises the retryable JD2005 (``condition="connection"``) once;
    the next :meth:`wait` opens a new connection and LISTENs again (raising the same error while
    the server cannot be reached) and then says "look" at once: what was sent meanwhile is lost.
    """

    def __init__(self, backend: PostgresBackend, channel: str, interval: float) -> None:
        self._backend = backend
        self._channel = channel
        self._interval = max(interval, 0.01)
        self._conn: psycopg.Connection[Any] | None = None
        self._last = float("-inf")  # the first wait says "look": see Watch.wait
        self._listen()

    def _listen(self) -> None:
        conn = self._backend.connect(reader=True)
        try:
            with translating():
                conn.execute(f"LISTEN {quote(self._channel)}")
        except BaseException:
            self._backend.disconnect(conn)
            raise
        self._conn = conn

    def wait(self, timeout: float) -> bool:
        if self._conn is None:
            self._listen()
            self._last = time.monotonic()
            return True  # notifications sent while no one listened are lost: look
        try:
            with translating():
                for _ in self._conn.notifies(timeout=max(timeout, 0.0), stop_after=1):
                    self._last = time.monotonic()
                    return True
        except JarenlabError:
            self.close()
            raise
        if time.monotonic() - self._last >= self._interval:
            self._last = time.monotonic()
            return True
        return False

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._backend.disconnect(conn)


class _Polling:
    """Wakes every ``interval`` seconds (NOTIFY turned off)."""

    def __init__(self, interval: float) -> None:
        self._interval = max(interval, 0.01)
        self._last = float("-inf")  # the first wait says "look": see Watch.wait

    def wait(self, timeout: float) -> bool:
        left = self._interval - (time.monotonic() - self._last)
        if left > timeout:
            time.sleep(max(timeout, 0.0))
            return False
        time.sleep(max(left, 0.0))
        self._last = time.monotonic()
        return True

    def close(self) -> None:
        pass


class PostgresBackend:
    """A store in one schema of a PostgreSQL database (see the module docstring).

    Args:
        url: a ``postgresql://`` URL (or a libpq connection string). schema: the store's schema
        (created with the store). read_only: every transaction read-only. busy_timeout: seconds a
        statement waits for a lock before a retryable JD2005. notify: wake other processes' readers
        with ``NOTIFY`` (off: they poll).
    """

    name = "postgresql"
    needs_write_gate = False
    statement_atomic = False
    merges_members = False
    reconnects = True
    driver_error = psycopg.Error

    def __init__(
        self,
        url: str,
        *,
        schema: str = "public",
        read_only: bool = False,
        busy_timeout: float = 5.0,
        notify: bool = True,
    ) -> None:
        if type(schema) is not str or not IDENTIFIER.match(schema) or len(schema.encode()) > 40:
            raise StoreError(
                "JD0006",
                f"schema must be a plain name of at most 40 characters (letters, digits, _), not {schema!r}",
            )
        self.url = url
        self.schema = schema
        self.target = f"{redact(url)} (schema {schema})"
        self.read_only = read_only
        self.busy_timeout = busy_timeout
        self.notify_enabled = notify
        self._dialect: Any = None
        self._clock = ServerClock(lambda: self.connect(reader=True), translate)
        given = conninfo_to_dict(url) if "=" in url or "://" in url else {}
        #: Connection parameters the URL leaves unset: the session's name (``pg_stat_activity``
        #: shows which store a connection serves) and TCP keepalives, so a peer that vanished
        #: without closing the connection (a dropped network) is noticed in about a minute
        #: instead of the system's two hours.
        self._params: dict[str, Any] = {
            name: value
            for name, value in (
                ("application_name", f"jarenlab:{schema}"),
                ("keepalives", 1),
                ("keepalives_idle", 30),
                ("keepalives_interval", 10),
                ("keepalives_count", 3),
            )
            if name not in given
        }

    @property
    def dialect(self) -> Any:
        if self._dialect is None:
            from jarenlab.backends.postgres.dialect import (
                PostgresDialect,  # the planner's, made on first query
            )

            self._dialect = PostgresDialect()
        return self._dialect

    # -- statements ---------------------------------------------------------------------------------
    def catalogue(self, subsystem: str) -> Catalogue:
        return catalogue(subsystem)

    def quote(self, name: str) -> str:
        return quote(name)

    def marks(self, count: int) -> str:
        return marks(count)

    def execute(self, conn: psycopg.Connection[Any], sql: str, params: Sequence[Any] = ()) -> Any:
        return conn.execute(sql, params)

    def executemany(self, conn: psycopg.Connection[Any], sql: str, rows: Any) -> Any:
        cursor = conn.cursor()
        cursor.executemany(sql, rows)
        return cursor

    def stream(
        self, conn: psycopg.Connection[Any], sql: str, params: Sequence[Any], size: int
    ) -> Iterator[list[Row]]:
        """A server-side cursor (``DECLARE ... WITH HOLD``: the connection is in autocommit, and no
        transaction is left open while the caller reads): this process holds one batch, the server
        the rest, so memory stays flat however long the result. Closed when the rows run out or the
        caller stops reading."""
        cursor = conn.cursor(name=f"jl_stream_{next(_STREAMS)}", withhold=True)
        try:
            cursor.execute(sql, params)
            while rows := cursor.fetchmany(size):
                yield rows
        finally:
            if not conn.closed:
                with contextlib.suppress(psycopg.Error):
                    cursor.close()

    def translating(self, **fields: Any) -> contextlib.AbstractContextManager[None]:
        return translating(**fields)

    def translate(self, exc: BaseException, **fields: Any) -> JarenlabError | None:
        return translate(exc, **fields)

    # -- connections and transactions ---------------------------------------------------------------
    def connect(self, *, reader: bool = False) -> psycopg.Connection[Any]:
        """One autocommit connection: the store's schema first on the search path, ``json`` read as
        text (the exact stored text, decoded by the store), the lock timeout, a limit on idle
        time inside a transaction (a paused notebook must not hold locks forever), and JIT
        compilation off (it took 50-300 ms to compile statements that run in 2 ms, such as a
        graph load's correlated subqueries, and made no statement the store writes faster:
        ``docs/postgres.md``)."""
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10, **self._params)
        except psycopg.Error as exc:
            raise StoreError(
                "JD2005",
                f"could not connect to {redact(self.url)}: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}",
                retryable=True,
                condition="connection",
            ) from exc
        for oid in ("json", "jsonb"):
            conn.adapters.register_loader(oid, TextLoader)
        # Plans are made for the values bound (plan_cache_mode): a statement psycopg has prepared
        # gets a generic plan after a few runs, and for a range on an ordering member (a deep
        # keyset page) that plan sorted every row past the bound, 10x the plan for the value.
        with translating():
            conn.execute(
                f"SET search_path TO {quote(self.schema)}, public; "
                f"SET lock_timeout = {int(self.busy_timeout * 1000)}; "
                "SET idle_in_transaction_session_timeout = '10min'; "
                "SET plan_cache_mode = force_custom_plan; "
                "SET jit = off" + ("; SET default_transaction_read_only = on" if self.read_only else "")
            )
        return conn

    def disconnect(self, conn: psycopg.Connection[Any]) -> None:
        with contextlib.suppress(Exception):
            conn.close()

    def lost(self, conn: psycopg.Connection[Any]) -> bool:
        """True when the connection failed, or the server wrote to it while it sat idle.

        Between statements the server sends nothing to a connection that does not ``LISTEN``
        (the store's statement connections never do) unless it is ending the session: an
        administrator's ``pg_terminate_backend``, a shutdown or restart, the idle-in-transaction
        timeout. Those write a farewell and close the socket, so a readable idle socket means the
        session is over, and the statement about to run has not reached the server. One
        ``poll`` with no wait (``select`` where there is no ``poll``); nothing is sent.
        """
        if conn.closed:
            return True
        try:
            fd = conn.pgconn.socket
            if _poll is None:
                return bool(select.select([fd], [], [], 0)[0])
            poller = _poll()
            poller.register(fd, select.POLLIN)
            return bool(poller.poll(0))
        except (OSError, ValueError, psycopg.Error):
            return True

    def begin(self, conn: psycopg.Connection[Any]) -> None:
        try:
            conn.execute("BEGIN")
        except psycopg.Error as exc:
            err = _translated(exc)
            raise err from err.__cause__

    def commit(self, conn: psycopg.Connection[Any]) -> None:
        try:
            conn.execute("COMMIT")
        except psycopg.Error as exc:
            err = _translated(exc)
            if err.condition == "connection":
                # The server may have committed before the connection went: say so (a retry-safe
                # transaction, ``idempotency_key=...``, is the way to try again without doubt).
                err.reason = f"{err.reason}; it was lost during COMMIT, so the transaction may have committed"
                err.args = (err.message,)
            raise err from err.__cause__

    def rollback(self, conn: psycopg.Connection[Any]) -> None:
        if conn.info.transaction_status != _IDLE:
            with contextlib.suppress(psycopg.Error):
                conn.execute("ROLLBACK")

    def savepoint(self, conn: psycopg.Connection[Any], name: str) -> None:
        with translating():
            conn.execute(f"SAVEPOINT {quote(name)}")

    def release(self, conn: psycopg.Connection[Any], name: str) -> None:
        with translating():
            conn.execute(f"RELEASE SAVEPOINT {quote(name)}")

    def rollback_to(self, conn: psycopg.Connection[Any], name: str) -> None:
        with translating():
            conn.execute(f"ROLLBACK TO SAVEPOINT {quote(name)}")
            conn.execute(f"RELEASE SAVEPOINT {quote(name)}")

    def in_transaction(self, conn: psycopg.Connection[Any]) -> bool:
        return conn.info.transaction_status != _IDLE

    @contextlib.contextmanager
    def snapshot(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        """A read-only REPEATABLE READ transaction: every statement inside sees one committed state."""
        with translating():
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        finally:
            if conn.info.transaction_status != _IDLE:
                with translating():
                    conn.execute("COMMIT")

    # -- the model and the shape --------------------------------------------------------------------
    def probe(self, conn: psycopg.Connection[Any]) -> dict[str, Any]:
        """The server's version and the features the store relies on (PostgreSQL 13 or newer)."""
        with translating():
            number, version, gist = conn.execute(
                "SELECT current_setting('server_version_num')::int, current_setting('server_version'),"
                " (SELECT count(*) FROM pg_available_extensions WHERE name = 'btree_gist')"
            ).fetchone() or (0, "unknown", 0)
            version = version.split()[0]
        if number < 130000:
            raise StoreError("JD0001", f"PostgreSQL {version} is older than 13")
        return {
            "backend": "postgresql",
            "server_version": version,
            "jsonb": True,
            "btree_gist": bool(gist),
            "listen_notify": True,
            "isolation": "read committed",
            "udf_hatch": False,
            "user_functions": False,
        }

    def settings(self, conn: psycopg.Connection[Any]) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "notify": self.notify_enabled,
            "busy_timeout": self.busy_timeout,
        }

    def describe(self, capabilities: Mapping[str, Any]) -> str:
        return f"PostgreSQL {capabilities['server_version']}, schema {self.schema}"

    def model_ddl(self, model: Model) -> list[str]:
        """The model's tables and indexes, then what its interval declarations add (the function
        ``jl_instant_ms`` and one exclusion constraint each)."""
        refuse_clashes(model, ddl.index_statements, fold=False, limit=intervals.NAME_BYTES)
        return ddl.create_statements(model) + intervals.create_statements(model)

    def internal_ddl(self, subsystems: Sequence[str]) -> list[str]:
        return [sql for name in subsystems for sql in catalogue(name).schema()]

    def internal_upgrades(self, conn: Any, subsystems: Sequence[str]) -> list[str]:
        return upgrades([catalogue(name) for name in subsystems], lambda table: self._columns(conn, table))

    def _columns(self, conn: Any, table: str) -> set[str]:
        """The columns of ``table`` (empty: no such table)."""
        with translating():
            rows = conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
                (self.schema, table),
            ).fetchall()
        return {r[0] for r in rows}

    def holds_tables(self, conn: psycopg.Connection[Any]) -> list[str]:
        with translating():
            rows = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY table_name",
                (self.schema,),
            ).fetchall()
        return [r[0] for r in rows]

    def shape(self, conn: psycopg.Connection[Any], tables: Sequence[str] | None = None) -> dict[str, str]:
        """The catalogue's rendering of the schema's tables (only ``tables`` when given: a store's
        schema may hold other tables, which are not the model's to verify)."""
        with translating():
            rows = conn.execute(ddl.RENDER, (self.schema,) * 3).fetchall()
        return {what: definition for table, what, definition in rows if tables is None or table in tables}

    def create(self, conn: psycopg.Connection[Any], model: Model) -> None:
        """Create the schema, the store's own table and the model's tables; record their rendering."""
        with translating():
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(self.schema)}")
            if any(spec.intervals for spec in model.collections.values()):
                self._require_btree_gist(conn)
            for statement in self.internal_ddl(["store"]) + self.model_ddl(model):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO _jl_meta(name, value) VALUES ('shape', %s)",
                (orjson.dumps(self.shape(conn, list(model.collections))).decode(),),
            )

    def alter(self, old: CollectionSpec | None, new: CollectionSpec | None) -> Alteration:
        """Every change in place: the table locked against writers first, constraints of changed
        declarations dropped before the documents change and added after, renames kept as renames."""
        before, after = ddl.alter(old, new)
        if old is None and new is not None:
            decls = [(new.name, d) for d in new.intervals]
            if any(d.kind == "date-time" for _, d in decls):
                before.append(intervals.instant_ms_function())
            before += [intervals.constraint_statement(t, d) for t, d in decls]
        elif old is not None and new is not None:
            dropped, added = intervals.alter_statements(old, new)
            before[1:1] = dropped  # after the lock, before a rename
            after += added
        return Alteration(before=tuple(before), after=tuple(after))

    def prepare(self, conn: psycopg.Connection[Any], model: Model) -> None:
        """Interval declarations need ``btree_gist`` (see :meth:`create`)."""
        if any(spec.intervals for spec in model.collections.values()):
            with translating():
                self._require_btree_gist(conn)

    def record_shape(self, conn: psycopg.Connection[Any], model: Model) -> str | None:
        """Record the catalogue's rendering of the migrated tables (what :meth:`verify` compares
        from now on). PostgreSQL renders DDL in its own words, so there is nothing independent to
        compare it with: None."""
        with translating():
            conn.execute(
                "UPDATE _jl_meta SET value = %s WHERE name = 'shape'",
                (orjson.dumps(self.shape(conn, list(model.collections))).decode(),),
            )
        return None

    def _require_btree_gist(self, conn: psycopg.Connection[Any]) -> None:
        """Make sure the database has ``btree_gist`` (declared intervals' exclusion constraints
        compare text, numbers and booleans in a GiST index); JD0001 naming it when it cannot be had.

        It is installed in ``public``, never in the store's schema: dropping one store's schema must
        not take the extension (and every other store's constraints) with it.
        """
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('jarenlab/btree_gist', 0))")
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'btree_gist'").fetchone():
            return
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gist SCHEMA public")
        except psycopg.Error as exc:
            raise StoreError(
                "JD0001",
                "declared intervals need the PostgreSQL extension btree_gist, which this database "
                f"does not have and this user cannot create ({exc.diag.message_primary or exc.sqlstate}); "
                "ask the database's owner to run CREATE EXTENSION btree_gist",
            ) from exc

    def verify(self, conn: psycopg.Connection[Any], model: Model) -> str | None:
        """The first way the schema's tables and indexes differ from what was created (None: none)."""
        with translating():
            row = conn.execute("SELECT value FROM _jl_meta WHERE name = 'shape'").fetchone()
        if row is None:
            return "the store's metadata has no recorded shape"
        return ddl.first_difference(orjson.loads(row[0]), self.shape(conn, list(model.collections)))

    def storage_order(self, key_type: type) -> StorageOrder:
        """Rows lie in ``pos`` order: the key itself for integer keys (``"key"``); an identity
        taken at insert and kept through updates for text keys (``"insertion"``)."""
        return "key" if key_type is int else "insertion"

    def json_path(self, segments: tuple[str | int, ...]) -> list[str]:
        """A member's path as PostgreSQL's ``#>`` and ``#>>`` take it (a text array, bound as a
        parameter; an array index is its decimal text).

        >>> PostgresBackend("postgresql://db.lab/lab").json_path(("a", 0))
        ['a', '0']
        """
        return [str(s) for s in segments]

    def interval_statements(self, table: str, decl: IntervalSpec) -> IntervalStatements:
        """One declaration's statements; its exclusion constraint (part of :meth:`model_ddl`)
        enforces it, so the ``conflict`` lookup only names the record a refused write overlapped."""
        return intervals.statements(table, decl)

    # -- hooks --------------------------------------------------------------------------------------
    def serialize(self, conn: psycopg.Connection[Any], name: str) -> None:
        """Wait for every other transaction appending to ``name`` to end (a transaction-scoped
        advisory lock): the appends of committed transactions then lie in commit order."""
        with translating():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{self.schema}/{name}",))

    def channel(self, name: str) -> str:
        """The NOTIFY channel of ``name`` in this store."""
        return f"jl_{self.schema}_{name}"

    def notify(self, conn: psycopg.Connection[Any], name: str) -> None:
        """Wake other processes' readers of ``name`` when the transaction commits (off: nothing)."""
        if self.notify_enabled:
            with translating():
                conn.execute("SELECT pg_notify(%s, '')", (self.channel(name),))

    def watch(self, interval: float, name: str = "live") -> Any:
        if self.notify_enabled:
            return _Notifications(self, self.channel(name), max(interval, 1.0))
        return _Polling(interval)

    def clock(self) -> float:
        """The server's clock (read now and then, carried forward locally: see :mod:`.clock`)."""
        return self._clock()

    def close(self, conn: psycopg.Connection[Any] | None) -> str | None:
        """Nothing to tidy (the server keeps the data) but the clock's connection."""
        self._clock.close()
        return None

    def discard_if_empty(self) -> None:
        """Nothing to remove: a store's schema is created inside the transaction that creates it."""

    def explain(self, conn: psycopg.Connection[Any], sql: str, params: Sequence[Any]) -> list[Row]:
        with translating():
            return [tuple(r) for r in conn.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchall()]

    def register_aggregate(
        self, conn: psycopg.Connection[Any], name: str, arity: int, factory: Callable[[], Any]
    ) -> None:
        raise StoreError("JD0003", "host aggregates run in this process and cannot be called from PostgreSQL")

    def register_function(
        self, conn: psycopg.Connection[Any], name: str, arity: int, fn: Callable[..., Any]
    ) -> None:
        raise StoreError("JD0003", "host functions run in this process and cannot be called from PostgreSQL")
