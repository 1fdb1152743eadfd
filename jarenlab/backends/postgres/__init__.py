"""PostgreSQL: a store in one schema of a server's database, shared by many notebooks and workers
(see :mod:`.backend`), the model's DDL (:mod:`.ddl`), the planner's dialect (:mod:`.dialect`),
a throwaway local server for tests and tutorials (:mod:`.server`), and every statement of every
subsystem, one ``sql/<subsystem>.sql`` file each, under the same names as SQLite's.

May import: its driver (psycopg), ``jarenlab.backends.base``, the model's declarations and the
foundation.
"""

from __future__ import annotations

from jarenlab.backends.postgres.backend import PostgresBackend

__all__ = ["PostgresBackend"]
