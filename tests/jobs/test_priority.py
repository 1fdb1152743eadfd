"""Priorities: a claim takes the highest-priority due job of the kinds it runs, then the earliest
due, then the first enqueued; partitions keep their order; bad priorities are JD2170 and write
nothing; inspection shows the priority; the claim stays index-served behind many lower-priority
jobs (the database's plan and its own count of the rows it reads). On each backend."""

from __future__ import annotations

from typing import Any

import pytest
from rows_read import rows_read

import jarenlab as jl
from jarenlab.jobs import Jobs, VirtualClock
from jarenlab.jobs.queue import ENQUEUE

from .conftest import MODEL

NOW = 1_900_000_000.0


def drain_order(jobs: Jobs, *kinds: str) -> list[str]:
    """The ids of ``kinds`` in the order claims take them (each completed before the next claim)."""
    order = []
    while (lease := jobs.claim(kinds=kinds)) is not None:
        order.append(lease.id)
        jobs.queue.complete(lease, None, prune=False)
    return order


def test_a_claim_takes_the_highest_priority_then_the_existing_order(jobs: Jobs, clock: VirtualClock) -> None:
    jobs.declare("a", "b")
    jobs.enqueue("a", id="low-early", priority=-1)
    jobs.enqueue("a", id="default-1")
    clock.advance(1)
    jobs.enqueue("b", id="urgent-late", priority=10)
    jobs.enqueue("a", id="default-2")
    jobs.enqueue("b", id="high", priority=3, run_at=clock() - 5)  # due earlier than "high-2"
    jobs.enqueue("a", id="high-2", priority=3)
    jobs.enqueue("a", id="urgent-later", priority=10, delay=60)  # not due yet: not claimed
    assert drain_order(jobs, "a", "b") == [
        "urgent-late",
        "high",
        "high-2",
        "default-1",
        "default-2",
        "low-early",
    ]
    clock.advance(60)
    assert drain_order(jobs, "a", "b") == ["urgent-later"]


def test_a_claim_reads_only_its_kinds_whatever_their_priority(jobs: Jobs) -> None:
    jobs.declare("mine", "theirs")
    jobs.enqueue("theirs", id="theirs", priority=100)
    jobs.enqueue("mine", id="mine", priority=-5)
    lease = jobs.claim(kinds=["mine"])
    assert lease is not None and lease.id == "mine" and lease.job["priority"] == -5


def test_a_partition_runs_in_enqueue_order_whatever_the_priority(jobs: Jobs) -> None:
    jobs.declare("p")
    jobs.enqueue("p", id="first", partition_key="k")
    jobs.enqueue("p", id="second", partition_key="k", priority=50)
    jobs.enqueue("p", id="free", priority=1)
    assert drain_order(jobs, "p") == ["free", "first", "second"]


def test_the_priority_survives_retries_deferrals_and_requeues(jobs: Jobs, clock: VirtualClock) -> None:
    @jobs.handler("flaky", max_attempts=3)
    def flaky(payload: Any, ctx: Any) -> None:
        raise RuntimeError("again")

    jobs.enqueue("flaky", id="f", priority=7)
    jobs.run_until_idle(progress=False)
    assert jobs.get("f")["state"] == "dead" and jobs.get("f")["priority"] == 7
    jobs.requeue("f")
    jobs.enqueue("flaky", id="other")
    assert jobs.claim().id == "f"


def test_bulk_enqueue_takes_priorities(jobs: Jobs) -> None:
    jobs.declare("k")
    items = [{"kind": "k", "id": f"j{i}", "priority": i % 3} for i in range(40)]
    items.append({"kind": "k", "id": "slow", "priority": 9, "delay": 0})  # an item enqueue() takes
    jobs.enqueue_many(items)
    assert jobs.get("j5")["priority"] == 2 and jobs.get("j3")["priority"] == 0
    order = drain_order(jobs, "k")
    assert order[0] == "slow"
    assert [jobs.get(i)["priority"] for i in order[1:]] == sorted(
        (jobs.get(i)["priority"] for i in order[1:]), reverse=True
    )


