"""Fixtures for the event ledger tests: a small model with one collection and two event types."""

from __future__ import annotations

import copy
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import jarenlab as jl

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "delays": {
            "schema": {
                "type": "object",
                "required": ["flight", "minutes"],
                "properties": {"flight": {"type": "integer"}, "minutes": {"type": "integer"}},
            },
            "key": None,
            "identity": "integer",
        }
    },
    "events": {
        "flight.delayed": {
            "type": "object",
            "required": ["flight", "minutes"],
            "properties": {"flight": {"type": "integer"}, "minutes": {"type": "integer", "minimum": 0}},
            "additionalProperties": False,
        },
        "flight.cancelled": {"type": "object", "required": ["flight"]},
    },
}


@pytest.fixture
def model() -> dict[str, Any]:
    """The ledger tests' model (overrides the suite-wide one)."""
    return copy.deepcopy(MODEL)


@pytest.fixture
def store(tmp_path: Any, model: dict[str, Any]) -> Iterator[jl.Store]:
    with jl.open(tmp_path / "lab.db", model) as s:
        yield s


@pytest.fixture
def raw_count() -> Callable[[jl.Store, str], int]:
    """Rows in a table, read by a fresh connection (so only committed rows count)."""

    def count(store: jl.Store, table: str) -> int:
        conn = sqlite3.connect(store.path)
        try:
            return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        finally:
            conn.close()

    return count
