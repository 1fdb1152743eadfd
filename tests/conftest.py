"""Shared fixtures: a small model and a fresh store per test."""

from __future__ import annotations

from typing import Any

import pytest

#: The ``backend``, ``open_store`` and ``pg_server`` fixtures: stores on SQLite and PostgreSQL.
pytest_plugins = ["backend_fixtures"]

NOTES: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "notes": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "string"},
                    "tag": {"type": "string"},
                    "score": {"type": "integer"},
                    "o": {"type": "object", "properties": {"x": {"type": "number"}}},
                },
            },
            "key": "/id",
            "indexes": [
                {"name": "by_tag", "path": "$.tag"},
                {"name": "by_tag_score", "path": ["$.tag", "$.score"]},
                {"name": "by_ox", "path": "$.o.x"},
            ],
        },
        "auto": {"schema": {"type": "object"}, "key": None, "identity": "integer"},
        "uids": {"schema": {"type": "object"}, "key": None, "identity": "uuid"},
    },
}


@pytest.fixture
def model() -> dict[str, Any]:
    import copy

    return copy.deepcopy(NOTES)


@pytest.fixture
def store(open_store: Any, model: dict[str, Any]) -> Any:
    return open_store(model)
