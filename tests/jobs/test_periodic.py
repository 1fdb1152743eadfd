"""Periodic jobs on every backend, in the store's virtual time: one enqueue per period, missed periods
recorded, the policy for the latest missed one, inspection (frame, HTML) and coded refusals."""

from __future__ import annotations

import time
from typing import Any

import pytest

from jarenlab.errors import JobError
from jarenlab.jobs import Jobs, VirtualClock
from jarenlab.jobs.cron import iso

from .conftest import MODEL

START = 1_900_000_000.0  # 2030-03-17T17:46:40Z
HOUR = 3600.0
H18 = 1_900_000_800.0  # 2030-03-17T18:00:00Z


@pytest.fixture
def ran(jobs: Jobs) -> list[dict[str, Any]]:
    """The payloads the ``report`` handler ran with, in order."""
    seen: list[dict[str, Any]] = []

    @jobs.handler("report")
    def report(payload: Any, ctx: Any) -> str:
        seen.append(payload)
        return str(payload["period"])

    return seen


def test_each_period_is_enqueued_once_with_its_time(jobs: Jobs, clock: VirtualClock, ran: list[Any]) -> None:
    assert iso(H18) == "2030-03-17T18:00:00Z"
    schedule = jobs.periodic("hourly", "0 * * * *", "report", payload={"to": "lab"})
    assert jobs.tick() == []  # 17:46: nothing has come yet
    clock.advance(H18 - START + 5)
    assert jobs.tick() == [f"hourly@{H18:.0f}"]
    assert jobs.tick() == []  # the same period again: decided
    jobs.run_until_idle(progress=False)
    assert ran == [{"schedule": "hourly", "period": "2030-03-17T18:00:00Z", "payload": {"to": "lab"}}]
    clock.advance(HOUR)
    assert jobs.run_until_idle(progress=False)["done"] == 1  # run_until_idle ticks first
    assert [p["period"] for p in ran] == ["2030-03-17T18:00:00Z", "2030-03-17T19:00:00Z"]
    periods = schedule.periods()
    assert [(p["period"], p["outcome"], p["state"]) for p in periods] == [
        ("2030-03-17T19:00:00Z", "enqueued", "done"),
        ("2030-03-17T18:00:00Z", "enqueued", "done"),
    ]
    assert schedule.missed() == []


def test_two_queues_on_one_database_enqueue_a_period_once(
    open_store: Any, clock: VirtualClock, jobs: Jobs
) -> None:
    twin = open_store.reopen(jobs.store, clock=clock).jobs  # another store object on the same database
    for queue in (jobs, twin):
        queue.periodic("hourly", "0 * * * *", "report")
    clock.advance(H18 - START + 1)
    assert (jobs.tick(), twin.tick()) == ([f"hourly@{H18:.0f}"], [])
    assert jobs.counts(kind="report")["pending"] == 1
    assert len(jobs.schedules["hourly"].periods()) == 1


def test_after_downtime_the_latest_missed_period_runs_once_and_the_others_are_shown(
    jobs: Jobs, clock: VirtualClock, ran: list[Any]
) -> None:
    jobs.periodic("hourly", "0 * * * *", "report")
    clock.advance(H18 - START + 5 * HOUR + 1200)  # 23:20: 18:00 .. 23:00 came with no worker
    assert jobs.tick() == [f"hourly@{H18 + 5 * HOUR:.0f}"]
    jobs.run_until_idle(progress=False)
    assert [p["period"] for p in ran] == ["2030-03-17T23:00:00Z"]
    schedule = jobs.schedules["hourly"]
    periods = schedule.periods()
    assert [(p["period"], p["outcome"], p["through"], p["count"]) for p in periods] == [
        ("2030-03-17T23:00:00Z", "caught_up", "2030-03-17T23:00:00Z", 1),
        ("2030-03-17T18:00:00Z", "missed", "2030-03-17T22:00:00Z", 5),
    ]
    assert schedule.missed() == [periods[1]]
    assert schedule.next_run() == H18 + 6 * HOUR
    frame = schedule.frame()
    assert list(frame["outcome"]) == ["caught_up", "missed"] and list(frame["count"]) == [1, 5]
    assert frame.loc[1, "through"].isoformat() == "2030-03-17T22:00:00+00:00"
    row = jobs.schedules.frame().loc["hourly"]
    assert row["missed"] == 5 and row["last_run"].isoformat() == "2030-03-17T23:00:00+00:00"
    assert row["next_run"].isoformat() == "2030-03-18T00:00:00+00:00" and bool(row["declared_here"])


def test_with_skip_a_late_period_runs_nothing_and_the_next_one_runs(
    jobs: Jobs, clock: VirtualClock, ran: list[Any]
) -> None:
    schedule = jobs.periodic("hourly", "0 * * * *", "report", missed="skip")
    clock.advance(H18 - START + 2 * HOUR + 1200)  # 20:20: 18:00, 19:00, 20:00 missed
    assert jobs.tick() == []
    assert [(p["period"], p["through"], p["count"]) for p in schedule.missed()] == [
        ("2030-03-17T18:00:00Z", "2030-03-17T20:00:00Z", 3)
    ]
    clock.advance(2400)  # 21:00
    jobs.run_until_idle(progress=False)
    assert [p["period"] for p in ran] == ["2030-03-17T21:00:00Z"]


