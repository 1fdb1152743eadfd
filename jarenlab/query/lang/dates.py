"""Dates, date-times and durations: the ``$epoch $date-add $date-diff $date-trunc $date-part
$time-bucket`` functions of the reference engine.

A date-time is an RFC 3339 string (``2013-01-01T05:00:00Z``, ``2013-01-01T00:00:00-05:00``,
``T``/``t``/space between date and time, an optional fraction of at most millisecond precision);
a date is ``YYYY-MM-DD`` (midnight UTC). Both are read as instants on the proleptic Gregorian
calendar in UTC, to the millisecond, years 0000-9999; no leap seconds (``:60`` is refused) and no
time zones other than the written offset (so no daylight-saving rules: UTC arithmetic only).
Results that are date-times are written in one form, UTC with ``Z`` and milliseconds only when
they are not zero. A duration is ISO 8601 ``[-]PnYnMnWnDTnHnMnS`` (seconds may have a fraction of
up to 3 digits): years and months are calendar steps, the rest a fixed number of milliseconds.

>>> epoch_ms("2013-01-01T00:00:00-05:00"), format_ms(epoch_ms("2013-01-01"))
(1357016400000, '2013-01-01T00:00:00Z')
>>> add_duration(epoch_ms("2024-01-31T10:00:00Z"), parse_duration("P1M", "/"))
1709200800000
>>> format_ms(_)
'2024-02-29T10:00:00Z'
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

from jarenlab.errors import QueryError
from jarenlab.query.lang.values import kind

_DATE_TIME = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)(?:[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([Zz])|([+-])(\d\d):(\d\d)))?\Z"
)
_DURATION = re.compile(
    r"(-)?P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?"
    r"(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,3}))?S)?)?\Z"
)
SECOND = 1000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR
WEEK = 7 * DAY
#: ``$date-trunc`` and ``$date-diff`` units with a fixed width (milliseconds).
FIXED_UNITS = {"millisecond": 1, "second": SECOND, "minute": MINUTE, "hour": HOUR, "day": DAY}
#: Every unit ``$date-trunc`` and ``$date-diff`` take.
UNITS = (*FIXED_UNITS, "week", "month", "quarter", "year")
#: Every part ``$date-part`` takes (``weekday``: ISO, Monday 1 to Sunday 7; ``week``: ISO week).
PARTS = (
    "year",
    "quarter",
    "month",
    "week",
    "day",
    "doy",
    "weekday",
    "hour",
    "minute",
    "second",
    "millisecond",
)
#: The default ``$time-bucket`` origin: a Monday, so week buckets start on Mondays.
DEFAULT_ORIGIN = "2000-01-03T00:00:00Z"
_MIN_MS = -62167219200000  # 0000-01-01T00:00:00Z
_MAX_MS = 253402300800000  # 10000-01-01T00:00:00Z (exclusive)


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date.

    >>> days_from_civil(1970, 1, 1), days_from_civil(2000, 3, 1)
    (0, 11017)
    """
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    """The ``(year, month, day)`` of a day number (the inverse of :func:`days_from_civil`).

    >>> civil_from_days(11017), civil_from_days(-1)
    ((2000, 3, 1), (1969, 12, 31))
    """
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


def month_days(y: int, m: int) -> int:
    """The number of days in a month (leap years by the Gregorian rule).

    >>> month_days(2024, 2), month_days(1900, 2), month_days(2000, 2), month_days(2013, 4)
    (29, 28, 29, 30)
    """
    if m == 2:
        return 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28
    return 30 if m in (4, 6, 9, 11) else 31


