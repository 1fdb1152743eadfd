"""Fixtures: one store per dataset, loaded once per module (queries never write); the tally of
what the differential checked, per path, printed at the end of the run and held to a floor."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from tests.planner.model import MODEL
from tests.planner.tally import TALLY

CASES = Path(__file__).parent / "cases"
DATASETS: dict[str, list[dict[str, Any]]] = json.loads((CASES / "_datasets.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True, scope="module")
def _tally_module(request: pytest.FixtureRequest) -> None:
    TALLY.enter(request.module.__name__.rpartition(".")[2])


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
    opened = {}
    for name, docs in DATASETS.items():
        store = jl.open(model=MODEL)
        store["docs"].insert_many(docs if name != "tenants" else [])
        store["tenants"].insert_many(DATASETS["tenants"])
        opened[name] = store
    yield opened
    for store in opened.values():
        store.close()


@pytest.fixture
def store() -> Iterator[Any]:
    s = jl.open(model=MODEL)
    s["docs"].insert_many(DATASETS["mix"])
    s["tenants"].insert_many(DATASETS["tenants"])
    yield s
    s.close()
