"""Backends: the database engines a store runs on, and the only place SQL and drivers live.

May import: the foundation and the model's declarations (``jarenlab.model``); a backend's own
folder is loaded only when a store uses it. Nothing above: the planner, the store and the subsystems
reach a database only through the :class:`Backend` and :class:`Dialect` protocols.

- :mod:`jarenlab.backends.base`: the :class:`~jarenlab.backends.base.Backend` protocol (the contract
  every engine implements) and the :class:`~jarenlab.backends.base.Catalogue` of named statements.
- :mod:`jarenlab.backends.sqlite`: the embedded default, one SQLite file in WAL mode; its
  statements, one ``.sql`` file per subsystem, are in ``backends/sqlite/sql/``.
- :mod:`jarenlab.backends.postgres`: a store shared by many machines, one schema of a PostgreSQL
  database; its statements are in ``backends/postgres/sql/`` under the same names.

Everything above this room speaks to a store's :class:`~jarenlab.database.Database`, which runs
the backend's named statements; ``docs/architecture.md`` shows how a backend is added.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from jarenlab.errors import StoreError

if TYPE_CHECKING:
    from jarenlab.backends.base import Backend

#: What a PostgreSQL store's target starts with.
SERVER_SCHEMES = ("postgresql://", "postgres://")


def is_server_target(target: Any) -> bool:
    """True for a PostgreSQL URL (``postgresql://...``); anything else names a SQLite file."""
    return isinstance(target, str) and target.startswith(SERVER_SCHEMES)


#: The ``mode`` values a ``file:`` target may carry (SQLite's own spelling).
FILE_MODES = ("ro", "rw", "rwc", "memory")


def local_target(target: str) -> tuple[str | None, bool]:
    """A SQLite target as (the file's path, or None for a fresh store in a temporary folder; read-only).

    ``":memory:"`` and a ``file:`` URI with ``mode=memory`` are fresh stores in a temporary folder,
    removed on close: a store needs a file (WAL, a connection per thread, other processes).
    ``file:`` URIs (``file:lab.db``, ``file:///data/lab.db?mode=ro``) name the file, and ``mode``
    is ``ro`` (read-only), ``rw`` (the file must exist) or ``rwc``; any other parameter is JD0006,
    since the store sets the connection up itself.

    >>> local_target("file:///data/lab%20a.db?mode=ro"), local_target(":memory:"), local_target("lab.db")
    (('/data/lab a.db', True), (None, False), ('lab.db', False))
    """
    if target == ":memory:":
        return None, False
    if not target.startswith("file:"):
        return target, False
    parts = urlsplit(target)
    if parts.netloc not in ("", "localhost") or parts.fragment:
        raise StoreError(
            "JD0006", f"{target!r}: a file: URI names a local file (file:lab.db, file:///data/lab.db)"
        )
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    extra = sorted(set(params) - {"mode"})
    if extra:
        raise StoreError(
            "JD0006",
            f"{target!r}: the URI parameter {extra[0]!r} is not supported (only mode={'|'.join(FILE_MODES)}); "
            "the store sets its connections up itself (WAL, busy timeout, foreign keys)",
        )
    mode = params.get("mode", "rwc")
    if mode not in FILE_MODES:
        raise StoreError("JD0006", f"{target!r}: mode is one of {', '.join(FILE_MODES)}, not {mode!r}")
    if mode == "memory":
        return None, False
    path = unquote(parts.path)
    if not path:
        raise StoreError("JD0006", f"{target!r} names no file")
    if mode == "rw" and not os.path.exists(path):
        raise StoreError("JD0006", f"{target!r}: mode=rw opens an existing file, and {path} does not exist")
    return path, mode == "ro"


def open_backend(
    target: str,
    *,
    read_only: bool = False,
    busy_timeout: float = 5.0,
    schema: str | None = None,
    notify: bool = True,
) -> Backend:
    """The backend for a store's target: a ``postgresql://`` URL is a PostgreSQL store (in
    ``schema``, default ``public``), anything else a SQLite file. A backend's driver is imported
    only when a store uses it."""
    if is_server_target(target):
        from jarenlab.backends.postgres import PostgresBackend

        return PostgresBackend(
            target, schema=schema or "public", read_only=read_only, busy_timeout=busy_timeout, notify=notify
        )
    from jarenlab.backends.sqlite import SQLiteBackend

    return SQLiteBackend(target, read_only=read_only, busy_timeout=busy_timeout)
