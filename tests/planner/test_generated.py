"""Generated differential queries: seeded hypothesis (derandomized), 500 per run.

Conditions mix typed, untyped and mixed-type members, missing members, nulls, literals of every
JSON type, externals (including ones that divert), logic, ordering and windows. The paths each
checked are tallied and held to a floor by the module's last test.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.planner.conftest import DATASETS
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
def test_generated(query: Any, v: Any, stores: dict[str, Any]) -> None:
    check(stores["mix"], DATASETS["mix"], query, {"v": v})


#: Queries each path checked when the floor was set (the 500 seeded examples).
FLOORS = {
    "engine": 500,
    "pushdown": 500,
    "pushdown=False": 500,
    "duckdb": 171,
    "pushdown:native": 467,
    "pushdown:set": 33,
}


def test_every_path_checked_its_floor_of_queries(request: pytest.FixtureRequest) -> None:
    """Runs after the generated queries (last in the module): no path checked fewer than its floor."""
    assert_floors(request, "test_generated", 1, FLOORS)
