"""Real worker processes for staged and fenced actions: SIGKILL mid-handler, a worker stalled (SIGSTOP)
past its lease while another takes the job over, a handler past its timeout, and shutdown reporting.

No fact is ever duplicated: each job's staged event and staged job exist exactly once, from the attempt
that settled it, however many attempts ran. On each backend.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from tests.waiting import wait_for

from .test_processes import COUNTERS, settles
from .workers import lines, worker

pytestmark = pytest.mark.slow

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
    "events": {"fact": {"type": "object"}, "fact.direct": {"type": "object"}},
}


@pytest.fixture
def db(open_store: Any) -> dict[str, Any]:
    """The store's target, with the settlement counter installed."""
    with open_store(MODEL, "fenced") as store:
        for statement in COUNTERS[store.backend.name]:
            store.db.connection().execute(statement)
    return open_store.target("fenced")


def started_by(log: Path, pid: int, count: int = 1) -> bool:
    return sum(1 for p in lines(log) if p[0] == "start" and p[3] == str(pid)) >= count


def facts(db: dict[str, Any], type_: str) -> Counter[str]:
    with jl.open(**db) as store:
        return Counter(e.payload["job"] for e in store.events.resume(type=type_))


def test_sigkilled_attempts_commit_nothing_they_staged(db: dict[str, Any], tmp_path: Path) -> None:
    log = tmp_path / "fact.log"
    ids = [f"f{n}" for n in range(4)]
    with jl.open(**db) as store:
        for job_id in ids:
            store.jobs.enqueue(
                "fact", {"log": str(log), "seconds": 0.6, "slow_attempts": 2}, id=job_id, max_attempts=20
            )
    for _ in range(4):
        proc = worker(db, "--concurrency", "1", "--lease", "1", "--poll", "0.05")
        wait_for(lambda proc=proc: started_by(log, proc.pid))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    final = worker(db, "--until-idle", "--concurrency", "4", "--lease", "1", "--poll", "0.05")
    _, err = final.communicate(timeout=90)
    assert final.returncode == 0, err.decode()
    runs = Counter(p[1] for p in lines(log) if p[0] == "start")
    assert sum(runs.values()) >= len(ids) + 4  # the killed attempts ran too
    assert settles(db) == Counter(dict.fromkeys(ids, 1))
    assert facts(db, "fact") == Counter(dict.fromkeys(ids, 1))  # never a duplicated fact
    with jl.open(**db) as store:
        follow = Counter(j["payload"]["job"] for j in store.jobs.list(kind="follow", limit=1000))
        assert follow == Counter(dict.fromkeys(ids, 1))
        for job_id in ids:  # the fact is the settling attempt's
            attempts = store.jobs.get(job_id)["attempts"]
            [event] = [e for e in store.events.resume(type="fact") if e.payload["job"] == job_id]
            assert (
                event.caused_by_job == job_id
                and event.caused_by_attempt == attempts == event.payload["attempt"]
            )


def test_a_worker_stalled_past_its_lease_writes_nothing_when_it_wakes(
    db: dict[str, Any], tmp_path: Path
) -> None:
    log = tmp_path / "stall.log"
    with jl.open(**db) as store:
        store.jobs.enqueue("fact", {"log": str(log), "seconds": 1.5}, id="staged")
        store.jobs.enqueue("direct", {"log": str(log), "seconds": 1.5}, id="direct")
    stalled = worker(db, "--concurrency", "2", "--lease", "1", "--poll", "0.05")
    try:
        wait_for(lambda: started_by(log, stalled.pid, 2))
        stalled.send_signal(signal.SIGSTOP)  # no renewal, no settlement: its leases run out
        other = worker(db, "--until-idle", "--concurrency", "2", "--lease", "1", "--poll", "0.05")
        _, err = other.communicate(timeout=60)
        assert other.returncode == 0, err.decode()
        stalled.send_signal(signal.SIGCONT)
        wait_for(lambda: any(p[0] == "refused" for p in lines(log)))
    finally:
        stalled.send_signal(signal.SIGCONT)
        stalled.terminate()  # exits in about 0.3 s here; a loaded machine waits out its grace periods
        try:
            stalled.wait(timeout=60)
        except subprocess.TimeoutExpired:  # show where it hangs (the workers run with faulthandler on)
            stalled.send_signal(signal.SIGABRT)
            _, err = stalled.communicate(timeout=30)
            raise AssertionError(f"the worker did not exit on SIGTERM:\n{err.decode()}") from None
    refused = [p for p in lines(log) if p[0] == "refused"]
    assert [(p[1], p[2]) for p in refused] == [("direct", "1")] and refused[0][3] in {
        "JD2065",
        "JD2066",
        "JD2067",
    }
    assert settles(db) == Counter({"staged": 1, "direct": 1})
    assert facts(db, "fact") == Counter({"staged": 1}) and facts(db, "fact.direct") == Counter({"direct": 1})
    with jl.open(**db) as store:
        assert [j["payload"]["attempt"] for j in store.jobs.list(kind="follow")] == [2]
        assert store.jobs.get("staged")["result"] == 2 and store.jobs.get("direct")["result"] == 2


