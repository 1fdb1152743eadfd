"""Dates and date-times compared as the schema declares them, whatever Python value stood for them.

The language compares strings in code points, and a date and a date-time are both strings: the
date ``"2012-01-15"`` sorts before the date-time ``"2012-01-15T00:00:00"``, so a member declared
``"format": "date"`` compared with a midnight ``pd.Timestamp`` (which a query writes as that
date-time) would lose the boundary day. Before a query is planned, :func:`align` rewrites each
value compared with a member the schema declares ``format: date`` or ``format: date-time`` (a
literal, an ``isin`` list, or an external, whose value is rewritten when it is bound) so that the
code-point comparison is the comparison of instants the language defines (a date is its midnight
UTC; ``docs/query.md``, "Dates and date-times in comparisons"):

- against a **date** member, a date-time at midnight UTC becomes that date; one with a time of day
  becomes its UTC text (``...T05:00:00Z``), which sorts after its own day and before the next, as
  the instant does;
- against a **date-time** member (RFC 3339: always with an offset), a date becomes its midnight
  UTC (``...T00:00:00Z``), a date-time with an offset its UTC text, and a date-time with no zone
  is refused (``JQ0038``): which instant it names is not known, as pandas refuses to compare
  naive and zoned timestamps.

Every path (pushed SQL, the reference engine, live queries, owner views) runs the rewritten
document, so they agree.

>>> schema = {"type": "object", "properties": {"d": {"type": "string", "format": "date"}}}
>>> doc = {"$for": {"it": "$[*]"}, "$where": {"$ge": ["$it.d", "2012-01-15T00:00:00"]}, "$return": "$it"}
>>> align(doc, schema).document["$where"]
{'$ge': ['$it.d', '2012-01-15']}
>>> day("2012-01-15T05:00:00"), instant("2012-01-15", "it.t")
('2012-01-15T05:00:00Z', '2012-01-15T00:00:00Z')
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from jarenlab.errors import QueryError
from jarenlab.query.lang.document import parse
from jarenlab.query.lang.path import parse_path

_COMPARE = frozenset({"$eq", "$ne", "$lt", "$le", "$gt", "$ge"})
_DAY = re.compile(r"(\d{4})-(\d\d)-(\d\d)\Z")
_STAMP = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d\d):(\d\d))?\Z"
)
_OPAQUE = ("$ref", "anyOf", "oneOf", "allOf", "not", "if", "$dynamicRef")
_ZONE_HINT = (
    "attach a zone: pd.Timestamp(...).tz_localize('UTC') (or tz_localize('Europe/Paris')), "
    "datetime(..., tzinfo=datetime.timezone.utc), or a string ending in Z"
)


@dataclass(frozen=True)
class Alignment:
    """A document with its compared values rewritten, and the externals to rewrite when bound:
    (name, format, the member as shown) each."""

    document: Any
    externals: tuple[tuple[str, str, str], ...] = ()

    def bind(self, externals: dict[str, Any]) -> dict[str, Any]:
        """``externals`` with each value compared with a date or date-time member rewritten as
        :func:`align` rewrites a literal (a list item by item).

        >>> Alignment(None, (("t", "date", "it.d"),)).bind({"t": "2020-01-02T00:00:00", "n": 1})
        {'t': '2020-01-02', 'n': 1}
        """
        if not self.externals:
            return externals
        out = dict(externals)
        for name, fmt, shown in self.externals:
            if name in out:
                out[name] = _each(out[name], fmt, shown, f"${name}")
        return out


def day(value: Any) -> Any:
    """A value compared with a ``format: date`` member: a date-time at midnight UTC is its date, one
    with a time of day its UTC text; anything else is itself.

    >>> day("2012-01-15T00:00:00"), day("2012-01-15T01:00:00+02:00"), day("2012-01-15"), day(3)
    ('2012-01-15', '2012-01-14T23:00:00Z', '2012-01-15', 3)
    """
    stamp = _stamp(value)
    if stamp is None:
        return value
    utc = stamp if stamp.tzinfo is None else stamp.astimezone(dt.UTC).replace(tzinfo=None)
    if utc.time() == dt.time():
        return utc.date().isoformat()
    return utc.isoformat() + "Z"


def instant(value: Any, shown: str, what: str = "") -> Any:
    """A value compared with a ``format: date-time`` member: a date is its midnight UTC, a date-time
    with an offset its UTC text, one without a zone refused (``JQ0038``); anything else is itself.

    >>> instant("2012-01-15T01:00:00+02:00", "it.t")
    '2012-01-14T23:00:00Z'
    """
    if type(value) is not str:
        return value
    if _DAY.match(value) and _stamp(value + "T00:00:00Z") is not None:
        return value + "T00:00:00Z"
    stamp = _stamp(value)
    if stamp is None:
        return value
    if stamp.tzinfo is None:
        raise QueryError(
            "JQ0038",
            f"{shown} holds date-times with a zone (RFC 3339); {what or repr(value)} "
            f"({value!r}) has none, so which instant it names is unknown: {_ZONE_HINT}",
        )
    if value[-1] in "Zz":
        return value
    return stamp.astimezone(dt.UTC).replace(tzinfo=None).isoformat() + "Z"


def align(document: Any, schema: dict[str, Any]) -> Alignment:
    """``document`` with every value compared with a member declared ``format: date`` or
    ``format: date-time`` rewritten (see the module docstring), and the externals to rewrite at
    bind time. One external compared with members of both formats is ``JQ0038``."""
    try:
        externals = parse(document).externals
    except QueryError:
        return Alignment(document)  # the planner reports it, at its doc_path
    walker = _Walker(schema, externals)
    out = walker.walk(document)
    formats: dict[str, tuple[str, str]] = {}
    for name, fmt, shown in walker.bound:
        seen = formats.setdefault(name, (fmt, shown))
        if seen[0] != fmt:
            raise QueryError(
                "JQ0038",
                f"external ${name} is compared with {seen[1]} (a {seen[0]}) and {shown} (a {fmt}); "
                "pass one external for each",
            )
    bound = tuple((name, fmt, shown) for name, (fmt, shown) in sorted(formats.items()))
    return Alignment(out, bound)


class _Walker:
    def __init__(self, schema: dict[str, Any], externals: frozenset[str]) -> None:
        self.schema = schema
        self.externals = externals
        self.docs: set[str] = set()
        self.bound: list[tuple[str, str, str]] = []

    def walk(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self.walk(x) for x in node]
        if not isinstance(node, dict):
            return node
        fors = node.get("$for")
        if isinstance(fors, dict):
            self.docs.update(k for k, v in fors.items() if v == "$[*]" and not k.startswith("$"))
        if len(node) == 1:
            ((op, args),) = node.items()
            if op in _COMPARE and isinstance(args, list) and len(args) == 2:
                return {op: self.compare(args)}
            if op == "$const":
                return node
        return {k: self.walk(v) for k, v in node.items()}

    def compare(self, args: list[Any]) -> list[Any]:
        a, b = (self.walk(x) for x in args)
        for i, (member, other) in enumerate(((a, b), (b, a))):
            found = self.format_of(member)
            if found is None:
                continue
            fmt, shown = found
            changed = self.value(other, fmt, shown)
            return [member, changed] if i == 0 else [changed, member]
        return [a, b]

    def format_of(self, node: Any) -> tuple[str, str] | None:
        """(format, the member as shown) of a path into a stored document the schema declares a
        date or date-time string, else None."""
        if type(node) is not str or not node.startswith("$") or node.startswith("$$"):
            return None
        try:
            p = parse_path(node, "")
        except QueryError:
            return None
        if p.var is None:
            if p.steps[:1] != (("wild", None),):
                return None
            steps = p.steps[1:]
        elif p.var in self.docs and p.var not in self.externals:
            steps = p.steps
        else:
            return None
        here: Any = self.schema
        for kind, arg in steps:
            if kind != "member" or not isinstance(here, dict) or any(k in here for k in _OPAQUE):
                return None
            props = here.get("properties")
            here = props.get(arg) if isinstance(props, dict) else None
        if not isinstance(here, dict) or any(k in here for k in _OPAQUE):
            return None
        fmt = here.get("format")
        types = here.get("type")
        strings = types == "string" or (isinstance(types, list) and "string" in types)
        if fmt not in ("date", "date-time") or not strings:
            return None
        return fmt, node[1:] if node.startswith("$it.") else node

    def value(self, node: Any, fmt: str, shown: str) -> Any:
        """A compared value rewritten: a literal string, a ``$seq`` of them, a ``$const`` list, or
        an external (recorded for bind time)."""
        if type(node) is str:
            if node.startswith("$$"):  # a literal starting with "$": no date
                return node
            if node.startswith("$"):
                p = parse_path(node, "")
                if p.var in self.externals and all(k == "wild" for k, _ in p.steps):
                    self.bound.append((p.var, fmt, shown))
                return node
            return _one(node, fmt, shown)
        if isinstance(node, dict) and len(node) == 1:
            ((op, arg),) = node.items()
            if op == "$seq" and isinstance(arg, list):
                return {op: [self.value(x, fmt, shown) for x in arg]}
            if op == "$const":
                return {op: _each(arg, fmt, shown, "")}
        return node


def _one(value: str, fmt: str, shown: str, what: str = "") -> Any:
    return day(value) if fmt == "date" else instant(value, shown, what)


def _each(value: Any, fmt: str, shown: str, what: str) -> Any:
    if type(value) is list:
        return [_each(v, fmt, shown, what) for v in value]
    if type(value) is str:
        return _one(value, fmt, shown, what)
    return value


def _stamp(value: Any) -> dt.datetime | None:
    """A date-time string as a ``datetime`` (naive when it has no zone), None when it is not one."""
    if type(value) is not str:
        return None
    m = _STAMP.match(value)
    if m is None:
        return None
    frac = ((m[7] or "") + "000000")[:6]
    zone = None
    if m[8]:
        zone = dt.UTC
    elif m[9]:
        minutes = int(m[10]) * 60 + int(m[11])
        if int(m[10]) > 23 or int(m[11]) > 59:
            return None
        zone = dt.timezone(dt.timedelta(minutes=minutes if m[9] == "+" else -minutes))
    try:
        return dt.datetime(
            int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), int(frac), tzinfo=zone
        )
    except ValueError:
        return None
