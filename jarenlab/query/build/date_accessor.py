"""The builder's ``.dt`` accessor: date and time functions of an expression holding date-times.

``it.time_hour.dt`` reads a member as an RFC 3339 date-time (or a ``YYYY-MM-DD`` date); its
properties and methods build the date operators of :mod:`jarenlab.query.lang.dates`, and ``+``/``-``
add an ISO 8601 duration (a string such as ``"PT30M"``, or a :class:`datetime.timedelta`).

>>> from jarenlab.query.build.expr import it
>>> it.time_hour.dt.hour.document
{'$date-part': ['$it.time_hour', 'hour']}
>>> it.time_hour.dt.trunc("day").document
{'$date-trunc': ['$it.time_hour', 'day']}
>>> (it.sched_dep.dt + "PT30M").document
{'$date-add': ['$it.sched_dep', 'PT30M']}
>>> (it.sched_dep.dt - timedelta(minutes=90)).document
{'$date-add': ['$it.sched_dep', '-PT5400S']}
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from jarenlab.errors import QueryError
from jarenlab.query.lang.dates import PARTS, UNITS


def duration_text(value: timedelta) -> str:
    """An ISO 8601 duration for a ``timedelta`` (seconds, to the millisecond): ``-PT5400S``.

    >>> duration_text(timedelta(days=1, milliseconds=5)), duration_text(timedelta(0))
    ('PT86400.005S', 'PT0S')
    """
    ms = value // timedelta(milliseconds=1)
    if ms != value / timedelta(milliseconds=1):
        raise QueryError("JQ2010", f"a duration is whole milliseconds, not {value!r}")
    sign, ms = ("-" if ms < 0 else ""), abs(ms)
    seconds, frac = divmod(ms, 1000)
    return f"{sign}PT{seconds}" + (f".{frac:03d}" if frac else "") + "S"


def _arg(value: Any) -> Any:
    """A method argument as a document: an expression's document, a ``timedelta`` as a duration,
    a string as itself (``$`` escaped)."""
    doc = getattr(value, "document", None)
    if doc is not None and not isinstance(value, str | int | float):
        return doc
    if isinstance(value, timedelta):
        return duration_text(value)
    if isinstance(value, str):
        return "$" + value if value.startswith("$") else value
    raise QueryError("JQ2010", f"a date argument is a string, a timedelta or an expression, not {value!r}")


_TRUNC = "the start of a day, hour, ... is .dt.trunc('day') (on a wall clock: .dt.trunc('day', tz='Europe/Paris'))"
_WEEKDAY = "the day of the week is .dt.weekday (ISO: Monday 1 to Sunday 7; pandas counts Monday 0)"
#: pandas ``.dt`` names the language spells another way, with what to write instead.
PANDAS: dict[str, str] = {
    "date": _TRUNC,
    "floor": _TRUNC + ", a fixed width from an origin .dt.bucket('PT15M')",
    "normalize": _TRUNC,
    "to_period": _TRUNC,
    "ceil": "the end of a unit is .dt.trunc(unit) + a duration ('P1D')",
    "round": "round to a unit with .dt.bucket(width) after adding half of it (.dt.add('PT30M'))",
    "strftime": "dates are RFC 3339 text already: parts are .dt.year, .dt.month, ...; other formats: "
    "run the query into pandas (q.to_pandas()) and format there",
    "tz_convert": "a wall clock's day or hour is .dt.trunc(unit, tz='Europe/Paris'); parts are UTC",
    "tz_localize": "date-times are stored with their offset (RFC 3339): .dt.trunc(unit, tz=...) reads a wall clock",
    "dayofweek": _WEEKDAY,
    "day_of_week": _WEEKDAY,
    "dayofyear": "the day of the year is .dt.doy",
    "day_of_year": "the day of the year is .dt.doy",
    "isocalendar": "the ISO week is .dt.week, the ISO weekday .dt.weekday",
    "days_in_month": "run the query into pandas (q.to_pandas()) for the month's length",
    "total_seconds": "the time between two date-times is .dt.diff(other, 'second')",
}


class DateAccessor:
    """Date functions of one expression (``expr.dt``); each returns a new expression.

    Properties give one :data:`~jarenlab.query.lang.dates.PARTS` field as an integer in UTC
    (``year``, ``quarter``, ``month``, ``week`` (ISO), ``day``, ``doy``, ``weekday`` (ISO,
    Monday 1), ``hour``, ``minute``, ``second``, ``millisecond``) and ``epoch`` (milliseconds).
    """

    __slots__ = ("_expr", "_shown")

    def __init__(self, expr: Any, shown: str) -> None:
        self._expr = expr
        self._shown = shown

    def _make(self, name: str, *args: Any) -> Any:
        return type(self._expr)({f"${name}": [self._expr.document, *(_arg(a) for a in args)]})

    def part(self, name: str) -> Any:
        """``$date-part``: one field by name (see the class docstring)."""
        if name not in PARTS:
            raise QueryError("JQ0020", f"a date part is one of {', '.join(PARTS)}, not {name!r}")
        return self._make("date-part", name)

    @property
    def epoch(self) -> Any:
        """``$epoch``: milliseconds since 1970-01-01T00:00:00Z."""
        return self._make("epoch")

    @property
    def year(self) -> Any:
        """The year."""
        return self.part("year")

    @property
    def quarter(self) -> Any:
        """The quarter, 1-4."""
        return self.part("quarter")

    @property
    def month(self) -> Any:
        """The month, 1-12."""
        return self.part("month")

    @property
    def week(self) -> Any:
        """The ISO week number, 1-53."""
        return self.part("week")

    @property
    def day(self) -> Any:
        """The day of the month."""
        return self.part("day")

    @property
    def doy(self) -> Any:
        """The day of the year, 1-366."""
        return self.part("doy")

    @property
    def weekday(self) -> Any:
        """The ISO day of the week, Monday 1 to Sunday 7."""
        return self.part("weekday")

    @property
    def hour(self) -> Any:
        """The hour, 0-23 (UTC)."""
        return self.part("hour")

    @property
    def minute(self) -> Any:
        """The minute, 0-59."""
        return self.part("minute")

    @property
    def second(self) -> Any:
        """The second, 0-59."""
        return self.part("second")

    @property
    def millisecond(self) -> Any:
        """The millisecond within the second, 0-999."""
        return self.part("millisecond")

    def trunc(self, unit: str, tz: str | None = None) -> Any:
        """``$date-trunc``: the start of the unit (``minute`` ... ``year``; weeks start on Monday), in
        UTC, or on the wall clock of ``tz`` (an IANA zone such as ``"Europe/Paris"``: its days are
        23 or 25 hours at the clock changes, as pandas' ``tz_convert(tz).dt.floor("D")``)."""
        if unit not in UNITS:
            raise QueryError("JQ0020", f"a date unit is one of {', '.join(UNITS)}, not {unit!r}")
        if tz is None:
            return self._make("date-trunc", unit)
        if type(tz) is not str:
            raise QueryError("JQ0020", f"tz is an IANA time zone name such as 'Europe/Paris', not {tz!r}")
        return self._make("date-trunc", unit, tz)

    def bucket(self, width: Any, origin: Any = None) -> Any:
        """``$time-bucket``: the start of the fixed-width bucket (``"PT15M"``, a timedelta) from
        ``origin`` (default 2000-01-03T00:00:00Z, a Monday)."""
        return (
            self._make("time-bucket", width) if origin is None else self._make("time-bucket", width, origin)
        )

    def add(self, duration: Any) -> Any:
        """``$date-add``: calendar-aware for years and months (the day clamps to the month's end)."""
        return self._make("date-add", duration)

    def diff(self, other: Any, unit: str) -> Any:
        """``$date-diff``: the number of ``unit`` boundaries from this date-time to ``other``."""
        if unit not in UNITS:
            raise QueryError("JQ0020", f"a date unit is one of {', '.join(UNITS)}, not {unit!r}")
        return self._make("date-diff", other, unit)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        advice = PANDAS.get(name, f"the date functions here are {', '.join(PARTS)}, epoch, part, trunc, bucket, add, diff")
        raise QueryError("JQ0034", f"{self._shown}.dt.{name}: {advice}")

    def __add__(self, duration: Any) -> Any:
        return self.add(duration)

    def __sub__(self, duration: Any) -> Any:
        if isinstance(duration, timedelta):
            return self.add(-duration)
        if isinstance(duration, str):
            return self.add(duration[1:] if duration.startswith("-") else "-" + duration)
        raise QueryError(
            "JQ2010",
            "dt - x takes a duration (a string or timedelta); for the time between two date-times "
            "use .dt.diff(other, unit)",
        )
