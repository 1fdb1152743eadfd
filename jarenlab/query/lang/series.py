"""Time series in the reference engine: ``$rolling`` (time-based moving aggregates) and
``$resample`` (one row per interval, gaps dropped or filled).

A row's time is one date-time string (RFC 3339, or a ``YYYY-MM-DD`` date: an instant, as the
date functions read it). A row whose time is empty or ``null`` belongs to no window and no
interval; any other value that is not a string is ``JQ2004``, a string that is not a date-time
``JQ2020``, several items ``JQ2001``. Widths and origins are literals, checked when the document
is compiled (``JQ0022`` for a width, ``JQ0021`` for an origin).

``$rolling`` keeps every item (each an object) in its order and adds the computed members: for a
row at time ``t``, the aggregate over the rows of its partition whose time is in ``(t - width,
t]``: the left edge is open, the right edge closed, so rows at the same instant (peers) are in each
other's windows. ``t - width`` is calendar subtraction for months (``2013-03-31`` minus ``P1M`` is
``2013-02-28``).

>>> from jarenlab.query.lang.engine import evaluate
>>> rows = [{"t": "2013-01-01T00:00:00Z", "x": 1}, {"t": "2013-01-01T01:00:00Z", "x": 2},
...         {"t": "2013-01-01T03:00:00Z", "x": 4}]
>>> doc = {"$rolling": {"r": "$[*]", "$time": "$r.t", "$width": "PT2H", "$compute": {"s": {"$sum": "$r.x"}}}}
>>> [r["s"] for r in evaluate(doc, rows)]
[1, 3, 4]

``$resample`` cuts time into intervals ``[origin + k*width, origin + (k+1)*width)`` (a fixed
width, as ``$time-bucket``), per group of equal ``$by`` keys (first-appearance order), and gives
one object per interval from a group's first non-empty interval to its last, in time order: the
``$by`` members, the interval's start as member ``$as`` (``"time"``), then the computed members.
An interval with no rows is dropped (``"$fill": "drop"``), takes the values of the interval
before it (``"previous"``), or takes one constant for every computed member (``{"$value": e}``).

>>> doc = {"$resample": {"r": "$[*]", "$time": "$r.t", "$width": "PT1H", "$compute": {"n": {"$count": "$r"}},
...        "$fill": {"$value": 0}}}
>>> [(r["time"][11:16], r["n"]) for r in evaluate(doc, rows)]
[('00:00', 1), ('01:00', 1), ('02:00', 0), ('03:00', 1)]
"""

from __future__ import annotations

import copy
from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from jarenlab import pointer
from jarenlab.errors import QueryError
from jarenlab.query.lang.dates import (
    DAY,
    DEFAULT_ORIGIN,
    HOUR,
    MINUTE,
    SECOND,
    add_duration,
    epoch_ms,
    format_ms,
    instant,
    parse_duration,
)
from jarenlab.query.lang.functions import FUNCTIONS
from jarenlab.query.lang.nodes import Node, Resample, Rolling, SeriesFn
from jarenlab.query.lang.path import VAR_NAME
from jarenlab.query.lang.values import hash_key, kind

if TYPE_CHECKING:
    from jarenlab.query.lang.compiled import Compiling, Env, SeqFn
    from jarenlab.query.lang.nodes import Node


class Parser(Protocol):
    """What the series parsers need of the document parser: expressions at a pointer, partition keys."""

    def expr(self, doc: Any, at: str, scope: frozenset[str], depth: int) -> Node: ...

    def partition(
        self, value: dict[str, Any], here: str, scope: frozenset[str], depth: int
    ) -> tuple[Node, ...]: ...


#: The aggregates a series computes.
SERIES_FUNCTIONS = ("count", "sum", "avg", "min", "max")
#: The gap rules of ``$resample`` given by name (the third is a constant, ``{"$value": e}``).
FILLS = ("drop", "previous")
#: A filled ``$resample`` producing more intervals than this, over all groups, is refused (``JQ2024``).
MAX_INTERVALS = 1_000_000
#: The member holding an interval's start when ``$as`` does not name one.
DEFAULT_AS = "time"
#: What a group holds for one of its intervals (rows, or computed members).
T = TypeVar("T")


