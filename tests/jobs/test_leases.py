"""Claims and leases: attempts at claim, fencing tokens and generations, renewal, recovery."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import JobError
from jarenlab.jobs import Jobs, VirtualClock

from .conftest import run_one


@pytest.fixture
def leased(jobs: Jobs) -> Any:
    jobs.handler("work", lease=10)(lambda p, c: p)
    jobs.enqueue("work", {"n": 1}, id="w")
    lease = jobs.claim()
    assert lease is not None
    return lease


def test_a_claim_counts_the_attempt_and_mints_a_token(jobs: Jobs, leased: Any, clock: VirtualClock) -> None:
    job = jobs.get("w")
    assert job["state"] == "leased" and job["attempts"] == 1 and job["lease_generation"] == 1
    assert job["lease_until"] == clock() + 10 and job["lease_owner"] == jobs.owner
    assert leased.attempt == 1 and leased.generation == 1 and len(leased.token) == 16
    assert jobs.claim() is None  # a live lease is not claimable


@contextlib.contextmanager
def traced(store: jl.Store) -> Iterator[list[str]]:
    """The statements this thread's connection sends inside the block."""
    statements: list[str] = []
    conn: Any = store.db.connection()
    if store.backend.name == "sqlite":
        conn.set_trace_callback(statements.append)
        try:
            yield statements
        finally:
            conn.set_trace_callback(None)
        return
    import psycopg

    class Tracing(psycopg.Cursor):  # type: ignore[type-arg]
        def execute(self, query: Any, *args: Any, **kwargs: Any) -> Any:
            statements.append(str(query))
            return super().execute(query, *args, **kwargs)

    previous, conn.cursor_factory = conn.cursor_factory, Tracing
    try:
        yield statements
    finally:
        conn.cursor_factory = previous


def test_the_claim_is_one_statement(store: jl.Store, jobs: Jobs) -> None:
    jobs.handler("work")(lambda p, c: p)
    jobs.enqueue("work", 1, id="w")
    with traced(store) as statements:
        assert jobs.claim() is not None
    assert len(statements) == 1 and statements[0].lstrip().startswith("UPDATE _jl_jobs SET state = 'leased'")


def test_an_expired_lease_is_recovered_by_the_next_claim(
    jobs: Jobs, leased: Any, clock: VirtualClock
) -> None:
    clock.advance(10.001)
    again = jobs.claim()
    assert again is not None and again.id == "w" and again.attempt == 2 and again.generation == 2
    assert again.token != leased.token


@pytest.mark.parametrize("code", ["JD2067", "JD2066", "JD2065", "JD2126"])
def test_a_fenced_settle_is_a_coded_refusal_that_changes_nothing(
    jobs: Jobs, leased: Any, clock: VirtualClock, code: str
) -> None:
    if code == "JD2067":
        clock.advance(11)  # expired, not yet reclaimed
    elif code == "JD2066":
        clock.advance(11)
        assert jobs.claim() is not None  # another claim took it
    elif code == "JD2065":
        jobs.cancel("w")
    else:
        jobs.store.db.connection().execute("DELETE FROM _jl_jobs WHERE id = 'w'")
    before = jobs.get("w")
    for settle in (
        lambda: jobs.queue.complete(leased, '"x"', prune=False),
        lambda: jobs.queue.fail(leased, "boom", retry_at=clock() + 1.0),
        lambda: jobs.queue.fail(leased, "boom", retry_at=None),
        lambda: jobs.queue.renew(leased),
        lambda: jobs.queue.release(leased),
        lambda: jobs.queue.checkpoint(leased, "node", "1"),
        lambda: jobs.queue.defer(leased, clock() + 5),
    ):
        with pytest.raises(JobError) as err:
            settle()
        assert err.value.code == code
    assert jobs.get("w") == before
    assert jobs.checkpoints("w") == {}


def test_settling_twice_is_refused(jobs: Jobs, leased: Any) -> None:
    jobs.queue.complete(leased, "1", prune=False)
    with pytest.raises(JobError) as err:
        jobs.queue.complete(leased, "2", prune=False)
    assert err.value.code == "JD2065" and jobs.get("w")["result"] == 1


def test_renewal_extends_the_lease_while_a_handler_runs(jobs: Jobs, clock: VirtualClock) -> None:
    renewed: list[int] = []

    @jobs.handler("long", lease=9)
    def long(payload: Any, ctx: Any) -> str:
        for _ in range(10):  # 50 virtual seconds, five leases long
            clock.advance(5)
            renewed.append(jobs.renew_leases())
            assert jobs.claim(owner="thief") is None
        return "finished"

    jobs.enqueue("long", None, id="l")
    assert run_one(jobs) == "done"
    job = jobs.get("l")
    assert job["attempts"] == 1 and job["result"] == "finished" and sum(renewed) >= 5


