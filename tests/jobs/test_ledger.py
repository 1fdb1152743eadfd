"""The ledger behaviours: partitions, coalescing, deferral, cancellation, per-kind concurrency, idle,
requeue and sweep."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import JobError
from jarenlab.jobs import Jobs, VirtualClock
from tests.waiting import wait_for

from .conftest import run_one


@pytest.fixture
def order(jobs: Jobs) -> list[Any]:
    ran: list[Any] = []

    @jobs.handler("step")
    def step(payload: Any, ctx: Any) -> Any:
        ran.append(payload)
        if isinstance(payload, str) and payload.startswith("fail") and ctx.attempt == 1:
            raise RuntimeError("first try fails")
        return payload

    return ran


# -- partitions --------------------------------------------------------------------------------
def test_a_partition_runs_one_at_a_time_in_enqueue_order(jobs: Jobs, order: list[Any]) -> None:
    for n in range(3):
        jobs.enqueue("step", f"a{n}", partition_key="A")
        jobs.enqueue("step", f"b{n}", partition_key="B")
    first = jobs.claim()
    second = jobs.claim()
    assert (first.job["payload"], second.job["payload"]) == ("a0", "b0")
    assert jobs.claim() is None  # both heads are running
    jobs.executor.execute(first)
    jobs.executor.execute(second)
    jobs.run_until_idle(progress=False)
    assert [p for p in order if p[0] == "a"] == ["a0", "a1", "a2"]


def test_a_retrying_or_delayed_head_blocks_its_partition(
    jobs: Jobs, clock: VirtualClock, order: list[Any]
) -> None:
    jobs.enqueue("step", "fail-head", id="head", partition_key="P")
    jobs.enqueue("step", "next", id="next", partition_key="P")
    jobs.enqueue("step", "free", id="free")
    assert run_one(jobs) == "failed"
    assert run_one(jobs) == "done" and order[-1] == "free"
    assert run_one(jobs) is None  # "next" is due but waits for the retrying head
    clock.advance(1)
    assert run_one(jobs) == "done" and order[-1] == "fail-head"
    assert run_one(jobs) == "done" and order[-1] == "next"
    jobs.enqueue("step", "later", partition_key="Q", delay=100)
    jobs.enqueue("step", "behind", partition_key="Q")
    assert run_one(jobs) is None


def test_a_dead_or_cancelled_head_releases_its_partition(jobs: Jobs, order: list[Any]) -> None:
    jobs.handler("die", max_attempts=1)(lambda p, c: 1 / 0)
    jobs.enqueue("die", None, partition_key="P")
    jobs.enqueue("die", None, id="cancel-me", partition_key="P", delay=1000)
    jobs.enqueue("die", None, id="last", partition_key="P")
    assert run_one(jobs) == "dead"
    assert run_one(jobs) is None  # blocked behind the delayed job
    jobs.cancel("cancel-me")
    assert jobs.claim().id == "last"


def test_a_cancelled_head_still_running_blocks_until_it_unwinds(jobs: Jobs) -> None:
    gate = threading.Event()
    box: dict[str, Any] = {}

    @jobs.handler("slow")
    def slow(payload: Any, ctx: Any) -> str:
        box["started"] = True
        assert ctx.cancelled.wait(5)
        gate.wait(5)
        return "too late"

    jobs.enqueue("slow", None, id="head", partition_key="P")
    jobs.enqueue("slow", None, id="next", partition_key="P")
    lease = jobs.claim()
    runner = threading.Thread(target=lambda: box.setdefault("outcome", jobs.executor.execute(lease)))
    runner.start()
    wait_for(lambda: "started" in box, 30, what="the handler to start")
    assert jobs.cancel("head") is True
    assert jobs.claim() is None  # the cancelled head is still unwinding
    gate.set()
    runner.join(5)
    assert box["outcome"] == "cancelled" and jobs.get("head")["state"] == "cancelled"
    assert jobs.get("head")["result"] is None  # its outcome was discarded
    assert jobs.claim().id == "next"


# -- coalescing --------------------------------------------------------------------------------
def test_coalescing_keeps_one_unattempted_job_and_the_earliest_time(jobs: Jobs, clock: VirtualClock) -> None:
    first = jobs.enqueue("step", {"v": 1}, coalescing_key="k", delay=60)
    assert jobs.enqueue("step", {"v": 1}, coalescing_key="k", delay=90) == first
    assert jobs.get(first)["run_at"] == clock() + 60
    assert jobs.enqueue("step", {"v": 1}, coalescing_key="k", delay=10) == first
    assert jobs.get(first)["run_at"] == clock() + 10
    assert len(jobs.list()) == 1
    with pytest.raises(JobError) as err:
        jobs.enqueue("step", {"v": 2}, coalescing_key="k")
    assert err.value.code == "JD2125" and "different payload" in err.value.reason
    with pytest.raises(JobError):
        jobs.enqueue("step", {"v": 1}, coalescing_key="k", partition_key="P")
    assert jobs.enqueue("other-kind", {"v": 2}, coalescing_key="k") != first  # keys are per kind
    assert jobs.get(first)["run_at"] == clock() + 10


def test_a_claimed_job_ends_its_reservation_and_one_successor_forms(
    jobs: Jobs, clock: VirtualClock, order: list[Any]
) -> None:
    first = jobs.enqueue("step", "fail-x", coalescing_key="k")
    assert run_one(jobs) == "failed"  # attempted: the key is free again
    second = jobs.enqueue("step", "fail-x", coalescing_key="k", delay=0.1)
    assert second != first and jobs.enqueue("step", "fail-x", coalescing_key="k") == second
    retry_at = jobs.get(first)["run_at"]
    jobs.enqueue("step", "fail-x", coalescing_key="k", run_at=clock() - 100)
    assert jobs.get(first)["run_at"] == retry_at  # a retry time is never promoted
    jobs.run_until_idle(progress=False)
    assert jobs.counts()["done"] == 2
    third = jobs.enqueue("step", "fail-x", coalescing_key="k")  # reusable after settling
    assert third not in (first, second)


def test_concurrent_coalescing_converges_on_one_job(store: jl.Store) -> None:
    ids: list[str] = []
    barrier = threading.Barrier(8)

    def go(n: int) -> None:
        barrier.wait()
        ids.append(store.jobs.enqueue("step", "same", coalescing_key="k", delay=100 - n))

    threads = [threading.Thread(target=go, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1 and len(store.jobs.list()) == 1
    job = store.jobs.get(ids[0])
    assert job["run_at"] - job["created_at"] == pytest.approx(93, abs=1)


# -- deferral ----------------------------------------------------------------------------------
def test_defer_until_starts_a_clean_generation_at_the_deadline(jobs: Jobs, clock: VirtualClock) -> None:
    seen: list[tuple[int, int]] = []

    @jobs.handler("poll")
    def poll(payload: Any, ctx: Any) -> str:
        seen.append((ctx.attempt, ctx.job["generation"]))
        if len(seen) == 1:
            raise RuntimeError("a failure before the deferral")
        if len(seen) == 2:
            ctx.defer_until(clock() + 300)
        return "done"

    jobs.enqueue("poll", None, id="p", partition_key="P")
    jobs.enqueue("poll", None, id="behind", partition_key="P")
    assert run_one(jobs) == "failed"
    clock.advance(1)
    assert run_one(jobs) == "deferred"
    job = jobs.get("p")
    assert (job["state"], job["attempts"], job["last_error"]) == ("pending", 0, None)
    assert job["run_at"] == clock() + 300
    assert run_one(jobs) is None  # still the head of its partition
    assert not jobs.wait_for_idle(timeout=0)  # deferred work is not idle
    clock.advance(300)
    assert run_one(jobs) == "done" and seen[-1] == (1, 3)


def test_a_deferral_merges_into_a_pending_coalesced_successor(jobs: Jobs, clock: VirtualClock) -> None:
    @jobs.handler("sync")
    def sync(payload: Any, ctx: Any) -> None:
        ctx.store.jobs  # noqa: B018
        successor.append(jobs.enqueue("sync", "x", coalescing_key="k", delay=500))
        ctx.defer_until(clock() + 60)

    successor: list[str] = []
    first = jobs.enqueue("sync", "x", coalescing_key="k")
    assert run_one(jobs) == "deferred"
    assert jobs.get(first)["state"] == "done" and jobs.get(first)["result"] == {"deferred_into": successor[0]}
    assert jobs.get(successor[0])["run_at"] == clock() + 60


# -- cancellation ------------------------------------------------------------------------------
def test_cancel_is_terminal_and_survives_restart(open_store: Any) -> None:
    from .conftest import MODEL

    with open_store(MODEL) as first:
        first.jobs.enqueue("k", None, id="c")
        assert first.jobs.cancel("c") is True and first.jobs.cancel("c") is False
        with pytest.raises(JobError) as err:
            first.jobs.cancel("missing")
        assert err.value.code == "JD2126"
    with open_store.reopen(first, MODEL) as store:
        store.jobs.handler("k")(lambda p, c: None)
        assert store.jobs.run_until_idle(progress=False)["done"] == 0
        assert store.jobs.get("c")["state"] == "cancelled"


def test_an_ack_that_committed_first_wins_over_a_later_cancel(jobs: Jobs) -> None:
    jobs.handler("k")(lambda p, c: "ok")
    jobs.enqueue("k", None, id="a")
    assert run_one(jobs) == "done"
    assert jobs.cancel("a") is False and jobs.get("a")["state"] == "done"


def test_a_cancel_from_elsewhere_reaches_the_handler_at_its_next_renewal(
    jobs: Jobs, clock: VirtualClock
) -> None:
    @jobs.handler("long", lease=9)
    def long(payload: Any, ctx: Any) -> str:
        jobs.queue.cancel(ctx.job["id"])  # as another process would: no local signal
        assert not ctx.cancelled.is_set()
        clock.advance(4)
        jobs.renew_leases()
        assert ctx.cancelled.is_set()
        return "ignored"

    jobs.enqueue("long", None, id="l")
    assert run_one(jobs) == "cancelled" and jobs.get("l")["result"] is None


# -- concurrency, idle, requeue, sweep ---------------------------------------------------------
def test_per_kind_concurrency_caps_a_kind_without_starving_others(store: jl.Store) -> None:
    jobs = store.jobs.configure(poll=0.01)
    lock = threading.Lock()
    running = {"slow": 0, "fast": 0}
    peak = {"slow": 0, "fast": 0}
    # Each handler holds its slot until its kind has run as many at once as it may (the cap of 2, or 3
    # of the 6) or a shared deadline passes: on a loaded machine the pool's threads may otherwise
    # never overlap, proving nothing either way.
    wanted = {"slow": 2, "fast": 3}
    deadline = time.monotonic() + 5

    def make(kind: str) -> Any:
        def handler(payload: Any, ctx: Any) -> None:
            with lock:
                running[kind] += 1
                peak[kind] = max(peak[kind], running[kind])
            while peak[kind] < wanted[kind] and time.monotonic() < deadline:
                time.sleep(0.002)
            with lock:
                running[kind] -= 1

        return handler

    jobs.handler("slow", concurrency=2)(make("slow"))
    jobs.handler("fast")(make("fast"))
    jobs.enqueue_many(
        [{"kind": "slow", "payload": n} for n in range(12)] + [{"kind": "fast"} for _ in range(12)]
    )
    summary = jobs.run_until_idle(progress=False, concurrency=6)
    assert summary["done"] == 24 and peak["slow"] == 2 and peak["fast"] > 2


def test_wait_for_idle_waits_for_background_work(store: jl.Store) -> None:
    jobs = store.jobs.configure(poll=0.01)
    jobs.handler("nap")(lambda p, c: time.sleep(0.02))
    jobs.enqueue_many([{"kind": "nap"} for _ in range(10)])
    assert not jobs.wait_for_idle(timeout=0.01)
    worker = jobs.start(concurrency=3)
    try:
        assert jobs.wait_for_idle(timeout=10).idle is True
        assert jobs.counts()["done"] == 10
    finally:
        worker.stop()


def test_requeue_runs_a_dead_job_again_keeping_its_history(jobs: Jobs) -> None:
    calls: list[int] = []

    @jobs.handler("fix-me", max_attempts=1)
    def fix_me(payload: Any, ctx: Any) -> str:
        calls.append(ctx.attempt)
        if len(calls) == 1:
            raise ValueError("bad config")
        return "fixed"

    jobs.enqueue("fix-me", None, id="f")
    jobs.run_until_idle(progress=False)
    assert jobs.get("f")["state"] == "dead"
    jobs.requeue("f")
    job = jobs.get("f")
    assert (job["state"], job["attempts"], job["max_attempts"], job["last_error"]) == (
        "failed", 1, 2, "ValueError: bad config"
    )  # fmt: skip
    assert jobs.run_until_idle(progress=False)["done"] == 1 and calls == [1, 2]
    with pytest.raises(JobError):
        jobs.requeue("nope")
    jobs.enqueue("fix-me", None, id="running")
    jobs.claim()
    with pytest.raises(JobError) as err:
        jobs.requeue("running")
    assert err.value.code == "JD2125"


def test_sweep_deletes_settled_jobs_before_the_horizon(jobs: Jobs, clock: VirtualClock) -> None:
    jobs.handler("k", max_attempts=1)(lambda p, c: 1 / 0 if p == "bad" else p)
    jobs.enqueue("k", "old", id="old")
    jobs.enqueue("k", "bad", id="bad")
    jobs.enqueue("k", None, id="gone")
    jobs.cancel("gone")
    jobs.run_until_idle(progress=False)
    clock.advance(100)
    jobs.enqueue("k", "new", id="new")
    jobs.enqueue("k", "waiting", id="waiting", delay=10)
    jobs.run_until_idle(progress=False)
    assert jobs.sweep(settled_before=clock() - 50, limit=2) == 2
    assert jobs.sweep(settled_before=clock() - 50) == 1
    assert sorted(j["id"] for j in jobs.list()) == ["new", "waiting"]
    with pytest.raises(JobError):
        jobs.sweep(settled_before=float("nan"))
