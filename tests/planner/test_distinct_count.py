"""``distinct().count()`` of a schema-typed string or integer member runs as ``count(DISTINCT ...)``
in the database, and counts what the engine's distinct keeps: missing members not at all, ``2.0``
and ``2`` as one, strings by their code points (``"a"`` and ``"A"`` apart), on both engines."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab import it

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "t": {
            "schema": {
                "type": "object",
                "properties": {"c": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"}},
            },
            "key": None,
            "identity": "integer",
            "indexes": [{"name": "by_n", "path": "$.n"}],
        }
    },
}
DOCS = [
    {"c": "a", "n": 2},
    {"c": "A", "n": 2.0},
    {"c": "é", "n": 3},
    {"c": "e\u0301"},
    {"n": -(2**62)},
    {},
    {"c": "a", "x": 1.5},
    {"x": 1},
    {"x": 1.0},
]


@pytest.fixture
def store(open_store: Any) -> Any:
    s = open_store(MODEL)
    s["t"].insert_many(DOCS)
    return s


@pytest.mark.parametrize(
    ("member", "where", "expected"),
    [(it.c, None, 4), (it.n, None, 3), (it.n, it.n > 0, 2), (it.c, it.n >= 2, 3)],
    ids=["string", "integer", "filtered", "string filtered"],
)
def test_a_distinct_count_runs_in_the_database(store: Any, member: Any, where: Any, expected: int) -> None:
    base = store["t"] if where is None else store["t"].where(where)
    q = base.select(member).distinct()
    assert q.count() == len(q.to_list()) == expected
    ex = store["t"].explain({"$count": [q._expr()]})
    assert ex.mode == "native" and "count(DISTINCT" in ex.sql, ex


def test_a_distinct_count_of_another_member_stays_exact_in_the_engine(store: Any) -> None:
    q = store["t"].select(it.x).distinct()  # a number-typed member: 1 and 1.0 are one value
    assert q.count() == len(q.to_list()) == 2
    assert store["t"].explain({"$count": [q._expr()]}).mode == "set"


#: Integers at SQLite's 64 bits and beyond (its JSON functions read those beyond as rounded reals:
#: ``2**63`` and ``2**63 + 1`` become one REAL) and at PostgreSQL's limit (2^53, past which ``numeric``
#: reads a written float as its decimal: ``float(2**63)``, written ``9.223372036854776e+18``, is not
#: ``2**63`` there). The engine's seven distinct values.
BIG = [2**63, 2**63 + 1, -(2**63), 2**63 - 1, 2**64 - 1, 2**53, 2**53 + 1, 2**53, float(2**63)]
_FOR = {"$for": {"it": "$[*]"}, "$return": "$it.n"}
TOLD_APART = {
    "count of distinct": [{"$count": [{"$distinct": [_FOR]}]}],
    "distinct": [{"$distinct": [_FOR]}],
    "count of distinct per group": {
        "$for": {"it": "$[*]"},
        "$groupby": {"c": "$it.c"},
        "$return": {"c": "$c", "n": {"$count": [{"$distinct": ["$it.n"]}]}},
    },
    "group key": {
        "$for": {"it": "$[*]"},
        "$groupby": {"k": "$it.n"},
        "$return": {"k": "$k", "m": {"$count": "$it"}},
    },
    "group count": {"$for": {"it": "$[*]"}, "$groupby": {"k": "$it.n"}, "$return": {"$count": "$it"}},
}


@pytest.mark.parametrize("query", TOLD_APART.values(), ids=TOLD_APART.keys())
def test_integers_at_the_database_limit_are_told_apart_by_the_engine(open_store: Any, query: Any) -> None:
    s = open_store(MODEL)
    s["t"].insert_many([{"c": "ab"[k % 2], "n": v} for k, v in enumerate(BIG)])
    truth = s["t"].execute(query, pushdown=False)
    assert s["t"].execute(query, columns=False) == truth
    assert s["t"].execute(query, columns=True) == truth
    assert s["t"].explain(query, columns=False).mode == "native"
    ex = s["t"].explain(query, analyze=True, columns=False)
    assert ex.fallback is not None and "at the database's limit or beyond" in ex.fallback, ex
