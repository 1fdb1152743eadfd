"""Validated writes, reads by key, conversions, and export."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import jarenlab as jl


def code_of(call: Any) -> str:
    with pytest.raises(jl.JarenlabError) as info:
        call()
    return info.value.code


def test_insert_get_put_delete(store: Any) -> None:
    notes = store["notes"]
    assert notes.insert({"id": "a", "tag": "x"}) == "a"
    assert code_of(lambda: notes.insert({"id": "a"})) == "JD2001"
    assert notes.get("a") == {"id": "a", "tag": "x"}
    assert notes.put({"id": "a", "tag": "y"}) == "a"
    assert notes.put({"id": "b"}) == "b"
    assert notes.get("a") == {"id": "a", "tag": "y"}
    assert code_of(lambda: notes.put({"id": "a"}, key="z")) == "JD2002"
    assert notes.delete("a") is True and notes.delete("a") is False
    assert notes.get("a") is None
    assert notes.count() == len(notes) == 1


def test_invalid_documents_carry_the_validators_messages(store: Any) -> None:
    notes = store["notes"]
    with pytest.raises(jl.JarenlabError) as info:
        notes.insert({"id": "a", "score": "high", "tag": 3})
    err = info.value
    assert err.code == "JD2003" and err.collection == "notes"
    assert len(err.errors) == 2 and any("/score" in e for e in err.errors)
    assert notes.count() == 0
    assert code_of(lambda: notes.insert({"tag": "no id"})) == "JD2003"
    assert code_of(lambda: notes.insert(["not", "an", "object"])) == "JD2010"


def test_a_failed_batch_writes_nothing_and_names_the_position(store: Any) -> None:
    notes = store["notes"]
    docs = [{"id": str(i), "score": i} for i in range(12_000)]
    docs[11_000]["score"] = "bad"
    with pytest.raises(jl.JarenlabError) as info:
        notes.insert_many(docs)
    assert info.value.code == "JD2003" and info.value.position == 11_000
    assert "document 11000" in str(info.value)
    assert notes.count() == 0
    docs[11_000]["score"] = 1
    docs[11_500]["id"] = "3"
    with pytest.raises(jl.JarenlabError) as info:
        notes.insert_many(docs)
    assert info.value.code == "JD2001" and info.value.position == 11_500 and info.value.key == "3"
    assert notes.count() == 0


def test_progress_is_true_false_or_none(store: Any) -> None:
    """``insert_many(docs, progress="yes")`` wrote without a bar and without a word (only True
    showed one): progress other than True, False or None is JD0006, before anything is written."""
    notes = store["notes"]
    for call in (notes.insert_many, notes.put_many):
        for given in ("yes", 1, 0):
            with pytest.raises(jl.JarenlabError) as info:
                call([{"id": "a"}], progress=given)
            assert info.value.code == "JD0006" and "progress must be True" in info.value.reason
    assert notes.count() == 0
    assert notes.insert_many([{"id": "a"}], progress=False) == 1


def test_insert_many_from_dataframe_and_arrow(store: Any) -> None:
    notes = store["notes"]
    frame = pd.DataFrame({"id": ["a", "b"], "score": pd.array([1, None], dtype="Int64"), "tag": ["t", None]})
    assert notes.insert_many(frame) == 2
    assert notes.get("b") == {"id": "b"}
    assert notes.get("a") == {"id": "a", "score": 1, "tag": "t"}
    table = pa.table({"id": ["c"], "o": [{"x": 1.5}]})
    assert notes.insert_many(table) == 1
    assert notes.get("c") == {"id": "c", "o": {"x": 1.5}}
    assert notes.insert_many(iter([{"id": "d"}])) == 1
    assert code_of(lambda: notes.insert_many({"id": "e"})) == "JD2010"


def test_identity_keys(store: Any) -> None:
    auto, uids = store["auto"], store["uids"]
    assert auto.insert({"v": 1}) == 1
    assert auto.insert_many([{"v": 2}, {"v": 3}]) == 2
    assert auto.get(3) == {"v": 3}
    assert auto.put({"v": 30}, key=3) == 3 and auto.get(3) == {"v": 30}
    assert auto.put({"v": 4}) == 4
    assert code_of(lambda: auto.get("3") or auto.delete("3")) == "JD2002"
    key = uids.insert({"v": 1})
    assert uuid.UUID(key).version == 4 and uids.get(key) == {"v": 1}


def test_patch_json_patch_and_merge_patch(store: Any) -> None:
    notes = store["notes"]
    notes.insert({"id": "a", "tag": "x", "score": 1})
    assert notes.patch(
        "a", [{"op": "replace", "path": "/score", "value": 2}, {"op": "remove", "path": "/tag"}]
    ) == {"id": "a", "score": 2}
    assert notes.patch("a", {"tag": "y", "score": None}) == {"id": "a", "tag": "y"}
    assert notes.get("a") == {"id": "a", "tag": "y"}
    # the result is validated: nothing changes when it is invalid
    assert code_of(lambda: notes.patch("a", {"score": "x"})) == "JD2003"
    assert code_of(lambda: notes.patch("a", [{"op": "test", "path": "/tag", "value": "zz"}])) == "JD2009"
    assert code_of(lambda: notes.patch("a", [{"op": "replace", "path": "/nope/x", "value": 1}])) == "JD2009"
    assert code_of(lambda: notes.patch("a", {"id": "b"})) == "JD2002"
    assert code_of(lambda: notes.patch("zz", {"tag": "q"})) == "JD2006"
    assert code_of(lambda: notes.patch("a", "nonsense")) == "JD2009"
    assert notes.get("a") == {"id": "a", "tag": "y"}


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        (np.int64(7), 7),
        (np.float32(0.5), 0.5),
        (np.bool_(True), True),
        (np.array([1, 2]), [1, 2]),
        (dt.datetime(2013, 1, 1, 5, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))), "2013-01-01T03:30:00Z"),
        (dt.datetime(2013, 1, 1, 5, 30), "2013-01-01T05:30:00"),
        (pd.Timestamp("2013-01-01 05:00", tz="UTC"), "2013-01-01T05:00:00Z"),
        (dt.date(2013, 1, 2), "2013-01-02"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        ((1, "a"), [1, "a"]),
    ],
)
def test_documented_conversions(store: Any, value: Any, stored: Any) -> None:
    store["auto"].insert({"v": value})
    assert store["auto"].get(1) == {"v": stored}


@pytest.mark.parametrize("value", [math.inf, -math.inf, b"bytes", Decimal("1.1"), {1, 2}, object()])
def test_values_json_cannot_hold_are_refused(store: Any, value: Any) -> None:
    with pytest.raises(jl.JarenlabError) as info:
        store["auto"].insert({"nested": {"v": value}})
    assert info.value.code == "JD2008" and "/nested/v" in str(info.value)
    assert store["auto"].count() == 0


INTEGER_KEYED = {
    "$model": "0.1",
    "collections": {
        "k": {
            "schema": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}},
            "key": "/n",
        }
    },
}


def test_documents_hold_integers_of_64_bits_signed_or_unsigned_and_keys_signed(
    store: Any, open_store: Any
) -> None:
    """A document's integers run from -2^63 to 2^64 - 1 (what the JSON writer takes), on every
    backend; beyond that, and for an integer key beyond the database's signed 64 bits, JD2008."""
    auto = store["auto"]
    edges = [-(2**63), 2**63 - 1, 2**63, 2**64 - 1]
    key = auto.insert({"v": edges, "o": {"n": 2**64 - 1}})
    assert auto.get(key) == {"v": edges, "o": {"n": 2**64 - 1}}
    assert [type(v) for v in auto.get(key)["v"]] == [int] * 4
    for beyond in (2**64, -(2**63) - 1, 2**100):
        with pytest.raises(jl.JarenlabError) as info:
            auto.insert({"o": {"n": beyond}})
        assert info.value.code == "JD2008" and "-2^63 to 2^64 - 1" in str(info.value), info.value
    assert auto.count() == 1
    keyed = open_store(INTEGER_KEYED, name="keyed")["k"]
    assert keyed.insert({"n": 2**63 - 1}) == 2**63 - 1 and keyed.insert({"n": -(2**63)}) == -(2**63)
    for beyond in (2**63, -(2**63) - 1):
        calls = [lambda c=c, b=beyond: c.get(b) for c in (auto, keyed)]
        calls += [lambda c=c, b=beyond: c.delete(b) for c in (auto, keyed)]
        calls += [
            lambda b=beyond: auto.put({"v": 1}, key=b),
            lambda b=beyond: keyed.insert({"n": b}),
            lambda b=beyond: keyed.put({"n": b}),
        ]
        assert [code_of(call) for call in calls] == ["JD2008"] * 7
    assert auto.count() == 1 and keyed.count() == 2


