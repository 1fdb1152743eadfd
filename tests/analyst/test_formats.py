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


def test_the_other_formats_jsonschema_rs_knows_are_enforced_too(open_store: Any) -> None:
    formats = {"e": "email", "u": "uuid", "ip": "ipv4", "t": "time", "r": "regex", "w": "uri"}
    model = {
        "$model": "0.1",
        "collections": {
            "c": {
                "schema": {
                    "type": "object",
                    "properties": {k: {"type": "string", "format": f} for k, f in formats.items()},
                },
                "key": None,
                "identity": "integer",
            }
        },
    }
    c = open_store(model)["c"]
    bad = {"e": "nope", "u": "xyz", "ip": "999.1.1.1", "t": "25:99:00", "r": "(", "w": "not a uri"}
    for member, value in bad.items():
        assert code_of(lambda m=member, v=value: c.insert({m: v})) == "JD2003", member
    good = {"e": "a@b.co", "u": "12345678-1234-1234-1234-123456789012", "ip": "1.2.3.4"}
    c.insert({**good, "t": "10:00:00Z", "r": "a+", "w": "https://example.org/x"})
    assert c.count() == 1


def test_a_format_the_validator_does_not_know_is_refused_with_a_near_miss() -> None:
    def model(fmt: str) -> dict[str, Any]:
        props = {"at": {"type": "string", "format": fmt}, "v": {"const": {"format": "data, not a keyword"}}}
        schema = {"type": "object", "properties": props}
        return {"$model": "0.1", "collections": {"c": {"schema": schema, "key": None, "identity": "integer"}}}

    with pytest.raises(jl.ModelError) as info:
        jl.open(model=model("datetime"))
    assert info.value.code == "JD0005" and "did you mean 'date-time'?" in info.value.reason
    assert info.value.doc_path == "/collections/c/schema/properties/at/format"
    with pytest.raises(jl.ModelError) as info:
        jl.open(model=model("made-up"))
    assert "nothing would be checked" in info.value.reason and "uuid" in info.value.reason
    jl.open(model=model("uuid")).close()


def test_an_integer_beyond_a_floats_precision_beside_floats_exports_widened(open_store: Any) -> None:
    """A member holding 2^53 + 1 in one document and 1.5 in another: every export answers (Arrow
    refuses to widen such an integer by itself), as the nearest float, as Arrow's JSON reader
    widens it for ``to_arrow()``; pandas' own ``to_pandas()`` keeps each value as stored."""
    model = {
        "$model": "0.1",
        "collections": {"e": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
    }
    e = open_store(model)["e"]
    big = 2**53 + 1
    e.insert_many([{"w": big, "s": "a"}, {"w": 1.5}, {"s": [1]}])
    assert e.to_arrow().column("w").to_pylist() == [float(big), 1.5, None]
    assert e.to_pandas()["w"].tolist() == [big, 1.5, None]
    assert e.to_pandas(flatten=True)["w"].tolist()[:2] == [float(big), 1.5]
    picked = e.select({"w": it.w})
    assert picked.to_arrow().column("w").to_pylist() == [float(big), 1.5, None]
    assert picked.to_pandas()["w"].tolist()[:2] == [float(big), 1.5]
    assert e.select(it.w).to_pandas()["value"].tolist() == [float(big), 1.5]
    assert picked.to_list() == [{"w": big}, {"w": 1.5}, {}]  # the values themselves are exact
