"""A whole-query aggregate written by hand (not through the builder; other names than ``jl_rows``
and ``it``) is planned exactly as the builder's: one SELECT of the aggregates without GROUP BY, and
one group of the kept rows in the columns; a near miss (a member that is not an aggregate of the
bound rows) is not taken, says why, and the engine answers it. On both backends, over the ``mix``
dataset, with answers worked out here from the documents."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab import agg, it
from tests.planner.conftest import DATASETS
from tests.query.corpus import same

MIX = DATASETS["mix"]
#: The rows the hand-written filter keeps (``s`` present and not "b"), as the engine keeps them.
KEPT = [d for d in MIX if "s" in d and d["s"] != "b"]


def each(path: str | None) -> dict[str, Any]:
    """``{$for: {r: $all}, $return: $r.path}``: a member of each bound row."""
    return {"$for": {"r": "$all"}, "$return": "$r" + (f".{path}" if path else "")}


def whole(members: dict[str, Any], where: Any = None) -> dict[str, Any]:
    """``{$let: {all: F}, $return: members}`` with ``F`` ranging over the collection as ``d``."""
    rows: dict[str, Any] = {"$for": {"d": "$[*]"}, "$return": "$d"}
    if where is not None:
        rows = {"$for": {"d": "$[*]"}, "$where": where, "$return": "$d"}
    return {"$let": {"all": rows}, "$return": members}


MEMBERS = {"n": {"$count": [each(None)]}, "s": {"$sum": [each("i")]}, "lo": {"$min": [each("s")]}, "one": 1}
NOT_B = {"$ne": ["$d.s", "b"]}


def test_a_hand_written_map_is_planned_as_the_builders(store: Any) -> None:
    docs = store["docs"]
    document = whole(MEMBERS, NOT_B)
    built = docs.where(it.s != "b").select(
        {"n": agg.count(), "s": agg.sum(it.i), "lo": agg.min(it.s), "one": 1}
    )
    ex, ex_built = docs.explain(document), built.explain()
    assert ex.mode == ex_built.mode == "native"
    assert ex.sql == ex_built.sql and ex.params == ex_built.params
    assert "GROUP BY" not in ex.sql and ex.residual is None
    want = {"n": len(KEPT), "s": sum(d.get("i", 0) for d in KEPT), "lo": min(d["s"] for d in KEPT), "one": 1}
    assert same(docs.execute(document), want)  # the map itself, without an array constructor
    assert same(docs.execute([document]), [want]) and same(built.to_list(), [want])
    assert docs.explain(document, columns=True, analyze=True).mode == "columnar"
    assert same(docs.execute(document, columns=True), want)
    assert same(docs.execute(document, pushdown=False), want)


def test_a_hand_written_map_over_no_rows_is_one_result(store: Any) -> None:
    docs = store["docs"]
    document = whole(MEMBERS, {"$eq": ["$d.s", "no such string"]})
    assert docs.explain(document).mode == "native"
    for columns in (False, True):  # SQL's one row over nothing, and the columns' one empty group
        assert same(docs.execute(document, columns=columns), {"n": 0, "s": 0, "one": 1})
    assert same(docs.execute(document, pushdown=False), {"n": 0, "s": 0, "one": 1})


@pytest.mark.parametrize(
    ("member", "reason", "value"),
    [
        # the item of a bound row computed, not a path of it
        (
            {"$sum": [{"$for": {"r": "$all"}, "$return": {"$mul": ["$r.i", 2]}}]},
            "a whole-query aggregate runs as a group-by without keys",
            sum(2 * d.get("i", 0) for d in KEPT),
        ),
        # a filter inside the aggregate's FLWOR
        (
            {"$sum": [{"$for": {"r": "$all"}, "$where": {"$gt": ["$r.i", 2]}, "$return": "$r.i"}]},
            "a whole-query aggregate runs as a group-by without keys",
            sum(d["i"] for d in KEPT if d.get("i", 0) > 2),
        ),
        # an aggregate of the collection itself, not of the binding
        ({"$count": ["$[*]"]}, "reads the collection other than through one $for binding", len(MIX)),
    ],
    ids=["computed", "filtered", "collection"],
)
def test_a_near_miss_is_not_taken_and_the_engine_answers(
    store: Any, member: Any, reason: str, value: int
) -> None:
    docs = store["docs"]
    document = whole({"n": MEMBERS["n"], "m": member}, NOT_B)
    ex = docs.explain(document)
    assert ex.mode == "set"
    assert any(reason in r["reason"] for r in ex.residual["reasons"]), ex.residual
    got = docs.execute(document)
    assert same(got, {"n": len(KEPT), "m": value})
    assert same(got, docs.execute(document, pushdown=False))
    assert same(got, docs.execute(document, columns=True))