def test_a_handler_past_its_timeout_fails_and_shutdown_reports_its_thread(
    db: dict[str, Any], tmp_path: Path
) -> None:
    log = tmp_path / "hang.log"
    with jl.open(**db) as store:
        store.jobs.enqueue("hang", {"log": str(log)}, id="hang", max_attempts=1)
    proc = worker(db, "--concurrency", "1", "--lease", "1", "--poll", "0.05", "--grace", "0.2")
    try:
        wait_for(lambda: started_by(log, proc.pid))
        with jl.open(**db) as store:
            wait_for(lambda: store.jobs.get("hang")["state"] == "dead")
            job = store.jobs.get("hang")
            assert "ran past its timeout of 0.5 s" in job["last_error"] and job["lease_until"] is None
            store.jobs.enqueue("fact", {"log": str(log), "seconds": 0, "slow_attempts": 0}, id="after")
            wait_for(lambda: store.jobs.get("after")["state"] == "done")  # the worker carried on
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert b"JD2062" in err and b"hang#1" in err  # the abandoned thread, reported at close


def test_shutdown_names_a_handler_still_running_and_strict_raises(db: dict[str, Any], tmp_path: Path) -> None:
    log = tmp_path / "close.log"  # the slow handler writes its start line here
    # The close waits for the handler's own start line: closing between the claim and the call
    # releases the job unrun (no handler is then still running). The lenient run's job is cancelled
    # before the strict run, whose worker would otherwise take it up once its lease lapsed.
    script = (
        "import os, sys, time, jarenlab as jl\n"
        "from tests.jobs.handlers_module import jobs as handlers\n"
        "store = jl.open(sys.argv[1], schema=sys.argv[2] or None)\n"
        "store.jobs.include(handlers)\n"
        "store.jobs.configure(close_grace=0.2, lease=1)\n"
        "store.jobs.enqueue('slow', {'log': sys.argv[3], 'seconds': 5}, id=sys.argv[4])\n"
        "store.jobs.start(concurrency=1)\n"
        "while not (os.path.exists(sys.argv[3]) and 'start ' + sys.argv[4] in open(sys.argv[3]).read()):\n"
        "    time.sleep(0.01)\n"
        "store.close(strict=sys.argv[4] == 'strict')\n"
        "print('closed')\n"
    )
    root = Path(__file__).resolve().parents[2]
    for mode in ("lenient", "strict"):
        log.unlink(missing_ok=True)
        args = [str(db["path"]), db.get("schema") or "", str(log), mode]
        proc = subprocess.run(
            [sys.executable, "-c", script, *args], cwd=root, capture_output=True, timeout=60
        )
        said = f"{mode}: exit {proc.returncode}, {proc.stdout!r}, {proc.stderr.decode()}"
        assert b"JD2062" in proc.stderr and f"'{mode}'".encode() in proc.stderr, said
        if mode == "strict":
            assert proc.returncode == 1 and b"closed" not in proc.stdout
        else:
            assert proc.returncode == 0 and b"closed" in proc.stdout
            with jl.open(**db) as store:  # its lease lapses in a second: the next run must not take it up
                store.jobs.cancel(mode)