# -- parsing (called by the document parser) ------------------------------------------------------
def _width(value: Any, at: str, fixed: bool) -> tuple[int, int]:
    """A literal width as ``(months, milliseconds)``: a positive ISO 8601 duration (no years or
    months when ``fixed``); ``JQ0022`` otherwise."""
    what = "a fixed duration (days, hours, ... : no years or months)" if fixed else "a duration"
    if type(value) is not str:
        raise QueryError("JQ0022", f"the width is a literal ISO 8601 string, {what}", doc_path=at)
    try:
        months, ms = parse_duration(value, at)
    except QueryError:
        raise QueryError(
            "JQ0022", f"{value!r} is not an ISO 8601 duration (PnYnMnWnDTnHnMnS)", doc_path=at
        ) from None
    if (fixed and months) or months < 0 or ms < 0 or (months, ms) == (0, 0):
        raise QueryError("JQ0022", f"the width is a positive {what}, not {value!r}", doc_path=at)
    return months, ms


def _spec(value: Any, here: str, op: str, options: tuple[str, ...]) -> str:
    """The one variable of a series spec (``JQ0021`` for a malformed one)."""
    names = [k for k in value if not k.startswith("$")] if type(value) is dict else []
    extra = [k for k in value if k.startswith("$") and k not in options] if type(value) is dict else []
    if (
        len(names) != 1
        or not VAR_NAME.match(names[0])
        or extra
        or any(k not in value for k in ("$time", "$width", "$compute"))
    ):
        shown = ", ".join(f'"{o}"' + ("" if o in ("$time", "$width", "$compute") else "?") for o in options)
        raise QueryError("JQ0021", f'{op} takes {{"<variable>": <items>, {shown}}}', doc_path=here)
    return names[0]


def _compute(p: Parser, value: Any, at: str, scope: frozenset[str], depth: int) -> tuple[SeriesFn, ...]:
    if type(value) is not dict or not value:
        raise QueryError("JQ0021", "$compute names the members to add: {name: {$avg: [...]}}", doc_path=at)
    out = []
    for name, spec in value.items():
        here = pointer.join(at, name)
        if type(spec) is not dict or len(spec) != 1 or not next(iter(spec)).startswith("$"):
            raise QueryError("JQ0021", f"{name!r} is one aggregate, e.g. {{'$avg': '$r.x'}}", doc_path=here)
        key = next(iter(spec))
        if key[1:] not in SERIES_FUNCTIONS:
            raise QueryError(
                "JQ0020", f"{key} is not a series aggregate ({', '.join(SERIES_FUNCTIONS)})", doc_path=here
            )
        raw = spec[key]
        args = raw if type(raw) is list else [raw]
        arg_at = pointer.join(here, key)
        if len(args) != 1:
            raise QueryError("JQ0003", f"{key} takes 1 argument, got {len(args)}", doc_path=arg_at)
        arg = p.expr(args[0], pointer.join(arg_at, 0) if type(raw) is list else arg_at, scope, depth + 2)
        out.append(SeriesFn(name, key[1:], arg, here))
    return tuple(out)


def parse_rolling(p: Parser, value: Any, at: str, here: str, scope: frozenset[str], depth: int) -> Rolling:
    """The node of a ``$rolling`` phrase (see the module docstring)."""
    var = _spec(value, here, "$rolling", ("$time", "$width", "$partition", "$compute"))
    d = depth + 2
    inner = scope | {var}
    seq = p.expr(value[var], pointer.join(here, var), scope, d)
    time = p.expr(value["$time"], pointer.join(here, "$time"), inner, d)
    _width(value["$width"], pointer.join(here, "$width"), fixed=False)
    partition = p.partition(value, here, inner, d)
    compute = _compute(p, value["$compute"], pointer.join(here, "$compute"), inner, d)
    return Rolling(var, seq, time, value["$width"], partition, compute, at)


