"""Generated differential queries: seeded hypothesis (derandomized), 500 per run.

Conditions mix typed, untyped and mixed-type members, missing members, nulls, literals of every
JSON type, externals (including ones that divert), logic, ordering and windows. Each query runs
through every path of :func:`tests.planner.test_differential.check`, PostgreSQL's included. The
paths each checked are tallied and held to a floor by the module's last tests.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.planner.conftest import DATASETS, NO_POSTGRESQL
from tests.planner.tally import assert_floors
from tests.planner.test_differential import check

PATHS = ["$it.x", "$it.m", "$it.s", "$it.i", "$it.n", "$it.b", "$it.o.t", "$it.nope"]
LITERALS = st.sampled_from([0, 1, 2, -1, 2.5, 1.5, "", "a", "b", "ab", "1", "😀", "é", True, False, None])
EXTERNALS = st.sampled_from([1, 2.5, "a", "b", True, None])


def atoms() -> st.SearchStrategy[Any]:
    path = st.sampled_from(PATHS)
    compare = st.builds(
        lambda op, p, v: {f"${op}": [p, v]},
        st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge"]),
        path,
        LITERALS,
    )
    ext = st.builds(lambda op, p: {f"${op}": [p, "$v"]}, st.sampled_from(["eq", "ne", "lt", "ge"]), path)
    exists = st.builds(
        lambda f, p: {f"${f}": p},
        st.sampled_from(["exists", "empty", "is-number", "is-string", "is-null"]),
        path,
    )
    strings = st.builds(
        lambda f, p, v: {f"${f}": [p, v]},
        st.sampled_from(["starts-with", "ends-with", "contains"]),
        st.sampled_from(["$it.s", "$it.o.t"]),
        st.sampled_from(["", "a", "ab", "😀", "\U0010ffff", "k", "b"]),
    )
    return st.one_of(compare, ext, exists, strings, path)


CONDITIONS = st.recursive(
    atoms(),
    lambda inner: st.one_of(
        st.builds(lambda xs: {"$and": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: {"$or": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda x: {"$not": x}, inner),
    ),
    max_leaves=5,
)
ORDERS = st.lists(
    st.builds(
        lambda k, d, e: {"$key": k, "$dir": d, "$empty": e},
        st.sampled_from(["$it.s", "$it.i", "$it.n", "$it.o.t"]),
        st.sampled_from(["asc", "desc"]),
        st.sampled_from(["least", "greatest"]),
    ),
    max_size=2,
)
RETURNS = st.sampled_from(["$it.id", "$it", {"id": "$it.id", "x": "$it.x"}, "$it.x"])


@st.composite
def queries(draw: Any) -> Any:
    flwor: dict[str, Any] = {"$for": {"it": "$[*]"}, "$where": draw(CONDITIONS)}
    order = draw(ORDERS)
    if order:
        flwor["$orderby"] = order
    flwor["$return"] = draw(RETURNS)
    wrap = draw(st.sampled_from(["none", "array", "window", "count"]))
    if wrap == "array":
        return [flwor]
    if wrap == "window":
        return [{"$subsequence": [flwor, draw(st.integers(-2, 6)), draw(st.integers(0, 6))]}]
    if wrap == "count":
        return {"$count": flwor}
    return flwor


@settings(max_examples=500, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=queries(), v=EXTERNALS)
def test_generated(query: Any, v: Any, stores: dict[str, Any], pg_stores: dict[str, Any] | None) -> None:
    check(stores["mix"], DATASETS["mix"], query, {"v": v}, pg_stores and pg_stores["mix"])


#: Queries each path checked when the floor was set (the 500 seeded examples).
FLOORS = {
    "engine": 500,
    "pushdown": 500,
    "pushdown=False": 500,
    "duckdb": 174,
    "pushdown:native": 463,
    "pushdown:set": 37,
    "columnar": 500,
    "columnar:columnar": 126,
}


def test_every_path_checked_its_floor_of_queries(request: pytest.FixtureRequest) -> None:
    """Runs after the generated queries (last in the module): no path checked fewer than its floor."""
    assert_floors(request, "test_generated", 1, FLOORS)


#: The PostgreSQL paths' floors, and the exact count of queries it answers in another mode than SQLite.
PG_FLOORS = {
    "postgresql": 500,
    "postgresql pushdown=False": 500,
    "postgresql:native": 370,
    "postgresql:row": 83,
    "postgresql:set": 47,
    "postgresql columnar": 500,
    "postgresql columnar:columnar": 126,
}
#: Returns of the untyped member ``x`` (alone or in a map) run in the engine (row, or set under a window).
PG_KEPT = {"postgresql kept: 2.0 vs 2": 93}


def test_postgresql_checked_its_floor_of_queries(
    request: pytest.FixtureRequest, pg_stores: dict[str, Any] | None
) -> None:
    """Runs last: the PostgreSQL paths checked their floors and kept exactly :data:`PG_KEPT` in the engine."""
    if pg_stores is None:
        pytest.skip(NO_POSTGRESQL)
    assert_floors(request, "test_generated", 1, PG_FLOORS, PG_KEPT)
