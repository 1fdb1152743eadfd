"""An analyst's first hour: a stock-price collection (closed and open schemas) on both backends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

PRICES: dict[str, Any] = {
    "type": "object",
    "required": ["symbol", "date", "close"],
    "properties": {
        "symbol": {"type": "string"},
        "name": {"type": "string"},
        "date": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "close": {"type": "number"},
        "volume": {"type": "integer"},
        "note": {"type": ["string", "null"]},
        "meta": {
            "type": "object",
            "properties": {"sector": {"type": "string"}},
            "additionalProperties": False,
        },
    },
}

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "prices": {
            "schema": PRICES,
            "key": None,
            "identity": "integer",
            "indexes": [{"name": "by_symbol", "path": "$.symbol"}],
        },
        "closed": {"schema": {**PRICES, "additionalProperties": False}, "key": None, "identity": "integer"},
    },
}

ROWS: list[dict[str, Any]] = [
    {
        "symbol": "AAPL",
        "name": "Apple Inc",
        "date": "2020-01-02",
        "close": 300.35,
        "volume": 10,
        "meta": {"sector": "tech"},
    },
    {"symbol": "AAPL", "name": "Apple Inc", "date": "2020-01-03", "close": 297.43, "volume": 12},
    {"symbol": "MSFT", "name": "Microsoft", "date": "2020-01-02", "close": 160.62, "volume": 7, "note": None},
    {
        "symbol": "XOM",
        "name": "Exxon ^Mobil",
        "date": "2020-01-03",
        "close": -1.5,
        "volume": 3,
        "note": "odd",
    },
]


@pytest.fixture
def lab(open_store: Callable[..., Any]) -> Callable[..., Any]:
    """``lab(**options)``: a store with ``prices`` and ``closed`` loaded with :data:`ROWS`."""

    def make(**options: Any) -> Any:
        store = open_store(MODEL, **options)
        store["prices"].insert_many(ROWS)
        store["closed"].insert_many(ROWS)
        return store

    return make
