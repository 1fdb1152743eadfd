"""The DAG runner: order, checkpoints per task, resume after a lost lease, changed graphs, completion."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab.errors import JobError
from jarenlab.jobs import Context, Dag, Jobs, VirtualClock

from .conftest import run_one


@pytest.fixture
def calls() -> list[str]:
    return []


def build(jobs: Jobs, calls: list[str], *, fail_in: str | None = None, version: int = 1) -> Dag:
    dag = jobs.dag("report", lease=10)

    @dag.task
    def fetch(payload: Any, inputs: dict[str, Any]) -> list[int]:
        calls.append("fetch")
        return payload["numbers"]

    @dag.task(after=["fetch"])
    def double(payload: Any, inputs: dict[str, Any]) -> list[int]:
        calls.append("double")
        if fail_in == "double":
            raise RuntimeError("double failed")
        return [2 * n for n in inputs["fetch"]]

    @dag.task(after=["fetch"], version=version)
    def count(payload: Any, inputs: dict[str, Any]) -> int:
        calls.append("count")
        return len(inputs["fetch"])

    @dag.task(after=["double", "count"])
    def total(payload: Any, inputs: dict[str, Any]) -> float:
        calls.append("total")
        return sum(inputs["double"]) / inputs["count"]

    return dag


def test_tasks_run_after_their_dependencies_and_the_result_is_the_final_task(
    jobs: Jobs, calls: list[str]
) -> None:
    dag = build(jobs, calls)
    assert dag.order() == ["fetch", "double", "count", "total"]
    jobs.enqueue("report", {"numbers": [1, 2, 3]}, id="r")
    assert run_one(jobs) == "done"
    job = jobs.get("r")
    assert job["result"] == {"total": 4.0} and calls == ["fetch", "double", "count", "total"]
    assert jobs.checkpoints("r") == {}  # pruned in the completing transaction


def test_a_failed_attempt_resumes_from_its_checkpoints(
    jobs: Jobs, clock: VirtualClock, calls: list[str]
) -> None:
    build(jobs, calls, fail_in="double")
    jobs.enqueue("report", {"numbers": [1, 2]}, id="r")
    assert run_one(jobs) == "failed"
    assert set(jobs.checkpoints("r")) == {"$graph", "task:fetch"}
    build(jobs, calls)  # the bug is fixed; same graph shape
    clock.advance(1)
    assert run_one(jobs) == "done"
    assert calls == ["fetch", "double", "double", "count", "total"] and jobs.get("r")["result"] == {
        "total": 3.0
    }


def test_a_reclaimed_job_resumes_and_the_stale_attempt_cannot_checkpoint(
    jobs: Jobs, clock: VirtualClock, calls: list[str]
) -> None:
    dag = build(jobs, calls)
    jobs.enqueue("report", {"numbers": [5]}, id="r")
    stale = jobs.claim()
    stale_ctx = Context(jobs.queue, stale)  # the first attempt, driven by hand up to its first task
    stale_ctx.checkpoint("$graph", dag.shape())
    stale_ctx.checkpoint("task:fetch", [5])
    clock.advance(11)  # the worker froze; its lease ran out
    fresh = jobs.claim()
    assert fresh.attempt == 2
    with pytest.raises(JobError) as err:
        stale_ctx.checkpoint("task:double", [999])
    assert err.value.code == "JD2066"
    assert jobs.executor.execute(fresh) == "done"
    assert calls == ["double", "count", "total"] and jobs.get("r")["result"] == {"total": 10.0}


def test_resuming_under_a_changed_graph_is_refused_naming_the_change(
    jobs: Jobs, clock: VirtualClock, calls: list[str]
) -> None:
    build(jobs, calls, fail_in="double")
    jobs.enqueue("report", {"numbers": [1]}, id="r")
    assert run_one(jobs) == "failed"
    build(jobs, calls, version=2)
    clock.advance(1)
    assert run_one(jobs) == "dead"  # retrying cannot help
    job = jobs.get("r")
    assert "JD2069" in job["last_error"] and "task 'count' version moved from 1 to 2" in job["last_error"]
    assert set(jobs.checkpoints("r")) == {"$graph", "task:fetch"}  # kept for the post-mortem


def test_bad_graphs_are_refused(jobs: Jobs) -> None:
    dag = jobs.dag("bad")
    dag.add("a", lambda p, i: 1, after=["b"])
    dag.add("b", lambda p, i: 1, after=["a"])
    with pytest.raises(JobError, match="cycle"):
        dag.order()
    dag.add("c", lambda p, i: 1, after=["missing"])
    with pytest.raises(JobError, match="unknown task"):
        dag.order()
