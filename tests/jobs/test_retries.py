"""Failures: backoff with jitter in virtual time, dead letters, handlers that misbehave in every way."""

from __future__ import annotations

from typing import Any

import pytest

import jarenlab as jl
from jarenlab.jobs import Jobs, VirtualClock, backoff

from .conftest import run_one


def test_backoff_is_capped_exponential_with_jitter() -> None:
    assert [backoff(n, rand=lambda: 0.0) for n in range(1, 9)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert backoff(3, rand=lambda: 0.999999) == pytest.approx(4.0, rel=1e-5)
    assert backoff(2, base=10, cap=15, rand=lambda: 1.0) == 15
    assert backoff(10_000, rand=lambda: 0.0) == 30  # no overflow


def test_retries_follow_the_backoff_then_dead_letter_with_the_last_error(
    jobs: Jobs, clock: VirtualClock
) -> None:
    @jobs.handler("flaky", max_attempts=4)
    def flaky(payload: Any, ctx: Any) -> None:
        raise ValueError(f"attempt {ctx.attempt} failed")

    jobs.enqueue("flaky", None, id="f")
    start = clock()
    waits = []
    for attempt in range(1, 4):
        assert run_one(jobs) == "failed"
        job = jobs.get("f")
        assert job["state"] == "failed" and job["attempts"] == attempt
        assert job["last_error"] == f"ValueError: attempt {attempt} failed"
        waits.append(job["run_at"] - clock())
        assert run_one(jobs) is None  # not due yet
        clock.advance(job["run_at"] - clock())
    assert waits == [0.75, 1.5, 3.0]  # base 1 s doubled, jitter x(0.5 + 0.5/2)
    assert run_one(jobs) == "dead"
    dead = jobs.get("f")
    assert dead["state"] == "dead" and dead["last_error"] == "ValueError: attempt 4 failed"
    assert dead["settled_at"] == clock() and clock() - start == pytest.approx(5.25)
    assert list(jobs.frame(state="dead").index) == ["f"]


def test_run_until_idle_waits_out_retries_in_virtual_time(jobs: Jobs, clock: VirtualClock) -> None:
    @jobs.handler("third-time-lucky")
    def lucky(payload: Any, ctx: Any) -> int:
        if ctx.attempt < 3:
            raise RuntimeError("not yet")
        return ctx.attempt

    jobs.enqueue("third-time-lucky", None, id="t")
    before = clock()
    summary = jobs.run_until_idle(progress=False)
    assert summary["failed"] == 2 and summary["done"] == 1 and summary["open"] == 0
    assert jobs.get("t")["result"] == 3 and clock() - before == pytest.approx(0.75 + 1.5)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("even the message fails")


@pytest.mark.parametrize(
    ("handler", "error"),
    [
        (lambda p, c: {1j}, "TypeError"),  # a result JSON cannot hold
        (lambda p, c: {"bad": object()}, "TypeError"),
        (
            lambda p, c: (_ for _ in ()).throw(Unprintable()),
            "Unprintable: <the exception's message could not be read>",
        ),
        (lambda p, c: (_ for _ in ()).throw(SystemExit(3)), "SystemExit: 3"),
        (lambda p, c: 1 / 0, "ZeroDivisionError: division by zero"),
    ],
)
def test_any_handler_outcome_is_an_ordinary_failed_attempt(jobs: Jobs, handler: Any, error: str) -> None:
    jobs.handler("bad", max_attempts=1)(handler)
    jobs.handler("good")(lambda p, c: "fine")
    jobs.enqueue("bad", None, id="b")
    jobs.enqueue("good", None, id="g")
    summary = jobs.run_until_idle(progress=False)
    assert summary["dead"] == 1 and summary["done"] == 1  # the loop carried on
    assert jobs.get("b")["last_error"].startswith(error)


def test_a_background_worker_survives_failing_handlers(store: jl.Store) -> None:
    jobs = store.jobs.configure(backoff_base=0.001, backoff_cap=0.002, poll=0.01)
    jobs.handler("boom", max_attempts=2)(lambda p, c: (_ for _ in ()).throw(Unprintable()))
    jobs.handler("ok")(lambda p, c: p)
    worker = jobs.start(concurrency=2)
    try:
        jobs.enqueue_many([{"kind": "boom", "payload": n} for n in range(5)] + [{"kind": "ok", "payload": 1}])
        assert jobs.wait_for_idle(timeout=10)
    finally:
        worker.stop(grace=1)
    assert jobs.counts()["dead"] == 5 and jobs.counts()["done"] == 1
    assert worker.stats["failed"] == 5 and worker.stats["dead"] == 5 and worker.stats["errors"] == 0
