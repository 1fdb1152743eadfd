"""The cron parser: each field form, cron's day rule, zones, and every search checked against a minute-by-minute scan."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from jarenlab.errors import JobError
from jarenlab.jobs.cron import Cron, iso


def utc(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()


def scan_next(cron: Cron, t: float, zone: ZoneInfo | timezone) -> float:
    """The oracle: walk minute by minute in UTC and ask ``matches`` of the local wall time."""
    at = (int(t) // 60 + 1) * 60
    seen: set[datetime] = set()
    while True:
        local = datetime.fromtimestamp(at, zone).replace(tzinfo=None)
        if cron.matches(local) and local not in seen:
            return float(at)
        seen.add(local)
        at += 60


@pytest.mark.parametrize(
    ("expression", "field", "values"),
    [
        ("* * * * *", "minutes", set(range(60))),
        ("5,10,15 * * * *", "minutes", {5, 10, 15}),
        ("10-14 * * * *", "minutes", {10, 11, 12, 13, 14}),
        ("*/20 * * * *", "minutes", {0, 20, 40}),
        ("10-30/10 * * * *", "minutes", {10, 20, 30}),
        ("50/5 * * * *", "minutes", {50, 55}),
        ("0 9-17/4,23 * * *", "hours", {9, 13, 17, 23}),
        ("0 0 * jan,MAR-may *", "months", {1, 3, 4, 5}),
        ("0 0 * * mon-fri", "weekdays", {1, 2, 3, 4, 5}),
        ("0 0 * * 7", "weekdays", {0}),
        ("0 0 * * 5-7", "weekdays", {5, 6, 0}),
    ],
)
def test_each_field_form(expression: str, field: str, values: set[int]) -> None:
    assert set(getattr(Cron(expression), field)) == values


def test_macros_name_the_usual_expressions() -> None:
    t = utc(2026, 12, 5, 11, 24)
    assert iso(Cron("@hourly").next_after(t)) == "2026-12-05T12:00:00Z"
    assert iso(Cron("@daily").next_after(t)) == "2026-12-06T00:00:00Z"
    assert iso(Cron("@weekly").next_after(t)) == "2026-12-06T00:00:00Z"  # a Sunday
    assert iso(Cron("@monthly").next_after(t)) == "2027-01-01T00:00:00Z"
    assert (
        iso(Cron("@yearly").next_after(t)) == iso(Cron("@annually").next_after(t)) == "2027-01-01T00:00:00Z"
    )


def test_both_day_fields_restricted_match_either_one_star_means_both() -> None:
    either = Cron("0 0 13 * fri")  # every 13th and every Friday
    days = [iso(t) for t in _run(either, utc(2026, 2, 1), 4)]
    assert days == [
        "2026-02-06T00:00:00Z",
        "2026-02-13T00:00:00Z",
        "2026-02-20T00:00:00Z",
        "2026-02-27T00:00:00Z",
    ]
    assert iso(either.next_after(utc(2026, 3, 7))) == "2026-03-13T00:00:00Z"  # the 13th, a Friday again
    assert iso(either.next_after(utc(2026, 4, 11))) == "2026-04-13T00:00:00Z"  # a Monday: the 13th alone
    both = Cron("0 0 */1 * fri")  # a day field starting with * is not a restriction: Fridays only
    assert iso(both.next_after(utc(2026, 4, 11))) == "2026-04-17T00:00:00Z"


def _run(cron: Cron, t: float, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = cron.next_after(t)  # type: ignore[assignment]
        out.append(t)
    return out


def test_a_zone_reads_the_fields_in_local_time() -> None:
    paris = Cron("0 9 * * *", "Europe/Paris")
    assert iso(paris.next_after(utc(2026, 12, 5, 0))) == "2026-12-05T08:00:00Z"  # winter: UTC+1
    assert iso(paris.next_after(utc(2026, 7, 5, 0))) == "2026-07-05T07:00:00Z"  # summer: UTC+2


def test_a_local_time_that_does_not_exist_is_skipped_one_that_repeats_runs_once() -> None:
    spring = Cron("30 2 * * *", "Europe/Paris")  # 2026-03-29: 02:00 -> 03:00
    assert [iso(t) for t in _run(spring, utc(2026, 3, 28, 12), 2)] == [
        "2026-03-30T00:30:00Z",
        "2026-03-31T00:30:00Z",
    ]
    autumn = Cron("30 2 * * *", "Europe/Paris")  # 2026-10-25: 03:00 -> 02:00, 02:30 happens twice
    assert [iso(t) for t in _run(autumn, utc(2026, 10, 24, 12), 2)] == [
        "2026-10-25T00:30:00Z",
        "2026-10-26T01:30:00Z",
    ]


@pytest.mark.parametrize("seed", range(4))
def test_searches_agree_with_a_minute_by_minute_scan(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(10):
        minute = rng.choice(["*", "*/7", "0", "15,45", "5-10", "59"])
        hour = rng.choice(["*", "3", "0-5/2", "22,23"])
        dom = rng.choice(["*", "1", "15-17", "*/10", "30"])
        month = rng.choice(["*", "*/2", "mar-dec"])  # at most two months apart: the scan stays short
        dow = rng.choice(["*", "sun", "mon-wed", "5"])
        tz = rng.choice(["UTC", "Europe/Paris", "America/New_York"])
        try:
            cron = Cron(f"{minute} {hour} {dom} {month} {dow}", tz)
        except JobError as exc:  # the 31st of February: refused at once
            assert "no date ever matches" in str(exc)
            continue
        zone = UTC if tz == "UTC" else ZoneInfo(tz)
        t = utc(2026, 1, 1) + rng.randrange(0, 365 * 86400)
        expected = scan_next(cron, t, zone)
        assert cron.next_after(t) == expected, cron
        assert cron.last_at_or_before(expected) == expected, cron
        assert cron.last_at_or_before(expected - 1) < expected, cron  # type: ignore[operator]
        assert cron.next_after(cron.last_at_or_before(expected - 1)) == expected, cron  # type: ignore[arg-type]


def test_between_counts_periods_and_stops_at_its_limit() -> None:
    cron = Cron("*/15 * * * *")
    assert cron.between(utc(2026, 1, 1, 0), utc(2026, 1, 1, 1), limit=100) == (4, utc(2026, 1, 1, 0, 15))
    assert cron.between(utc(2026, 1, 1, 0), utc(2026, 1, 2, 0), limit=10) == (10, utc(2026, 1, 1, 0, 15))
    assert cron.between(utc(2026, 1, 1, 0), utc(2026, 1, 1, 0, 10), limit=10) == (0, None)


@pytest.mark.parametrize(
    ("expression", "tz", "says"),
    [
        ("* * * *", "UTC", "4 fields"),
        ("60 * * * *", "UTC", "'60' is not a valid minute"),
        ("* 24 * * *", "UTC", "not a valid hour"),
        ("* * 0 * *", "UTC", "not a valid day of month"),
        ("* * * foo *", "UTC", "'foo' is not a valid month"),
        ("* * * * 8", "UTC", "not a valid day of week"),
        ("30-10 * * * *", "UTC", "runs backwards"),
        ("*/0 * * * *", "UTC", "not a positive number"),
        ("1,,2 * * * *", "UTC", "an empty part"),
        ("0 0 30 feb *", "UTC", "no date ever matches"),
        ("0 0 * * *", "Mars/Olympus", "unknown time zone"),
    ],
)
def test_a_bad_expression_is_refused_with_its_reason(expression: str, tz: str, says: str) -> None:
    with pytest.raises(JobError) as info:
        Cron(expression, tz)
    assert info.value.code == "JD2180" and says in str(info.value)


def test_february_29th_is_found_in_a_leap_year() -> None:
    assert iso(Cron("0 0 29 2 *").next_after(utc(2026, 3, 1))) == "2028-02-29T00:00:00Z"
    assert Cron("0 0 1 1 *") == Cron("0 0 1 1 *") and Cron("0 0 1 1 *") != Cron("0 0 1 1 *", "Europe/Paris")
