"""Rebuild engine items from SQL rows: member values arrive as (JSON type, value) pairs.

The type cell is the dialect's spelling; :meth:`~jarenlab.backends.base.Dialect.type_kinds`
reads it as one of the planner's JSON kinds.

>>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
>>> from jarenlab.query.planner.preds import Field, FieldOut, MapOut
>>> f = Field(("a",), None, None)
>>> from jarenlab.query.planner.sql import Layout
>>> from jarenlab.query.planner.plan import Plan
>>> plan = Plan("t", "native", output=MapOut((("x", FieldOut(f)),)))
>>> rows = [("true", 1), (None, None), ("array", "[1]")]
>>> decode(plan, Layout(fields=((f, "pair"),)), rows, SQLiteDialect())
[{'x': True}, {}, {'x': [1]}]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.query.lang.dates import epoch_ms
from jarenlab.query.lang.series import fill_gaps
from jarenlab.query.planner.plan import Plan
from jarenlab.query.planner.preds import (
    AggOut,
    ArrOut,
    DocOut,
    FieldOut,
    Framed,
    KeyOut,
    MapOut,
    Out,
    Ranged,
    Ranking,
    Series,
    assemble,
)
from jarenlab.query.planner.sql import Layout
from jarenlab.query.planner.whole import WHOLE_AVERAGE

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect

_MISSING: Any = object()


class Fallback(Exception):
    """SQL cannot give the engine's exact answer for this data: the engine decides."""


def _value(kinds: Mapping[Any, str], jt: Any, v: Any) -> Any:
    if jt is None:
        return _MISSING
    kind = kinds[jt]
    if kind == "int" and type(v) is not int:
        # The database read an integer beyond its range as a rounded number: only the engine has it.
        raise Fallback(_BEYOND)
    if kind == "true":
        return True
    if kind == "false":
        return False
    if kind == "null":
        return None
    if kind in ("array", "object"):
        return orjson.loads(v)
    return v


def _items(
    out: Out, values: dict[Any, Any], row: tuple[Any, ...], agg: dict[AggOut, list[Any]] | None
) -> list[Any]:
    def leaf(o: Out) -> list[Any]:
        if isinstance(o, DocOut):  # inside a map or array: the row's last cell (sql.holds_document)
            return [orjson.loads(row[-1])]
        if isinstance(o, FieldOut):
            v = values[o.field]
            return [] if v is _MISSING else [v]
        if isinstance(o, KeyOut):
            v = row[o.index]
            return [] if v is None else [_integer(v)]
        assert agg is not None and isinstance(o, AggOut)
        return agg[o]

    return assemble(out, leaf)


def _whole_keys(row: tuple[Any, ...], places: tuple[int, ...]) -> tuple[Any, ...]:
    """A group row whose integer keys at ``places`` are ints: no group's first document holds
    them as floats (their flags are clear), so the engine's keys are integers, even where the
    database returned a later member's ``2.0`` for its group (SQLite, an integer path without a
    typed column)."""
    cells = list(row)
    for i in places:
        if type(cells[i]) is float:
            cells[i] = int(cells[i])
    return tuple(cells)


def _integer(v: Any) -> Any:
    """An integer the database computed as a decimal (PostgreSQL's ``numeric``: sums, integer keys,
    ranks, date parts) as a Python int; a decimal with a fraction comes only from a float in an
    integer path, which a real-flag sends to the engine."""
    return int(v) if type(v) is Decimal and v == v.to_integral_value() else v


def _aggregate(a: AggOut, cells: list[Any]) -> list[Any]:
    if a.fn in ("count", "count-distinct"):
        return [cells[0]]
    if a.fn == "sum":
        return [0 if cells[0] is None else _integer(cells[0])]
    if a.fn == "avg":
        return [] if not cells[1] else [_integer(cells[0]) / cells[1]]
    return [] if cells[0] is None else [_integer(cells[0])]


def _read_aggs(layout: Layout, row: tuple[Any, ...], start: int) -> tuple[dict[AggOut, list[Any]], int]:
    out = {}
    i = start
    for a in layout.aggregates:
        width = 2 if a.fn == "avg" else 1
        out[a] = _aggregate(a, list(row[i : i + width]))
        i += width
    return out, i


