"""The planner tests' model and data: typed, untyped and mixed members, with missing and null."""

from __future__ import annotations

from typing import Any

#: Array members: of strings, and of objects with an integer and a string member.
ARRAYS: dict[str, Any] = {
    "tags": {"type": "array", "items": {"type": "string"}},
    "legs": {
        "type": "array",
        "items": {"type": "object", "properties": {"d": {"type": "integer"}, "c": {"type": "string"}}},
    },
}

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "docs": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "string"},
                    "s": {"type": "string"},
                    "i": {"type": "integer"},
                    "n": {"type": "number"},
                    "b": {"type": "boolean"},
                    "o": {"type": "object", "properties": {"t": {"type": "string"}}},
                    **ARRAYS,
                },
            },
            "key": "/id",
            "indexes": [
                {"name": "by_s", "path": "$.s"},
                {"name": "by_i", "path": "$.i"},
                {"name": "by_s_i", "path": ["$.s", "$.i"]},
                {"name": "by_x", "path": "$.x"},
                {"name": "by_ot", "path": "$.o.t"},
                {"name": "by_n", "path": "$.n"},
            ],
        },
        "tenants": {
            "schema": {
                "type": "object",
                "required": ["id", "tenant"],
                "properties": {
                    "id": {"type": "string"},
                    "tenant": {"type": "string"},
                    "v": {"type": "integer"},
                },
            },
            "key": "/id",
            "indexes": [{"name": "by_tenant", "path": "$.tenant"}],
        },
    },
}

#: Paths the DuckDB side knows (member name -> column prefix).
PATHS = {
    "id": "id",
    "s": "s",
    "i": "i",
    "n": "n",
    "b": "b",
    "x": "x",
    "m": "m",
    "o.t": "o_t",
    "odd key": "odd",
}
