"""Exports give back exactly the stored documents: the Arrow fast path (checked against to_list),
and ``to_pandas()`` cell by cell, whatever the members hold."""

from __future__ import annotations

import math
from typing import Any

import hypothesis.strategies as st
import orjson
import pandas as pd
from hypothesis import HealthCheck, given, settings

import jarenlab as jl

MODEL = {
    "$model": "0.1",
    "collections": {
        "t": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "integer"},
                    "s": {"type": "string"},
                    "n": {"type": "integer"},
                    "f": {"type": "number"},
                    "b": {"type": "boolean"},
                    "o": {
                        "type": "object",
                        "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
                    },
                },
            },
            "key": "/id",
        }
    },
}

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8)
inner = st.fixed_dictionaries({}, optional={"x": st.integers(-(2**53), 2**53), "y": text})
members = st.fixed_dictionaries(
    {},
    optional={
        "s": text,
        "n": st.integers(-(2**53), 2**53),
        "f": st.floats(allow_nan=False, allow_infinity=False, width=64),
        "b": st.booleans(),
        "o": inner,
    },
)


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    return value


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(members, max_size=30))
def test_to_arrow_rows_equal_the_documents(rows: list[dict[str, Any]]) -> None:
    docs = [{"id": i, **row} for i, row in enumerate(rows)]
    with jl.open(model=MODEL) as store:
        t = store["t"]
        t.insert_many(docs)
        exported = [_drop_nulls(r) for r in t.to_arrow().to_pylist()]
        assert exported == t.to_list() == docs
        frame = t.to_pandas()
        assert list(frame.index) == [d["id"] for d in docs]


ANY_MODEL = {
    "$model": "0.1",
    "collections": {"u": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**62), 2**62)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
values = st.recursive(
    scalars,
    lambda inside: st.lists(inside, max_size=3) | st.dictionaries(text, inside, max_size=3),
    max_leaves=6,
)
any_members = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), values, max_size=4)


def _plain(value: Any) -> Any:
    """A frame cell as the JSON value it stands for (numpy scalars as Python ones); None for a
    cell that holds nothing (the member is missing, or was stored as null)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") and not isinstance(value, (list, dict)) else value


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, integers apart from floats (``1`` is not ``1.0``)."""
    return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(any_members, max_size=25))
def test_to_pandas_gives_back_what_was_stored(rows: list[dict[str, Any]]) -> None:
    """Nested objects are not unified ({"a": 1} stays itself), lists stay lists, integers stay
    integers beside floats, schemaless members are their values (not JSON text)."""
    with jl.open(model=ANY_MODEL) as store:
        store["u"].insert_many(rows)
        keys = store["u"].keys()
        frame = store["u"].to_pandas()
        assert list(frame.index) == list(keys)
        for doc, (_, row) in zip(rows, frame.iterrows()):
            got = {k: _plain(v) for k, v in row.items()}
            got = {k: v for k, v in got.items() if v is not None}
            want = {k: v for k, v in doc.items() if v is not None}
            assert _same(got, want), (got, want)
