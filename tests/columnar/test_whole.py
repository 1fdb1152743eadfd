"""Whole-query aggregates answered by the columns as one group, without group codes
(:mod:`jarenlab.query.columnar.whole`): every kind, value for value the general group-by pass's
and the engine's; their edges (no rows after a filter, every member missing, integers beyond 2^53
and beyond 64 bits, 2.0 in an integer member), a live query of the shape following writes, and the
reason a whole-query average over a large sum gives in ``explain()``."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jarenlab.errors import JarenlabError
from jarenlab.query import agg, evaluate, it, param
from jarenlab.query.columnar.columns import Column, Decline
from jarenlab.query.columnar.exact import int_total, total
from jarenlab.query.columnar.groups import aggregate
from jarenlab.query.columnar.whole import ARROW_ROWS, whole
from jarenlab.query.lang.functions import exact_sum
from jarenlab.query.planner.preds import AggOut, Field
from jarenlab.query.planner.run import run_query
from jarenlab.query.planner.whole import WHOLE_AVERAGE
from tests.query.corpus import same

MODEL = {
    "$model": "0.1",
    "collections": {
        "w": {
            "key": None,
            "identity": "integer",
            "schema": {
                "type": "object",
                "properties": {
                    "g": {"type": "string"},
                    "i": {"type": "integer"},
                    "x": {"type": "number"},
                    "s": {"type": "string"},
                },
            },
        }
    },
}
#: Every kind of whole-query aggregate over each member it applies to.
SELECT = {
    "n": agg.count(),
    "ni": agg.count(it.i),
    "si": agg.sum(it.i),
    "ai": agg.avg(it.i),
    "lo": agg.min(it.i),
    "hi": agg.max(it.i),
    "nx": agg.count(it.x),
    "sx": agg.sum(it.x),
    "ax": agg.avg(it.x),
    "mx": agg.median(it.x),
    "mi": agg.median(it.i),
    "di": agg.std(it.i),
    "px": agg.std(it.x, ddof=0),
    "first": agg.min(it.s),
    "last": agg.max(it.s),
    "ns": agg.count(it.s),
    "kinds": agg.count_distinct(it.g),
    "ints": agg.count_distinct(it.i),
    "k": "whole",
}


def _doc(rng: random.Random, big: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"g": rng.choice("pqrs")}
    if rng.random() < 0.8:
        d["i"] = rng.choice([rng.randint(-(2**62), 2**62), 2**62, 2**53 + 1]) if big else rng.randint(-50, 50)
    if rng.random() < 0.8:
        d["x"] = rng.choice([rng.uniform(-10, 10), rng.randint(-3, 3), 0.1, 1e16, -1e16, -0.0, 5e-324])
    if rng.random() < 0.7:
        d["s"] = rng.choice(["a", "B", "é", "", "zz", "\U0001f600"])
    return d


def _engine(document: Any, docs: list[dict[str, Any]]) -> Any:
    try:
        return evaluate(document, docs, {})
    except JarenlabError as err:  # (the engine's coded error is the answer)
        return err.code


def _three(t: Any, document: Any) -> tuple[Any, Any, Any, str]:
    """(columns, SQL, engine) answers of ``document``, and the mode the columns' run took."""
    got, trace, _ = run_query(t, document, {}, columns=True)
    sql = run_query(t, document, {}, columns=False)[0]
    _, texts = t.texts()
    return got, sql, _engine(document, [json.loads(x) for x in texts]), trace.mode