def test_a_handler_that_outlives_its_lease_loses_it_and_its_result_is_discarded(
    jobs: Jobs, clock: VirtualClock
) -> None:
    seen: dict[str, Any] = {}

    @jobs.handler("stall", lease=5)
    def stall(payload: Any, ctx: Any) -> str:
        if ctx.attempt == 1:
            clock.advance(6)  # a stall: no renewal happened
            other = jobs.claim(owner="other")
            seen["other"] = other
            jobs.renew_leases()  # the renewal is refused: ctx.cancelled fires
            seen["cancelled"] = ctx.cancelled.is_set()
            return "stale"
        return "fresh"

    jobs.enqueue("stall", None, id="s")
    assert run_one(jobs) == "lost"
    assert seen["cancelled"] and seen["other"].attempt == 2
    assert jobs.executor.execute(seen["other"]) == "done"
    assert jobs.get("s")["result"] == "fresh"


def test_a_crash_counts_as_an_attempt_and_exhausted_crashes_dead_letter(
    jobs: Jobs, clock: VirtualClock
) -> None:
    jobs.handler("crashy", max_attempts=2, lease=5)(lambda p, c: "never")
    jobs.enqueue("crashy", None, id="c")
    for _ in range(2):
        assert jobs.claim() is not None  # the worker "dies" holding it
        clock.advance(6)
    assert run_one(jobs) == "dead"
    job = jobs.get("c")
    assert job["state"] == "dead" and job["attempts"] == 3 and "lease expired" in job["last_error"]


def test_two_threads_never_run_the_same_job(store: jl.Store) -> None:
    jobs = store.jobs.configure(lease=30)
    runs: list[str] = []
    lock = threading.Lock()

    @jobs.handler("count")
    def count(payload: Any, ctx: Any) -> None:
        with lock:
            runs.append(ctx.job["id"])

    jobs.enqueue_many([{"kind": "count", "payload": n, "id": f"c{n}"} for n in range(300)])
    summary = jobs.run_until_idle(progress=False, concurrency=6)
    assert summary["done"] == 300 and sorted(runs) == sorted(f"c{n}" for n in range(300))
    assert jobs.counts()["done"] == 300


@pytest.mark.needs("server_clock", "a server's clock: SQLite's database clock is this machine's")
def test_leases_are_judged_on_the_servers_clock(store: jl.Store, monkeypatch: Any) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_000_000_000.0)  # this machine's clock is years off
    jobs = store.jobs.configure(lease=30)  # the default clock: the database's
    jobs.handler("k")(lambda p, c: None)
    jobs.enqueue("k", None, id="a")
    lease = jobs.claim()
    assert lease is not None
    server = (
        store.db.connection().execute("SELECT extract(epoch FROM clock_timestamp())::float8").fetchone()[0]
    )
    assert abs(lease.until - 30 - server) < 1.0
    assert abs(jobs.get("a")["created_at"] - server) < 1.0


@pytest.mark.needs("concurrent_writers", "claims run concurrently only on a server")
def test_a_claim_refused_by_a_partition_leased_meanwhile_claims_again(
    open_store: Any, store: jl.Store, jobs: Jobs, clock: VirtualClock
) -> None:
    jobs.handler("work")(lambda p, c: p)
    jobs.enqueue("work", 1, id="b", partition_key="P")
    # Another session leases a job of the same partition and has not committed when the claim runs:
    # the claim's pick cannot see that lease, so its update waits on the partition's unique index,
    # is refused once the other commits, and the next claim sees the lease and takes nothing.
    other = open_store.reopen(store).db.connection()
    other.execute("BEGIN")
    other.execute(
        "INSERT INTO _jl_jobs(id, kind, state, run_at, due_at, max_attempts, partition_key, lease_until,"
        " lease_token, attempts, created_at, updated_at) VALUES ('x', 'work', 'leased', %s, %s, 5, 'P', %s,"
        " 'tok', 1, %s, %s)",
        (clock(), clock() + 30, clock() + 30, clock(), clock()),
    )
    committer = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    committer.start()
    try:
        with traced(store) as statements:
            assert jobs.claim() is None
    finally:
        committer.join()
    assert len(statements) == 2  # refused, then claimed again
    assert jobs.get("b")["state"] == "pending" and jobs.get("b")["attempts"] == 0
    other.execute("UPDATE _jl_jobs SET state = 'done', due_at = NULL WHERE id = 'x'")
    assert jobs.claim().id == "b"
