"""Handlers and a ticking loop for the scheduling process tests (real processes on one store).

``register(jobs)`` is what ``python -m jarenlab worker --handlers tests.jobs.scheduling_handlers:register``
calls: it declares the ``minutely`` schedule (logging to ``$JL_SCHEDULE_LOG``) and the fan-out kinds.
``python -m tests.jobs.scheduling_handlers TARGET_JSON ROUNDS START`` ticks an hourly schedule through
ROUNDS hours of fixed time, each round the same hour in every process, starting at real time START.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from jarenlab.jobs import Jobs

#: The first hour the racing processes tick (2030-03-17T18:00:00Z), and a few seconds past it.
FIRST_HOUR = 1_900_000_800.0


def _log(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _lines(path: str) -> list[str]:
    with open(path) as f:
        return f.read().splitlines()


def register(jobs: Jobs) -> None:
    log = os.environ["JL_SCHEDULE_LOG"]

    @jobs.handler("minute-report")
    def minute_report(payload: Any, ctx: Any) -> int:
        _log(payload["payload"]["log"], f"period {payload['period']} {os.getpid()}")
        return os.getpid()

    @jobs.handler("part", lease=10)
    def part(payload: Any, ctx: Any) -> dict[str, Any]:
        # Wait (a few seconds at most) for the batch's other job to start, then finish on the next
        # 25 ms boundary of real time: the two, running in different processes, settle at once.
        started = f"{log}.started"
        _log(started, str(payload))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and str(payload ^ 1) not in _lines(started):
            time.sleep(0.005)
        time.sleep(0.025 - time.time() % 0.025)
        return {"n": payload, "pid": os.getpid()}

    @jobs.handler("combine")
    def combine(payload: Any, ctx: Any) -> int:
        _log(
            log,
            f"combine {payload['batch']} {json.dumps([r['n'] for r in payload['results']], separators=(',', ':'))} {os.getpid()}",
        )
        return len(payload["results"])

    jobs.periodic("minutely", "* * * * *", "minute-report", payload={"log": log})


def race(target: dict[str, Any], rounds: int, start: float) -> list[str]:
    """Tick the ``hourly`` schedule once per hour of fixed time; returns the jobs this process enqueued."""
    import jarenlab as jl

    now = [FIRST_HOUR - 60]
    path = target.pop("path")
    with jl.open(path, clock=lambda: now[0], **target) as store:
        store.jobs.declare("report")
        store.jobs.periodic("hourly", "0 * * * *", "report")
        while time.time() < start:
            time.sleep(0.001)
        mine = []
        for n in range(rounds):
            now[0] = FIRST_HOUR + n * 3600 + 1
            mine += store.jobs.tick()
        return mine


if __name__ == "__main__":
    print(json.dumps(race(json.loads(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))))
