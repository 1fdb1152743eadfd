"""Models and stores for the interval, owner and retry-safe transaction tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

TIME = {"type": "string", "format": "date-time"}

BOOKINGS: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        # Date-time bounds, one slot per room among booked records, blocking across owners.
        "bookings": {
            "key": "/id",
            "owner": "/owner",
            "schema": {
                "type": "object",
                "required": ["id", "owner", "room", "start", "end"],
                "properties": {
                    "id": {"type": "string"},
                    "owner": {"type": "string"},
                    "room": {"type": "string"},
                    "status": {"type": "string"},
                    "start": TIME,
                    "end": TIME,
                },
            },
            "intervals": [
                {"start": "/start", "end": "/end", "within": ["/room"], "when": {"status": "booked"}}
            ],
        },
        # Numeric bounds per owner: each owner's calendar is separate.
        "shifts": {
            "key": None,
            "identity": "integer",
            "owner": "/owner",
            "schema": {
                "type": "object",
                "required": ["owner", "from", "to"],
                "properties": {
                    "owner": {"type": "string"},
                    "from": {"type": "number"},
                    "to": {"type": "integer"},
                },
            },
            "intervals": [{"start": "/from", "end": "/to", "scope": "owner"}],
        },
        "runs": {"key": None, "identity": "integer", "schema": {"type": "object"}},
        "plain": {
            "key": "/id",
            "schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
        },
    },
}


def booking(
    key: str, start: str, end: str, *, room: str = "A", owner: str = "ann", status: str = "booked"
) -> dict[str, Any]:
    """A booking of ``room`` from ``start`` to ``end`` (hours like "10" or full date-times)."""
    return {"id": key, "owner": owner, "room": room, "status": status, "start": _t(start), "end": _t(end)}


def _t(value: str) -> str:
    return f"2024-05-01T{int(value):02d}:00:00Z" if value.isdigit() else value


@pytest.fixture
def model() -> dict[str, Any]:
    return copy.deepcopy(BOOKINGS)


@pytest.fixture
def store(open_store: Any, model: dict[str, Any]) -> Any:
    """A fresh store of :data:`BOOKINGS` on the test's backend."""
    return open_store(model)
