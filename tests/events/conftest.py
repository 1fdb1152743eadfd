"""Fixtures for the event ledger tests: a small model with one collection and two event types."""

from __future__ import annotations

import copy
import sqlite3
from collections.abc import Callable
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
def store(open_store: Any, model: dict[str, Any]) -> jl.Store:
    return open_store(model)


@pytest.fixture
def raw_count(backend: str) -> Callable[[jl.Store, str], int]:
    """Rows in a table, read by a fresh connection (so only committed rows count)."""

    def count(store: jl.Store, table: str) -> int:
        conn = raw_connection(backend, store)
        try:
            return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        finally:
            conn.close()

    return count


def raw_connection(backend: str, store: jl.Store) -> Any:
    """A connection of the driver's own to the store's database (its schema on PostgreSQL)."""
    if backend == "sqlite":
        return sqlite3.connect(store.path)
    import psycopg

    conn = psycopg.connect(store.path, autocommit=True)
    conn.execute(f'SET search_path TO "{store.backend.schema}"')
    return conn


def child_args(target: dict[str, Any]) -> list[str]:
    """A store target (``open_store.target(name)``) as two arguments for a child process, which
    opens it with ``jl.open(sys.argv[1], schema=sys.argv[2] or None)``."""
    return [str(target["path"]), target.get("schema") or ""]
