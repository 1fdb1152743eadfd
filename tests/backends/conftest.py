"""The backends the contract suites run against: every test here runs once per backend.

A new backend joins by adding a factory to :data:`FACTORIES`; the suites need no new code.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jarenlab.backends.base import Backend
from jarenlab.backends.sqlite import SQLiteBackend
from jarenlab.database import Database


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path, **options: Any) -> Backend:
    return SQLiteBackend(str(tmp_path / "contract.db"), **options)


def _postgresql(request: pytest.FixtureRequest, tmp_path: Path, **options: Any) -> Backend:
    import psycopg

    from jarenlab.backends.postgres import PostgresBackend

    server = request.getfixturevalue("pg_server")
    schema = f"c_{uuid.uuid5(uuid.NAMESPACE_URL, str(tmp_path)).hex[:16]}"
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    return PostgresBackend(server.url(), schema=schema, **options)


#: name -> factory(request, tmp_path, **options) -> a backend over one fresh, empty database per test
#: (every call in a test reaches the same database).
FACTORIES: dict[str, Callable[..., Backend]] = {"sqlite": _sqlite, "postgresql": _postgresql}


@pytest.fixture(params=sorted(FACTORIES))
def make_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Backend]:
    factory = FACTORIES[request.param]
    return lambda **options: factory(request, tmp_path, **options)


@pytest.fixture
def backend(make_backend: Callable[..., Backend]) -> Backend:
    return make_backend()


@pytest.fixture
def db(backend: Backend) -> Iterator[Database]:
    """A Database over the backend holding the store's own table (``store.get_meta``/``put_meta``)."""
    database = Database(backend, queue_timeout=0.5)
    conn = database.connection()
    with database.transaction():
        for statement in backend.internal_ddl(["store"]):
            backend.execute(conn, statement)
    yield database
    database.close()
