"""Fan-out batches on every backend: the combiner once, with the results in order; failures marked;
progress, frame and HTML; coded refusals that write nothing."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab.errors import JobError
from jarenlab.jobs import Jobs, VirtualClock


@pytest.fixture
def combined(jobs: Jobs) -> list[dict[str, Any]]:
    """Handlers: ``square`` (fails for negatives), ``total`` (the combiner: records its payload)."""
    seen: list[dict[str, Any]] = []

    @jobs.handler("square", max_attempts=2)
    def square(n: Any, ctx: Any) -> int:
        if n < 0:
            raise ValueError(f"negative: {n}")
        return int(n * n)

    @jobs.handler("total")
    def total(payload: dict[str, Any], ctx: Any) -> int:
        seen.append(payload)
        return sum(r for r in payload["results"] if r is not None)

    return seen


def test_the_combiner_runs_once_with_the_results_in_order(jobs: Jobs, combined: list[Any]) -> None:
    batch = jobs.fan_out("square", [3, 1, 2], then="total", id="sq", then_payload={"note": "x"})
    assert batch.combiner is None and batch.progress()["pending"] == 3
    assert [j["id"] for j in jobs.list(kind="square")] == ["sq~0", "sq~1", "sq~2"]
    result = jobs.run_until_idle(progress=False, concurrency=3)
    assert result["done"] == 4
    assert combined == [{"batch": "sq", "results": [9, 1, 4], "failures": [], "payload": {"note": "x"}}]
    assert batch.combiner == "sq~then" and jobs.get("sq~then")["result"] == 14
    progress = batch.progress()
    assert (progress["size"], progress["settled"], progress["done"], progress["combiner_state"]) == (
        3,
        3,
        3,
        "done",
    )
    frame = batch.frame()
    assert list(frame["job"]) == ["sq~0", "sq~1", "sq~2"] and set(frame["outcome"]) == {"done"}


def test_a_dead_job_is_marked_and_the_combiner_still_runs(
    jobs: Jobs, clock: VirtualClock, combined: list[Any]
) -> None:
    batch = jobs.fan_out("square", [2, -1, 3], then="total", id="mixed")
    jobs.run_until_idle(progress=False)  # the retry of -1 waits in virtual time, then it is dead
    (payload,) = combined
    assert payload["results"] == [4, None, 9]
    assert payload["failures"] == [
        {"position": 1, "job": "mixed~1", "outcome": "dead", "error": "ValueError: negative: -1"}
    ]
    record = batch.record()
    assert (record["settled"], record["failed"]) == (3, 1)
    assert batch.progress()["dead"] == 1 and jobs.get("mixed~then")["result"] == 13
    assert "mixed" in batch._repr_html_() and "1 failed" in batch._repr_html_()


def test_a_cancelled_job_is_a_failure_and_a_requeued_one_changes_nothing(
    jobs: Jobs, combined: list[Any]
) -> None:
    batch = jobs.fan_out("square", [1, 2], then="total", id="c")
    assert jobs.cancel("c~0")
    jobs.run_until_idle(progress=False)
    (payload,) = combined
    assert payload["results"] == [None, 4] and payload["failures"][0]["outcome"] == "cancelled"
    jobs.requeue("c~0")
    jobs.run_until_idle(progress=False)
    assert len(combined) == 1 and jobs.get("c~0")["state"] == "done"
    assert batch.members()[0]["outcome"] == "cancelled"  # the batch keeps the outcome it combined
    assert jobs.counts(kind="total")["done"] == 1


def test_an_empty_batch_enqueues_its_combiner_at_once(jobs: Jobs, combined: list[Any]) -> None:
    batch = jobs.fan_out("square", [], then="total", id="none")
    assert batch.combiner == "none~then"
    jobs.run_until_idle(progress=False)
    assert combined == [{"batch": "none", "results": [], "failures": [], "payload": None}]


def test_a_fan_out_in_a_rolled_back_transaction_leaves_nothing(jobs: Jobs, combined: list[Any]) -> None:
    with pytest.raises(RuntimeError), jobs.store.transaction():
        jobs.fan_out("square", [1, 2], then="total", id="gone")
        raise RuntimeError("abandon")
    with pytest.raises(JobError) as info:
        jobs.batch("gone")
    assert info.value.code == "JD2184" and jobs.list() == []


def test_the_combiner_can_be_a_dag(jobs: Jobs, combined: list[Any]) -> None:
    graph = jobs.dag("report")

    @graph.task
    def add(payload: Any, inputs: Any) -> int:
        return sum(payload["results"])

    @graph.task(after=["add"])
    def double(payload: Any, inputs: Any) -> int:
        return inputs["add"] * 2

    jobs.fan_out("square", [1, 2], then="report", id="d")
    jobs.run_until_idle(progress=False)
    assert jobs.get("d~then")["result"] == {"double": 10}


def test_batches_frame_lists_the_latest(jobs: Jobs, clock: VirtualClock, combined: list[Any]) -> None:
    jobs.fan_out("square", [1], then="total", id="one")
    clock.advance(1)
    jobs.fan_out("square", [1, 2], then="total", id="two")
    jobs.run_until_idle(progress=False)
    frame = jobs.batches()
    assert list(frame.index) == ["two", "one"]
    assert list(frame.loc["two", ["size", "settled", "failed", "combiner"]]) == [2, 2, 0, "two~then"]
    assert "1/1 settled" in repr(jobs.batch("one"))


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda jobs: jobs.fan_out("square", {"a": 1}, then="total"), "JD2183"),
        (lambda jobs: jobs.fan_out("square", 5, then="total"), "JD2183"),
        (lambda jobs: jobs.fan_out("square", [1], then=""), "JD2183"),
        (lambda jobs: jobs.fan_out("square", [1], then="total", id="a~b"), "JD2183"),
        (lambda jobs: jobs.fan_out("square", [1], then="total", then_payload=float("inf")), "JD2183"),
        (lambda jobs: jobs.fan_out("square", [1, float("nan")], then="total", id="bad"), "JD2125"),
        (lambda jobs: jobs.fan_out("", [1], then="total", id="bad"), "JD2125"),
        (lambda jobs: jobs.batch("missing"), "JD2184"),
    ],
)
def test_bad_fan_outs_are_refused_and_write_nothing(
    jobs: Jobs, combined: list[Any], call: Any, code: str
) -> None:
    with pytest.raises(JobError) as info:
        call(jobs)
    assert info.value.code == code
    assert jobs.list() == [] and len(jobs.batches()) == 0


def test_a_taken_batch_id_is_refused(jobs: Jobs, combined: list[Any]) -> None:
    jobs.fan_out("square", [1], then="total", id="once")
    with pytest.raises(JobError) as info:
        jobs.fan_out("square", [2, 3], then="total", id="once")
    assert info.value.code == "JD2183" and len(jobs.list(kind="square")) == 1
