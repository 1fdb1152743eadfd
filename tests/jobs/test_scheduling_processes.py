"""Periodic jobs and fan-out across real processes, on every backend: a period is enqueued once
however many processes tick it at once, and a batch's combiner once when its last two jobs settle
at the same moment in two worker processes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.jobs import VirtualClock
from tests.jobs.scheduling_handlers import FIRST_HOUR
from tests.waiting import wait_for

from .conftest import MODEL
from .workers import ROOT, lines, stop
from .workers import worker as running_worker

pytestmark = pytest.mark.slow


@pytest.fixture
def db(open_store: Any) -> dict[str, Any]:
    """A store's target (``jl.open(**db)`` opens it), made with the model."""
    open_store(MODEL, "sched").close()
    return open_store.target("sched")


def worker(db: dict[str, Any], log: Path, *extra: str) -> subprocess.Popen[bytes]:
    return running_worker(
        db,
        "--poll",
        "0.05",
        *extra,
        handlers="tests.jobs.scheduling_handlers:register",
        JL_SCHEDULE_LOG=str(log),
    )


def combines(log: Path) -> list[list[str]]:
    """The combiners' lines (the workers' ``minutely`` schedule logs its periods to the same file
    whenever a minute turns during the test)."""
    return [parts for parts in lines(log) if parts[0] == "combine"]


def test_four_processes_ticking_the_same_hours_enqueue_each_once(db: dict[str, Any]) -> None:
    rounds = 40
    start = time.time() + 2.0  # every process is open and waiting before the first tick
    target = {k: str(v) for k, v in db.items()}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.jobs.scheduling_handlers", json.dumps(target), str(rounds), str(start)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for _ in range(4)
    ]  # fmt: skip
    enqueued: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        enqueued += json.loads(out)
    expected = [f"hourly@{FIRST_HOUR + n * 3600:.0f}" for n in range(rounds)]
    assert sorted(enqueued) == sorted(expected)  # each hour enqueued by exactly one process
    with jl.open(**db) as store:
        assert sorted(j["id"] for j in store.jobs.list(kind="report", limit=1000)) == sorted(expected)
        periods = store.jobs.schedules["hourly"].periods(limit=1000)
    assert Counter(p["outcome"] for p in periods) == Counter({"enqueued": rounds})


def test_worker_processes_enqueue_the_due_minute_once_and_show_the_missed_ones(
    db: dict[str, Any], tmp_path: Path
) -> None:
    log = tmp_path / "schedule.log"
    # The schedule was declared five minutes ago (a store on a clock set back), then no worker ran.
    declared = time.time() - 300
    with jl.open(**db, clock=VirtualClock(declared)) as store:
        store.jobs.periodic("minutely", "* * * * *", "minute-report", payload={"log": str(log)})
    procs = [worker(db, log) for _ in range(3)]
    try:
        wait_for(lambda: lines(log), what="the due minute to run")
        time.sleep(0.5)  # long enough for a second enqueue of that minute to run too, were there one
    finally:
        stop(procs)
    ran = Counter(parts[1] for parts in lines(log))
    assert ran and set(ran.values()) == {1}, ran  # every period ran once
    with jl.open(**db) as store:
        periods = store.jobs.schedules["minutely"].periods(limit=100)
        jobs = store.jobs.list(kind="minute-report")
    runs = [p for p in periods if p["outcome"] != "missed"]
    assert sorted(p["period"] for p in runs) == sorted(ran) and len(jobs) == len(runs)
    (gap,) = [p for p in periods if p["outcome"] == "missed"]
    assert gap["count"] >= 4  # the minutes of the downtime before the one that ran


def test_a_batch_combiner_is_enqueued_once_when_its_last_jobs_settle_together(
    db: dict[str, Any], tmp_path: Path
) -> None:
    log = tmp_path / "combine.log"
    batches = 30
    # Two workers of one slot each, both running before the batches exist: each takes the next job in
    # order, so a batch's two jobs run in two processes, and each waits for its sibling to start.
    procs = [worker(db, log, "--concurrency", "1") for _ in range(2)]
    try:
        with jl.open(**db) as store:
            store.jobs.declare("part", "combine")
            for b in range(batches):
                store.jobs.fan_out("part", [b * 10, b * 10 + 1], then="combine", id=f"b{b:02}")
        wait_for(lambda: len(combines(log)) >= batches, what="every combiner to run")
        time.sleep(0.5)
    finally:
        stop(procs)
    combined = Counter(parts[1] for parts in combines(log))
    assert combined == Counter({f"b{b:02}": 1 for b in range(batches)})
    for parts in combines(log):
        b = int(parts[1][1:])
        assert json.loads(parts[2]) == [b * 10, b * 10 + 1]  # the results in payload order
    with jl.open(**db) as store:
        assert store.jobs.counts(kind="combine")["done"] == batches
        split = 0
        for b in range(batches):
            first, second = (store.jobs.get(f"b{b:02}~{i}") for i in (0, 1))
            split += first["result"]["pid"] != second["result"]["pid"]
            assert abs(first["settled_at"] - second["settled_at"]) < 1.0
    assert split >= batches // 2  # most batches' two jobs settled in two processes at once
