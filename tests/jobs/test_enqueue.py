"""Enqueue: ids, idempotency, scheduling, validation, batches, the transactional outbox, inspection."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import jarenlab as jl
from jarenlab.errors import JobError
from jarenlab.jobs import Jobs, VirtualClock

from .conftest import run_one


def test_a_caller_id_makes_enqueue_idempotent(jobs: Jobs) -> None:
    assert jobs.enqueue("fetch", {"day": 1}, id="w-1") == "w-1"
    assert jobs.enqueue("fetch", {"day": 1}, id="w-1") == "w-1"
    with pytest.raises(jl.JobError):  # another payload under a taken id is not the same job
        jobs.enqueue("fetch", {"day": 2}, id="w-1")
    assert jobs.enqueue("fetch", {"day": 2}, id="w-1", if_exists="keep") == "w-1"
    assert [j["payload"] for j in jobs.list()] == [{"day": 1}]


def test_generated_ids_are_distinct(jobs: Jobs) -> None:
    ids = {jobs.enqueue("fetch", n) for n in range(50)}
    assert len(ids) == 50 and jobs.counts()["pending"] == 50


def test_run_at_and_delay_schedule_the_job(jobs: Jobs, clock: VirtualClock) -> None:
    @jobs.handler("fetch")
    def fetch(payload: Any, ctx: Any) -> Any:
        return payload

    jobs.enqueue("fetch", 1, id="later", delay=60)
    jobs.enqueue("fetch", 2, id="at", run_at=clock() + 30)
    assert jobs.get("later")["run_at"] == clock() + 60
    assert run_one(jobs) is None
    clock.advance(30)
    assert run_one(jobs) == "done" and jobs.get("at")["state"] == "done"
    assert run_one(jobs) is None
    clock.advance(30)
    assert run_one(jobs) == "done" and jobs.get("later")["result"] == 1


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("", 1), {}),
        ((3, 1), {}),
        (("k", 1), {"id": ""}),
        (("k", 1), {"run_at": float("nan")}),
        (("k", 1), {"delay": float("inf")}),
        (("k", 1), {"max_attempts": 0}),
        (("k", 1), {"max_attempts": True}),
        (("k", 1), {"partition_key": ""}),
        (("k", 1), {"coalescing_key": 5}),
        (("k", {1: object()}), {}),
    ],
)
def test_bad_enqueue_arguments_are_refused_and_write_nothing(jobs: Jobs, args: Any, kwargs: Any) -> None:
    with pytest.raises(JobError) as err:
        jobs.enqueue(*args, **kwargs)
    assert err.value.code == "JD2125"
    assert jobs.list() == []


def test_max_attempts_defaults_from_the_handler_then_the_queue(jobs: Jobs) -> None:
    jobs.handler("picky", max_attempts=2)(lambda p, c: None)
    jobs.enqueue("picky", None, id="a")
    jobs.enqueue("other", None, id="b")
    jobs.enqueue("other", None, id="c", max_attempts=9)
    assert [jobs.get(i)["max_attempts"] for i in "abc"] == [2, 5, 9]


def test_enqueue_many_inserts_in_order_and_is_idempotent(jobs: Jobs) -> None:
    ids = jobs.enqueue_many(
        [{"kind": "k", "payload": n, "id": f"j{n}"} for n in range(5)]
        + [{"kind": "k", "payload": 9}, {"kind": "k", "payload": 7, "coalescing_key": "c", "delay": 5}]
    )
    assert ids[:5] == [f"j{n}" for n in range(5)] and len(set(ids)) == 7
    assert jobs.enqueue_many([{"kind": "k", "payload": 100, "id": "j0"}]) == ["j0"]
    assert [j["payload"] for j in jobs.list()] == [0, 1, 2, 3, 4, 9, 7]
    with pytest.raises(JobError):
        jobs.enqueue_many([{"kind": "k", "payload": 1, "id": "new"}, {"payload": 2}])
    assert jobs.get("new") is None


def test_enqueue_inside_a_transaction_commits_or_rolls_back_with_the_data(
    store: jl.Store, jobs: Jobs
) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store["notes"].insert({"id": "n1"})
        jobs.enqueue("mail", {"note": "n1"}, id="mail-n1")
        raise RuntimeError("abandon")
    assert jobs.get("mail-n1") is None and store["notes"].get("n1") is None
    with store.transaction():
        store["notes"].insert({"id": "n2"})
        jobs.enqueue("mail", {"note": "n2"}, id="mail-n2")
        with pytest.raises(ValueError), store.transaction():  # an inner level rolls back alone
            jobs.enqueue("mail", {"note": "inner"}, id="mail-inner")
            raise ValueError
    assert jobs.get("mail-n2")["state"] == "pending" and jobs.get("mail-inner") is None
    assert store["notes"].get("n2") == {"id": "n2"}


def test_unknown_kinds_are_never_claimed_or_dead_lettered(jobs: Jobs, clock: VirtualClock) -> None:
    jobs.handler("known")(lambda p, c: "ok")
    jobs.enqueue("from-the-future", {"v": 2}, id="f")
    jobs.enqueue("known", None, id="k")
    summary = jobs.run_until_idle(progress=False)
    assert summary["done"] == 1 and summary["open"] == 0
    clock.advance(10_000)
    assert jobs.run_until_idle(progress=False)["done"] == 0
    assert jobs.get("f")["state"] == "pending" and jobs.get("f")["attempts"] == 0
    assert jobs.counts()["pending"] == 1
    assert jobs.wait_for_idle(timeout=1)  # idle ignores kinds this process does not run


def test_get_list_counts_and_frame(jobs: Jobs) -> None:
    jobs.handler("ok")(lambda p, c: {"echo": p})
    for n in range(4):
        jobs.enqueue("ok", n, id=f"o{n}")
    jobs.enqueue("other", None, id="x")
    jobs.run_until_idle(progress=False)
    assert jobs.get("nope") is None
    record = jobs.get("o1")
    assert record["result"] == {"echo": 1} and "lease_token" not in record and record["attempts"] == 1
    assert [j["id"] for j in jobs.list(state="done", limit=2)] == ["o0", "o1"]
    assert [j["id"] for j in jobs.list(state="done", after="o1")] == ["o2", "o3"]
    assert [j["id"] for j in jobs.list(kind="other")] == ["x"]
    counts = jobs.counts()
    assert counts == {"pending": 1, "leased": 0, "failed": 0, "done": 4, "dead": 0, "cancelled": 0}
    assert jobs.counts(kind="ok")["done"] == 4
    frame = jobs.frame(state="done")
    assert list(frame.index) == ["o0", "o1", "o2", "o3"]
    assert isinstance(frame["settled_at"].dtype, pd.DatetimeTZDtype)
    assert jobs.frame(state="dead").empty
    with pytest.raises(JobError):
        jobs.list(state="finished")


def test_enqueue_many_handles_batches_larger_than_one_statement(jobs: Jobs) -> None:
    items = [{"kind": "k", "payload": n, "id": f"i{n % 150:03}"} for n in range(200)]  # ids repeat
    items += [{"kind": "k", "payload": n, "partition_key": "P"} for n in range(185)]
    ids = jobs.enqueue_many(items)
    assert len(ids) == 385 and len(set(ids)) == 150 + 185
    assert jobs.get("i007")["payload"] == 7  # the first of a repeated id wins
    assert jobs.counts()["pending"] == 335
    generated = ids[200:]
    assert generated == sorted(generated)  # generated ids ascend
    with pytest.raises(JobError):
        jobs.enqueue_many([{"kind": "k", "partition_key": 3}])


def test_payloads_follow_the_value_rules_and_never_turn_nan_into_null(store: jl.Store) -> None:
    import datetime as dt
    import math

    jobs = store.jobs
    for bad in (math.nan, math.inf, b"bytes"):
        with pytest.raises(jl.JarenlabError) as info:
            jobs.enqueue("k", {"v": bad})
        assert info.value.code == "JD2125"
        with pytest.raises(jl.JarenlabError):
            jobs.enqueue_many([{"kind": "k", "payload": {"v": bad}}])
    assert jobs.counts()["pending"] == 0
    when = dt.datetime(2013, 1, 1, 5, tzinfo=dt.UTC)
    job = jobs.get(jobs.enqueue("k", {"at": when}))
    assert job is not None and job["payload"] == {"at": "2013-01-01T05:00:00Z"}


def test_listing_refuses_bad_pages_instead_of_ignoring_them(store: jl.Store) -> None:
    jobs = store.jobs
    first = jobs.enqueue("k", 1)
    jobs.enqueue("k", 2)
    assert [j["payload"] for j in jobs.list(after=first)] == [2]
    for call in (
        lambda: jobs.list(limit=-1),
        lambda: jobs.list(limit="3"),
        lambda: jobs.list(limit=True),
        lambda: jobs.counts(kind=5),
    ):
        with pytest.raises(jl.JarenlabError) as info:
            call()
        assert info.value.code == "JD2125"
    with pytest.raises(jl.JarenlabError) as info:
        jobs.list(after="no-such-job")
    assert info.value.code == "JD2126"


def test_times_too_large_for_a_float_are_refused_with_a_code(store: jl.Store) -> None:
    with pytest.raises(jl.JarenlabError) as info:
        store.jobs.enqueue("k", None, run_at=10**400)
    assert info.value.code == "JD2125"
    with pytest.raises(jl.JarenlabError) as info:
        store.events.tail(last=True, follow=False)
    assert info.value.code == "JD2010"
