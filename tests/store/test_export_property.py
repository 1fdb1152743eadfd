"""The Arrow export fast path gives back exactly the stored documents (checked against to_list)."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
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
