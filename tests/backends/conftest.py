"""The backends the contract suites run against: every test here runs once per backend.

A new backend joins by adding a factory to :data:`FACTORIES`; the suites need no new code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jarenlab.backends.base import Backend
from jarenlab.backends.sqlite import SQLiteBackend
from jarenlab.database import Database


def _sqlite(tmp_path: Path, **options: Any) -> Backend:
    return SQLiteBackend(str(tmp_path / "contract.db"), **options)


#: name -> factory(tmp_path, **options) -> a backend over a fresh, empty database.
FACTORIES: dict[str, Callable[..., Backend]] = {"sqlite": _sqlite}


@pytest.fixture(params=sorted(FACTORIES))
def make_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Backend]:
    factory = FACTORIES[request.param]
    return lambda **options: factory(tmp_path, **options)


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
