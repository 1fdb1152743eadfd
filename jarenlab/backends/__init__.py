"""Backends: the database engines a store runs on, and the only place SQL and drivers live.

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

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jarenlab.backends.base import Backend

#: What a PostgreSQL store's target starts with.
SERVER_SCHEMES = ("postgresql://", "postgres://")


def is_server_target(target: Any) -> bool:
    """True for a PostgreSQL URL (``postgresql://...``); anything else names a SQLite file."""
    return isinstance(target, str) and target.startswith(SERVER_SCHEMES)


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
