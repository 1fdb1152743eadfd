"""The date functions against Python's own calendar (``datetime``) on seeded random instants."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

from jarenlab.query import evaluate
from jarenlab.query.lang.dates import epoch_ms, format_ms

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
RNG = random.Random(16)
INSTANTS = [
    EPOCH + timedelta(milliseconds=RNG.randrange(-62_135_596_800_000 + 86_400_000 * 2, 253_402_214_400_000))
    for _ in range(400)
]


def _ms(dt: datetime) -> int:
    return (dt - EPOCH) // timedelta(milliseconds=1)


def _text(dt: datetime, offset_minutes: int) -> str:
    local = dt.astimezone(timezone(timedelta(minutes=offset_minutes)))
    return local.isoformat(timespec="milliseconds")


def test_epoch_and_format_agree_with_datetime() -> None:
    for dt in INSTANTS:
        offset = RNG.randrange(-23 * 60, 23 * 60 + 1)
        assert epoch_ms(_text(dt, offset)) == _ms(dt)
        assert epoch_ms(format_ms(_ms(dt))) == _ms(dt)
        assert format_ms(_ms(dt))[:19] == dt.strftime("%Y-%m-%dT%H:%M:%S").rjust(19, "0")


def test_parts_agree_with_datetime() -> None:
    for dt in INSTANTS:
        t = format_ms(_ms(dt))
        iso = dt.isocalendar()
        want = [dt.year, dt.month, iso.week, dt.day, dt.timetuple().tm_yday, iso.weekday, dt.hour, dt.minute]
        parts = ["year", "month", "week", "day", "doy", "weekday", "hour", "minute"]
        got = [evaluate({"$date-part": [t, p]}, None)[0] for p in parts]
        assert got == want, t


def test_trunc_and_diff_agree_with_datetime() -> None:
    for dt in INSTANTS:
        t = format_ms(_ms(dt))
        day = dt.replace(hour=0, minute=0, second=0, microsecond=0)
        monday = day - timedelta(days=dt.weekday())
        if monday.year < 1:
            continue
        assert evaluate({"$date-trunc": [t, "day"]}, None) == [format_ms(_ms(day))]
        assert evaluate({"$date-trunc": [t, "week"]}, None) == [format_ms(_ms(monday))]
        assert evaluate({"$date-diff": [format_ms(0), t, "day"]}, None) == [(day - EPOCH).days]


def test_adding_days_agrees_with_datetime() -> None:
    for dt in INSTANTS[:100]:
        n = RNG.randrange(-1000, 1000)
        t = format_ms(_ms(dt))
        got = evaluate({"$date-add": [t, f"{'-' if n < 0 else ''}P{abs(n)}DT1H"]}, None)
        try:
            want = dt + timedelta(days=n, hours=1 if n >= 0 else -1)
        except OverflowError:
            continue
        if 1 <= want.year <= 9999:
            assert got == [format_ms(_ms(want))]