@pytest.mark.parametrize("big", [False, True])
def test_whole_query_aggregates_are_the_engines(open_store: Any, big: bool) -> None:
    """Every kind over random members (missing ones among them; with ``big``, integers of 2^53 and
    more whose sums pass 64 bits), filters keeping all, some and no rows, every member missing
    under a filter: the columns answer, equal to SQL and the engine."""
    rng = random.Random(11 + big)
    docs = [_doc(rng, big) for _ in range(400)]
    with open_store(MODEL) as s:
        t = s["w"]
        t.insert_many(docs)
        questions = [
            t.select(SELECT),
            t.where(it.g == "p").select(SELECT),
            t.where(it.g == "none").select(SELECT),  # no rows after the filter
            t.where(~it.i.exists() & ~it.x.exists() & ~it.s.exists()).select(SELECT),  # all missing
            t.where(it.i > param("m")).select({"n": agg.count(), "a": agg.avg(it.i)}),
        ]
        for q in questions[:4]:
            got, sql, engine, mode = _three(t, q.document)
            assert mode == "columnar", q.document
            assert same(got, engine), (got, engine)
            assert same(sql, engine)
        empty = run_query(t, questions[2].document, {}, columns=True)[0]
        assert empty == [
            [{"n": 0, "ni": 0, "si": 0, "nx": 0, "sx": 0, "ns": 0, "kinds": 0, "ints": 0, "k": "whole"}]
        ]
        got, trace, _ = run_query(t, questions[4].document, {"m": 10}, columns=True)
        assert trace.mode == "columnar" and same(got, evaluate(questions[4].document, docs, {"m": 10}))
        # One aggregate of the whole query (no map): the same one group.
        for fn in ("sum", "avg", "min", "max", "median", "count"):
            document = {f"${fn}": [t.where(it.g != "q").select(it.i)._expr()]}
            got, sql, engine, mode = _three(t, document)
            assert mode == "columnar" and same(got, engine), (fn, got, engine)


def test_a_float_written_in_an_integer_member_leaves_the_whole_query_to_sql(open_store: Any) -> None:
    """``2.0`` in an integer member: the column cannot answer (the engine's sum is then a float), the
    reason says so, and SQL or the engine answers as the engine does."""
    docs = [{"g": "p", "i": 3}, {"g": "q", "i": 2.0}, {"g": "p", "x": 1.5}]
    with open_store(MODEL) as s:
        t = s["w"]
        t.insert_many(docs)
        q = t.select({"n": agg.count(), "si": agg.sum(it.i), "ai": agg.avg(it.i)})
        got, trace, _ = run_query(t, q.document, {}, columns=True)
        assert trace.mode != "columnar" and "2.0" in trace.columns["reason"]
        assert same(got, evaluate(q.document, [json.loads(x) for x in t.texts()[1]], {}))
        assert type(got[0][0]["si"]) is float
        # A float in a number member beside integers is the column's: a float sum, as the engine's.
        q = t.select({"sx": agg.sum(it.x), "ax": agg.avg(it.x)})
        got, trace, _ = run_query(t, q.document, {}, columns=True)
        assert trace.mode == "columnar" and got == [[{"sx": 1.5, "ax": 1.5}]]


def test_integers_written_in_a_number_member_sum_to_an_integer_below_2_53(open_store: Any) -> None:
    """A number member holding only integers (a float elsewhere, outside the filter) sums to an
    integer; from 2^53 on that integer is not exact in a double: the columns decline."""
    docs = [
        {"g": "p", "x": 2},
        {"g": "p", "x": 5},
        {"g": "q", "x": 0.5},
        {"g": "r", "x": 2**53},
        {"g": "r", "x": 1},
    ]
    with open_store(MODEL) as s:
        t = s["w"]
        t.insert_many(docs)
        q = t.where(it.g == "p").select({"sx": agg.sum(it.x), "ax": agg.avg(it.x)})
        got, trace, _ = run_query(t, q.document, {}, columns=True)
        assert trace.mode == "columnar" and got == [[{"sx": 7, "ax": 3.5}]] and type(got[0][0]["sx"]) is int
        q = t.where(it.g == "r").select({"sx": agg.sum(it.x)})
        got, trace, _ = run_query(t, q.document, {}, columns=True)
        assert trace.mode != "columnar" and "2^53" in trace.columns["reason"]
        assert got == [[{"sx": 2**53 + 1}]]