def epoch_ms(text: str, where: str = "") -> int:
    """Milliseconds since 1970-01-01T00:00:00Z of an RFC 3339 date-time or a ``YYYY-MM-DD`` date;
    ``JQ2020`` for anything else (a bad field, a leap second, a fraction finer than 1 ms).

    >>> epoch_ms("1970-01-01T00:00:01.5Z"), epoch_ms("1969-12-31T23:59:59.999+00:00")
    (1500, -1)
    """
    m = _DATE_TIME.match(text)
    if m is None:
        raise QueryError(
            "JQ2020", f"{text!r} is not an RFC 3339 date-time or a YYYY-MM-DD date", doc_path=where
        )
    y, mo, d = int(m[1]), int(m[2]), int(m[3])
    if not 1 <= mo <= 12 or not 1 <= d <= month_days(y, mo):
        raise QueryError("JQ2020", f"{text!r} names no calendar day", doc_path=where)
    ms = days_from_civil(y, mo, d) * DAY
    if m[4] is None:
        return ms
    h, mi, s = int(m[4]), int(m[5]), int(m[6])
    if h > 23 or mi > 59 or s > 59:
        raise QueryError(
            "JQ2020", f"{text!r} has a time of day out of range (no leap seconds)", doc_path=where
        )
    frac = m[7] or ""
    if frac[3:].strip("0"):
        raise QueryError("JQ2020", f"{text!r} is finer than a millisecond", doc_path=where)
    ms += h * HOUR + mi * MINUTE + s * SECOND + int((frac + "000")[:3])
    if m[9] is not None:
        oh, om = int(m[10]), int(m[11])
        if oh > 23 or om > 59:
            raise QueryError("JQ2020", f"{text!r} has an offset out of range", doc_path=where)
        ms -= (1 if m[9] == "+" else -1) * (oh * HOUR + om * MINUTE)
    return ms


def format_ms(ms: int, where: str = "") -> str:
    """The UTC date-time of an epoch millisecond count: ``...Z``, a fraction only when not zero.

    >>> format_ms(0), format_ms(-1), format_ms(86400000 * 366 + 250)
    ('1970-01-01T00:00:00Z', '1969-12-31T23:59:59.999Z', '1971-01-02T00:00:00.250Z')
    """
    if not _MIN_MS <= ms < _MAX_MS:
        raise QueryError("JQ2010", "the date-time is outside the years 0000-9999", doc_path=where)
    days, rest = divmod(ms, DAY)
    y, m, d = civil_from_days(days)
    h, rest = divmod(rest, HOUR)
    mi, rest = divmod(rest, MINUTE)
    s, frac = divmod(rest, SECOND)
    tail = f".{frac:03d}" if frac else ""
    return f"{y:04d}-{m:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{tail}Z"


def parse_duration(text: str, where: str) -> tuple[int, int]:
    """An ISO 8601 duration as ``(months, milliseconds)``; ``JQ2021`` when it is not one.

    >>> parse_duration("P1Y2M", "/"), parse_duration("-PT1H30M", "/"), parse_duration("P1W1DT0.5S", "/")
    ((14, 0), (0, -5400000), (0, 691200500))
    """
    m = _DURATION.match(text)
    if m is None or text.endswith(("P", "T")) or not any(m.groups()[1:]):
        raise QueryError("JQ2021", f"{text!r} is not an ISO 8601 duration (PnYnMnWnDTnHnMnS)", doc_path=where)
    n = [int(g) if g else 0 for g in m.groups()[1:8]]
    months = n[0] * 12 + n[1]
    ms = n[2] * WEEK + n[3] * DAY + n[4] * HOUR + n[5] * MINUTE + n[6] * SECOND
    ms += int(((m[9] or "") + "000")[:3])
    sign = -1 if m[1] else 1
    return sign * months, sign * ms


def add_duration(ms: int, duration: tuple[int, int]) -> int:
    """Add a duration: calendar months first (the day clamped to the month's end), then the
    fixed part. So 01-31 plus a month is the last day of February, and ``P1M`` then ``-P1M``
    need not return to the start.

    >>> format_ms(add_duration(epoch_ms("2023-03-31"), (-1, 0)))
    '2023-02-28T00:00:00Z'
    """
    months, fixed = duration
    if months:
        days, rest = divmod(ms, DAY)
        y, m, d = civil_from_days(days)
        total = y * 12 + (m - 1) + months
        y, m = divmod(total, 12)
        m += 1
        ms = days_from_civil(y, m, min(d, month_days(y, m))) * DAY + rest
    return ms + fixed


