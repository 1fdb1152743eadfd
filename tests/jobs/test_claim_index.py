"""A claim reads only jobs of the kinds it runs: pending jobs of other kinds, due earlier, are not
visited (the database's own plan and its own count of the rows it reads say so, on each backend)."""

from __future__ import annotations

from typing import Any

import pytest
from rows_read import rows_read

import jarenlab as jl
from jarenlab.jobs.queue import ENQUEUE

from .conftest import MODEL

NOW = 1_900_000_000.0
FOREIGN = 4000


def pending(store: jl.Store, kind: str, count: int, due: float, prefix: str) -> None:
    rows = [
        dict(
            zip(
                ENQUEUE,
                (f"{prefix}{i}", kind, "{}", due + i, due + i, 5, None, None, due, due, None, None, 0),
            )
        )
        for i in range(count)
    ]
    with store.db.transaction():
        store.db.many("jobs.enqueue", rows)


def claimable(store: jl.Store, kinds: tuple[str, ...]) -> tuple[str, tuple[Any, ...]]:
    """The text of the claim's pick and its values (what ``jobs.claim`` runs as its subquery)."""
    prepared = store.backend.catalogue("jobs").prepare(
        "claimable", quote=store.backend.quote, kinds=len(kinds)
    )
    return prepared.text, prepared.bind("claimable", {"now": NOW, "kinds": kinds})


def visited_sqlite(store: jl.Store, sql: str, params: tuple[Any, ...]) -> tuple[int, list[str]]:
    """SQLite's virtual machine steps for the statement (each row read takes several) and its plan."""
    conn = store.db.connection()
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(count, 1)
    try:
        row = conn.execute(sql, params).fetchone()
    finally:
        conn.set_progress_handler(None, 1)
    assert row is not None
    plan = [str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
    return steps[0], plan


@pytest.mark.parametrize("kinds", [("mine",), ("mine", "also")], ids=["one kind", "two kinds"])
def test_a_claim_does_not_read_other_kinds_pending_jobs(open_store: Any, kinds: tuple[str, ...]) -> None:
    store = open_store(MODEL)
    pending(store, "mine", 20, NOW - 10, "m")
    sql, params = claimable(store, kinds)
    if store.backend.name == "sqlite":
        alone, _ = visited_sqlite(store, sql, params)
        pending(store, "theirs", FOREIGN, NOW - 100_000, "t")  # due long before every job of ours
        behind, plan = visited_sqlite(store, sql, params)
        # a kind's head is read in the index's order (priority DESC, due_at, seq): no sort of its jobs
        assert any("SEARCH h USING INDEX _jl_jobs_claim (kind=?)" in p for p in plan), plan
        # reading the foreign jobs would take several steps each: thousands more, not a few
        assert behind <= alone + 50, (alone, behind)
    else:
        pending(store, "theirs", FOREIGN, NOW - 100_000, "t")
        store.db.connection().execute("ANALYZE _jl_jobs")
        assert rows_read(store, sql, params, "_jl_jobs") <= 2 * len(kinds)
    assert store.db.one("jobs.claimable", {"now": NOW, "kinds": kinds}, kinds=len(kinds)) == (1,)
