"""Integer group keys: a key written ``2.0`` groups, orders and filters as ``2``, and a returned key
is its group's first document's member, so SQL reads one document per group for its kind (not
every row), and none for a key it does not return. Run on both backends against the engine."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab import agg, it, key
from jarenlab.query.planner.run import run_query

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "f": {
            "schema": {
                "type": "object",
                "properties": {
                    "c": {"type": "string"},
                    "m": {"type": "integer"},  # a typed column (indexed)
                    "u": {"type": "integer"},  # no typed column: read from the document
                },
            },
            "key": None,
            "identity": "integer",
            "indexes": [{"name": "by_c_m", "path": ["$.c", "$.m"]}],
        }
    },
}

#: Every group's first document holds an integer; later ones hold 2.0 and 3.0.
LATER_FLOATS = [
    {"c": "a", "m": 2, "u": 2},
    {"c": "b", "m": 3, "u": 3},
    {"c": "a", "m": 2.0, "u": 2.0},
    {"c": "b", "m": 3.0, "u": 3.0},
    {"c": "a", "m": 1, "u": 1},
    {"c": "a"},
]
#: The group of 3 begins with a float.
FIRST_FLOAT = [{"c": "a", "m": 2, "u": 2}, {"c": "b", "m": 3.0, "u": 3.0}, {"c": "b", "m": 3, "u": 3}]


def _both(coll: Any, q: Any) -> tuple[Any, Any, Any]:
    """The pushed run's items (the columnar path kept out), the engine's, and the run's trace and plan."""
    got, trace, prepared = run_query(coll, q.document, {}, columns=False)
    want, _, _ = run_query(coll, q.document, {}, pushdown=False, columns=False)
    return _flat(got), _flat(want), (trace, prepared)


def _flat(items: list[Any]) -> list[Any]:
    """The builder's documents are one array constructor: its one item, the list of results."""
    assert len(items) == 1
    return list(items[0])


@pytest.mark.parametrize("member", ["m", "u"])
def test_a_returned_integer_key_reads_its_first_document_only(open_store: Any, member: str) -> None:
    store = open_store(MODEL)
    coll = store["f"]
    coll.insert_many(LATER_FLOATS)
    q = coll.group_by(c=it.c, k=getattr(it, member)).select({"c": key("c"), "k": key("k"), "n": agg.count()})
    got, want, (trace, prepared) = _both(coll, q)
    assert got == want and [type(r["k"]) for r in got if "k" in r] == [int, int, int]
    assert trace.mode == "native" and not trace.fallback  # no group began with a float
    assert prepared.plan.real_checks == () and prepared.plan.key_checks == (1,)
    # the kind is read per group from one document: the grouped statement has no per-row check
    check = prepared.dialect.written_float("X").split("X")[-1]  # the check's text after the member
    sql = prepared.main.sql
    assert sql.count(check) == 1 and sql.index(check) < sql.index(" FROM (")

    coll.insert_many(FIRST_FLOAT)  # a new group (c "b" already began with 3; "a" with 2): still ints
    got, want, _ = _both(coll, q)
    assert got == want


@pytest.mark.parametrize("member", ["m", "u"])
def test_a_group_beginning_with_a_float_goes_to_the_engine(open_store: Any, member: str) -> None:
    store = open_store(MODEL)
    coll = store["f"]
    coll.insert_many(FIRST_FLOAT)
    q = coll.group_by(k=getattr(it, member)).select({"k": key("k"), "n": agg.count()})
    got, want, (trace, _) = _both(coll, q)
    assert got == want == [{"k": 2, "n": 1}, {"k": 3.0, "n": 2}]
    assert type(got[1]["k"]) is float and trace.fallback
    distinct = coll.select(getattr(it, member)).distinct()
    got, want, _ = _both(coll, distinct)
    assert got == want == [2, 3.0]


def test_a_key_only_grouped_by_needs_no_check(open_store: Any) -> None:
    store = open_store(MODEL)
    coll = store["f"]
    coll.insert_many(FIRST_FLOAT)
    q = coll.group_by(c=it.c, k=it.m).select({"c": key("c"), "n": agg.count()})
    got, want, (trace, prepared) = _both(coll, q)
    assert got == want and trace.mode == "native" and not trace.fallback
    assert prepared.plan.real_checks == () and prepared.plan.key_checks == ()
