"""Handlers' staged actions (ctx.emit, ctx.enqueue) and dispositions (ctx.retry, ctx.dead_letter,
timeouts), fenced like settlement: on each backend, in the store's own virtual time.

The store is opened with ``clock=`` and ``random=``, so ``store.jobs`` itself runs in virtual time.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import EventError, JobError
from jarenlab.jobs import VirtualClock

from .conftest import run_one

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
    "events": {
        "fact": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}},
        "audit": {"type": "object"},
    },
}


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(1_900_000_000.0)


@pytest.fixture
def store(open_store: Any, clock: VirtualClock) -> jl.Store:
    store = open_store(MODEL, clock=clock, random=lambda: 0.5)
    store.jobs.configure(lease=10.0)
    return store


def committed(store: jl.Store) -> list[tuple[str, Any, Any, Any]]:
    """Committed events as (type, payload, caused_by_job, caused_by_attempt), read from a snapshot."""
    return [(e.type, e.payload, e.caused_by_job, e.caused_by_attempt) for e in store.events.resume()]


def test_the_store_queue_runs_on_the_store_clock(store: jl.Store, clock: VirtualClock) -> None:
    jobs = store.jobs
    assert jobs.clock is clock and jobs.virtual_time and jobs.rand() == 0.5
    jobs.handler("boom")(lambda p, c: 1 / 0)
    jobs.enqueue("boom", id="b", max_attempts=3)
    assert run_one(jobs) == "failed"
    assert jobs.get("b")["run_at"] == clock() + 0.75  # backoff 1 s x (0.5 + 0.5/2): the seeded jitter
    assert store.events.emit("audit", {}).at.timestamp() == clock()  # the ledger stamps the same time


def test_a_seed_makes_the_jitter_repeatable(open_store: Any) -> None:
    one = open_store(MODEL, "one", random=7)
    two = open_store(MODEL, "two", random=7)
    assert [one.jobs.rand() for _ in range(3)] == [two.jobs.rand() for _ in range(3)]
    with pytest.raises(jl.JarenlabError) as err:
        jl.open(model=MODEL, random="seven")
    assert err.value.code == "JD0006"


def test_staged_actions_commit_with_the_settlement_and_name_the_attempt(store: jl.Store) -> None:
    jobs = store.jobs
    seen_inside: list[Any] = []

    @jobs.handler("work")
    def work(payload: Any, ctx: Any) -> str:
        ctx.emit("fact", {"n": payload})
        follow = ctx.enqueue("follow", {"n": payload})
        seen_inside.append((committed(store), jobs.get(follow)))  # nothing is there yet
        return follow

    jobs.enqueue("work", 1, id="w")
    assert run_one(jobs) == "done"
    assert seen_inside == [([], None)]
    follow = jobs.get("w")["result"]
    assert committed(store) == [("fact", {"n": 1}, "w", 1)]
    assert jobs.get(follow)["state"] == "pending" and jobs.get(follow)["payload"] == {"n": 1}


def test_an_attempt_that_raises_commits_nothing_it_staged(store: jl.Store) -> None:
    jobs = store.jobs

    @jobs.handler("work")
    def work(payload: Any, ctx: Any) -> None:
        ctx.emit("fact", {"n": ctx.attempt})
        ctx.enqueue("follow", ctx.attempt)
        if ctx.attempt == 1:
            raise RuntimeError("not yet")

    jobs.enqueue("work", id="w")
    assert run_one(jobs) == "failed"
    assert committed(store) == [] and jobs.list(kind="follow") == []
    store.jobs.clock.advance(5)  # type: ignore[attr-defined]
    assert run_one(jobs) == "done"
    assert committed(store) == [("fact", {"n": 2}, "w", 2)]
    assert [j["payload"] for j in jobs.list(kind="follow")] == [2]


def test_an_attempt_that_lost_its_lease_commits_nothing_it_staged(
    store: jl.Store, clock: VirtualClock
) -> None:
    jobs = store.jobs
    stalls = [True]

    @jobs.handler("work")
    def work(payload: Any, ctx: Any) -> None:
        ctx.emit("fact", {"n": ctx.attempt})
        ctx.enqueue("follow", ctx.attempt)
        if stalls.pop() if stalls else False:
            clock.advance(11)  # stalled past its lease: another attempt takes the job meanwhile
            assert run_one(jobs) == "done"

    jobs.enqueue("work", id="w")
    assert run_one(jobs) == "lost"
    assert committed(store) == [("fact", {"n": 2}, "w", 2)]  # the second attempt's, once
    assert [j["payload"] for j in jobs.list(kind="follow")] == [2]


def test_a_direct_emit_from_a_handler_is_checked_against_the_lease(
    store: jl.Store, clock: VirtualClock
) -> None:
    jobs = store.jobs
    codes: list[str] = []

    @jobs.handler("work")
    def work(payload: Any, ctx: Any) -> None:
        store.events.emit("audit", {"held": True})  # commits at once, stamped, the lease held
        clock.advance(11)
        try:
            store.events.emit("audit", {"held": False})
        except JobError as err:
            codes.append(err.code)
        assert jobs.claim() is not None  # another claim takes it
        try:
            store.events.emit("audit", {"held": False})
        except JobError as err:
            codes.append(err.code)

    jobs.enqueue("work", id="w")
    assert run_one(jobs) == "lost"
    assert codes == ["JD2067", "JD2066"]
    assert committed(store) == [("audit", {"held": True}, "w", 1)]


def test_a_staged_action_that_fails_fails_the_attempt_and_commits_nothing(store: jl.Store) -> None:
    jobs = store.jobs

    @store.events.on("fact")
    def refuse_big(event: Any, st: jl.Store) -> None:
        st["notes"].insert({"n": event.payload["n"]})
        if event.payload["n"] > 9:
            raise ValueError("too big")

    @jobs.handler("work")
    def work(payload: Any, ctx: Any) -> str:
        ctx.emit("fact", {"n": 1})
        ctx.emit("fact", {"n": payload})
        return "ok"

    jobs.enqueue("work", 10, id="w", max_attempts=1)
    assert run_one(jobs) == "dead"
    job = jobs.get("w")
    assert (
        job["last_error"].startswith("a staged action failed: ValueError: too big") and job["result"] is None
    )
    assert committed(store) == [] and store["notes"].count() == 0


def test_staged_actions_are_checked_when_staged(store: jl.Store) -> None:
    jobs = store.jobs
    errors: list[str] = []
    late: list[Any] = []

    @jobs.handler("work")
    def work(payload: Any, ctx: Any) -> None:
        for stage in (
            lambda: ctx.emit("undeclared", {}),
            lambda: ctx.emit("fact", {"n": "one"}),
            lambda: ctx.enqueue("", 1),
            lambda: ctx.enqueue("x", 1, urgency=3),  # not an enqueue option
            lambda: ctx.enqueue("x", float("nan")),
            lambda: ctx.enqueue("x", 1, timeout=0),
        ):
            try:
                stage()
            except (EventError, JobError) as err:
                errors.append(err.code)
        late.append(ctx)

    jobs.enqueue("work", id="w")
    assert run_one(jobs) == "done"
    assert errors == ["JD2080", "JD2080", "JD2125", "JD2125", "JD2125", "JD2125"]
    with pytest.raises(JobError) as err:
        late[0].emit("fact", {"n": 1})  # the attempt has ended
    assert err.value.code == "JD2065"


def test_retry_at_a_time_or_after_seconds_commits_what_was_staged(
    store: jl.Store, clock: VirtualClock
) -> None:
    jobs = store.jobs

    @jobs.handler("poll")
    def poll(payload: Any, ctx: Any) -> None:
        ctx.emit("fact", {"n": ctx.attempt})
        if ctx.attempt == 1:
            ctx.retry(at=clock() + 60, reason="not ready")
        elif ctx.attempt == 2:
            ctx.retry(after=30)

    jobs.enqueue("poll", id="p", max_attempts=5)
    start = clock()
    assert run_one(jobs) == "retried"
    job = jobs.get("p")
    assert (job["state"], job["run_at"], job["last_error"]) == ("failed", start + 60, "not ready")
    assert run_one(jobs) is None
    clock.advance(60)
    assert run_one(jobs) == "retried" and jobs.get("p")["run_at"] == start + 90
    clock.advance(30)
    assert run_one(jobs) == "done"
    assert [e[1]["n"] for e in committed(store)] == [1, 2, 3]


def test_retry_on_the_last_attempt_and_dead_letter_make_the_job_dead(store: jl.Store) -> None:
    jobs = store.jobs

    @jobs.handler("once")
    def once(payload: Any, ctx: Any) -> None:
        ctx.emit("fact", {"n": 1})
        if payload == "retry":
            ctx.retry(after=1)
        else:
            ctx.dead_letter("the record is gone for good")

    jobs.enqueue("once", "retry", id="r", max_attempts=1)
    jobs.enqueue("once", "dead", id="d", max_attempts=5)
    assert [run_one(jobs), run_one(jobs)] == ["dead", "dead"]
    assert jobs.get("r")["last_error"] == "the handler asked to retry (attempt 1 of 1: none left)"
    assert (jobs.get("d")["last_error"], jobs.get("d")["attempts"]) == ("the record is gone for good", 1)
    assert len(committed(store)) == 2  # a disposition commits what was staged


def test_a_handler_chooses_at_most_once(store: jl.Store) -> None:
    jobs = store.jobs
    codes: list[str] = []

    @jobs.handler("twice")
    def twice(payload: Any, ctx: Any) -> None:
        ctx.retry(after=1)
        for choose in (
            lambda: ctx.dead_letter("no"),
            lambda: ctx.retry(at=1, after=1),
            lambda: ctx.dead_letter(""),
        ):
            try:
                choose()
            except JobError as err:
                codes.append(err.code)

    jobs.enqueue("twice", id="t")
    assert run_one(jobs) == "retried"
    assert codes == ["JD2125", "JD2125", "JD2125"]


def test_a_handler_past_its_timeout_fails_and_its_thread_is_abandoned(store: jl.Store) -> None:
    jobs = store.jobs
    release = threading.Event()
    late: list[str] = []

    @jobs.handler("slow", timeout=0.2)
    def slow(payload: Any, ctx: Any) -> str:
        ctx.emit("fact", {"n": 1})
        release.wait(10)
        for write in (lambda: ctx.emit("fact", {"n": 2}), lambda: store.events.emit("audit", {})):
            try:
                write()
            except JobError as err:
                late.append(err.code)
        return "finished late"

    jobs.enqueue("slow", id="s", max_attempts=1)
    jobs.enqueue("slow", id="quick", timeout=5, max_attempts=1)  # a job's own timeout wins
    started = time.monotonic()
    assert run_one(jobs) == "dead"
    assert time.monotonic() - started < 5
    job = jobs.get("s")
    assert "ran past its timeout of 0.2 s" in job["last_error"] and job["lease_until"] is None
    assert jobs.abandoned() == ("s#1",)
    assert not jobs.wait_for_idle(timeout=0) and jobs.wait_for_idle(timeout=0).abandoned == ("s#1",)
    release.set()
    assert run_one(jobs) == "done"  # released already: the job with its own, longer timeout finishes
    deadline = time.monotonic() + 10
    while jobs.abandoned() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert late == ["JD2065", "JD2065"] and jobs.abandoned() == ()
    # Only the attempt that kept its lease wrote: its direct emit at once, its staged ones at settlement.
    assert committed(store) == [
        ("audit", {}, "quick", 1),
        ("fact", {"n": 1}, "quick", 1),
        ("fact", {"n": 2}, "quick", 1),
    ]
    assert jobs.get("s")["state"] == "dead"


def test_source_events_and_several_states_filter_the_list(store: jl.Store) -> None:
    jobs = store.jobs

    @store.events.on("fact")
    def fan_out(event: Any, st: jl.Store) -> None:
        st.jobs.enqueue("each", event.payload, id=f"each-{event.payload['n']}")
        st.jobs.enqueue_many([{"kind": "many", "payload": event.payload["n"]}])

    one = store.events.emit("fact", {"n": 1})
    two = store.events.emit("fact", {"n": 2})
    jobs.enqueue("alone", id="alone")
    assert [j["id"] for j in jobs.list(source_event=one, kind="each")] == ["each-1"]
    assert len(jobs.list(source_event=two.seq)) == 2 and jobs.get("alone")["source_event"] is None
    jobs.cancel("each-1")
    jobs.handler("many")(lambda p, c: 1 / 0)
    assert run_one(jobs) == "failed"
    assert {j["id"] for j in jobs.list(state=["cancelled", "failed"])} == {
        "each-1",
        jobs.list(kind="many")[0]["id"],
    }
    assert jobs.list(state=("dead",)) == []
    frame = jobs.frame(source_event=one)
    assert set(frame["source_event"]) == {one.seq} and len(frame) == 2
    for bad in ({"state": []}, {"state": ["done", "gone"]}, {"source_event": "one"}):
        with pytest.raises(JobError) as err:
            jobs.list(**bad)
        assert err.value.code == "JD2125"