def parse_resample(p: Parser, value: Any, at: str, here: str, scope: frozenset[str], depth: int) -> Resample:
    """The node of a ``$resample`` phrase (see the module docstring)."""
    options = ("$time", "$width", "$origin", "$by", "$compute", "$fill", "$as")
    var = _spec(value, here, "$resample", options)
    d = depth + 2
    inner = scope | {var}
    seq = p.expr(value[var], pointer.join(here, var), scope, d)
    time = p.expr(value["$time"], pointer.join(here, "$time"), inner, d)
    _width(value["$width"], pointer.join(here, "$width"), fixed=True)
    origin = value.get("$origin", DEFAULT_ORIGIN)
    origin_at = pointer.join(here, "$origin")
    try:
        ok = type(origin) is str and epoch_ms(origin) is not None
    except QueryError:
        ok = False
    if not ok:
        raise QueryError(
            "JQ0021", f"$origin is a literal RFC 3339 date-time, not {origin!r}", doc_path=origin_at
        )
    by_raw = value.get("$by", {})
    by_at = pointer.join(here, "$by")
    if type(by_raw) is not dict or not all(type(k) is str and k and not k.startswith("$") for k in by_raw):
        raise QueryError("JQ0021", "$by names the keys: {name: expression, ...}", doc_path=by_at)
    by = tuple((n, p.expr(e, pointer.join(by_at, n), inner, d)) for n, e in by_raw.items())
    name = value.get("$as", DEFAULT_AS)
    if type(name) is not str or not name or name.startswith("$"):
        raise QueryError(
            "JQ0021", "$as names the member holding an interval's start", doc_path=pointer.join(here, "$as")
        )
    compute = _compute(p, value["$compute"], pointer.join(here, "$compute"), inner, d)
    taken = [n for n, _ in by] + [name]
    clash = next((f.name for f in compute if f.name in taken), None) or next(
        (n for i, n in enumerate(taken) if n in taken[:i]), None
    )
    if clash is not None:
        raise QueryError("JQ0021", f"the member {clash!r} is named twice", doc_path=here)
    fill_raw = value.get("$fill", "drop")
    fill_at = pointer.join(here, "$fill")
    fill: str | Node
    if type(fill_raw) is dict and list(fill_raw) == ["$value"]:
        fill = p.expr(fill_raw["$value"], pointer.join(fill_at, "$value"), scope, d)
    elif type(fill_raw) is str and fill_raw in FILLS:
        fill = fill_raw
    else:
        raise QueryError(
            "JQ0023",
            f'$fill is "drop", "previous" or a constant {{"$value": ...}}, not {fill_raw!r}',
            doc_path=fill_at,
        )
    return Resample(var, seq, time, value["$width"], origin, by, compute, fill, name, at)


def series_kids(node: Rolling | Resample) -> list[Node]:
    """The expressions under a series node (for ``walk``)."""
    out = [node.seq, node.time]
    out += list(node.partition) if isinstance(node, Rolling) else [e for _, e in node.by]
    out += [f.arg for f in node.compute]
    if isinstance(node, Resample) and not isinstance(node.fill, str):
        out.append(node.fill)
    return out


def unparse_series(node: Rolling | Resample, unparse: Any) -> dict[str, Any]:
    """The canonical document of a series node (defaults dropped)."""
    spec: dict[str, Any] = {node.var: unparse(node.seq), "$time": unparse(node.time), "$width": node.width}
    if isinstance(node, Rolling):
        if node.partition:
            spec["$partition"] = [unparse(x) for x in node.partition]
    else:
        if node.origin != DEFAULT_ORIGIN:
            spec["$origin"] = node.origin
        if node.by:
            spec["$by"] = {n: unparse(e) for n, e in node.by}
    spec["$compute"] = {f.name: {f"${f.fn}": [unparse(f.arg)]} for f in node.compute}
    if isinstance(node, Resample):
        if node.fill != "drop":
            spec["$fill"] = node.fill if isinstance(node.fill, str) else {"$value": unparse(node.fill)}
        if node.name != DEFAULT_AS:
            spec["$as"] = node.name
        return {"$resample": spec}
    return {"$rolling": spec}


