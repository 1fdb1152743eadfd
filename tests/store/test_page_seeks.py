"""A deep keyset page seeks the ordering's index: the database's own plan of each statement a page
runs reads the index from the position on (a range on the ordering member), never the whole table,
ascending and descending, with missing members, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from rows_read import rows_read

from jarenlab import it
from jarenlab.query.planner.pages import planned

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "rows": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "integer"}, "n": {"type": "integer"}, "s": {"type": "string"}},
            },
            "key": "/id",
            "indexes": [{"name": "by_n", "path": "$.n"}, {"name": "by_s", "path": "$.s"}],
        }
    },
}
ROWS = 3000


@pytest.fixture
def store(open_store: Any) -> Any:
    s = open_store(MODEL)
    docs: list[dict[str, Any]] = []
    for i in range(ROWS):
        d: dict[str, Any] = {"id": i}
        if i % 10:
            d["n"] = i % 500
            d["s"] = f"s{i % 700:04d}"
        docs.append(d)
    s["rows"].insert_many(docs)
    if s.backend.name != "sqlite":
        s.db.connection().execute('ANALYZE "rows"')
    return s


def deep(q: Any, skip: int) -> str:
    """The continuation after ``skip`` rows of the ordered query (pages of 100)."""
    after = None
    for _ in range(skip // 100):
        after = q.page(100, after).continuation
    assert after is not None
    return after


def sqlite_reads(store: Any, sql: str, params: list[Any]) -> list[str]:
    return [r["detail"] for r in store.backend.dialect.plan_tree(store.db.explain(sql, params))]


@pytest.mark.parametrize(
    ("key", "column"),
    [(it.n, "gx_n"), (it.n.desc(), "gx_n"), (it.s, "gx_s"), (it.s.desc(empty="greatest"), "gx_s")],
    ids=["n", "n desc", "s", "s desc empty greatest"],
)
def test_a_deep_page_seeks_the_index(store: Any, key: Any, column: str) -> None:
    q = store["rows"].order_by(key).select(it.id)
    after = deep(q, 2500)
    got = planned(store["rows"], q.document, 50, after)
    assert got.statements
    for stmt in got.statements:
        params = stmt.bind(got.externals)
        if store.backend.name == "sqlite":
            reads = sqlite_reads(store, stmt.sql, params)
            assert not any(r.startswith("SCAN rows") for r in reads), reads
            assert any(r.startswith("SEARCH rows USING INDEX") and f"{column}" in r for r in reads), reads
        else:
            # a statement reads from the position on (the 500 after it, the 300 without a member
            # tied as one value), never the 2,500 before it, nor the table
            assert rows_read(store, stmt.sql, params, "rows") <= ROWS - 2500 + ROWS // 10 + 10
    # and the pages are the query's rows, in its order
    walked: list[Any] = []
    after = None
    while True:
        page = q.page(400, after)
        walked += page.items
        if not page.has_more:
            break
        after = page.continuation
    assert walked == q.to_list()
