"""Formats are enforced on write; date-time members come back from exports as UTC timestamps."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import jarenlab as jl
from jarenlab import it

from .conftest import MODEL


def code_of(call: Any) -> str:
    with pytest.raises(jl.JarenlabError) as info:
        call()
    return info.value.code


def test_formats_are_enforced_on_write(open_store: Any) -> None:
    prices = open_store(MODEL)["prices"]
    base = {"symbol": "A", "close": 1.0}
    assert code_of(lambda: prices.insert({**base, "date": "2020-13-45"})) == "JD2003"
    assert code_of(lambda: prices.insert({**base, "date": "yesterday"})) == "JD2003"
    naive = dt.datetime(2020, 1, 2, 9, 30)  # no zone: not an RFC 3339 date-time
    with pytest.raises(jl.ValidationError) as info:
        prices.insert({**base, "date": "2020-01-02", "at": naive})
    assert info.value.code == "JD2003" and "date-time" in str(info.value)
    prices.insert({**base, "date": dt.date(2020, 1, 2), "at": naive.replace(tzinfo=dt.UTC)})
    assert prices.count() == 1


def test_exports_give_date_time_members_as_utc_timestamps(open_store: Any) -> None:
    prices = open_store(MODEL)["prices"]
    paris = pd.Timestamp("2020-01-02 10:00", tz="Europe/Paris")
    prices.insert_many(
        [
            {"symbol": "A", "date": "2020-01-02", "close": 1.0, "at": paris},
            {"symbol": "B", "date": "2020-01-03", "close": 2.0},
        ]
    )
    whole = prices.to_pandas()
    assert str(whole["at"].dtype) == "datetime64[ns, UTC]"
    assert whole["at"].iloc[0] == pd.Timestamp("2020-01-02 09:00", tz="UTC") and pd.isna(whole["at"].iloc[1])
    assert whole["date"].tolist() == ["2020-01-02", "2020-01-03"]  # a date stays its text
    assert pa.types.is_timestamp(prices.to_arrow().schema.field("at").type)
    q = prices.where(it.symbol == "A")
    assert str(q.to_pandas()["at"].dtype) == "datetime64[ns, UTC]"
    picked = q.select({"when": it.at, "s": it.symbol}).to_pandas()
    assert picked["when"].iloc[0] == paris
    assert q.select({"text": it.symbol}).to_pandas()["text"].tolist() == ["A"]