# -- evaluation ------------------------------------------------------------------------------------
def _one(v: list[Any], where: str, what: str) -> Any:
    if len(v) > 1:
        raise QueryError("JQ2001", f"{what} has {len(v)} items", doc_path=where)
    return v[0] if v else None


def _time(v: list[Any], where: str) -> int | None:
    """A row's instant in epoch milliseconds, or None for an empty or null time."""
    return instant([] if v == [None] else v, where, "a series time")


def _key(values: list[list[Any]], paths: list[str]) -> tuple[Any, ...]:
    """A partition's key: deep equality of each key's one item (an empty key is a value of its own)."""
    for v, p in zip(values, paths):
        _one(v, p, "a series key")
    return tuple(hash_key(v[0]) if v else ("empty",) for v in values)


def _aggregate(fn: str, pooled: list[Any], where: str) -> list[Any]:
    out: list[Any] = FUNCTIONS[fn]([pooled], where)
    return out


def _copy(value: Any) -> Any:
    """A fill constant for one row: containers copied, so no two results share one."""
    return copy.deepcopy(value) if type(value) in (dict, list) else value


def _stamper(where: str) -> Callable[[int], str]:
    """:func:`format_ms` for a run of intervals: each day's date is computed once."""
    days: dict[int, str] = {}

    def stamp(ms: int) -> str:
        day, rest = divmod(ms, DAY)
        date = days.get(day)
        if date is None:
            date = days[day] = format_ms(day * DAY, where)[:11]
        if rest % SECOND:
            return format_ms(ms, where)
        h, rest = divmod(rest, HOUR)
        m, rest = divmod(rest, MINUTE)
        return f"{date}{h:02d}:{m:02d}:{rest // SECOND:02d}Z"

    return stamp


def compile_rolling(node: Rolling, c: Compiling) -> SeqFn:
    """The closure of a ``$rolling`` node (see the module docstring)."""
    items_fn, time_fn = c.seq(node.seq), c.seq(node.time)
    parts = [c.seq(x) for x in node.partition]
    part_paths = [x.path for x in node.partition]
    fns = [(f, c.seq(f.arg)) for f in node.compute]
    months, fixed = parse_duration(node.width, node.path)
    back = (-months, -fixed)
    var, where, time_at = node.var, node.path, node.time.path

    def run(env: Env) -> list[Any]:
        items = items_fn(env)
        partitions: dict[tuple[Any, ...], list[tuple[int, int, Env]]] = {}
        for i, x in enumerate(items):
            if type(x) is not dict:
                raise QueryError("JQ2004", f"$rolling rows are objects, got {kind(x)}", doc_path=where)
            e = dict(env)
            e[var] = [x]
            t = _time(time_fn(e), time_at)
            if t is not None:
                partitions.setdefault(_key([f(e) for f in parts], part_paths), []).append((t, i, e))
        out: list[dict[str, Any]] = [dict(x) for x in items]
        for rows in partitions.values():
            rows.sort(key=lambda r: (r[0], r[1]))
            times = [t for t, _, _ in rows]
            for f, arg in fns:
                values = [arg(e) for _, _, e in rows]
                done: dict[int, list[Any]] = {}
                for t, i, _ in rows:
                    if t not in done:
                        lo = bisect_right(times, add_duration(t, back))
                        hi = bisect_right(times, t)
                        done[t] = _aggregate(f.fn, [x for v in values[lo:hi] for x in v], f.path)
                    v = done[t]
                    if v:
                        out[i][f.name] = v[0]
        return list(out)

    return run


