"""The columns' ``$min``/``$max`` of a number member against the engine's: the least or greatest by
value, the first of equal values (``2`` or ``2.0``, ``0`` or ``-0.0``), integers beyond 2^53 beside
floats compared exactly, missing members skipped, empty groups; per group and for the whole query,
and over a store on both backends (the items, and the Arrow and pandas exports)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from jarenlab.query import agg, evaluate, it, key
from jarenlab.query.columnar.whole import extremes
from jarenlab.query.lang.functions import FUNCTIONS
from jarenlab.query.planner.run import run_query

#: Numbers a float64 column holds exactly: integers (those beyond 2^53 a double holds exactly),
#: floats, and values equal across kinds and signs.
NUMBERS = st.one_of(
    st.integers(-1000, 1000),
    st.sampled_from([0, 2, -2, 2**53, 2**53 + 2, 2**60, -(2**62), 2**63 - 2**10]),
    st.floats(allow_nan=False),
    st.sampled_from([0.0, -0.0, 2.0, -2.0, 2.0**53, 2.0**53 + 2, 2.0**60, 2.0**60 + 256, 5e-324, 0.5]),
)


def _check(pairs: list[tuple[int, Any]], count: int) -> None:
    """Per group, and for the whole query (one group of every value), the columns' answer is the
    engine's ``$min``/``$max`` of the group's values in order, kind and sign included."""
    groups = np.array([g for g, _ in pairs], dtype=np.int64)
    data = np.array([float(v) for _, v in pairs], dtype=np.float64)
    marks = np.array([type(v) is int for _, v in pairs], dtype=bool)
    ints = marks if marks.any() else None
    for fn in ("min", "max"):
        want = [FUNCTIONS[fn]([[v for gg, v in pairs if gg == g]], "") for g in range(count)]
        assert repr(extremes(fn, data, ints, groups, count)) == repr(want), (fn, pairs)
        whole = FUNCTIONS[fn]([[v for _, v in pairs]], "")
        assert repr(extremes(fn, data, ints)) == repr([whole]), (fn, pairs)
        if not any(type(v) is float for _, v in pairs):  # an int64 column
            held = np.array([v for _, v in pairs], dtype=np.int64)
            assert repr(extremes(fn, held, None, groups, count)) == repr(want), (fn, pairs)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), NUMBERS), max_size=40))
def test_each_groups_extreme_is_the_engines(pairs: list[tuple[int, Any]]) -> None:
    """Random groups (one of four left empty at times) of integers and floats mixed."""
    _check([(g, v) for g, v in pairs if type(v) is float or float(v) == v], 4)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0, 0.0, -0.0, 2, 2.0, -2, -2.0])), max_size=12))
def test_equal_values_of_other_kinds_and_signs_give_the_first(pairs: list[tuple[int, Any]]) -> None:
    """Groups made of ties only: which one comes first decides the answer."""
    _check(pairs, 3)


MODEL = {
    "$model": "0.1",
    "collections": {
        "m": {
            "key": None,
            "identity": "integer",
            "schema": {"type": "object", "properties": {"g": {"type": "string"}, "x": {"type": "number"}}},
        }
    },
}
#: Ties both ways round, zeros of every kind and sign, integers beyond 2^53 next to equal and
#: nearby floats, a group whose members are all missing, a group of integers only.
DOCS: list[dict[str, Any]] = [
    {"g": "int-first", "x": 2},
    {"g": "int-first", "x": 2.0},
    {"g": "int-first", "x": 7.5},
    {"g": "float-first", "x": 2.0},
    {"g": "float-first", "x": 2},
    {"g": "float-first", "x": 1.0},
    {"g": "float-first", "x": 1},
    {"g": "zeros", "x": -0.0},
    {"g": "zeros", "x": 0},
    {"g": "zeros", "x": 0.0},
    {"g": "zeros2", "x": 0.0},
    {"g": "zeros2", "x": -0.0},
    {"g": "big", "x": 2.0**60 + 256},
    {"g": "big", "x": 2**60},
    {"g": "big", "x": 2.0**60},
    {"g": "big", "x": -(2**62)},
    {"g": "big", "x": -(2.0**62)},
    {"g": "missing"},
    {"g": "missing"},
    {"g": "ints", "x": 3},
    {"g": "ints", "x": -4},
    {"g": "zeros2"},
]


def _answers(t: Any, document: Any) -> tuple[Any, Any, Any, Any]:
    """(columns, SQL, engine) answers of ``document``, and the columns' trace."""
    got, trace, _ = run_query(t, document, {}, columns=True)
    sql = run_query(t, document, {}, columns=False)[0]
    docs = [json.loads(x) for x in t.texts()[1]]
    return got, sql, evaluate(document, docs, {}), trace


