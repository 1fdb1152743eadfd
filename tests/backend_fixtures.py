"""Stores on every backend: the ``backend`` fixture and the factories the areas' fixtures use.

``backend`` is the name of each registered backend in turn (:data:`jarenlab.backends.REGISTERED`).
A test (or an area's ``conftest.py``) that asks for ``open_store`` gets a factory that opens a fresh
store on that backend, made by the backend's :class:`Harness`: a file in ``tmp_path`` on SQLite, a
fresh schema on the test run's own PostgreSQL server (one per test worker, started from the
machine's server binaries, see :class:`jarenlab.backends.postgres.server.LocalServer`). A test that
needs something only some backends do says so with ``@pytest.mark.needs(capability, reason)``,
a capability of :data:`jarenlab.backends.CAPABILITIES`; its runs on the others never exist.

Where the server binaries are missing the PostgreSQL half is skipped with the reason, unless
``JARENLAB_REQUIRE_PG=1`` (CI sets it): then it fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.backends import CAPABILITIES, REGISTERED, registered

#: Every registered backend, by name: the ``backend`` fixture runs a test once on each.
BACKENDS = tuple(entry.name for entry in REGISTERED)


def _file_target(tmp_path: Path, name: str, server: Any) -> dict[str, Any]:
    return {"path": tmp_path / f"{name}.db"}


def _schema_target(tmp_path: Path, name: str, server: Any) -> dict[str, Any]:
    schema = f"t_{uuid.uuid5(uuid.NAMESPACE_URL, f'{tmp_path}/{name}').hex[:16]}"
    return {"path": server.url(), "schema": schema}


def _drop_schemas(server: Any, targets: list[dict[str, Any]]) -> None:
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        for target in targets:
            conn.execute(f'DROP SCHEMA IF EXISTS "{target["schema"]}" CASCADE')


def _sqlite_backend(tmp_path: Path, server: Any, **options: Any) -> Any:
    from jarenlab.backends.sqlite import SQLiteBackend

    return SQLiteBackend(str(tmp_path / "contract.db"), **options)


def _postgresql_backend(tmp_path: Path, server: Any, **options: Any) -> Any:
    import psycopg

    from jarenlab.backends.postgres import PostgresBackend

    schema = f"c_{uuid.uuid5(uuid.NAMESPACE_URL, str(tmp_path)).hex[:16]}"
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    return PostgresBackend(server.url(), schema=schema, **options)


@dataclass(frozen=True)
class Harness:
    """How the tests make fresh stores and bare backends on one registered backend.

    Attributes:
        server: the session fixture giving the backend's server, or None (an embedded backend).
        target: ``(tmp_path, name, server)`` -> ``jl.open``'s path and the options naming a fresh
            store (the same name gives the same store).
        scratch: ``(name, server)`` -> the path and options of a store a test module keeps.
        again: the options that name an open store again besides its path (``store.backend``'s).
        drop: removes what ``target`` made (None: ``tmp_path`` goes with the test).
        backend: ``(tmp_path, server, **options)`` -> a bare backend over a fresh, empty database
            (every call in a test reaches the same one): the contract suites' backend.
    """

    server: str | None
    target: Callable[[Path, str, Any], dict[str, Any]]
    scratch: Callable[[str, Any], dict[str, Any]]
    again: Callable[[Any], dict[str, Any]]
    backend: Callable[..., Any]
    drop: Callable[[Any, list[dict[str, Any]]], None] | None = None


#: One harness per registered backend (a test checks that none is missing).
HARNESSES: dict[str, Harness] = {
    "sqlite": Harness(
        server=None,
        target=_file_target,
        scratch=lambda name, server: {"path": None},
        again=lambda backend: {},
        backend=_sqlite_backend,
    ),
    "postgresql": Harness(
        server="pg_server",
        target=_schema_target,
        scratch=lambda name, server: {"path": server.url(), "schema": name},
        again=lambda backend: {"schema": backend.schema},
        backend=_postgresql_backend,
        drop=_drop_schemas,
    ),
}


def server_for(backend: str, request: pytest.FixtureRequest) -> Any:
    """The server of a backend's harness for this test (started on first use), or None."""
    name = HARNESSES[backend].server
    return request.getfixturevalue(name) if name is not None else None


def scratch_store(backend: str, request: pytest.FixtureRequest, model: Any, name: str, **options: Any) -> Any:
    """A store a module-scoped fixture keeps on ``backend`` (``name`` names its schema on a server)."""
    where = HARNESSES[backend].scratch(name, server_for(backend, request))
    return jl.open(where.pop("path"), model, **where, **options)


class Opened:
    """Opens stores on one backend and closes (and on a server drops) them after the test."""

    def __init__(self, backend: str, tmp_path: Path, server: Any) -> None:
        self.backend = backend
        self.harness = HARNESSES[backend]
        self.tmp_path = tmp_path
        self.server = server
        self.stores: list[Any] = []
        self.targets: list[dict[str, Any]] = []

    def target(self, name: str = "lab") -> dict[str, Any]:
        """``{"path": ..., **options}`` naming a fresh store (the same name gives the same store)."""
        where = self.harness.target(self.tmp_path, name, self.server)
        if where not in self.targets:
            self.targets.append(dict(where))
        return where

    def __call__(self, model: Any = None, name: str = "lab", **options: Any) -> Any:
        where = self.target(name)
        store = jl.open(where.pop("path"), model, **where, **options)
        self.stores.append(store)
        return store

    def reopen(self, store: Any, model: Any = None, **options: Any) -> Any:
        """The same store opened again (after ``store.close()``, or beside it)."""
        again = jl.open(store.path, model, **self.harness.again(store.backend), **options)
        self.stores.append(again)
        return again

    def close(self) -> None:
        for store in self.stores:
            store.close()
        if self.harness.drop is not None and self.targets:
            self.harness.drop(self.server, self.targets)


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
    """The name of the registered backend a test runs on (a test that needs a capability runs only
    on the backends that have it: the ``needs`` marker)."""
    return str(request.param)


@pytest.fixture
def open_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """``open_store(model, name="lab", **options)``: a fresh store on the test's backend."""
    opened = Opened(backend, tmp_path, server_for(backend, request))
    yield opened
    opened.close()


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """Drop the runs of a ``needs(capability, reason)`` test on the backends that lack the capability
    (the registry's ``capabilities``; the run never existed). A capability the registry does not
    know is a usage error, so a misspelt marker cannot drop a test silently."""
    kept, dropped = [], []
    for item in items:
        chosen = getattr(getattr(item, "callspec", None), "params", {}).get("backend")
        lacks = False
        for mark in item.iter_markers("needs"):
            if len(mark.args) != 2 or mark.args[0] not in CAPABILITIES:
                raise pytest.UsageError(
                    f"{item.nodeid}: needs(capability, reason) names one of {sorted(CAPABILITIES)}"
                )
            lacks = lacks or (chosen is not None and mark.args[0] not in registered(chosen).capabilities)
        (dropped if lacks else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