def test_a_live_whole_query_aggregate_from_warm_columns_follows_writes(open_store: Any) -> None:
    """The columns warm, a live query of the shape answers from them after every commit (inserts,
    an update, a delete) as the engine's fresh run does."""
    rng = random.Random(5)
    with open_store(MODEL) as s:
        t = s["w"]
        t.insert_many([_doc(rng, False) for _ in range(50)])
        s.columns.warm("w")
        q = t.where(it.g != "s").select(
            {"n": agg.count(), "si": agg.sum(it.i), "ax": agg.avg(it.x), "hi": agg.max(it.i)}
        )
        assert t.explain(q.document, analyze=True).mode == "columnar"
        live = q.live()
        for step in range(12):
            if step % 4 == 3:
                t.delete(rng.choice(t.texts()[0]))
            elif step % 4 == 2:
                t.patch(rng.choice(t.texts()[0]), {"i": 2**62})
            else:
                t.insert(_doc(rng, step % 2 == 1))
            want = evaluate(q.document, [json.loads(x) for x in t.texts()[1]], {})
            assert same(live.rows, want[0]), (step, live.rows, want)
            assert t.explain(q.document, analyze=True).mode == "columnar"
        live.close()


def test_a_long_integer_columns_kept_range_follows_appends_and_updates(open_store: Any) -> None:
    """Every row's least and greatest integer (which bound an Arrow sum) are kept with the column:
    an insert beyond them grows them, an update or a delete of the extreme computes them again.
    After each write the columns' answers are the engine's."""
    with open_store(MODEL) as s:
        t = s["w"]
        n = ARROW_ROWS + 10
        t.insert_many([{"i": k % 1000} if k % 7 else {"g": "a"} for k in range(n)], progress=False)
        s.columns.warm("w")
        q = t.select({"lo": agg.min(it.i), "hi": agg.max(it.i), "s": agg.sum(it.i), "a": agg.avg(it.i)})
        key = t.insert({"i": 5000})
        writes = [
            lambda: None,
            lambda: t.insert({"i": -(2**62)}),  # (the sum bound now takes the exact total)
            lambda: t.patch(key, {"i": 3}),
            lambda: t.delete(t.where(it.i == -(2**62)).keys()[0]),
            lambda: t.insert({"i": 2**40}),
        ]
        for step, write in enumerate(writes):
            write()
            got = t.execute(q.document, columns=True)
            assert got == t.execute(q.document, columns=False), step
            assert t.explain(q.document).mode == "columnar", step


def test_a_whole_query_average_over_a_large_sum_says_why_sql_left_it(open_store: Any) -> None:
    """SQL's whole-query average over a sum of 2^53 or more goes to the engine with its own reason
    (nothing orders or filters by it); a group's average keeps the group-by's reason."""
    docs = [{"g": "p", "i": 2**52}, {"g": "p", "i": 2**52 + 1}]
    with open_store(MODEL) as s:
        t = s["w"]
        t.insert_many(docs)
        mapped = t.select({"n": agg.count(), "a": agg.avg(it.i)}).document
        for document in (mapped, {"$avg": [t.select(it.i)._expr()]}):
            ex = t.explain(document, analyze=True, columns=False)
            assert ex.fallback == WHOLE_AVERAGE, ex.fallback
            assert WHOLE_AVERAGE in repr(ex) and "order or filter" not in repr(ex)
            assert same(t._run_query(document, {}, columns=False), evaluate(document, docs, {}))
        grouped = t.group_by(g=it.g).select({"a": agg.avg(it.i)}).document
        ex = t.explain(grouped, analyze=True, columns=False)
        assert ex.fallback == "a sum of 2^53 or more: its average in SQL (to order or filter by) may differ"


# -- one group against the general pass, value for value ---------------------------------------
NUMBERS = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-100, 100),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.1, 0.2, 1e16, -1e16, -0.0, 0.0, 5e-324, 2.0**60, 1.5, math.inf, -math.inf]),
)
FNS = ("count", "sum", "avg", "min", "max", "median", "stddev", "stddev-pop", "count-distinct")
#: What the planner gives the columns of a string member.
STRINGS = ("count", "min", "max", "count-distinct")


def _column(kind: str, cells: list[Any]) -> Column:
    """A column as the build holds it: int64, float64 with integer marks, or text."""
    f = Field(("v",), {"int": "integer", "float": "number", "str": "string"}[kind], None)
    if kind == "int":
        return Column(f, pa.array([None if c is None else int(c) for c in cells], type=pa.int64()))
    if kind == "str":
        return Column(f, pa.array([None if c is None else str(c) for c in cells], type=pa.large_string()))
    values = [None if c is None else float(c) for c in cells]
    ints = np.array([type(c) is int for c in cells], dtype=bool)
    return Column(f, pa.array(values, type=pa.float64()), ints if ints.any() else None)


