"""Live-query fixtures: a store with a text-keyed and an integer-keyed collection, and an oracle."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab.query import compile_query

PROPS = {
    "g": {"type": "string"},
    "n": {"type": "integer"},
    "x": {"type": "number"},
    "s": {"type": "string"},
}
MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "items": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "string"}, **PROPS},
            },
            "key": "/id",
        },
        "nums": {"schema": {"type": "object", "properties": PROPS}, "key": None, "identity": "integer"},
    },
}


@pytest.fixture
def store(open_store: Any) -> Any:
    return open_store(MODEL)


def fresh(collection: Any, document: Any, externals: dict[str, Any], *, windowed: bool) -> list[Any]:
    """A fresh run with the live order's tie-break: for a window, documents enter the engine's
    stable sort in key order (code points), so ties come out by key ascending."""
    keys, texts = collection.texts()
    import orjson

    pairs = list(zip(keys, map(orjson.loads, texts)))
    if windowed:
        pairs.sort(key=lambda p: p[0])
    return compile_query(document).run([d for _, d in pairs], externals)
