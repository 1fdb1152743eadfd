"""Rebuild engine items from SQL rows: member values arrive as (JSON type, value) pairs.

>>> from jarenlab.query.preds import Field, FieldOut, MapOut
>>> f = Field(("a",), None, None)
>>> from jarenlab.query.sql import Layout
>>> from jarenlab.query.plan import Plan
>>> plan = Plan("t", "native", output=MapOut((("x", FieldOut(f)),)))
>>> decode(plan, Layout(fields=((f, "pair"),)), [("true", 1), (None, None), ("array", "[1]")])
[{'x': True}, {}, {'x': [1]}]
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from jarenlab.query.plan import Plan
from jarenlab.query.preds import AggOut, ArrOut, DocOut, FieldOut, KeyOut, LitOut, MapOut, Out
from jarenlab.query.sql import Layout

_MISSING: Any = object()


def _value(jt: Any, v: Any) -> Any:
    if jt is None:
        return _MISSING
    if jt == "integer" and type(v) is not int:
        # SQLite reads an integer beyond 64 bits as a rounded real: only the engine has it exactly.
        from jarenlab.query.run import _Fallback

        raise _Fallback("an integer beyond SQLite's 64-bit range")
    if jt == "true":
        return True
    if jt == "false":
        return False
    if jt == "null":
        return None
    if jt in ("array", "object"):
        return orjson.loads(v)
    return v


def _items(
    out: Out, values: dict[Any, Any], row: tuple[Any, ...], agg: dict[AggOut, list[Any]] | None
) -> list[Any]:
    if isinstance(out, DocOut):
        return [orjson.loads(row[0])]
    if isinstance(out, FieldOut):
        v = values[out.field]
        return [] if v is _MISSING else [v]
    if isinstance(out, LitOut):
        v = out.value
        return [copy.deepcopy(v) if type(v) in (list, dict) else v]
    if isinstance(out, MapOut):
        obj = {}
        for k, m in out.members:
            got = _items(m, values, row, agg)
            if got:
                obj[k] = got[0]
        return [obj]
    if isinstance(out, ArrOut):
        return [[x for m in out.items for x in _items(m, values, row, agg)]]
    if isinstance(out, KeyOut):
        return [] if row[0] is None else [row[0]]
    assert agg is not None
    return agg[out]


def _aggregate(a: AggOut, cells: list[Any]) -> list[Any]:
    if a.fn == "count":
        return [cells[0]]
    if a.fn == "sum":
        return [0 if cells[0] is None else cells[0]]
    if a.fn == "avg":
        return [] if not cells[1] else [cells[0] / cells[1]]
    return [] if cells[0] is None else [cells[0]]


def _read_aggs(layout: Layout, row: tuple[Any, ...], start: int) -> tuple[dict[AggOut, list[Any]], int]:
    out = {}
    i = start
    for a in layout.aggregates:
        width = 2 if a.fn == "avg" else 1
        out[a] = _aggregate(a, list(row[i : i + width]))
        i += width
    return out, i


def decode(plan: Plan, layout: Layout, rows: list[tuple[Any, ...]]) -> list[Any]:
    """The flat item sequence of native rows; raises the runner's fallback on flagged real values."""
    from jarenlab.query.run import _Fallback

    if plan.aggregate is not None:
        aggs, i = _read_aggs(layout, rows[0], 0)
        if any(rows[0][i:]):
            raise _Fallback("real values in an integer-typed path")
        return aggs[layout.aggregates[0]]
    if plan.group is not None:
        out: list[Any] = []
        assert plan.output is not None
        flagged = False
        for row in rows:
            aggs, i = _read_aggs(layout, row, 1)
            flagged = flagged or any(row[i:])
            out.extend(_items(plan.output, {}, row, aggs))
        if flagged:
            raise _Fallback("real values in an integer-typed path")
        return out
    output = plan.output
    if isinstance(output, DocOut):
        loads = orjson.loads
        return [loads(r[0]) for r in rows]
    assert output is not None
    fields = layout.fields
    result: list[Any] = []
    for row in rows:
        values: dict[Any, Any] = {}
        i = 0
        for f, kind in fields:
            if kind == "text":
                values[f] = _MISSING if row[i] is None else row[i]
                i += 1
            else:
                values[f] = _value(row[i], row[i + 1])
                i += 2
        result.extend(_items(output, values, row, None))
    return result
