"""SQLite, the embedded default: one file in WAL mode (see :mod:`.backend`), the model's DDL
(:mod:`.ddl`), the planner's dialect (:mod:`.dialect`) and every statement of every subsystem,
one ``sql/<subsystem>.sql`` file each.

May import: its driver (sqlite3), ``jarenlab.backends.base``, the model's declarations and the
foundation.
"""

from __future__ import annotations

from jarenlab.backends.sqlite.backend import SQLiteBackend

__all__ = ["SQLiteBackend"]
