"""Cron expressions: the five standard fields, parsed once, searched forwards and backwards.

``minute hour day-of-month month day-of-week``, each ``*``, a number, a range ``a-b``, a step
``*/n``, ``a-b/n`` or ``a/n`` (from ``a`` to the field's end), or a comma list of those. Months
and weekdays also take names (``jan``, ``mon``); Sunday is 0 or 7. As in cron, when both
day fields are restricted (neither starts with ``*``) a day matches if *either* does; otherwise
both must. ``@hourly``, ``@daily`` (``@midnight``), ``@weekly``, ``@monthly`` and ``@yearly``
(``@annually``) name the usual expressions. Times are in the expression's zone (UTC unless
given): a local time that does not exist that day (a clock moved forward) is skipped, one that
happens twice (moved back) runs at its first occurrence.

>>> cron = Cron("*/15 9-17 * * mon-fri")
>>> from datetime import datetime, timezone
>>> start = datetime(2026, 12, 5, 12, 0, tzinfo=timezone.utc).timestamp()   # a Saturday
>>> datetime.fromtimestamp(cron.next_after(start), timezone.utc).isoformat()
'2026-12-07T09:00:00+00:00'
>>> datetime.fromtimestamp(cron.last_at_or_before(start), timezone.utc).isoformat()
'2026-12-04T17:45:00+00:00'
>>> Cron("0 0 1 * mon").matches(datetime(2026, 12, 7))     # a Monday, not the 1st: the OR rule
True
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jarenlab.errors import JobError

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
#: Per field: its name, smallest and largest value, and the names its values may take.
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {name: i for i, name in enumerate(_MONTHS, 1)}),
    ("day of week", 0, 7, {name: i for i, name in enumerate(_DAYS)}),
)
_MACROS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}  # fmt: skip
#: How far a search looks before deciding the expression never matches (Feb 29 on a weekday
#: recurs within 28 years).
_HORIZON_DAYS = 366 * 29


def _bad(expression: str, why: str) -> JobError:
    return JobError("JD2180", f"bad cron expression {expression!r}: {why}")


def _number(text: str, field: int, expression: str) -> int:
    name, low, high, names = _FIELDS[field]
    value = names.get(text.lower()) if not text.isdigit() else int(text)
    if value is None or not low <= value <= high:
        raise _bad(expression, f"{text!r} is not a valid {name} ({low}-{high})")
    return value


def _field(text: str, field: int, expression: str) -> frozenset[int]:
    """The values one field allows."""
    name, low, high, _ = _FIELDS[field]
    values: set[int] = set()
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) < 1:
                raise _bad(expression, f"the step in {part!r} is not a positive number")
            step = int(step_text)
        if span == "*":
            first, last = low, high
        elif "-" in span:
            a, _, b = span.partition("-")
            first, last = _number(a, field, expression), _number(b, field, expression)
            if first > last:
                raise _bad(expression, f"the range {span!r} of the {name} runs backwards")
        elif span:
            first = _number(span, field, expression)
            last = high if step_text else first
        else:
            raise _bad(expression, f"an empty part in the {name} field")
        values.update(range(first, last + 1, step))
    if field == 4 and 7 in values:  # Sunday is 0 or 7
        values = (values - {7}) | {0}
    return frozenset(values)


def zone(name: str) -> ZoneInfo | timezone:
    """The time zone called ``name`` (``"UTC"``, ``"Europe/Paris"``); JD2180 for an unknown one."""
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise JobError("JD2180", f"unknown time zone {name!r}") from exc


def iso(t: float | None) -> str | None:
    """Epoch seconds as an ISO 8601 UTC string (None stays None).

    >>> iso(0.0)
    '1970-01-01T00:00:00Z'
    """
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


class Cron:
    """A parsed cron expression in a time zone.

    Raises:
        JobError: JD2180 for an expression that is malformed, out of range or never matches.
    """

    def __init__(self, expression: str, tz: str = "UTC") -> None:
        if type(expression) is not str:
            raise JobError("JD2180", f"a cron expression is a string, not {expression!r}")
        text = _MACROS.get(expression.strip().lower(), expression)
        parts = text.split()
        if len(parts) != 5:
            raise _bad(expression, f"it has {len(parts)} fields, not 5 (minute hour day month weekday)")
        self.expression = expression
        self.tz = tz
        self._zone = zone(tz)
        fields = [_field(part, i, expression) for i, part in enumerate(parts)]
        self.minutes, self.hours, self.days, self.months, self.weekdays = fields
        # cron's rule: both day fields restricted -> either may match; else both must.
        self._either = not parts[2].startswith("*") and not parts[4].startswith("*")
        if self.next_after(datetime(2000, 1, 1, tzinfo=UTC).timestamp()) is None:
            raise _bad(expression, "no date ever matches it")

    def matches(self, local: datetime) -> bool:
        """True when the local (naive or zoned) time's minute is one the expression names."""
        return local.minute in self.minutes and local.hour in self.hours and self._day(local)

    def _day(self, local: datetime) -> bool:
        if local.month not in self.months:
            return False
        dom = local.day in self.days
        dow = (local.weekday() + 1) % 7 in self.weekdays
        return (dom or dow) if self._either else (dom and dow)

    def _epoch(self, local: datetime) -> float | None:
        """The local wall time as epoch seconds; None when it does not exist in the zone that day."""
        zoned = local.replace(tzinfo=self._zone, fold=0)
        back = zoned.astimezone(UTC).astimezone(self._zone).replace(tzinfo=None)
        return zoned.timestamp() if back == local else None

    def next_after(self, t: float) -> float | None:
        """The first matching time strictly after epoch seconds ``t`` (None: never)."""
        local = datetime.fromtimestamp(t, self._zone).replace(tzinfo=None, second=0, microsecond=0)
        local += timedelta(minutes=1)
        limit = local + timedelta(days=_HORIZON_DAYS)
        while local < limit:
            if not self._day(local):
                local = local.replace(hour=0, minute=0) + timedelta(days=1)
            elif local.hour not in self.hours:
                local = local.replace(minute=0) + timedelta(hours=1)
            elif local.minute not in self.minutes:
                local += timedelta(minutes=1)
            else:
                at = self._epoch(local)
                if at is not None and at > t:
                    return at
                local += timedelta(minutes=1)
        return None

    def last_at_or_before(self, t: float) -> float | None:
        """The latest matching time at or before epoch seconds ``t`` (None: none within 29 years)."""
        local = datetime.fromtimestamp(t, self._zone).replace(tzinfo=None, second=0, microsecond=0)
        limit = local - timedelta(days=_HORIZON_DAYS)
        while local > limit:
            if not self._day(local):
                local = local.replace(hour=23, minute=59) - timedelta(days=1)
            elif local.hour not in self.hours:
                local = local.replace(minute=59) - timedelta(hours=1)
            elif local.minute not in self.minutes:
                local -= timedelta(minutes=1)
            else:
                at = self._epoch(local)
                if at is not None and at <= t:
                    return at
                local -= timedelta(minutes=1)
        return None

    def between(self, after: float, through: float, *, limit: int) -> tuple[int, float | None]:
        """How many matching times lie in ``(after, through]`` (counting stops at ``limit``), and
        the first of them (None when there is none)."""
        count, first, at = 0, None, self.next_after(after)
        while at is not None and at <= through and count < limit:
            first = at if first is None else first
            count += 1
            at = self.next_after(at)
        return count, first

    def __repr__(self) -> str:
        return f"Cron({self.expression!r}, tz={self.tz!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cron) and (self.expression, self.tz) == (other.expression, other.tz)

    def __hash__(self) -> int:
        return hash((self.expression, self.tz))


__all__ = ["Cron", "iso", "zone"]
