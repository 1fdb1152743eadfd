"""A failed attempt keeps its formatted traceback (bounded), with the attempt's number, beside
``last_error``: in ``jobs.get``, ``jobs.list``, ``jobs.frame``, ``recent_failures`` and the dashboard
widget's failures table. Once only ``"KeyError: 'missing'"`` was kept. On SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from jarenlab.jobs import Jobs
from jarenlab.jobs.worker import TRACEBACK_CHARS

from .conftest import run_one


def look_up(payload: dict[str, Any]) -> Any:
    return payload["missing"]


def test_a_failed_attempt_keeps_its_traceback(jobs: Jobs, clock: Any) -> None:
    jobs.handler("lookup", max_attempts=2)(lambda payload, ctx: look_up(payload))
    jobs.enqueue("lookup", {"present": 1}, id="j1")
    assert run_one(jobs) == "failed"
    job = jobs.get("j1")
    assert job["last_error"] == "KeyError: 'missing'"
    trace = job["last_traceback"]
    lines = trace.splitlines()
    assert lines[0] == "attempt 1:" and lines[1] == "Traceback (most recent call last):"
    assert "in look_up" in trace and 'return payload["missing"]' in trace
    assert lines[-1] == "KeyError: 'missing'"
    clock.advance(3600)
    assert run_one(jobs) == "dead"
    dead = jobs.get("j1")
    assert dead["last_traceback"].startswith("attempt 2:\n")
    assert jobs.list(state="dead")[0]["last_traceback"] == dead["last_traceback"]
    assert jobs.frame(state="dead").loc["j1", "last_traceback"] == dead["last_traceback"]
    assert jobs.recent_failures()[0]["last_traceback"] == dead["last_traceback"]
    widget = jobs.widget(refresh=None)
    try:
        assert "<summary><small>traceback</small></summary>" in widget.html
        assert "in look_up" in widget.html and "attempt 2:" in widget.html
    finally:
        widget.close()


def test_a_long_traceback_is_bounded_and_a_success_has_none(jobs: Jobs) -> None:
    def deep(n: int) -> None:
        if n == 0:
            raise ValueError("x" * 50_000)
        deep(n - 1)

    jobs.handler("deep", max_attempts=1)(lambda payload, ctx: deep(200))
    jobs.enqueue("deep", {}, id="d1")
    assert run_one(jobs) == "dead"
    trace = jobs.get("d1")["last_traceback"]
    assert len(trace) <= TRACEBACK_CHARS + 100
    assert "characters cut" in trace.splitlines()[1] and trace.endswith("x" * 100)
    # a job that never failed has none
    jobs.handler("fine")(lambda payload, ctx: 1)
    jobs.enqueue("fine", {}, id="f1")
    assert run_one(jobs) == "done" and jobs.get("f1")["last_traceback"] is None
