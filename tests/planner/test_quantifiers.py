"""``$some``/``$every`` over an array member's items in SQL, on SQLite and on PostgreSQL: what runs
there, the engine's rules for the items (kinds compare only within their family, ``null`` items,
nested arrays, an object's member values, a missing or scalar member, ``2.0`` against ``2``), and
what ``explain()`` says where a condition stays in the engine.

The differential suite (``cases/quantifiers.json``) compares every answer with the engine's through
every path; these tests pin what a user sees.
"""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab import it, param
from jarenlab.query import evaluate
from tests.planner.model import ARRAYS
from tests.planner.test_computed_sql import F

MODEL = {
    "$model": "0.1",
    "collections": {
        "d": {
            "key": None,
            "identity": "integer",
            "schema": {
                "type": "object",
                "required": ["a"],
                "properties": {
                    "a": {"type": "integer"},
                    "u": {},
                    **ARRAYS,
                },
            },
        }
    },
}
DOCS = [
    {
        "a": 1,
        "tags": ["x", "y"],
        "legs": [{"d": 5, "c": "AA"}, {"d": 40}],
        "u": [1, "a", None, [2], {"k": 1}],
    },
    {"a": 2, "tags": [], "legs": [], "u": {"p": 3, "q": "x"}},
    {"a": 3, "u": 7},
    {"a": 4, "tags": ["y"], "legs": [{"c": "UA"}], "u": [2.0, True, "2"]},
    {"a": 5, "u": [None, [1, 2], []]},
    {"a": 6, "tags": ["é", "😀"], "u": "[1]"},
    {"a": 7, "u": [{"k": 1}, {"k": 1.0}]},
]


@pytest.fixture
def d(open_store: Any) -> Any:
    store = open_store(MODEL)
    store["d"].insert_many(DOCS)
    return store["d"]


def native(coll: Any, query: Any) -> list[Any]:
    """The members ``a`` of the documents SQL returns, the whole answer checked equal to the
    engine's and the plan checked native."""
    assert coll.explain(query).mode == "native", coll.explain(query).residual
    got = coll.execute(query, columns=False)
    assert [got] == evaluate(query, DOCS, {})
    return [x["a"] for x in got]


def test_typed_items_and_members_of_object_items(d: Any) -> None:
    q = d.where(it.tags.any(lambda t: t == "y"))
    assert native(d, q.document) == [1, 4]
    assert native(d, d.where(it.tags.all(lambda t: t == "y")).document) == [2, 3, 4, 5, 7]  # none is every
    assert native(d, d.where(it.legs.any(lambda leg: leg.d > 30)).document) == [1]
    assert native(d, d.where(it.legs.all(lambda leg: leg.d < 30)).document) == [2, 3, 5, 6, 7]
    assert native(d, d.where(it.legs.any(lambda leg: leg.c.startswith("U"))).document) == [4]
    assert native(d, d.where(it.tags.any(lambda t: t > "x")).document) == [1, 4, 6]  # code points
    assert native(d, d.where(it.tags.any()).document) == [1, 4, 6]


def test_untyped_items_follow_the_engines_rules(d: Any) -> None:
    def some(cond: Any) -> list[Any]:
        return native(d, F({"$some": {"v": "$f.u[*]", "$satisfies": cond}}))

    assert some({"$eq": ["$v", 2]}) == [4]  # 2.0 == 2; the string "2", [2] and true are not numbers
    assert some({"$eq": ["$v", 3]}) == [2]  # an object's member values are its items
    assert some({"$eq": ["$v", None]}) == [1, 5]
    assert some({"$eq": ["$v", "1"]}) == []  # a scalar member, even "[1]", has no items
    assert some({"$is-array": "$v"}) == [1, 5]
    assert some("$v") == [1, 2, 4, 5, 7]  # the EBV: [] is true, null false
    assert some({"$eq": ["$v.k", 1]}) == [1, 7]  # a member of the items that are objects
    assert native(d, F({"$every": {"v": "$f.u[*]", "$satisfies": {"$eq": ["$v.k", 1]}}})) == [3, 6, 7]
    assert native(d, F({"$exists": "$f.u[*]"})) == [1, 2, 4, 5, 7]
    assert native(d, F({"$empty": "$f.u[*]"})) == [3, 6]


def test_externals_in_the_condition_are_bound(d: Any) -> None:
    q = d.where(it.legs.any(lambda leg: leg.d >= param("low")))
    for low, want in ((5, [1]), (41, [])):
        assert [x["a"] for x in q.to_list(low=low)] == want
    assert q.explain(low=5).mode == "native"
    assert q.explain(low=True).diverted  # a boolean external diverts, as everywhere


def test_explain_says_why_a_quantifier_stays_in_the_engine(d: Any) -> None:
    why = {
        "a condition on the items that reads the document itself": {
            "$some": {"t": "$f.tags[*]", "$satisfies": {"$eq": ["$t", "$f.a"]}}
        },
        "the items are not an array member of the binding ($it.tags[*])": {
            "$some": {"t": {"$seq": [1, 2]}, "$satisfies": {"$eq": ["$t", "$f.a"]}}
        },
        "the condition on each item: $gt: neither side is a singular path of the binding": {
            "$some": {"t": "$f.tags[*]", "$satisfies": {"$gt": [{"$string-length": "$t"}, 1]}}
        },
    }
    for reason, where in why.items():
        ex = d.explain(F(where))
        assert ex.mode == "set" and ex.residual["reasons"][0]["reason"] == reason
        assert d.execute(F(where)) == evaluate(F(where), DOCS, {})[0]
