"""Loading that cannot mislabel: the DataFrame path and the dict path store the same documents."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jarenlab as jl
from jarenlab.frames import records_from
from jarenlab.values import is_missing, to_json

OPEN = {
    "$model": "0.1",
    "collections": {"rows": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}
KEYED = {
    "$model": "0.1",
    "collections": {
        "people": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "string"}, "age": {"type": "integer"}},
            },
            "key": "/id",
        },
        "auto": {"schema": {"type": "object"}, "key": None, "identity": "integer"},
    },
}


def code_of(call: Any) -> str:
    with pytest.raises(jl.JarenlabError) as info:
        call()
    return info.value.code


def dict_path(frame: pd.DataFrame) -> list[Any]:
    """One dict per row, as ``df.to_dict("records")`` gives it, with the documented rule for a table:
    a null cell (None, NaN, NA, NaT) is an absent member."""
    out = []
    for row in frame.to_dict("records"):
        out.append(to_json({k: v for k, v in row.items() if v is not None and not is_missing(v)}))
    return out


ZONES = [dt.UTC, dt.timezone(dt.timedelta(hours=5, minutes=30)), dt.timezone(dt.timedelta(hours=-8))]
moments = st.datetimes(min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2100, 1, 1))
aware = st.builds(lambda m, z: m.replace(tzinfo=z), moments, st.sampled_from(ZONES))
timestamps = st.one_of(moments, aware, moments.map(pd.Timestamp), aware.map(pd.Timestamp))
missing = st.sampled_from([None, math.nan, pd.NaT, pd.NA, np.nan])
scalars = st.one_of(
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5).filter(lambda s: "\x00" not in s),
    st.booleans(),
    st.integers(-100, 100).map(np.int64),
    st.floats(-1e6, 1e6).map(np.float64),
)
nested = st.dictionaries(st.sampled_from(["a", "b"]), st.one_of(scalars, st.none()), max_size=2)


def column(n: int) -> st.SearchStrategy[list[Any]]:
    cell = st.one_of(scalars, timestamps, nested, missing)
    return st.one_of(
        st.lists(cell, min_size=n, max_size=n),  # an object column mixing kinds
        st.lists(st.one_of(timestamps, missing), min_size=n, max_size=n),  # mixed zones
        st.lists(st.one_of(st.integers(-9, 9), st.just(math.nan)), min_size=n, max_size=n),
        st.lists(st.floats(allow_infinity=False), min_size=n, max_size=n),
        st.lists(moments, min_size=n, max_size=n),  # a datetime64 column
        st.lists(aware.map(lambda t: t.astimezone(dt.UTC)), min_size=n, max_size=n),  # datetime64[ns, UTC]
    )


@st.composite
def frames_(draw: Any) -> pd.DataFrame:
    n = draw(st.integers(1, 6))
    names = draw(st.lists(st.sampled_from(["x", "y", "t", "odd key"]), unique=True, min_size=1, max_size=3))
    data = {name: draw(column(n)) for name in names}
    frame = pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in data.items()})
    for name in names:  # let pandas infer what it would infer from a CSV or a constructor
        if draw(st.booleans()):
            try:
                frame[name] = pd.Series(data[name])
            except (TypeError, ValueError):
                pass
    return frame


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames_())
def test_the_frame_path_stores_what_one_dict_per_row_stores(frame: pd.DataFrame) -> None:
    assert [to_json(r) for r in records_from(frame)] == dict_path(frame)


def test_mixed_zones_are_never_mislabelled_in_either_order(open_store: Any) -> None:
    aware_t = pd.Timestamp("2020-01-01 05:00", tz="Europe/Paris")
    naive_t = pd.Timestamp("2020-01-01 05:00")
    rows = open_store(OPEN)["rows"]
    for order in ([aware_t, naive_t], [naive_t, aware_t]):
        rows.insert_many(pd.DataFrame({"t": order}))
    got = [d["t"] for d in rows.to_list()]
    assert got == [
        "2020-01-01T04:00:00Z",
        "2020-01-01T05:00:00",
        "2020-01-01T05:00:00",
        "2020-01-01T04:00:00Z",
    ]


def test_a_mixed_column_is_stored_faithfully_and_bad_columns_are_named(open_store: Any) -> None:
    rows = open_store(OPEN)["rows"]
    rows.insert_many(pd.DataFrame({"v": ["a", 1, 2.5, True, None, {"n": np.int64(2)}]}))
    assert [d.get("v") for d in rows.to_list()] == ["a", 1, 2.5, True, None, {"n": 2}]
    with pytest.raises(jl.StoreError) as info:
        rows.insert_many(pd.DataFrame([[1, 2]], columns=["a", "a"]))
    assert info.value.code == "JD2135" and "'a'" in info.value.reason
    assert code_of(lambda: rows.insert_many(pd.DataFrame({0: [1]}))) == "JD2135"
    with pytest.raises(jl.JarenlabError) as err:
        rows.insert_many(pd.DataFrame({"ok": [1, 2], "bad": [1, {1, 2}]}))
    assert err.value.code == "JD2008" and "/bad" in err.value.reason and err.value.position == 1
    assert rows.count() == 6


def test_nan_means_absent_in_dicts_as_in_frames(open_store: Any) -> None:
    rows = open_store(OPEN)["rows"]
    rows.insert({"a": math.nan, "b": {"c": pd.NaT, "d": 1}, "e": pd.NA, "f": None})
    rows.insert_many(pd.DataFrame({"a": [math.nan], "f": [None]}))
    assert rows.to_list() == [{"b": {"d": 1}, "f": None}, {}]
    assert code_of(lambda: rows.insert({"a": [math.nan]})) == "JD2008"  # an array item cannot be absent


def test_the_index_is_kept_when_it_is_the_key(open_store: Any) -> None:
    store = open_store(KEYED)
    people = store["people"]
    frame = pd.DataFrame({"age": [30, 40]}, index=pd.Index(["ann", "bob"], name="id"))
    assert people.insert_many(frame) == 2  # named like the key: it is the key
    assert people.get("bob") == {"id": "bob", "age": 40}
    other = pd.DataFrame({"age": [50]}, index=["cy"])
    assert people.insert_many(other, key_from_index=True) == 1 and people.get("cy") == {"id": "cy", "age": 50}
    auto = store["auto"]
    auto.insert_many(pd.DataFrame({"v": ["x", "y"]}, index=[10, 20]), key_from_index=True)
    assert auto.get(20) == {"v": "y"} and auto.get(1) is None
    named = pd.DataFrame({"v": [1]}, index=pd.Index(["g"], name="group"))
    auto.insert_many(named)  # a named index is data: it becomes a member
    assert auto.get(21) == {"group": "g", "v": 1}
    assert code_of(lambda: auto.insert_many([{"v": 1}], key_from_index=True)) == "JD2010"
    clash = pd.DataFrame({"id": ["z"]}, index=pd.Index(["q"], name="id"))
    assert code_of(lambda: people.insert_many(clash)) == "JD2135"


def test_put_many_is_a_bulk_upsert_so_a_rerun_cell_does_not_double(open_store: Any) -> None:
    store = open_store(KEYED)
    people = store["people"]
    frame = pd.DataFrame({"id": ["ann", "bob"], "age": [30, 40]})
    assert people.put_many(frame) == 2 and people.put_many(frame) == 2
    assert people.count() == 2
    people.put_many([{"id": "bob", "age": 41}, {"id": "cy"}])
    assert people.get("bob") == {"id": "bob", "age": 41} and people.count() == 3
    assert code_of(lambda: people.put_many([{"id": "x"}, {"id": "x", "age": 1}])) == "JD2001"
    assert code_of(lambda: people.put_many([{"id": "d"}, {"id": "e", "age": "old"}])) == "JD2003"
    assert people.count() == 3  # nothing half-written
    auto = store["auto"]
    assert code_of(lambda: auto.put_many([{"v": 1}])) == "JD2010"
    indexed = pd.DataFrame({"v": [1, 2]}, index=[5, 6])
    auto.put_many(indexed, key_from_index=True)
    auto.put_many(indexed.assign(v=[7, 8]), key_from_index=True)
    assert auto.to_list() == [{"v": 7}, {"v": 8}]


def test_arrow_tables_still_load(open_store: Any) -> None:
    rows = open_store(OPEN)["rows"]
    rows.insert_many(pa.table({"a": [1, None], "s": [{"x": 1, "y": None}, None]}))
    assert rows.to_list() == [{"a": 1, "s": {"x": 1}}, {}]


def test_period_and_interval_columns_are_refused_and_categories_store_their_values(open_store: Any) -> None:
    """A Period column was stored as integer ordinals and an Interval one as {left, right}: now JD2008."""
    rows = open_store(OPEN)["rows"]
    months = pd.period_range("2024-01", periods=3, freq="M")
    for column in (months, pd.interval_range(0, 3), pd.Categorical(months)):
        with pytest.raises(jl.JarenlabError) as info:
            rows.insert_many(pd.DataFrame({"m": column}))
        assert info.value.code == "JD2008" and "column 'm'" in info.value.reason
        assert ".astype(str)" in info.value.reason
    with pytest.raises(jl.JarenlabError) as info:
        to_json(months[0])
    assert info.value.code == "JD2008" and "to_timestamp()" in info.value.reason
    assert rows.count() == 0
    rows.insert_many(pd.DataFrame({"c": pd.Categorical(["a", "b", None]), "m": months.astype(str)}))
    assert [{k: v for k, v in d.items()} for d in rows.to_list()] == [
        {"c": "a", "m": "2024-01"},
        {"c": "b", "m": "2024-02"},
        {"m": "2024-03"},
    ]


def test_arrow_extension_columns_are_refused(open_store: Any) -> None:
    """``pa.Table.from_pandas`` of a Period column makes an extension type whose values read as
    int64 ordinals: it was stored as those; now JD2008 naming the column and its type, and nothing
    of the table is stored. A plain Arrow table of the same frame converted first loads."""
    rows = open_store(OPEN)["rows"]
    months = pd.period_range("2024-01", periods=3, freq="M")
    frame = pd.DataFrame({"n": [1, 2, 3], "m": months})
    for table in (
        pa.Table.from_pandas(frame),
        pa.Table.from_pandas(pd.DataFrame({"i": pd.interval_range(0, 3)})),
    ):
        with pytest.raises(jl.JarenlabError) as info:
            rows.insert_many(table)
        assert info.value.code == "JD2008" and "extension type pandas." in info.value.reason
        assert ".astype(str)" in info.value.reason
    assert rows.count() == 0
    rows.insert_many(pa.Table.from_pandas(frame.assign(m=frame["m"].astype(str))))
    assert [d["m"] for d in rows.to_list()] == ["2024-01", "2024-02", "2024-03"]