def test_a_period_late_within_grace_is_on_time(jobs: Jobs, clock: VirtualClock) -> None:
    schedule = jobs.periodic("hourly", "0 * * * *", "report", grace=120, missed="skip")
    clock.advance(H18 - START + 119)
    assert jobs.tick() == [f"hourly@{H18:.0f}"]
    clock.advance(HOUR + 2)  # 19:02:01, two seconds past the grace
    assert jobs.tick() == []
    assert [(p["period"], p["outcome"]) for p in schedule.periods()] == [
        ("2030-03-17T19:00:00Z", "missed"), ("2030-03-17T18:00:00Z", "enqueued"),
    ]  # fmt: skip


def test_a_schedule_declared_again_after_a_restart_keeps_its_place(
    open_store: Any, clock: VirtualClock
) -> None:
    store = open_store(MODEL, "restart", clock=clock)
    store.jobs.periodic("daily", "@daily", "report", tz="Europe/Paris")
    store.close()
    clock.advance(3 * 86400)
    again = open_store(MODEL, "restart", clock=clock)
    schedule = again.jobs.periodic("daily", "@daily", "report", tz="Europe/Paris")
    (job,) = again.jobs.tick()
    assert again.jobs.get(job)["payload"]["period"] == "2030-03-19T23:00:00Z"  # midnight in Paris
    assert [(p["period"], p["count"]) for p in schedule.missed()] == [("2030-03-17T23:00:00Z", 2)]


def test_a_background_worker_ticks(jobs: Jobs, clock: VirtualClock, ran: list[Any]) -> None:
    jobs.periodic("minutely", "* * * * *", "report")
    worker = jobs.start(concurrency=1, poll=0.01)
    try:
        clock.advance(60)
        deadline = time.monotonic() + 10
        while not ran and time.monotonic() < deadline:
            time.sleep(0.01)  # the worker's loop ticks within its poll
        assert jobs.wait_for_idle(timeout=10)
    finally:
        worker.stop(grace=5)
    assert [p["period"] for p in ran] == ["2030-03-17T17:47:00Z"]


def test_inspection_frame_html_and_removal(jobs: Jobs, clock: VirtualClock) -> None:
    jobs.periodic("hourly", "0 * * * *", "report")
    jobs.periodic("weekdays", "30 9 * * mon-fri", "report", tz="America/New_York", missed="skip")
    frame = jobs.schedules.frame()
    assert list(frame.index) == ["hourly", "weekdays"]
    assert list(frame.columns) == [
        "cron",
        "tz",
        "kind",
        "policy",
        "next_run",
        "last_run",
        "missed",
        "declared_here",
    ]
    assert frame.loc["weekdays", "next_run"].isoformat() == "2030-03-18T13:30:00+00:00"  # Monday, EDT
    assert (
        "weekdays" in jobs.schedules._repr_html_() and "2030-03-18T13:30:00Z" in jobs.schedules._repr_html_()
    )
    clock.advance(H18 - START)
    jobs.tick()
    html = jobs.schedules["hourly"]._repr_html_()
    assert "hourly" in html and "enqueued" in html and "2030-03-17T18:00:00Z" in html
    assert "weekdays" in jobs.schedules and "nothing" not in jobs.schedules
    jobs.schedules.remove("weekdays")
    assert list(jobs.schedules.frame().index) == ["hourly"]
    with pytest.raises(JobError) as info:
        jobs.schedules["weekdays"]
    assert info.value.code == "JD2182"
    with pytest.raises(JobError) as info:
        jobs.schedules.remove("weekdays")
    assert info.value.code == "JD2182"


@pytest.mark.parametrize(
    ("args", "options", "code"),
    [
        (("", "* * * * *", "report"), {}, "JD2181"),
        (("a@b", "* * * * *", "report"), {}, "JD2181"),
        (("s", "* * * * *", ""), {}, "JD2181"),
        (("s", "* * * * *", "report"), {"missed": "all"}, "JD2181"),
        (("s", "* * * * *", "report"), {"grace": -1}, "JD2181"),
        (("s", "* * * * *", "report"), {"payload": float("nan")}, "JD2181"),
        (("s", "61 * * * *", "report"), {}, "JD2180"),
        (("s", "* * * * *", "report"), {"tz": "Nowhere/City"}, "JD2180"),
    ],
)
def test_bad_declarations_are_refused_and_store_nothing(
    jobs: Jobs, args: tuple[Any, ...], options: dict[str, Any], code: str
) -> None:
    with pytest.raises(JobError) as info:
        jobs.periodic(*args, **options)
    assert info.value.code == code
    assert jobs.schedules.rows() == []


def test_declaring_a_name_again_differently_in_one_process_is_refused(jobs: Jobs) -> None:
    jobs.periodic("hourly", "0 * * * *", "report")
    jobs.periodic("hourly", "0 * * * *", "report")  # the same: fine
    with pytest.raises(JobError) as info:
        jobs.periodic("hourly", "5 * * * *", "report")
    assert info.value.code == "JD2181" and "differently" in str(info.value)
