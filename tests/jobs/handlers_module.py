"""Handlers for the process tests: they log every execution (at-least-once) to a file named in the payload."""

from __future__ import annotations

import os
import time
from typing import Any

from jarenlab.errors import JobError
from jarenlab.jobs import Handlers

jobs = Handlers()


def _log(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


@jobs.handler("record", lease=5)
def record(payload: Any, ctx: Any) -> dict[str, Any]:
    _log(payload["log"], f"run {ctx.job['id']} {ctx.attempt} {os.getpid()}")
    time.sleep(payload.get("sleep", 0))  # long enough that every process starts before the queue is dry
    return {"pid": os.getpid()}


@jobs.handler("slow", lease=1)
def slow(payload: Any, ctx: Any) -> int:
    _log(payload["log"], f"start {ctx.job['id']} {ctx.attempt} {os.getpid()} {time.time()}")
    time.sleep(payload["seconds"])
    _log(payload["log"], f"end {ctx.job['id']} {ctx.attempt} {os.getpid()}")
    return ctx.attempt


graph = jobs.dag("pipeline")


@graph.task
def extract(payload: Any, inputs: dict[str, Any]) -> list[int]:
    _log(payload["log"], f"task extract {os.getpid()}")
    return [1, 2, 3]


@graph.task(after=["extract"])
def transform(payload: Any, inputs: dict[str, Any]) -> list[int]:
    _log(payload["log"], f"task transform {os.getpid()}")
    return [x * 10 for x in inputs["extract"]]


@graph.task(after=["transform"])
def load(payload: Any, inputs: dict[str, Any]) -> int:
    _log(payload["log"], f"task load-start {os.getpid()}")
    time.sleep(payload["seconds"])
    _log(payload["log"], f"task load {os.getpid()}")
    return sum(inputs["transform"])


# -- staged and fenced actions (test_fenced_processes.py; the store's model declares the events) ------
@jobs.handler("fact", lease=1)
def fact(payload: Any, ctx: Any) -> int:
    """Stages one event and one job per attempt; slow on its first attempts (long enough to be killed)."""
    _log(payload["log"], f"start {ctx.job['id']} {ctx.attempt} {os.getpid()} {time.time()}")
    if ctx.attempt <= payload.get("slow_attempts", 1):
        time.sleep(payload["seconds"])
    ctx.emit("fact", {"job": ctx.job["id"], "attempt": ctx.attempt})
    ctx.enqueue("follow", {"job": ctx.job["id"], "attempt": ctx.attempt})
    _log(payload["log"], f"end {ctx.job['id']} {ctx.attempt} {os.getpid()}")
    return int(ctx.attempt)


@jobs.handler("direct", lease=1)
def direct(payload: Any, ctx: Any) -> int:
    """Emits straight to the ledger (fenced by the lease) after a slow first attempt."""
    _log(payload["log"], f"start {ctx.job['id']} {ctx.attempt} {os.getpid()} {time.time()}")
    if ctx.attempt == 1:
        time.sleep(payload["seconds"])
    try:
        ctx.store.events.emit("fact.direct", {"job": ctx.job["id"], "attempt": ctx.attempt})
    except JobError as err:
        _log(payload["log"], f"refused {ctx.job['id']} {ctx.attempt} {err.code}")
        raise
    return int(ctx.attempt)


@jobs.handler("hang", lease=1, timeout=0.5)
def hang(payload: Any, ctx: Any) -> None:
    """Runs far past its timeout."""
    _log(payload["log"], f"start {ctx.job['id']} {ctx.attempt} {os.getpid()} {time.time()}")
    time.sleep(60)


# -- per-kind limits (test_limits.py) ----------------------------------------------------------------
@jobs.handler("limited", lease=5, rate="4/s", max_running=2)
def limited(payload: Any, ctx: Any) -> int:
    """Logs its claim time (the queue's clock: the lease's end less its length) and its run."""
    claimed = ctx.job["lease_until"] - 5
    _log(payload["log"], f"start {ctx.job['id']} {os.getpid()} {time.time()} {claimed}")
    time.sleep(payload["seconds"])
    _log(payload["log"], f"end {ctx.job['id']} {os.getpid()} {time.time()}")
    return os.getpid()