def test_the_columns_answer_number_extremes_as_the_engine(open_store: Any) -> None:
    """Per group (ordered by an extreme, filtered on one), the whole query, a single aggregate and
    a filter keeping no rows: the columns answer each, as the engine and SQL do."""
    with open_store(MODEL) as s:
        t = s["m"]
        t.insert_many(DOCS)
        both = {"lo": agg.min(it.x), "hi": agg.max(it.x)}
        questions = [
            t.group_by(g=it.g).select({"g": key("g"), **both}).document,
            t.group_by(g=it.g).order_by(agg.max(it.x).desc()).select({"g": key("g"), **both}).document,
            t.group_by(g=it.g).select({"g": key("g"), **both}).where(it.lo <= 0).document,
            t.select({"n": agg.count(it.x), **both}).document,
            t.where(it.g == "zeros").select(both).document,
            t.where(it.g == "none").select(both).document,
            {"$max": [t.where(it.g != "big").select(it.x)._expr()]},
            {"$min": [t.where(it.g == "float-first").select(it.x)._expr()]},
        ]
        for document in questions:
            got, sql, engine, trace = _answers(t, document)
            assert trace.mode == "columnar", (document, trace.columns)
            assert repr(got) == repr(engine), (got, engine)
            assert repr(sql) == repr(engine)
        grouped = run_query(t, questions[0], {}, columns=True)[0][0]
        by = {r["g"]: (r.get("lo", "none"), r.get("hi", "none")) for r in grouped}
        assert repr(by["int-first"]) == "(2, 7.5)" and repr(by["float-first"]) == "(1.0, 2.0)"
        assert repr(by["zeros"]) == "(-0.0, -0.0)" and repr(by["zeros2"]) == "(0.0, 0.0)"
        assert repr(by["big"]) == f"({-(2**62)}, {2.0**60 + 256!r})" and by["missing"] == ("none", "none")


def test_the_exports_of_number_extremes_are_the_sql_paths(open_store: Any) -> None:
    """``to_arrow()`` and ``to_pandas()`` of a group-by's extremes from warm columns equal those the
    planner's SQL path gives once the columns are dropped: the same types (a double where the
    results mix integers and floats, an integer column where they hold integers only)."""
    with open_store(MODEL) as s:
        t = s["m"]
        t.insert_many(DOCS)
        q = (
            t.where(it.g != "missing")
            .group_by(g=it.g)
            .select({"g": key("g"), "lo": agg.min(it.x), "hi": agg.max(it.x)})
        )
        whole_ints = t.where(it.g == "ints").select({"lo": agg.min(it.x), "hi": agg.max(it.x)})
        s.columns.warm("m")
        assert q.explain().mode == "columnar" and whole_ints.explain().mode == "columnar"
        warm = q.to_arrow(), q.to_pandas(), whole_ints.to_arrow()
        s.columns.drop()
        assert q.explain().mode != "columnar"
        cold = q.to_arrow(), q.to_pandas(), whole_ints.to_arrow()
        assert warm[0].equals(cold[0]) and warm[2].equals(cold[2]), (warm, cold)
        pd.testing.assert_frame_equal(warm[1], cold[1])
        assert str(warm[0].schema.field("lo").type) == "double"
        assert str(warm[2].schema.field("lo").type) == "int64"
        assert np.signbit(warm[1].set_index("g").loc["zeros", "lo"])


def test_an_integer_a_double_cannot_hold_beside_floats_declines(open_store: Any) -> None:
    """2^53 + 1 beside floats: the column cannot hold it exactly, so the columns decline with the
    reason in ``explain()``, and SQL or the engine answers as the engine does."""
    with open_store(MODEL) as s:
        t = s["m"]
        t.insert_many([{"g": "a", "x": 2**53 + 1}, {"g": "a", "x": 2.0**53}, {"g": "b", "x": 0.5}])
        document = t.group_by(g=it.g).select({"g": key("g"), "hi": agg.max(it.x)}).document
        got, sql, engine, trace = _answers(t, document)
        assert trace.mode != "columnar" and "a double cannot hold" in trace.columns["reason"]
        assert repr(got) == repr(engine) == repr(sql)
        assert got[0][0]["hi"] == 2**53 + 1 and type(got[0][0]["hi"]) is int
