"""List membership: one bound JSON list, the same SQL text for 3 values or 5,000, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab.errors import QueryError
from jarenlab.query import it, param
from tests.planner.test_planner import prefer_indexes


def test_one_parameter_whatever_the_length(store: Any) -> None:
    prefer_indexes(store)
    docs = store["docs"]
    q = docs.where(it.i.isin(param("xs"))).select(it.id)
    few, many = q.explain(xs=[1, 2, 3]), q.explain(xs=list(range(5000)))
    assert few.mode == many.mode == "native" and few.sql == many.sql
    assert [p for p in few.params if "external" in str(p)] == [
        {"derived": {"external": "xs", "as": "one JSON list"}}
    ]
    got = q.to_list(xs=list(range(5000)))
    want = [d["id"] for d in docs.to_list() if isinstance(d.get("i"), int) and 0 <= d["i"] < 5000]
    assert got == want and len(got) > 10
    assert any("docs_by_i" in x for x in few.indexes)
    literal = docs.where(it.s.isin(["a", "b", "z"])).select(it.id)
    assert literal.explain().sql == docs.where(it.s.isin(["q"] * 200)).select(it.id).explain().sql
    assert literal.to_list() == ["d01", "d02", "d12", "d16", "d18", "d23"]


def test_a_list_the_database_cannot_compare_diverts_visibly(store: Any) -> None:
    q = store["docs"].where(it.x.isin(param("xs"))).select(it.id)
    ex = q.explain(xs=["a", True])
    assert ex.diverted and "holds a value other than a string or a number" in ex.diverted
    assert q.to_list(xs=["abc", True]) == ["d04", "d08"]
    with pytest.raises(QueryError, match="JQ2010"):  # (its items: none; it would match nothing)
        q.explain(xs="abc")
