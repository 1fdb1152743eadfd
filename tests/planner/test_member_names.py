"""Member names SQL cannot spell (control characters, quotes, ...) give the engine's answer.

One rule, :func:`jarenlab.query.lang.path.sql_addressable`, decides which member names a SQL path may hold:
index paths and interval pointers refuse the others, and the planner leaves them to the engine. Here the
planner (``pushdown=True``), the reference engine over the collection (``pushdown=False``) and the engine
alone must agree for every such name; ``strict=True`` (no residual) shows that the planner pushed exactly
the names the rule admits. On both backends: SQLite binds the JSON path, PostgreSQL writes the member
names into the statement as quoted literals (``%`` included, which psycopg reads as a placeholder).
"""

from __future__ import annotations

from typing import Any

import pytest
from backend_fixtures import BACKENDS, scratch_store

from jarenlab.errors import JarenlabError, PlanError
from jarenlab.query import evaluate
from jarenlab.query.lang.path import path_text, sql_addressable
from jarenlab.query.lang.values import identical

MODEL = {
    "$model": "0.1",
    "collections": {"d": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}
NAMES = [
    *(chr(c) for c in range(1, 0x20)),  # U+0000 cannot be stored at all (JD2008)
    "a\nb",
    "tab\there",
    "",
    "'",
    '"',
    "\\",
    "it's",
    "\x7f",
    "\u00a0",
    "\u2028",
    "\ufeff",
    "plain",
    "odd key",
    "é",
    "\U0001f600",
    "100%",
    "%s",
    "a->b",
    "{}",
]


IDS = [f"U+{ord(n[0]):04X}" + ("..." if len(n) > 1 else "") if n else "empty" for n in NAMES]
DOCS = [{name: "A", "n": 1} for name in NAMES] + [{name: "B", "n": 2} for name in NAMES] + [{"n": 3}]


@pytest.fixture(scope="module", params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Any:
    """One store per backend for the module (queries never write)."""
    s = scratch_store(request.param, request, MODEL, "member_names", checks="off")
    s["d"].insert_many(DOCS)
    yield s
    s.close()


def queries(name: str) -> list[Any]:
    member = path_text("d", (("member", name),))
    return [
        {"$for": {"d": "$[*]"}, "$return": member},
        {"$for": {"d": "$[*]"}, "$where": {"$exists": member}, "$return": "$d.n"},
        {"$for": {"d": "$[*]"}, "$where": {"$eq": [member, "A"]}, "$return": "$d.n"},
        {"$for": {"d": "$[*]"}, "$where": {"$gt": [member, "A"]}, "$return": "$d.n"},
    ]


def outcome(fn: Any) -> Any:
    try:
        return fn()
    except JarenlabError as err:
        return err.code


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_planner_engine_and_pushdown_off_agree(store: Any, name: str) -> None:
    coll = store["d"]
    for query in queries(name):
        engine = outcome(lambda q=query: evaluate(q, DOCS))
        assert engine != [], query  # every query selects something, so a silent [] cannot pass
        for pushdown in (True, False):
            got = outcome(lambda q=query, p=pushdown: coll._run_query(q, {}, pushdown=p))
            assert identical(got, engine), (query, pushdown, got, engine)


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_the_planner_pushes_exactly_the_names_the_rule_admits(store: Any, name: str) -> None:
    query = {"$count": queries(name)[2]}  # $where member == "A", counted (native on every backend)
    if sql_addressable(name):
        assert store["d"]._run_query(query, {}, strict=True) == [1]
    else:
        with pytest.raises(PlanError) as info:
            store["d"]._run_query(query, {}, strict=True)
        assert info.value.code == "JD0010" and "cannot name this member" in info.value.reason


def test_the_rule() -> None:
    assert [n for n in NAMES if sql_addressable(n)] == [
        "plain",
        "odd key",
        "é",
        "\U0001f600",
        "100%",
        "%s",
        "a->b",
        "{}",
    ]
