"""Stores on every backend: the ``backend`` fixture and the factories the areas' fixtures use.

``backend`` is ``"sqlite"`` or ``"postgresql"``. A test (or an area's ``conftest.py``) that asks for
``open_store`` gets a factory that opens a fresh store on that backend: a file in ``tmp_path`` on
SQLite, a fresh schema on the test run's own PostgreSQL server (one per test worker, started from
the machine's server binaries, see :class:`jarenlab.backends.postgres.server.LocalServer`).

Where the server binaries are missing the PostgreSQL half is skipped with the reason, unless
``JARENLAB_REQUIRE_PG=1`` (CI sets it): then it fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl

BACKENDS = ("sqlite", "postgresql")


class Opened:
    """Opens stores on one backend and closes (and on PostgreSQL drops) them after the test."""

    def __init__(self, backend: str, tmp_path: Path, server: Any) -> None:
        self.backend = backend
        self.tmp_path = tmp_path
        self.server = server
        self.stores: list[Any] = []
        self.schemas: list[str] = []

    def target(self, name: str = "lab") -> dict[str, Any]:
        """``{"path": ..., "schema": ...}`` naming a fresh store (the same name gives the same store)."""
        if self.backend == "sqlite":
            return {"path": self.tmp_path / f"{name}.db"}
        schema = f"t_{uuid.uuid5(uuid.NAMESPACE_URL, f'{self.tmp_path}/{name}').hex[:16]}"
        if schema not in self.schemas:
            self.schemas.append(schema)
        return {"path": self.server.url(), "schema": schema}

    def __call__(self, model: Any = None, name: str = "lab", **options: Any) -> Any:
        where = self.target(name)
        store = jl.open(where.pop("path"), model, **where, **options)
        self.stores.append(store)
        return store

    def reopen(self, store: Any, model: Any = None, **options: Any) -> Any:
        """The same store opened again (after ``store.close()``, or beside it)."""
        extra = {"schema": store.backend.schema} if self.backend == "postgresql" else {}
        again = jl.open(store.path, model, **extra, **options)
        self.stores.append(again)
        return again

    def close(self) -> None:
        for store in self.stores:
            store.close()
        if self.schemas:
            import psycopg

            with psycopg.connect(self.server.url(), autocommit=True) as conn:
                for schema in self.schemas:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """This test worker's PostgreSQL server (started on first use, stopped at the end)."""
    from jarenlab.backends.postgres.server import LocalServer

    _server_or_skip()
    server = LocalServer().start()
    try:
        import psycopg

        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")
        yield server
    finally:
        server.stop()


def _server_or_skip() -> None:
    from jarenlab.backends.postgres.server import find_bindir

    if find_bindir() is None:
        reason = (
            "PostgreSQL server binaries not found ($JARENLAB_PG_BIN, pg_config --bindir, "
            "/usr/lib/postgresql/*/bin, PATH): the PostgreSQL half of the suite did not run"
        )
        if os.environ.get("JARENLAB_REQUIRE_PG"):
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def fault_server() -> Iterator[Any]:
    """A PostgreSQL server of its own for the fault tests, which halt, restart and end its
    sessions (the test worker's shared server is left alone). Commits are synchronous, as on a
    real server: an immediate restart then loses nothing that was acknowledged."""
    from jarenlab.backends.postgres.server import LocalServer

    _server_or_skip()
    server = LocalServer(settings={"synchronous_commit": "on"}).start()
    try:
        yield server
    finally:
        server.stop()


def terminate_sessions(server: Any, schema: str, *, wait: bool = True, timeout: float = 10.0) -> int:
    """End every server session of the store in ``schema`` (``pg_terminate_backend`` from a
    connection of its own, as an administrator would) and, with ``wait``, wait until they are
    gone (the server ends them asynchronously); returns how many there were."""
    import time

    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as admin:
        pids = [
            row[0]
            for row in admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (f"jarenlab:{schema}",)
            )
        ]
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        deadline = time.monotonic() + timeout
        alive = "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)"
        while wait and admin.execute(alive, (pids,)).fetchone()[0]:
            assert time.monotonic() < deadline, "the terminated sessions did not end"
            time.sleep(0.005)
    return len(pids)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend a test runs on (areas not yet on PostgreSQL override it with sqlite alone)."""
    return str(request.param)


@pytest.fixture
def open_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """``open_store(model, name="lab", **options)``: a fresh store on the test's backend."""
    server = request.getfixturevalue("pg_server") if backend == "postgresql" else None
    opened = Opened(backend, tmp_path, server)
    yield opened
    opened.close()


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """Drop the PostgreSQL run of a ``sqlite_only`` test and the SQLite run of a
    ``postgresql_only`` one (each marker carries its reason; the run never existed)."""
    kept, dropped = [], []
    for item in items:
        chosen = getattr(getattr(item, "callspec", None), "params", {}).get("backend")
        if (chosen == "postgresql" and item.get_closest_marker("sqlite_only")) or (
            chosen == "sqlite" and item.get_closest_marker("postgresql_only")
        ):
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