def _check_averages(layout: Layout, row: tuple[Any, ...], start: int, whole: bool = False) -> None:
    """Raise :class:`Fallback` where an average's SQL sum (cells from ``start``) may not give the
    engine's average: a sum of 2^53 or more in magnitude (the engine's float sum rounds it), or an
    integer-typed path's sum that is a float (a member beyond the database's integers). ``whole``:
    a whole-query aggregate's row (nothing orders or filters by its averages: its own reason)."""
    i = start
    for a in layout.aggregates:
        total = row[i]
        if a.fn == "avg" and abs(total or 0) >= 2**53:
            raise Fallback(WHOLE_AVERAGE if whole else _AVERAGE)
        if a.fn == "avg" and a.field is not None and a.field.family == "integer" and type(total) is float:
            raise Fallback(_BEYOND)
        i += 2 if a.fn == "avg" else 1


def decode(plan: Plan, layout: Layout, rows: list[tuple[Any, ...]], dialect: Dialect) -> list[Any]:
    """The flat item sequence of native rows (a row plan's ranked documents); raises
    :class:`Fallback` on flagged floats."""
    if plan.aggregate is not None:
        aggs, i = _read_aggs(layout, rows[0], 0)
        if any(rows[0][i:]):
            raise Fallback(_REALS)
        _check_averages(layout, rows[0], 0, whole=True)
        return aggs[layout.aggregates[0]]
    if plan.group is not None:
        out: list[Any] = []
        assert plan.output is not None
        reals = dates = False
        i = layout.keys + sum(2 if a.fn == "avg" else 1 for a in layout.aggregates)  # the flags
        for row in rows:
            reals = reals or any(row[i : i + layout.real_flags])
            dates = dates or any(row[i + layout.real_flags :])
            _check_averages(layout, row, layout.keys, whole=not plan.group)
        if layout.skip or layout.take is not None:  # every group checked: now the window
            end = None if layout.take is None else layout.skip + layout.take
            rows = rows[layout.skip : end]
        if plan.key_checks and not reals:
            rows = [_whole_keys(row, plan.key_checks) for row in rows]
        for row in rows:
            aggs, _ = _read_aggs(layout, row, layout.keys)
            out.extend(_items(plan.output, {}, row, aggs))
        if plan.series is not None and not (dates or reals):
            return resampled(plan.series, [tuple(row[: layout.keys - 1]) for row in rows], out)
        if dates:
            raise Fallback("a date-time not written YYYY-MM-DDTHH:MM:SSZ (the engine reads every form)")
        if reals:
            raise Fallback(_REALS)
        return out
    output = plan.output
    if isinstance(output, Ranking):
        return _ranked(output, layout, rows)
    if isinstance(output, DocOut):
        loads = orjson.loads
        return [loads(r[0]) for r in rows]
    assert output is not None
    return _projected(output, layout, rows, dialect)


def _projected(output: Out, layout: Layout, rows: list[tuple[Any, ...]], dialect: Dialect) -> list[Any]:
    """The items of a projection's rows. Each member is read by its layout kind: ``string`` (the
    value; NULL is missing), ``number`` (the value as the document holds it, a float of the
    dialect's integer limit or more sends the run to the engine: it may be an integer SQL could
    not hold) or ``pair`` (the JSON kind, then the value)."""
    reads: list[tuple[int, int]] = []  # (column, kind: 0 string, 1 number, 2 pair)
    position: dict[Any, int] = {}
    column = 0
    for n, (f, how) in enumerate(layout.fields):
        position.setdefault(f, n)
        reads.append((column, _READS[how]))
        column += 2 if how == "pair" else 1
    kinds = dialect.type_kinds()
    limit = float(dialect.integer_limit)
    if isinstance(output, MapOut) and all(isinstance(m, FieldOut) for _, m in output.members):
        # The common flat projection ({"name": $it.name, ...}): one dict per row, no values list.
        slots = [(k, *reads[position[m.field]]) for k, m in output.members if isinstance(m, FieldOut)]
        flat = []
        for row in rows:
            obj = {}
            for k, i, kind in slots:
                v = row[i]
                if kind == 2:
                    v = _value(kinds, v, row[i + 1])
                    if v is _MISSING:
                        continue
                elif v is None:
                    continue
                elif kind == 1 and type(v) is float and not -limit < v < limit:
                    raise Fallback(_BEYOND)
                obj[k] = v
            flat.append(obj)
        return flat
    build = _builder(output, position)
    result: list[Any] = []
    for row in rows:
        values: list[Any] = []
        for i, kind in reads:
            v = row[i]
            if kind == 2:
                v = _value(kinds, v, row[i + 1])
            elif v is None:
                v = _MISSING
            elif kind == 1 and type(v) is float and not -limit < v < limit:
                raise Fallback(_BEYOND)
            values.append(v)
        result.extend(build(values, row))
    return result