def test_non_string_keys_are_refused(store: Any) -> None:
    assert code_of(lambda: store["auto"].insert({1: "x"})) == "JD2008"


def test_export_to_pandas_arrow_and_list(store: Any) -> None:
    notes = store["notes"]
    notes.insert_many([{"id": "a", "score": 1, "o": {"x": 1.5}}, {"id": "b", "tag": "t"}])
    assert notes.to_list() == [{"id": "a", "score": 1, "o": {"x": 1.5}}, {"id": "b", "tag": "t"}]
    frame = notes.to_pandas()
    assert list(frame.index) == ["a", "b"] and frame.index.name == "key"
    assert frame.loc["a", "score"] == 1 and pd.isna(frame.loc["b", "score"])
    flat = notes.to_pandas(flatten=True)
    assert "o.x" in flat.columns and flat.loc["a", "o.x"] == 1.5
    table = notes.to_arrow()
    assert table.num_rows == 2 and table.schema.field("score").type == pa.int64()
    assert "o.x" in notes.to_arrow(flatten=True).column_names


def test_export_of_mixed_kinds_gives_back_the_values(store: Any) -> None:
    auto = store["auto"]
    auto.insert_many([{"v": 1}] * 3 + [{"v": "text"}, {"v": [1, 2]}])
    frame = auto.to_pandas()
    # an object column of the values as stored (not JSON text, nor a numpy array for the list)
    assert list(frame["v"]) == [1, 1, 1, "text", [1, 2]] and frame["v"].dtype == object
    assert [type(v) for v in frame["v"]] == [int, int, int, str, list]
    assert auto.to_list()[3:] == [{"v": "text"}, {"v": [1, 2]}]


def test_nul_characters_are_refused_but_escaped_text_is_not(store: Any) -> None:
    with pytest.raises(jl.JarenlabError) as info:
        store["auto"].insert({"a": ["ok", "x\x00y"]})
    assert info.value.code == "JD2008" and "/a/1" in str(info.value)
    assert code_of(lambda: store["auto"].insert({"k\x00": 1})) == "JD2008"
    key = store["auto"].insert({"a": "a backslash then u0000: \\u0000"})
    assert store["auto"].get(key) == {"a": "a backslash then u0000: \\u0000"}


def test_integer_columns_with_gaps_stay_integers(store: Any) -> None:
    store["notes"].insert_many([{"id": "a", "score": 1}, {"id": "b"}])
    frame = store["notes"].to_pandas()
    assert str(frame["score"].dtype) == "Int64" and frame.loc["a", "score"] == 1