def compile_resample(node: Resample, c: Compiling) -> SeqFn:
    """The closure of a ``$resample`` node (see the module docstring)."""
    items_fn, time_fn = c.seq(node.seq), c.seq(node.time)
    by = [(n, c.seq(e), e.path) for n, e in node.by]
    fns = [(f, c.seq(f.arg)) for f in node.compute]
    fill_fn = None if isinstance(node.fill, str) else c.seq(node.fill)
    fill_at = "" if isinstance(node.fill, str) else node.fill.path
    width = parse_duration(node.width, node.path)[1]
    origin = epoch_ms(node.origin)
    var, where, time_at, name = node.var, node.path, node.time.path, node.name

    def run(env: Env) -> list[Any]:
        groups: dict[tuple[Any, ...], tuple[dict[str, Any], dict[int, list[Env]]]] = {}
        for x in items_fn(env):
            e = dict(env)
            e[var] = [x]
            t = _time(time_fn(e), time_at)
            if t is None:
                continue
            keys = {}
            for n, key_fn, p in by:
                v = key_fn(e)
                _one(v, p, "a $by key")
                keys[n] = v
            k = tuple(hash_key(v[0]) if v else ("empty",) for v in keys.values())
            group = groups.setdefault(k, ({n: v[0] for n, v in keys.items() if v}, {}))
            group[1].setdefault(origin + (t - origin) // width * width, []).append(e)

        def computed(rows: list[Env]) -> dict[str, Any]:
            out = {}
            for f, arg in fns:
                v = _aggregate(f.fn, [x for e in rows for x in arg(e)], f.path)
                if v:
                    out[f.name] = v[0]
            return out

        def constant() -> list[Any]:
            value = [] if fill_fn is None else fill_fn(env)
            _one(value, fill_at, "the $fill value")
            return value

        fill = node.fill if isinstance(node.fill, str) else "value"
        members = [f.name for f, _ in fns]
        return fill_gaps(groups.values(), width, fill, constant, name, members, where, computed)

    return run


def fill_gaps(
    groups: Iterable[tuple[dict[str, Any], dict[int, T]]],
    width: int,
    fill: str,
    constant: Callable[[], list[Any]],
    name: str,
    members: list[str],
    where: str,
    computed: Callable[[T], dict[str, Any]],
) -> list[dict[str, Any]]:
    """The rows of a ``$resample`` from its groups (in order: their ``$by`` members and their
    non-empty intervals by start in epoch milliseconds), one per interval from each group's first
    to last, in time order: ``fill`` is ``drop``, ``previous`` or ``value`` (``constant()``: the
    one value for each of the computed ``members``, evaluated once). ``computed`` gives an
    interval's computed members from what its group holds for it (rows for the engine, values for
    SQL's grouped result). Raises ``JQ2024`` for a filled series of more than :data:`MAX_INTERVALS`.

    >>> groups = [({"o": "a"}, {0: {"n": 2}, 2 * HOUR: {"n": 1}})]
    >>> [(r["t"][11:13], r["n"]) for r in fill_gaps(groups, HOUR, "previous", list, "t", ["n"], "", dict)]
    [('00', 2), ('01', 2), ('02', 1)]
    """
    groups = list(groups)
    stamp = _stamper(where)
    filling = fill != "drop"
    if filling:
        total = sum((max(b) - min(b)) // width + 1 for _, b in groups)
        if total > MAX_INTERVALS:
            raise QueryError(
                "JQ2024",
                f"the filled series has {total:,} intervals, more than {MAX_INTERVALS:,}: "
                "narrow the rows first or take a wider width",
                doc_path=where,
            )
    value = constant() if fill == "value" else []
    out: list[dict[str, Any]] = []
    for keys, buckets in groups:
        starts = sorted(buckets)
        span = range(starts[0], starts[-1] + width, width) if filling else starts
        previous: dict[str, Any] = {}
        for b in span:
            row = {**keys, name: stamp(b)}
            held = buckets.get(b)
            if held is not None:
                previous = computed(held)
                row.update(previous)
            elif fill == "previous":
                row.update(previous)
            elif value:
                row.update({m: _copy(value[0]) for m in members})
            out.append(row)
    return out