_READS = {"string": 0, "number": 1, "pair": 2}
_BEYOND = "an integer beyond the database's integer range"
_REALS = (
    "real values in an integer-typed path, members of 2^53 or more averaged, or integers at the"
    " database's limit or beyond grouped or counted distinct"
)
_AVERAGE = "a sum of 2^53 or more: its average in SQL (to order or filter by) may differ"


def resampled(series: Series, keys: list[tuple[Any, ...]], items: list[Any]) -> list[Any]:
    """A ``$resample``'s rows from its grouped intervals: ``items`` one map per interval of a group
    (groups in the order of their first rows), ``keys`` each one's group (its ``$by`` key values);
    the engine fills the gaps (:func:`~jarenlab.query.lang.series.fill_gaps`), so a group's first
    interval places the group. SQL's rows and the columns' groups both end here."""
    groups: dict[tuple[Any, ...], tuple[dict[str, Any], dict[int, dict[str, Any]]]] = {}
    for key, item in zip(keys, items):
        start = epoch_ms(item.pop(series.name), series.path)
        by = {n: item.pop(n) for n in series.by if n in item}
        groups.setdefault(key, (by, {}))[1][start] = item
    constant = [series.constant]
    return fill_gaps(
        groups.values(),
        series.width,
        series.fill,
        lambda: constant,
        series.name,
        list(series.members),
        series.path,
        dict,
    )


def _ranked(ranking: Ranking, layout: Layout, rows: list[tuple[Any, ...]]) -> list[Any]:
    """Whole documents with their computed members added as the engine adds them (an existing
    member of the name keeps its place, a new one goes last)."""
    loads = orjson.loads
    out = []
    flags = layout.real_flags + layout.date_flags
    for row in rows:
        if flags and any(row[-flags:]):
            if any(row[len(row) - layout.date_flags :]):
                raise Fallback("a date-time not written YYYY-MM-DDTHH:MM:SSZ (the engine reads every form)")
            raise Fallback(_REALS)
        doc = loads(row[0])
        i = 1
        for name, fn, arg in ranking.compute:
            v = row[i]
            i += 1
            if isinstance(arg, Framed) and fn in ("sum", "avg", "count"):
                v = 0 if v is None else _integer(v)  # the sum (count) of an empty frame is 0
                if fn == "avg":
                    v = _ratio(v, row[i])
                    i += 1
            elif isinstance(arg, Ranged) and fn == "avg":  # (NULL: a row without a time)
                v = None if v is None else _ratio(_integer(v), row[i])
                i += 1
            if v is not None:  # an offset past the ends, or to a row without the member: no member
                doc[name] = _integer(v)
        out.append(doc)
    return out


def _ratio(total: int, count: int) -> float | None:
    """An average as ``$avg`` divides (the exact integer sum by the count), None over nothing."""
    return total / count if count else None


Build = Callable[[list[Any], tuple[Any, ...]], list[Any]]


def _builder(out: Out, position: Mapping[Any, int]) -> Build:
    """A function of (the row's member values by position, the row) giving a projection's items:
    the output tree is walked once per statement, not once per row."""
    if isinstance(out, FieldOut):
        n = position[out.field]
        return lambda values, row: [] if values[n] is _MISSING else [values[n]]
    if isinstance(out, MapOut):
        if all(isinstance(m, FieldOut) for _, m in out.members):
            slots = [(k, position[m.field]) for k, m in out.members if isinstance(m, FieldOut)]

            def flat(values: list[Any], row: tuple[Any, ...]) -> list[Any]:
                return [{k: values[n] for k, n in slots if values[n] is not _MISSING}]

            return flat
        members = [(k, _builder(m, position)) for k, m in out.members]

        def obj(values: list[Any], row: tuple[Any, ...]) -> list[Any]:
            built = {}
            for k, fn in members:
                got = fn(values, row)
                if got:
                    built[k] = got[0]
            return [built]

        return obj
    if isinstance(out, ArrOut):
        items = [_builder(m, position) for m in out.items]
        return lambda values, row: [[x for fn in items for x in fn(values, row)]]
    return lambda values, row: _items(out, {}, row, None)  # literals and whole documents
