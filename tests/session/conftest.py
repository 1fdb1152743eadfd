"""The session tests' model: airlines and their flights (a declared relation), both versioned,
and a log collection without a version member."""

from __future__ import annotations

from typing import Any

AIRLINE = {
    "type": "object",
    "required": ["code", "rev"],
    "properties": {"code": {"type": "string"}, "name": {"type": "string"}, "rev": {"type": "integer"}},
}
FLIGHT = {
    "type": "object",
    "required": ["id", "rev"],
    "properties": {
        "id": {"type": "integer"},
        "carrier": {"type": "string"},
        "delay": {"type": ["integer", "null"]},
        "route": {"type": "object"},
        "tags": {"type": "array"},
        "rev": {"type": "integer"},
    },
}
MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "airlines": {"schema": AIRLINE, "key": "/code", "version": "/rev"},
        "flights": {
            "schema": FLIGHT,
            "key": "/id",
            "version": "/rev",
            "relations": {"airline": {"to": "airlines", "via": "/carrier", "on_delete": "restrict"}},
        },
        "log": {
            "schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
            "key": "/id",
        },
        "tally": {"schema": {"type": "object"}, "key": None, "identity": "integer"},
    },
}
