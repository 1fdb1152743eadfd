"""Backends: the database engines a store runs on, and the only place SQL and drivers live.

- :mod:`jarenlab.backends.base`: the :class:`~jarenlab.backends.base.Backend` protocol (the contract
  every engine implements) and the :class:`~jarenlab.backends.base.Catalogue` of named statements.
- :mod:`jarenlab.backends.sqlite`: the embedded default, one SQLite file in WAL mode; its
  statements, one ``.sql`` file per subsystem, are in ``backends/sqlite/sql/``.

Everything above this room speaks to a store's :class:`~jarenlab.database.Database`, which runs
the backend's named statements; ``docs/architecture.md`` shows how a backend is added.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarenlab.backends.base import Backend


def open_backend(target: str, *, read_only: bool = False, busy_timeout: float = 5.0) -> Backend:
    """The backend for a store's target: a file path is a SQLite store."""
    from jarenlab.backends.sqlite import SQLiteBackend

    return SQLiteBackend(target, read_only=read_only, busy_timeout=busy_timeout)
