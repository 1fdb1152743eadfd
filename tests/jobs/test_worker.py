"""Background workers and cells: stop with grace, close, interrupts, current_job, the progress bar."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.jobs import Jobs, VirtualClock, current_job
from tests.waiting import wait_for

from .conftest import MODEL

ROOT = Path(__file__).resolve().parents[2]


def test_stop_is_bounded_by_grace_and_reports_drained_and_in_flight(store: jl.Store) -> None:
    jobs = store.jobs.configure(poll=0.01, lease=30)
    started = threading.Barrier(3)
    release = threading.Event()

    @jobs.handler("polite")
    def polite(payload: Any, ctx: Any) -> str:
        started.wait(5)
        ctx.cancelled.wait(5)
        raise RuntimeError("stopped early")

    @jobs.handler("stubborn")
    def stubborn(payload: Any, ctx: Any) -> str:
        started.wait(5)
        release.wait(10)  # ignores ctx.cancelled
        return "eventually"

    jobs.enqueue("polite", None, id="p")
    jobs.enqueue("stubborn", None, id="s")
    worker = jobs.start(concurrency=2)
    started.wait(5)
    t0 = time.monotonic()
    stopped = worker.stop(grace=0.3)
    took = time.monotonic() - t0
    assert 0.25 <= took < 2
    assert stopped.drained == ("p",) and stopped.in_flight == ("s",)
    polite_job = jobs.get("p")
    assert polite_job["state"] == "pending" and polite_job["attempts"] == 1  # given back, due now
    assert polite_job["last_error"] is None
    assert jobs.get("s")["state"] == "leased"  # recovered by whoever claims after its lease
    release.set()
    for thread in worker._threads:  # the stubborn handler settles now: not while the store closes
        thread.join(10)


def test_store_close_stops_running_workers(store: jl.Store) -> None:
    jobs = store.jobs
    jobs.close_grace = 10.0  # generous: the assertion is that close() stops them, not how fast
    ran = threading.Event()
    jobs.handler("k")(lambda p, c: ran.set())
    worker = jobs.start(concurrency=2)
    jobs.enqueue("k", None)
    assert ran.wait(5)
    store.close()
    assert not worker.running and all(not t.is_alive() for t in worker._threads)


def test_an_enqueue_wakes_an_idle_worker_at_once(store: jl.Store) -> None:
    jobs = store.jobs.configure(poll=30)  # a poll this long would fail the test
    done = threading.Event()
    jobs.handler("k")(lambda p, c: done.set())
    worker = jobs.start(concurrency=1)
    try:
        time.sleep(0.05)
        jobs.enqueue("k", None)
        assert done.wait(5)
    finally:
        worker.stop(grace=1)


def test_an_enqueue_from_another_process_wakes_an_idle_worker_soon(store: jl.Store, open_store: Any) -> None:
    jobs = store.jobs.configure(poll=30)  # a poll this long would fail the test
    done = threading.Event()
    jobs.handler("k")(lambda p, c: done.set())
    worker = jobs.start(concurrency=1)
    elsewhere = open_store.reopen(store)  # its own connections, as another process has
    try:
        time.sleep(0.3)
        elsewhere.jobs.enqueue("k", None)
        assert done.wait(5)
    finally:
        worker.stop(grace=1)


def test_an_enqueue_signals_this_process_s_workers_as_it_returns(store: jl.Store) -> None:
    """The same-process wake-up is the enqueue's own signal (no watch between them): the queue's
    wake-up counter has moved by the time ``enqueue`` returns, and a job enqueued inside a
    transaction wakes the worker when it commits, with no poll in between (poll=30)."""
    jobs = store.jobs.configure(poll=30)
    done = threading.Event()
    jobs.handler("k")(lambda p, c: done.set())
    worker = jobs.start(concurrency=1)
    try:
        seen = jobs.generation
        jobs.enqueue("k", None)
        assert jobs.generation > seen
        assert done.wait(5)
        done.clear()
        time.sleep(0.05)  # (the loop is idle again)
        with store.transaction():
            jobs.enqueue("k", None, id="in-tx")
        assert done.wait(5) and wait_for(lambda: jobs.get("in-tx")["state"] == "done", 5)
    finally:
        worker.stop(grace=1)


def test_a_worker_in_another_process_is_woken_by_the_commit(open_store: Any, tmp_path: Path) -> None:
    """A real worker process (``python -m jarenlab worker``, polling every 30 s) starts a job enqueued
    here long before its poll would: SQLite's watch sees the commit counter move, PostgreSQL's
    NOTIFY arrives. The first job proves the worker is up; the second waits on the wake-up alone."""
    with open_store(MODEL, "woken"):
        pass
    db = open_store.target("woken")
    command = [sys.executable, "-m", "jarenlab", "worker", str(db["path"]), "--poll", "30"]
    if "schema" in db:
        command += ["--schema", db["schema"]]
    command += ["--handlers", "tests.jobs.handlers_module:jobs"]
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = str(tmp_path / "runs.log")
    store = open_store(None, "woken")
    try:
        store.jobs.declare("record")
        store.jobs.enqueue("record", {"log": log}, id="first")
        wait_for(lambda: store.jobs.get("first")["state"] == "done", what="the worker process to start")
        time.sleep(0.3)  # (its loop is idle again, waiting out a 30 s poll)
        enqueued = time.monotonic()
        store.jobs.enqueue("record", {"log": log}, id="second")
        wait_for(lambda: store.jobs.get("second")["state"] == "done", 20, what="the wake-up")
        assert time.monotonic() - enqueued < 20 < 30  # (generous: it is about the wake, not its speed)
    finally:
        child.terminate()
        child.wait(30)


def test_interrupting_the_cell_gives_the_lease_back(jobs: Jobs, clock: VirtualClock) -> None:
    @jobs.handler("long")
    def long(payload: Any, ctx: Any) -> None:
        raise KeyboardInterrupt  # what pressing "interrupt" does to the running handler

    jobs.handler("other")(lambda p, c: None)
    jobs.enqueue("long", None, id="l")
    jobs.enqueue("other", None, id="o")
    with pytest.raises(KeyboardInterrupt):
        jobs.run_until_idle(progress=False)
    job = jobs.get("l")
    assert (job["state"], job["attempts"], job["run_at"]) == ("pending", 1, clock())
    assert jobs.get("o")["state"] == "pending"
    jobs.handler("long")(lambda p, c: "finished")
    assert jobs.run_until_idle(progress=False)["done"] == 2 and jobs.get("l")["attempts"] == 2


def test_interrupting_a_threaded_run_stops_its_worker(store: jl.Store, monkeypatch: Any) -> None:
    jobs = store.jobs.configure(poll=0.01, close_grace=1)
    go = threading.Event()

    @jobs.handler("wait")
    def wait(payload: Any, ctx: Any) -> None:
        go.set()
        ctx.cancelled.wait(5)
        raise RuntimeError("cancelled")

    jobs.enqueue("wait", None, id="w")
    original = jobs._cond.wait

    def interrupt(timeout: float | None = None) -> bool:
        if go.is_set() and threading.current_thread() is threading.main_thread():
            raise KeyboardInterrupt  # Ctrl-C lands in the cell's thread, never in a worker
        return original(timeout)

    monkeypatch.setattr(jobs._cond, "wait", interrupt)
    with pytest.raises(KeyboardInterrupt):
        jobs.run_until_idle(progress=False, concurrency=2)
    assert jobs.get("w")["state"] == "pending" and not jobs._workers


def test_current_job_names_the_running_job(jobs: Jobs) -> None:
    seen: list[Any] = []
    jobs.handler("who")(lambda p, c: seen.append(current_job.get()))
    jobs.enqueue("who", None, id="me")
    jobs.run_until_idle(progress=False)
    assert seen == [("me", 1)] and current_job.get() is None


def test_run_until_idle_shows_a_progress_bar(jobs: Jobs, capsys: Any) -> None:
    jobs.handler("k")(lambda p, c: None)
    jobs.enqueue_many([{"kind": "k"} for _ in range(7)])
    assert jobs.run_until_idle(progress=True)["done"] == 7
    assert "7/7" in capsys.readouterr().err


def test_a_second_start_of_one_worker_is_refused(store: jl.Store) -> None:
    jobs = store.jobs.configure(poll=0.01)
    jobs.handler("k")(lambda p, c: None)
    worker = jobs.start(concurrency=1)
    try:
        with pytest.raises(jl.JarenlabError):
            worker.start()
        with pytest.raises(jl.JarenlabError):
            jobs.start(concurrency=0)
    finally:
        worker.stop(grace=1)


def test_restart_keeps_pending_delayed_and_retry_times_and_reruns_a_released_job(open_store: Any) -> None:
    clock = VirtualClock()
    store = first = open_store(MODEL, clock=clock, random=lambda: 0.5)
    jobs = store.jobs
    jobs.handler("fail-once")(lambda p, c: 1 / 0 if c.attempt == 1 else "ok")
    jobs.enqueue("fail-once", None, id="retry")
    jobs.enqueue("later", None, id="later", delay=3600)
    jobs.enqueue("now", None, id="now")
    later_at = clock() + 3600
    assert jobs.executor.execute(jobs.claim(kinds=["fail-once"])) == "failed"
    retry_at = jobs.get("retry")["run_at"]
    assert retry_at > clock()
    lease = jobs.claim(kinds=["now"])
    jobs.queue.release(lease)  # what a stopping worker does with a job whose handler gave up
    store.close()

    store = open_store.reopen(first, MODEL, clock=clock, random=lambda: 0.5)
    jobs = store.jobs
    assert jobs.get("retry")["run_at"] == retry_at and jobs.get("later")["run_at"] == later_at
    seen: list[int] = []
    jobs.handler("fail-once")(lambda p, c: "ok")
    jobs.handler("now")(lambda p, c: seen.append(c.attempt))
    summary = jobs.run_until_idle(progress=False)
    assert summary["done"] == 2 and seen == [2] and jobs.get("later")["state"] == "pending"
    store.close()
