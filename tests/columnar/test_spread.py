"""The columns' medians and standard deviations against the engine's ``$median`` and ``$stddev``,
bit for bit, group by group; and over a store, the columnar path against the engine."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jarenlab as jl
from jarenlab import agg, it, key
from jarenlab.errors import JarenlabError
from jarenlab.query import evaluate
from jarenlab.query.columnar.spread import medians, stddevs
from jarenlab.query.lang.functions import FUNCTIONS
from jarenlab.query.planner.run import run_query

FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1000, max_value=1000).map(lambda x: round(x, 2)),
    st.sampled_from([0.1, 0.2, 0.3, 1e16, -1e16, 1.0, 2.0**60, 5e-324, -5e-324, 2.5e-308, -0.0, 0.0]),
    st.sampled_from([1.7e308, -1.7e308, 8.9e307, 1e154, -1e154]),
)
INTS = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-1000, 1000),
    st.sampled_from([3037000499, -3037000499, 3037000500, 2**52, 2**52 + 1, 2**53 + 1]),
)


def engine(name: str, items: list[Any], ddof: int | None = None) -> list[Any] | str:
    """The engine's answer for one group, or its error code."""
    try:
        got: list[Any] = FUNCTIONS[name]([items] + ([] if ddof is None else [[ddof]]), "")
    except JarenlabError as err:
        return err.code
    return got


def columns(fn: Any, *args: Any) -> list[list[Any]] | str:
    try:
        got: list[list[Any]] = fn(*args)
    except OverflowError:
        return "JQ2010"
    except JarenlabError as err:
        return err.code
    return got


def same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(repr(x) == repr(y) or (x != x and y != y) for x, y in zip(a, b))


def check(name: str, pairs: list[tuple[int, Any]], dtype: Any, ddof: int | None = None) -> None:
    groups = np.array([g for g, _ in pairs], dtype=np.int64)
    values = np.array([v for _, v in pairs], dtype=dtype)
    want = [engine(name, [v for gg, v in pairs if gg == g], ddof) for g in range(3)]
    if name == "median":
        got = columns(medians, values, groups, 3)
    else:
        got = columns(stddevs, values, groups, 3, ddof)
    if any(isinstance(w, str) for w in want):  # an error of the engine: the columns raise one too
        assert isinstance(got, str), (want, got)
        return
    assert isinstance(got, list), (want, got)
    for g in range(3):
        assert same(got[g], want[g]), (g, [v for gg, v in pairs if gg == g], got[g], want[g])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), FLOATS), max_size=40))
def test_float_medians_are_the_engines(pairs: list[tuple[int, float]]) -> None:
    check("median", pairs, np.float64)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), INTS), max_size=40))
def test_integer_medians_are_the_engines(pairs: list[tuple[int, int]]) -> None:
    check("median", pairs, np.int64)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), FLOATS), max_size=30), st.sampled_from([0, 1]))
def test_float_stddevs_are_the_engines(pairs: list[tuple[int, float]], ddof: int) -> None:
    check("stddev", pairs, np.float64, ddof)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), INTS), max_size=30), st.sampled_from([0, 1]))
def test_integer_stddevs_are_the_engines(pairs: list[tuple[int, int]], ddof: int) -> None:
    check("stddev", pairs, np.int64, ddof)


def test_a_median_of_two_middle_values_is_their_exact_mean() -> None:
    """The float nearest the exact mean: not the rounded sum halved where that overflows or
    falls among the subnormals, and no negative zero from -0.0 and 0.0."""
    groups = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    values = np.array([1.7e308, 1.7e308, 5e-324, 5e-324, -0.0, 0.0, 2**53 + 2.0, 1.0])
    assert medians(values, groups, 4) == [[1.7e308], [5e-324], [0.0], [4503599627370497.5]]
    big = np.array([2**63 - 1, 2**63 - 3], dtype=np.int64)
    assert medians(big, np.zeros(2, dtype=np.int64), 1) == [[float((2**63 - 1 + 2**63 - 3) / 2)]]


MODEL = {
    "$model": "0.1",
    "collections": {
        "s": {
            "schema": {
                "type": "object",
                "properties": {"g": {"type": "string"}, "x": {"type": "number"}, "i": {"type": "integer"}},
            },
            "key": None,
            "identity": "integer",
            "indexes": [],
        }
    },
}


def test_grouped_and_whole_query_medians_and_deviations_come_from_the_columns() -> None:
    """Random groups of floats, integers written in a number member, integers, missing members and
    an empty filter: the columns answer each question (SQL cannot), as the engine does."""
    rng = np.random.default_rng(7)
    docs: list[dict[str, Any]] = []
    for n in range(4000):
        d: dict[str, Any] = {"g": "abcdefg"[int(rng.integers(0, 7))]}
        r = rng.random()
        if r < 0.4:
            d["x"] = float(rng.uniform(-1e3, 1e3))
        elif r < 0.7:
            d["x"] = int(rng.integers(-50, 50))
        elif r < 0.8:
            d["x"] = [0.1, 0.2, 0.3, -0.0, 0.0, 1e-320, 1e15, -1e15, 2.5e-310][n % 9]
        if rng.random() < 0.8:
            d["i"] = int(rng.integers(-(10**6), 10**6)) if n % 10 else int(rng.integers(-(2**62), 2**62))
        docs.append(d)
    with jl.open(model=MODEL) as store:
        c = store["s"]
        c.insert_many(docs)
        stats = {
            "m": agg.median(it.x),
            "mi": agg.median(it.i),
            "s": agg.std(it.i),
            "p": agg.std(it.x, ddof=0),
            "q": agg.std(it.x),
        }
        queries = [
            c.group_by(g=it.g).select({"g": key("g"), **stats}).document,
            c.where(it.g == "none").group_by(g=it.g).select({"g": key("g"), "m": agg.median(it.x)}).document,
            c.group_by(g=it.g).order_by(agg.median(it.x).desc()).select({"g": key("g")}).document,
            {"$median": [c.select(it.x)._expr()]},
            [{"$stddev": [c.where(it.g < "c").select(it.i)._expr(), 0]}],
            [{"$stddev": [c.where(it.g == "none").select(it.i)._expr()]}],
        ]
        for q in queries:
            want = evaluate(q, docs, {})
            got, trace, prepared = run_query(c, q, {}, columns=True)
            assert trace.mode == "columnar", trace.columns
            assert repr(got) == repr(want)
            assert prepared.plan.mode == "set"  # SQL does not compute them
        # the columns are warm now: the planner chooses them by itself
        assert c.group_by(g=it.g).select({"m": agg.median(it.x)}).explain().mode == "columnar"


