"""The backends the contract suites run against: every test here runs once per registered backend.

A new backend joins through its harness in ``tests/backend_fixtures.py`` (``HARNESSES``: how to
make a bare backend over a fresh database); the suites need no new code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from backend_fixtures import BACKENDS, HARNESSES, server_for

from jarenlab.backends.base import Backend
from jarenlab.database import Database


@pytest.fixture(params=BACKENDS)
def make_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Backend]:
    """``make_backend(**options)``: a bare backend over one fresh, empty database per test (every call
    in a test reaches the same database)."""
    make = HARNESSES[request.param].backend
    server = server_for(request.param, request)
    return lambda **options: make(tmp_path, server, **options)


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
