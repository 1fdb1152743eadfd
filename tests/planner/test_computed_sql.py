"""Conditions over computed values and regular expressions in SQL, on SQLite and on PostgreSQL: what
runs where, the check that hands a run to the engine, errors the engine raises first, pages.

The differential suite (``cases/computed.json``, ``cases/everyday.json``) compares every answer with the
engine's; these tests pin what a user sees: ``explain()``'s mode and reasons, ``fallback``, and pages.
"""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab import it
from jarenlab.errors import JarenlabError
from jarenlab.query import evaluate

MODEL = {
    "$model": "0.1",
    "collections": {
        "d": {
            "key": None,
            "identity": "integer",
            "schema": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer"},
                    "b": {"type": "integer"},
                    "x": {"type": "number"},
                    "s": {"type": "string"},
                    "t": {"type": "string"},
                },
            },
        }
    },
}
DOCS = [
    {"a": 10, "b": 50, "x": 0.1, "s": "N123UA", "t": "2013-01-01T05:00:00Z"},
    {"a": 100, "b": 2, "x": 0.2, "s": "N12\nUA", "t": "2013-02-01T21:00:00Z"},
    {"a": 2**62, "b": -(2**62), "s": "é", "t": "2013-03-01T23:30:00Z"},
    {"a": 7, "x": 2.5},
]


def F(where: Any) -> list[Any]:
    return [{"$for": {"f": "$[*]"}, "$where": where, "$return": "$f"}]


@pytest.fixture
def d(open_store: Any) -> Any:
    store = open_store(MODEL)
    store["d"].insert_many(DOCS)
    return store["d"]


def same_as_engine(coll: Any, query: Any, docs: list[Any] = DOCS) -> list[Any]:
    """The members ``a`` of the documents SQL (or the engine, where it decides) returns, checked
    equal to the engine's whole answer."""
    got = coll.execute(query, columns=False)
    assert [got] == evaluate(query, docs, {})  # (execute gives the array's items)
    return [x["a"] for x in got]


def test_everyday_filters_run_in_sql_where_exact(d: Any) -> None:
    pg = d.store.backend.name == "postgresql"
    native = [
        {"$gt": [{"$sub": ["$f.b", "$f.a"]}, 30]},  # integer members: both backends
        {"$lt": [{"$mul": ["$f.a", 2]}, 100]},
        {"$eq": [{"$string-length": "$f.s"}, 1]},  # code points, not bytes
        {"$ge": [{"$date-part": ["$f.t", "hour"]}, 21]},
        {"$lt": [{"$epoch": "$f.t"}, 1357020000001]},
    ]
    for where in native:
        assert d.explain(F(where)).mode == "native", where
        same_as_engine(d, F(where))
    assert same_as_engine(d, F(native[2])) == [2**62]
    # floats: IEEE arithmetic on SQLite, numeric decimals (0.1 + 0.2 = 0.3) on PostgreSQL
    floats = F({"$gt": [{"$add": ["$f.x", 0.2]}, 0.3]})
    assert same_as_engine(d, floats) == [10, 100, 7]
    ex = d.explain(floats)
    if pg:
        assert ex.mode == "set"
        assert ex.residual["reasons"][0]["reason"].startswith("arithmetic over a float member")
    else:
        assert ex.mode == "native"
    regex = F({"$match": ["$f.s", "N[0-9]{3}UA"]})  # I-Regexp: no anchors, "." never crosses a line end
    assert same_as_engine(d, regex) == [10]
    assert same_as_engine(d, F({"$search": ["$f.s", "2.U"]})) == [10]
    assert d.explain(regex).mode == "native"  # PostgreSQL: the pattern's exact ARE, anchored
    category = F({"$search": ["$f.s", "\\p{Lu}{2}"]})  # no ARE has Unicode categories
    assert same_as_engine(d, category) == [10, 100]
    reasons = d.explain(category).residual
    assert (
        reasons["reasons"][0]["reason"]
        == "the I-Regexp has no exact PostgreSQL form: a character category \\p{..} (an ARE has no Unicode categories)"
        if pg
        else not reasons
    )


def test_a_regular_expression_the_server_will_not_compile_falls_back(d: Any) -> None:
    query = F({"$and": [{"$gt": ["$f.a", 5]}, {"$match": ["$f.s", "((a{100}){100}){100}"]}]})
    ex = d.explain(query, analyze=True)
    if d.store.backend.name == "postgresql":  # "regular expression is too complex": the engine answers
        assert ex.mode == "set" and "too complex" in ex.fallback
    else:
        assert ex.mode == "native" and not ex.fallback
    assert same_as_engine(d, query) == []


def test_explain_says_why_a_computed_condition_stays_in_the_engine(d: Any) -> None:
    why = {
        "$gt": [{"$sub": ["$f.b", "$f.a"]}, "$v"],
        "$lt": [{"$mul": ["$f.a", "$f.b"]}, 2**53],
        "$eq": [{"$div": ["$f.a", "$f.b"]}, 1],
    }
    said = [
        "a computed value compared with an external (its magnitude is known only when bound)",
        "a computed value compared with a number of magnitude 2^53 or more",
        "a division: a zero divisor gives NaN, an infinity or an error in the engine",
    ]
    for (op, args), reason in zip(why.items(), said, strict=True):
        ex = d.explain(F({op: args}), {"v": 1})
        assert ex.mode == "set" and ex.residual["reasons"][0]["reason"] == reason


def test_a_doubtful_value_hands_the_run_to_the_engine(open_store: Any) -> None:
    docs = [{"a": 1, "t": "2013-01-01T05:00:00Z"}, {"a": 2, "t": "2013-01-01T05:00:00+02:00"}]
    coll = open_store(MODEL)["d"]
    coll.insert_many(docs)
    query = F({"$eq": [{"$date-part": ["$f.t", "hour"]}, 3]})
    ex = coll.explain(query, analyze=True)
    assert ex.mode == "set" and ex.fallback  # an offset: the engine reads it as 03:00 UTC
    assert same_as_engine(coll, query, docs) == [2]
    with pytest.raises(JarenlabError) as err:
        coll.execute(query, strict=True)
    assert err.value.code == "JD0010"


def test_the_engine_raises_where_it_reads_a_word_first(open_store: Any) -> None:
    docs = [{"a": 1, "t": "2013-01-01T05:00:00Z"}, {"a": 2, "t": "yesterday"}]
    coll = open_store(MODEL)["d"]
    coll.insert_many(docs)
    hour = {"$eq": [{"$date-part": ["$f.t", "hour"]}, 5]}
    first = {"$eq": ["$f.a", 1]}
    with pytest.raises(JarenlabError) as err:  # the hour of "yesterday" is read before a == 1
        coll.execute(F({"$and": [hour, first]}), columns=False)
    assert err.value.code == "JQ2020"
    assert same_as_engine(coll, F({"$and": [first, hour]}), docs) == [1]  # never read: no error


def test_pages_take_regular_expressions_and_refuse_checked_values(d: Any) -> None:
    matching = d.where(it.s.matches("N.+")).order_by(it.a)
    page = matching.page(1)  # SQLite calls the engine's matcher, PostgreSQL runs the ARE
    assert page.items == [DOCS[0]] and not page.has_more
    with pytest.raises(JarenlabError) as err:
        d.where(it.b - it.a > 0).order_by(it.a).page(1)
    assert err.value.code == "JD0032" and "computed value" in err.value.reason