@pytest.mark.parametrize("value", [1e150, 2.0**63])
def test_a_deviation_beyond_the_largest_float_or_a_number_beyond_64_bits_is_the_engines(value: float) -> None:
    """The columns decline (a float of 2^63 or more may be a rounded integer; a deviation beyond
    the largest float is the engine's JQ2010): the engine decides."""
    docs = [{"g": "a", "x": value}, {"g": "a", "x": -value}, {"g": "a", "x": 0.5}]
    with jl.open(model=MODEL) as store:
        store["s"].insert_many(docs)
        q = store["s"].group_by(g=it.g).select({"s": agg.std(it.x)}).document
        try:
            want: Any = evaluate(q, docs, {})
        except JarenlabError as err:
            want = err.code
        try:
            got: Any = run_query(store["s"], q, {}, columns=True)[0]
        except JarenlabError as err:
            got = err.code
        assert repr(got) == repr(want)


@pytest.mark.parametrize("seed", range(8))
def test_large_groups_select_their_middles_as_the_engine(seed: int) -> None:
    """Groups of hundreds of values (each group's middles selected, not the whole sorted): ties,
    zeros of both signs in the middle, integers, and wide magnitudes, against the engine's."""
    rng = np.random.default_rng(seed)
    n, count = int(rng.integers(200, 3000)), int(rng.integers(1, 12))
    pool = [0.0, -0.0, 0.0, -0.0, 1.5, -1.5, 0.1, 2.0, 1e16, -1e-300, 5e-324]
    values = [
        [
            float(rng.choice(pool)),
            float(round(rng.uniform(-5, 5), 1)),
            float(rng.uniform(-1, 1) * 10.0 ** int(rng.integers(-150, 150))),
        ][seed % 3]
        for _ in range(n)
    ]
    groups = rng.integers(0, count, n)
    got = medians(np.array(values), groups, count)
    ints = rng.integers(-(2**62), 2**62, n) if seed % 2 else rng.integers(-5, 5, n)
    got_ints = medians(ints, groups, count)
    for g in range(count):
        members = [v for v, k in zip(values, groups.tolist()) if k == g]
        assert same(got[g], engine("median", members)), g
        assert same(got_ints[g], engine("median", ints[groups == g].tolist())), g
    for ddof in (0, 1):
        deviations = stddevs(np.array(values), groups, count, ddof)
        for g in range(count):
            members = [v for v, k in zip(values, groups.tolist()) if k == g]
            assert same(deviations[g], engine("stddev", members, ddof)), g


@pytest.mark.parametrize("seed", range(6))
def test_narrow_integers_are_counted_to_their_middles(seed: int) -> None:
    """Integers of a narrow range (every group's counts of each value, no sort), odd and even
    groups, empty groups, a single value, negative values: the engine's medians."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 9))
    n = int(rng.integers(1, 4000))
    low = int(rng.integers(-(2**40), 2**40)) if seed % 2 else -3
    ints = rng.integers(low, low + int(rng.integers(1, max(2, n // count))), n)
    groups = rng.integers(0, count, n)  # (group `count` is never used: an empty group)
    got = medians(ints, groups, count + 1)
    assert got[count] == []
    for g in range(count):
        assert same(got[g], engine("median", ints[groups == g].tolist())), g


DISTRIBUTIONS = {
    "gauss": lambda rng, n: rng.normal(100, 30, n),
    "cents": lambda rng, n: np.round(rng.uniform(1, 500, n), 2),
    "offset": lambda rng, n: 1e8 + rng.normal(0, 1e-3, n),  # (the mean's square all but cancels)
    "wide": lambda rng, n: rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-8, 8, n),
    "constant": lambda rng, n: np.full(n, 0.1),
}


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_deviations_settled_from_bounded_sums_are_the_engines(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thousands of values per group: each deviation, settled from sums within their bounds or
    added exactly where those cannot settle it, is the engine's, bit for bit; the bounds settle
    every group but the constant ones (all or none: a variance of zero is settled only when
    the shift leaves nothing to bound)."""
    from jarenlab.query.columnar import spread

    outcomes: list[bool] = []
    settle = spread._settled

    def counted(*args: Any) -> float | None:
        got = settle(*args)
        outcomes.append(got is not None)
        return got

    monkeypatch.setattr(spread, "_settled", counted)
    rng = np.random.default_rng(11)
    count = 12
    values = DISTRIBUTIONS[name](rng, 60_000)
    groups = rng.integers(0, count, len(values))
    for ddof in (0, 1):
        got = stddevs(values, groups, count, ddof)
        for g in range(count):
            assert same(got[g], engine("stddev", values[groups == g].tolist(), ddof)), (g, ddof)
    assert len(outcomes) == 2 * count
    assert sum(outcomes) in ((0, 2 * count) if name == "constant" else (2 * count,))
