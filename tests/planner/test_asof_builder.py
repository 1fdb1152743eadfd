"""``asof`` in the builder: the chain compiles to the store-level ``$asof``, SQL pairs it where the
keys are typed members (``asof`` mode), and its answers equal the engine's and pandas' ``merge_asof``
(backward, ``by``), on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from backend_fixtures import BACKENDS, scratch_store

import jarenlab as jl
from jarenlab.query import it
from jarenlab.query.build.joins import var

S = {"type": "string"}
MODEL = {
    "$model": "0.1",
    "collections": {
        "f": {
            "schema": {
                "type": "object",
                "required": ["o"],
                "properties": {"o": S, "t": S, "n": {"type": "integer"}},
            },
            "key": None,
            "identity": "integer",
        },
        "w": {
            "schema": {
                "type": "object",
                "required": ["o"],
                "properties": {"o": S, "t": S, "v": {"type": "integer"}},
            },
            "key": None,
            "identity": "integer",
            "indexes": [{"name": "ot", "path": ["$.o", "$.t"]}],
        },
    },
}
F = [
    {"o": "A", "t": "05", "n": 1},
    {"o": "A", "t": "02", "n": 2},  # before every observation at A
    {"o": "B", "t": "09", "n": 3},
    {"o": "A", "n": 4},  # no time: no match
    {"o": "C", "t": "09", "n": 5},  # nothing at C
    {"o": "A", "t": "07", "n": 6},
]
W = [
    {"o": "A", "t": "03", "v": 1},
    {"o": "A", "t": "05", "v": 2},
    {"o": "A", "t": "05", "v": 3},  # a tie: the last wins
    {"o": "B", "t": "08", "v": 4},
    {"o": "A", "t": "06", "v": 6},
    {"o": "B", "t": "01", "v": 7},
]


@pytest.fixture(scope="module", params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[Any]:
    s = scratch_store(request.param, request, MODEL, "asof_builder")
    s["f"].insert_many(F)
    s["w"].insert_many(W)
    yield s
    s.close()


def _same(store: Any, q: Any, mode: str = "asof") -> list[Any]:
    assert q.explain().mode == mode
    got = q.to_list()
    assert got == store.execute(q.document, pushdown=False)
    return got


def test_the_chain_is_the_store_level_asof(store: Any) -> None:
    q = store["f"].asof(store["w"], "w", on=it.t, by=it.o)
    spec = {"it": "$.f[*]", "w": "$.w[*]", "$on": ["$it.t", "$w.t"], "$by": [["$it.o", "$w.o"]], "$as": "w"}
    assert q.document == [{"$for": {"it": {"$asof": spec}}, "$let": {"w": "$it.w"}, "$return": "$it"}]
    got = _same(store, q)
    assert [(d["n"], d.get("w", {}).get("v")) for d in got] == [
        (1, 3),
        (2, None),
        (3, 4),
        (4, None),
        (5, None),
        (6, 6),
    ]
    assert q.count() == 6


def test_answers_equal_pandas_merge_asof(store: Any) -> None:
    got = _same(
        store, store["f"].asof(store["w"], "w", on=it.t, by=it.o).select({"n": it.n, "v": var("w").v})
    )
    left = pd.DataFrame([f for f in F if "t" in f]).astype({"t": int}).sort_values("t", kind="stable")
    right = pd.DataFrame(W).astype({"t": int}).sort_values("t", kind="stable")
    merged = pd.merge_asof(left, right, on="t", by="o", direction="backward")
    expected = {int(r.n): (None if pd.isna(r.v) else int(r.v)) for r in merged.itertuples()}
    assert {d["n"]: d.get("v") for d in got if d["n"] in expected} == expected


def test_where_on_both_sides_a_pair_of_keys_and_the_rest_of_the_chain(store: Any) -> None:
    q = (
        store["f"]
        .where(it.n > 1)
        .asof(store["w"].where(it.v < 7), "obs", on=(it.t, var("obs").t))
        .where(var("obs").v > 1)
        .order_by(var("obs").v.desc(), it.n)
        .select({"n": it.n, "v": var("obs").v})
    )
    assert _same(store, q) == [{"n": 6, "v": 6}, {"n": 3, "v": 4}, {"n": 5, "v": 4}]
    assert q.explain().join[0]["filtered"] and q.explain().join[1]["filtered"]


def test_a_group_by_after_the_pairing(store: Any) -> None:
    q = (
        store["f"]
        .asof(store["w"], "w", on=it.t, by=it.o)
        .group_by(o=it.o)
        .select({"o": jl.query.key("o"), "matched": jl.query.agg.count(var("w").v)})
    )
    assert sorted(_same(store, q), key=lambda d: d["o"]) == [
        {"o": "A", "matched": 2},
        {"o": "B", "matched": 1},
        {"o": "C", "matched": 0},
    ]


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"on": "t"}, "on= as a member of it"),
        ({"on": it.t + 1}, "on= as a member of it"),
        ({"on": it.t, "by": "o"}, "by= as a member of it"),
        ({"on": (it.t,)}, "on= as a member of it"),
    ],
)
def test_bad_keys_are_coded(store: Any, kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises(jl.QueryError) as e:
        store["f"].asof(store["w"], "w", **kwargs)
    assert e.value.code == "JQ2010" and says in str(e.value)


def test_bad_names_and_partners_are_coded(store: Any) -> None:
    with pytest.raises(jl.QueryError) as e:
        store["f"].asof(store["w"], "it", on=it.t)
    assert e.value.code == "JQ0006"
    with pytest.raises(jl.QueryError) as e:
        store["f"].asof([{"t": "01"}], "w", on=it.t)
    assert e.value.code == "JQ2010"
    with pytest.raises(jl.QueryError) as e:
        store["f"].order_by(it.n).asof(store["w"], "w", on=it.t)
    assert e.value.code == "JQ0007"
    with pytest.raises(jl.QueryError) as e:
        store["f"].asof(store["w"].select(it.v), "w", on=it.t)
    assert e.value.code == "JQ0034"