def truncate(ms: int, unit: str) -> int:
    """The start of the ``unit`` (:data:`UNITS`) holding an instant; weeks start on Monday.

    >>> format_ms(truncate(epoch_ms("2013-05-17T13:45:10Z"), "quarter"))
    '2013-04-01T00:00:00Z'
    >>> format_ms(truncate(epoch_ms("2013-01-01T13:45:10Z"), "week"))
    '2012-12-31T00:00:00Z'
    """
    width = FIXED_UNITS.get(unit)
    if width is not None:
        return ms - ms % width
    days = ms // DAY
    if unit == "week":
        return (days - (days + 3) % 7) * DAY  # 1970-01-01 was a Thursday
    y, m, _ = civil_from_days(days)
    if unit == "month":
        return days_from_civil(y, m, 1) * DAY
    if unit == "quarter":
        return days_from_civil(y, m - (m - 1) % 3, 1) * DAY
    return days_from_civil(y, 1, 1) * DAY


def unit_number(ms: int, unit: str) -> int:
    """The ordinal of the ``unit`` holding an instant (consecutive units differ by one).

    >>> unit_number(epoch_ms("1970-02-15"), "month"), unit_number(epoch_ms("1970-01-05"), "week")
    (23641, 1)
    """
    width = FIXED_UNITS.get(unit)
    if width is not None:
        return ms // width
    days = ms // DAY
    if unit == "week":
        return (days + 3) // 7
    y, m, _ = civil_from_days(days)
    if unit == "month":
        return y * 12 + m - 1
    if unit == "quarter":
        return y * 4 + (m - 1) // 3
    return y


def part(ms: int, name: str) -> int:
    """One field (:data:`PARTS`) of an instant in UTC.

    >>> [part(epoch_ms("2021-01-03T07:08:09.010Z"), p) for p in PARTS]
    [2021, 1, 1, 53, 3, 3, 7, 7, 8, 9, 10]
    """
    days, rest = divmod(ms, DAY)
    y, m, d = civil_from_days(days)
    if name == "year":
        return y
    if name == "quarter":
        return (m - 1) // 3 + 1
    if name == "month":
        return m
    if name == "day":
        return d
    if name == "doy":
        return days - days_from_civil(y, 1, 1) + 1
    weekday = (days + 3) % 7 + 1
    if name == "weekday":
        return weekday
    if name == "week":
        thursday = days - weekday + 4  # the ISO week's year is its Thursday's year
        ty = civil_from_days(thursday)[0]
        return (thursday - days_from_civil(ty, 1, 1)) // 7 + 1
    fields = {"hour": rest // HOUR, "minute": rest // MINUTE % 60, "second": rest // SECOND % 60}
    return fields.get(name, rest % SECOND)


# -- the functions, over argument sequences -------------------------------------------------------
def _arg(seq: list[Any], where: str, what: str) -> Any:
    if not seq:
        return None
    if len(seq) > 1:
        raise QueryError("JQ2001", f"{what} takes one item, got {len(seq)}", doc_path=where)
    x = seq[0]
    if type(x) is not str:
        raise QueryError("JQ2004", f"{what} takes a string, got {kind(x)}", doc_path=where)
    return x


def _name(seq: list[Any], where: str, what: str, names: tuple[str, ...]) -> str | None:
    x = _arg(seq, where, what)
    if x is not None and x not in names:
        raise QueryError("JQ2022", f"{what} is one of {', '.join(names)}, not {x!r}", doc_path=where)
    return x


def instant(seq: list[Any], where: str, what: str) -> int | None:
    """A date-time argument (one string item) in epoch milliseconds, None when empty: JQ2001 for
    several items, JQ2004 for another kind, the date-time rules of :func:`epoch_ms`."""
    x = _arg(seq, where, what)
    return None if x is None else epoch_ms(x, where)


def _epoch(args: list[list[Any]], where: str) -> list[Any]:
    ms = instant(args[0], where, "$epoch")
    return [] if ms is None else [ms]


def _date_add(args: list[list[Any]], where: str) -> list[Any]:
    ms = instant(args[0], where, "$date-add")
    d = _arg(args[1], where, "$date-add duration")
    if ms is None or d is None:
        return []
    return [format_ms(add_duration(ms, parse_duration(d, where)), where)]


def _date_diff(args: list[list[Any]], where: str) -> list[Any]:
    a = instant(args[0], where, "$date-diff")
    b = instant(args[1], where, "$date-diff")
    unit = _name(args[2], where, "a $date-diff unit", UNITS)
    if a is None or b is None or unit is None:
        return []
    return [unit_number(b, unit) - unit_number(a, unit)]


def _date_trunc(args: list[list[Any]], where: str) -> list[Any]:
    ms = instant(args[0], where, "$date-trunc")
    unit = _name(args[1], where, "a $date-trunc unit", UNITS)
    zone = _arg(args[2], where, "a $date-trunc time zone") if len(args) > 2 else None
    if ms is None or unit is None:
        return []
    if zone is None:
        return [format_ms(truncate(ms, unit), where)]
    return [format_ms(local_truncate(ms, unit, zone, where), where)]


def local_truncate(ms: int, unit: str, zone: str, where: str = "") -> int:
    """The start of ``unit`` holding ``ms`` on the wall clock of the IANA time zone ``zone``, as
    epoch milliseconds (Python's ``zoneinfo`` rules: of two equal wall times at a fall-back, the one at
    the instant's own offset, as DuckDB; a start a spring-forward skips is read with the offset before
    the gap). ``JQ2010`` for a zone the
    system does not know.

    >>> format_ms(local_truncate(epoch_ms("2013-03-31T12:00:00Z"), "day", "Europe/Paris"))
    '2013-03-30T23:00:00Z'
    >>> format_ms(local_truncate(epoch_ms("2013-04-01T12:00:00Z"), "day", "Europe/Paris"))
    '2013-03-31T22:00:00Z'
    """
    import zoneinfo

    try:
        rules = zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise QueryError("JQ2010", f"{zone!r} is not a time zone this system knows (IANA names: 'Europe/Paris')",
                         doc_path=where) from None  # fmt: skip
    utc = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)
    offset = utc.astimezone(rules).utcoffset() or dt.timedelta()
    wall = truncate(ms + offset // dt.timedelta(milliseconds=1), unit)
    start = (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=wall)).replace(tzinfo=rules)
    if start.utcoffset() != offset and start.replace(fold=1).utcoffset() == offset:
        start = start.replace(fold=1)  # a wall time that comes twice: the one at the instant's offset
    return (start - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)