def _general(a: AggOut, cols: dict[Field, Column], rows: np.ndarray | None, n: int) -> Any:
    size = n if rows is None else len(rows)
    try:
        return aggregate(a, cols, rows, np.zeros(size, dtype=np.int64), 1, np.array([size]))[0]
    except Decline as why:
        return ("declined", str(why))


def _one(a: AggOut, cols: dict[Field, Column], rows: np.ndarray | None, n: int) -> Any:
    try:
        return whole(a, cols, rows, n)
    except Decline as why:
        return ("declined", str(why))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["int", "float", "str"]),
    st.lists(st.one_of(st.none(), NUMBERS), max_size=40),
    st.one_of(st.none(), st.lists(st.booleans(), min_size=40, max_size=40)),
)
def test_one_group_is_the_general_pass(kind: str, cells: list[Any], keep: list[bool] | None) -> None:
    """Every aggregate of one group equals the general pass's with every row in group 0 (or both
    decline for the same reason), over any kept rows: none, some, all."""
    if kind == "int":
        cells = [
            c if c is None or type(c) is int else int(c) if math.isfinite(c) and abs(c) < 2**63 else 1
            for c in cells
        ]
    if kind == "float":
        cells = [c if type(c) is not int or abs(c) < 2**53 else float(c) for c in cells]
    col = _column(kind, cells)
    cols = {col.field: col}
    rows = None if keep is None else np.flatnonzero(np.array(keep[: len(cells)], dtype=bool))
    for fn in STRINGS if kind == "str" else FNS:
        a = AggOut(fn, col.field)
        assert repr(_one(a, cols, rows, len(cells))) == repr(_general(a, cols, rows, len(cells))), fn
    rows_only = AggOut("count", None)
    assert _one(rows_only, cols, rows, len(cells)) == _general(rows_only, cols, rows, len(cells))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50), st.lists(NUMBERS, max_size=50))
def test_one_groups_sums_are_the_engines(ints: list[int], floats: list[Any]) -> None:
    """The exact integer total (beyond 64 bits too) and the correctly rounded float total, as the
    engine's ``$sum`` gives them."""
    assert int_total(np.array(ints, dtype=np.int64)) == sum(ints)
    values = [float(v) for v in floats if type(v) is float or abs(v) < 2**53]
    want = exact_sum(values, "") if values else 0.0
    got = total(np.array(values, dtype=np.float64))
    assert repr(got) == repr(want) or (math.isnan(got) and math.isnan(want))


def test_a_million_integers_near_the_64_bit_limit_sum_exactly() -> None:
    """High and low halves summed apart: exact where numpy's own sum would wrap."""
    rng = np.random.default_rng(2)
    values = rng.integers(2**62, 2**63 - 1, 1_000_000, dtype=np.int64)
    values[::3] *= -1
    assert int_total(values) == sum(values.tolist())


@pytest.mark.parametrize("top", [1000, 2**62])
def test_a_long_integer_column_is_summed_by_arrow_as_by_the_general_pass(top: int) -> None:
    """From :data:`ARROW_ROWS` rows, every row's count, extremes, sum and average come from Arrow's
    kernels (missing members skipped in place); near 2^63 the partial sums could pass 64 bits and
    the exact total is taken instead. Each equals the general pass's, and none, all missing."""
    rng = np.random.default_rng(4)
    n = ARROW_ROWS + 5
    cells: list[Any] = rng.integers(-top, top, n).tolist()
    for i in rng.choice(n, 300, replace=False).tolist():
        cells[i] = None
    for data in (cells, [None] * n):
        col = _column("int", data)
        cols = {col.field: col}
        for fn in ("count", "sum", "avg", "min", "max"):
            a = AggOut(fn, col.field)
            assert repr(_one(a, cols, None, n)) == repr(_general(a, cols, None, n)), (fn, top)
    want = sum(c for c in cells if c is not None)
    assert whole(AggOut("sum", col.field), {col.field: _column("int", cells)}, None, n) == [want]
