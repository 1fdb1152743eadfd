"""Fixtures: one store per dataset, loaded once per module (queries never write)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from tests.planner.model import MODEL

CASES = Path(__file__).parent / "cases"
DATASETS: dict[str, list[dict[str, Any]]] = json.loads((CASES / "_datasets.json").read_text(encoding="utf-8"))


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
