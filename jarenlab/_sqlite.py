"""Connections, pragmas, the capability probe, and the ONE place sqlite3 errors are translated."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator
from typing import Any

from jarenlab.errors import JarenlabError, StoreError

#: Identifiers that may reach SQL text (collection, index and column names).
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def quote(name: str) -> str:
    """Quote an identifier for SQL text after checking it against :data:`IDENTIFIER`.

    >>> quote("flights")
    '"flights"'
    """
    if not IDENTIFIER.match(name):
        raise StoreError("JD2010", f"{name!r} is not a valid identifier")
    return f'"{name}"'


def connect(path: str, *, read_only: bool = False, busy_timeout: float = 5.0) -> sqlite3.Connection:
    """Open one connection with the store's pragmas: WAL, busy timeout, foreign keys on.

    The connection is in autocommit mode; transactions are explicit (``BEGIN IMMEDIATE``).
    """
    with translating():
        if read_only:
            conn = sqlite3.connect(
                f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
            )
        else:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        if not read_only:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError("JD2005", f"could not switch the journal to WAL (got {mode!r})")
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        if conn.execute("PRAGMA foreign_keys").fetchone()[0] != 1:
            raise StoreError("JD2005", "foreign keys did not turn on")
    return conn


def probe(conn: sqlite3.Connection) -> dict[str, Any]:
    """Probe the SQLite library once: version and the features the store relies on."""

    def works(sql: str) -> bool:
        try:
            conn.execute(sql).fetchall()
            return True
        except sqlite3.Error:
            return False

    version = sqlite3.sqlite_version
    caps: dict[str, Any] = {
        "sqlite_version": version,
        "json1": works("SELECT json_extract('{\"a\":1}', '$.a')"),
        "jsonb": works("SELECT jsonb('{}')"),
        "returning": sqlite3.sqlite_version_info >= (3, 35, 0),
        "strict_tables": sqlite3.sqlite_version_info >= (3, 37, 0),
        "generated_columns": sqlite3.sqlite_version_info >= (3, 31, 0),
        "user_functions": True,
        "deterministic_functions": sqlite3.sqlite_version_info >= (3, 8, 3),
    }
    missing = [f for f in ("json1", "strict_tables", "generated_columns") if not caps[f]]
    if missing:
        raise StoreError("JD0001", f"SQLite {version} lacks {', '.join(missing)}")
    return caps


_BUSY = ("database is locked", "database table is locked", "database is busy")


def translate(exc: sqlite3.Error, *, collection: str | None = None, key: Any = None) -> JarenlabError:
    """Turn a driver error into a coded :class:`JarenlabError` (the driver error becomes the cause)."""
    text = str(exc)
    if isinstance(exc, sqlite3.IntegrityError) and "UNIQUE constraint failed" in text:
        err: JarenlabError = StoreError("JD2001", f"duplicate key ({text})", collection=collection, key=key)
    elif any(b in text for b in _BUSY):
        err = StoreError("JD2005", text, collection=collection, key=key, retryable=True)
    elif "readonly" in text or "read-only" in text:
        err = StoreError("JD2005", f"the store is read-only ({text})", collection=collection, key=key)
    else:
        err = StoreError("JD2005", text, collection=collection, key=key)
    err.__cause__ = exc
    return err


@contextlib.contextmanager
def translating(*, collection: str | None = None, key: Any = None) -> Iterator[None]:
    """Run a block, translating any ``sqlite3.Error`` raised inside it."""
    try:
        yield
    except sqlite3.Error as exc:
        raise translate(exc, collection=collection, key=key) from exc