def _date_part(args: list[list[Any]], where: str) -> list[Any]:
    ms = instant(args[0], where, "$date-part")
    name = _name(args[1], where, "a $date-part part", PARTS)
    if ms is None or name is None:
        return []
    return [part(ms, name)]


def bucket_width(text: str, where: str) -> int:
    """A ``$time-bucket`` width in milliseconds: a positive duration with no years or months.

    >>> bucket_width("PT15M", "/")
    900000
    """
    months, ms = parse_duration(text, where)
    if months or ms <= 0:
        raise QueryError(
            "JQ2021",
            f"a bucket width is a positive fixed duration (weeks at most), not {text!r}",
            doc_path=where,
        )
    return ms


def _time_bucket(args: list[list[Any]], where: str) -> list[Any]:
    ms = instant(args[0], where, "$time-bucket")
    w = _arg(args[1], where, "$time-bucket width")
    origin = instant(args[2], where, "$time-bucket origin") if len(args) > 2 else epoch_ms(DEFAULT_ORIGIN)
    if ms is None or w is None or origin is None:
        return []
    width = bucket_width(w, where)
    return [format_ms(origin + (ms - origin) // width * width, where)]


DATE_FUNCTIONS: dict[str, Callable[[list[list[Any]], str], list[Any]]] = {
    "epoch": _epoch,
    "date-add": _date_add,
    "date-diff": _date_diff,
    "date-trunc": _date_trunc,
    "date-part": _date_part,
    "time-bucket": _time_bucket,
}
#: name -> (fewest, most) arguments.
DATE_ARITY = {
    "epoch": (1, 1),
    "date-add": (2, 2),
    "date-diff": (3, 3),
    "date-trunc": (2, 3),
    "date-part": (2, 2),
    "time-bucket": (2, 3),
}
#: The argument position holding a unit/part name, and the names it takes (checked at compile time
#: when it is a literal: ``JQ0020``).
NAMED_ARGUMENT = {"date-diff": (2, UNITS), "date-trunc": (1, UNITS), "date-part": (1, PARTS)}
