"""A model from data: infer, print, edit, open, load the same data."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jarenlab as jl
from jarenlab import it


def test_a_model_inferred_from_a_frame_opens_and_loads_that_frame(open_store: Any) -> None:
    frame = pd.DataFrame(
        {
            "symbol": ["AAPL", "AAPL", "MSFT"],
            "day": pd.to_datetime(["2020-01-02", "2020-01-03", "2020-01-02"]),
            "at": pd.to_datetime(["2020-01-02 15:00"] * 3).tz_localize("America/New_York"),
            "close": [300.35, 297.43, 160.62],
            "volume": np.array([10, 12, 7], dtype=np.int64),
            "note": ["x", None, "y"],
            "listed": [True, True, False],
            "meta": [{"sector": "tech", "n": 1}, {"sector": "tech"}, {"sector": "tech", "n": 2.5}],
        }
    )
    model = jl.infer_model(frame, name="prices")
    decl = model["collections"]["prices"]
    props = decl["schema"]["properties"]
    assert props["symbol"] == {"type": "string"} and props["close"] == {"type": "number"}
    assert props["volume"] == {"type": "integer"} and props["listed"] == {"type": "boolean"}
    assert props["day"] == {"type": "string", "format": "date"}
    assert props["at"] == {"type": "string", "format": "date-time"}
    assert props["meta"]["properties"]["n"] == {"type": "number"} and props["meta"]["required"] == ["sector"]
    assert "note" not in decl["schema"]["required"] and "symbol" in decl["schema"]["required"]
    assert decl["key"] is None and decl["identity"] == "integer"
    assert {"name": "by_symbol", "path": "$.symbol"} in decl["indexes"]
    store = open_store(model)
    assert store["prices"].insert_many(frame) == 3
    assert store["prices"].where(it.day == dt.date(2020, 1, 2)).count() == 2
    assert str(store["prices"].to_pandas()["at"].dtype) == "datetime64[ns, UTC]"


def test_a_key_from_records_or_from_the_index(open_store: Any) -> None:
    rows = [{"id": "a", "n": 1, "tags": ["x"]}, {"id": "b", "n": None, "tags": []}]
    decl = jl.infer_model(rows, key="id", name="things")["collections"]["things"]
    assert decl["key"] == "/id" and "identity" not in decl
    assert decl["schema"]["properties"]["n"] == {"type": ["integer", "null"]}
    assert decl["schema"]["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    frame = pd.DataFrame({"n": [1, 2]}, index=pd.Index(["a", "b"], name="id"))
    model = jl.infer_model(frame, key="id", name="things")
    store = open_store(model)
    store["things"].put_many(frame)
    assert store["things"].get("b") == {"id": "b", "n": 2}


def test_mixed_and_naive_values_and_refusals() -> None:
    rows = [{"v": 1, "t": dt.datetime(2020, 1, 1, 5)}, {"v": "x", "t": dt.datetime(2020, 1, 2, 6)}]
    props = jl.infer_model(rows)["collections"]["rows"]["schema"]["properties"]
    assert props["v"] == {"type": ["integer", "string"]}
    assert props["t"]["type"] == "string" and "tz_localize" in props["t"]["description"]
    with pytest.raises(jl.JarenlabError) as info:
        jl.infer_model([{"id": 1}, {}], key="id")
    assert info.value.code == "JD2002"
    with pytest.raises(jl.JarenlabError):
        jl.infer_model([1, 2])
    with pytest.raises(jl.JarenlabError):
        jl.infer_model(rows, name="bad name")
