"""Models, stores and helpers for the migration tests (every test runs on SQLite and PostgreSQL)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

BASE: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "notes": {
            "key": "/id",
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "string"}, "tag": {"type": "string"}, "n": {"type": "integer"}},
            },
            "indexes": [{"name": "by_tag", "path": "$.tag"}],
        },
        "counts": {"key": None, "identity": "integer", "schema": {"type": "object"}},
    },
}

NOTES = [{"id": f"n{i}", "tag": "even" if i % 2 == 0 else "odd", "n": i} for i in range(10)]


def evolve(model: dict[str, Any], change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """A deep copy of ``model`` changed by ``change(copy)``."""
    out = copy.deepcopy(model)
    change(out)
    return out


@pytest.fixture
def model() -> dict[str, Any]:
    return copy.deepcopy(BASE)


@pytest.fixture
def store(open_store: Any, model: dict[str, Any]) -> Any:
    """A fresh store of :data:`BASE` holding :data:`NOTES` and three counts."""
    s = open_store(model)
    s["notes"].insert_many(NOTES)
    s["counts"].insert_many([{"c": 1}, {"c": 2}, {"c": 3}])
    return s