@pytest.mark.parametrize("bad", [True, 1.5, "1", None, 2**31, -(2**31) - 1, 10**30])
def test_a_bad_priority_is_coded_and_writes_nothing(jobs: Jobs, bad: Any) -> None:
    jobs.declare("k")
    with pytest.raises(jl.JarenlabError) as err:
        jobs.enqueue("k", id="x", priority=bad)
    assert err.value.code == "JD2170" and "priority" in str(err.value)
    with pytest.raises(jl.JarenlabError) as err:
        jobs.enqueue_many([{"kind": "k", "id": "ok"}, {"kind": "k", "id": "y", "priority": bad}])
    assert err.value.code == "JD2170" and "item 1" in str(err.value)
    assert jobs.counts()["pending"] == 0


def test_the_widest_priorities_are_stored(jobs: Jobs) -> None:
    jobs.declare("k")
    jobs.enqueue("k", id="lowest", priority=-(2**31))
    jobs.enqueue("k", id="highest", priority=2**31 - 1)
    assert drain_order(jobs, "k") == ["highest", "lowest"]


def test_a_handler_stages_a_job_with_a_priority(jobs: Jobs) -> None:
    @jobs.handler("parent")
    def parent(payload: Any, ctx: Any) -> None:
        with pytest.raises(jl.JarenlabError) as err:
            ctx.enqueue("child", priority="high")
        assert err.value.code == "JD2170"
        ctx.enqueue("child", id="child", priority=4)

    jobs.declare("child")
    jobs.enqueue("parent")
    assert jobs.run_until_idle(progress=False)["done"] == 1
    assert jobs.get("child")["priority"] == 4


def test_inspection_shows_the_priority(jobs: Jobs) -> None:
    @jobs.handler("k", max_attempts=1)
    def fails(payload: Any, ctx: Any) -> None:
        raise ValueError("no")

    jobs.enqueue("k", id="a", priority=3)
    assert jobs.list()[0]["priority"] == 3
    assert jobs.frame().loc["a", "priority"] == 3
    jobs.run_until_idle(progress=False)
    assert jobs.recent_failures()[0]["priority"] == 3
    from jarenlab.jobs import views

    page = views.failures_html(jobs.recent_failures())
    assert "<th>priority</th>" in page and "<td style='text-align:right'>3</td>" in page


def _pending(store: jl.Store, kind: str, count: int, priority: int, prefix: str) -> None:
    due = [NOW - 100 + i * 1e-3 for i in range(count)]
    values = [
        (f"{prefix}{i}", kind, "{}", at, at, 5, None, None, NOW, NOW, None, None, priority)
        for i, at in enumerate(due)
    ]
    rows = [dict(zip(ENQUEUE, row, strict=True)) for row in values]
    with store.db.transaction():
        store.db.many("jobs.enqueue", rows)


def _steps(store: jl.Store, sql: str, params: tuple[Any, ...]) -> tuple[int, list[str]]:
    """SQLite's virtual machine steps for the statement and its plan."""
    conn = store.db.connection()
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(count, 1)
    try:
        assert conn.execute(sql, params).fetchone() is not None
    finally:
        conn.set_progress_handler(None, 1)
    return steps[0], [str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


def test_a_priority_claim_is_index_served_behind_many_lower_priority_jobs(open_store: Any) -> None:
    store = open_store(MODEL)
    kinds = ("work", "other")
    prepared = store.backend.catalogue("jobs").prepare("claimable", quote=store.backend.quote, kinds=2)
    sql, params = prepared.text, prepared.bind("claimable", {"now": NOW, "kinds": kinds})
    _pending(store, "work", 5, 1, "urgent")
    if store.backend.name == "sqlite":
        alone, _ = _steps(store, sql, params)
        _pending(store, "work", 4000, 0, "low")  # due earlier, lower priority
        _pending(store, "other", 4000, -1, "lower")
        behind, plan = _steps(store, sql, params)
        assert any("SEARCH h USING INDEX _jl_jobs_claim (kind=?)" in p for p in plan), plan
        assert behind <= alone + 50, (alone, behind)  # not several steps per lower-priority job
    else:
        _pending(store, "work", 4000, 0, "low")
        _pending(store, "other", 4000, -1, "lower")
        store.db.connection().execute("ANALYZE _jl_jobs")
        plan = store.db.connection().execute("EXPLAIN " + sql, params).fetchall()
        assert any("_jl_jobs_claim" in str(r[0]) for r in plan), plan
        assert rows_read(store, sql, params, "_jl_jobs") <= 2 * len(kinds)
    # the first urgent job (seq 1), ahead of thousands due earlier at lower priorities
    assert store.db.one("jobs.claimable", {"now": NOW, "kinds": kinds}, kinds=2) == (1,)
