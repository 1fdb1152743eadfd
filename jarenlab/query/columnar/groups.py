"""Group-by aggregation over columns: each group's aggregates, its ``HAVING``, its order, its items.

A group-by's rows are numbered by their keys' codes (:mod:`.keys`: groups in the order of their
first row); every aggregate the plan needs (in its output, its ordering, its ``HAVING``) is computed
for all groups in one vectorized pass (:func:`aggregate`: integer sums exactly, float sums
correctly rounded by :mod:`.exact`, medians and deviations by :mod:`.spread`, numbers' least and
greatest as the engine picks them (:func:`~.whole.extremes`), strings' by code point, distinct
counts from dictionary codes). Groups are then kept by the ``HAVING``, ordered as the engine
orders them (missing values where it puts them, ties by first row), windowed, and assembled
(:mod:`.items`). A whole-query aggregate is one group of every row kept: one result even over no
rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from jarenlab.query.columnar.columns import Column, Decline, bits, values_at
from jarenlab.query.columnar.exact import group_sums, int_sums
from jarenlab.query.columnar.items import group_items
from jarenlab.query.columnar.keys import date_codes, encode, member_codes
from jarenlab.query.columnar.whole import (
    BEYOND_INTEGERS,
    DISTINCT_KINDS,
    extremes,
    ratio,
    spread,
    whole,
)
from jarenlab.query.planner.decode import resampled
from jarenlab.query.planner.plan import Plan
from jarenlab.query.planner.preds import AggOut, ArrOut, Field, KeyOut, MapOut, OrderKey, Out


# -- aggregates ---------------------------------------------------------------------------------
def aggregate(
    a: AggOut,
    cols: dict[Field, Column],
    rows: np.ndarray | None,
    groups: np.ndarray,
    count: int,
    sizes: np.ndarray,
) -> list[list[Any]]:
    """Each group's items of ``a`` (``[]`` where the engine gives no item)."""
    if a.field is None:  # $count of the rows
        return [[int(x)] for x in sizes]
    col = cols[a.field]
    if a.fn == "count-distinct":
        return _distinct_counts(col, rows, groups, count)
    values = values_at(col, rows)
    valid: np.ndarray | None = None
    g = groups
    if values.null_count:
        valid = bits(values.is_valid())
        g = groups[valid]
        values = values.filter(pa.array(valid))
    present = sizes if valid is None else np.bincount(g, minlength=count)
    if a.fn == "count":
        return [[int(x)] for x in present]
    if a.fn in ("min", "max") and values.type == pa.large_string():
        return _string_extremes(a.fn, values, g, count)
    raw = values.to_numpy(zero_copy_only=False)
    if a.fn in ("median", "stddev", "stddev-pop"):
        return spread(a.fn, raw, g, count)
    ints = None  # (None: every value of a float column written as a float)
    if col.ints is not None:
        ints = col.ints if rows is None else col.ints[rows]
        if valid is not None:
            ints = ints[valid]
    if a.fn in ("min", "max"):
        return extremes(a.fn, raw, ints, g, count, present)
    if raw.dtype == np.int64:
        totals: list[Any] = int_sums(raw, g, count)
    else:
        # A group holding a float (every value is one when no integer is marked).
        floats = present > 0 if ints is None else np.bincount(g, weights=~ints, minlength=count) > 0
        sums = group_sums(raw, g, count)
        totals = [s if floats[i] else int(s) for i, s in enumerate(sums)]
        if any(not floats[i] and present[i] and abs(totals[i]) >= 2**53 for i in range(count)):
            raise Decline(BEYOND_INTEGERS)
    if a.fn == "sum":
        return [[t] for t in totals]
    if a.fn == "avg":
        return [[ratio(t, int(c))] if c else [] for t, c in zip(totals, present)]
    raise Decline(f"no columnar form for ${a.fn}")


def _string_extremes(fn: str, values: pa.Array, groups: np.ndarray, count: int) -> list[list[Any]]:
    """Each group's least or greatest string by code point (none for an empty group)."""
    t = pa.table({"g": pa.array(groups), "v": values})
    got = t.group_by("g", use_threads=False).aggregate([("v", fn)])
    out: list[list[Any]] = [[] for _ in range(count)]
    for g, v in zip(got.column("g").to_pylist(), got.column(f"v_{fn}").to_pylist()):
        if v is not None:
            out[g] = [v]
    return out


def _distinct_counts(col: Column, rows: np.ndarray | None, groups: np.ndarray, count: int) -> list[list[Any]]:
    """Each group's number of distinct values (strings by code point, integers by value): the
    distinct pairs of group and the member's dictionary code (kept with the column), a missing
    member counting for none."""
    if col.values.type not in (pa.int64(), pa.large_string()):
        raise Decline(DISTINCT_KINDS)
    codes, values = member_codes(col, rows)
    size = max(len(values), 1)
    pairs = groups * size + codes
    if None in values:  # (the missing member's code)
        pairs = pairs[codes != values.index(None)]
    if count * size <= max(8 * len(pairs), 1 << 20):  # a bitmap of the pairs, in one pass
        seen = np.zeros(count * size, dtype=bool)
        seen[pairs] = True
        per_group = seen.reshape(count, size).sum(axis=1)
    else:
        per_group = np.bincount(np.unique(pairs) // size, minlength=count)
    return [[int(n)] for n in per_group.tolist()]


# -- group-bys ----------------------------------------------------------------------------------
def group_by(plan: Plan, cols: dict[Field, Column], rows: np.ndarray | None, n: int) -> list[Any]:
    """A group-by's items over the ``rows`` kept of ``n``; with no keys, one group of them all
    (a whole-query aggregate: one result even over no rows)."""
    assert plan.group is not None and plan.output is not None
    keys: list[tuple[np.ndarray, list[Any]]] = []
    for k in plan.group:
        if isinstance(k, Field):
            keys.append(member_codes(cols[k], rows))
        else:
            keys.append(date_codes(cols[k.field], rows, k))
    aggs: dict[AggOut, list[list[Any]]] = {}
    wanted = [*_group_aggs(plan.output), *plan.order_aggregates]
    wanted += [k.agg for k in plan.order if k.agg is not None]
    wanted += [w for w, _, _ in plan.having if isinstance(w, AggOut)]
    if keys:
        codes, key_values, count = encode(keys, whole=rows is None)
        sizes = np.bincount(codes, minlength=count)
        for a in dict.fromkeys(wanted):
            aggs[a] = aggregate(a, cols, rows, codes, count, sizes)
    else:  # one group of every kept row: no codes (:mod:`.whole`)
        key_values, count = [], 1
        sizes = np.array([n if rows is None else len(rows)])
        for a in dict.fromkeys(wanted):
            aggs[a] = [whole(a, cols, rows, n)]
    order = list(range(count))
    if plan.having:
        order = [
            g for g in order if all(_holds(_got(w, g, key_values, aggs), op, v) for w, op, v in plan.having)
        ]
    if plan.order:
        order = _sorted(order, plan.order, key_values, aggs, sizes)
    end = None if plan.limit is None else plan.offset + plan.limit
    order = order[plan.offset : end]
    out = group_items(plan.output, order, key_values, aggs)
    if plan.series is not None:  # the last key is the interval's start, the ones before the $by keys
        keys = [tuple(kv[g] for kv in key_values[:-1]) for g in order]
        return resampled(plan.series, keys, out)
    return out


def _group_aggs(out: Out | None) -> list[AggOut]:
    if isinstance(out, AggOut):
        return [out]
    if isinstance(out, MapOut):
        return [a for _, m in out.members for a in _group_aggs(m)]
    if isinstance(out, ArrOut):
        return [a for m in out.items for a in _group_aggs(m)]
    return []


def _got(what: AggOut | KeyOut, g: int, keys: list[list[Any]], aggs: dict[AggOut, list[list[Any]]]) -> Any:
    if isinstance(what, KeyOut):
        return keys[what.index][g]
    got = aggs[what][g]
    return got[0] if got else None


def _holds(v: Any, op: str, literal: Any) -> bool:
    if v is None or (type(v) is str) != (type(literal) is str):
        return False
    return {
        "eq": v == literal,
        "ne": v != literal,
        "lt": v < literal,
        "le": v <= literal,
        "gt": v > literal,
        "ge": v >= literal,
    }[op]


def _sorted(
    order: list[int],
    keys: tuple[OrderKey, ...],
    key_values: list[list[Any]],
    aggs: dict[AggOut, list[list[Any]]],
    sizes: np.ndarray,
) -> list[int]:
    """Groups ordered by ``keys`` (missing values where the engine puts them), ties by first row."""
    for k in reversed(keys):  # a stable sort per key, the last first
        if k.what == "count":
            column = [int(sizes[g]) for g in order]
        elif k.what == "key":
            column = [key_values[k.index][g] for g in order]
        else:
            assert k.agg is not None
            column = [_got(k.agg, g, key_values, aggs) for g in order]
        order = _stable(order, column, k)
    return order


def _stable(items: list[int], column: list[Any], k: OrderKey) -> list[int]:
    empty_first = (not k.desc and not k.empty_greatest) or (k.desc and k.empty_greatest)
    present = [(v, i) for v, i in zip(column, items) if v is not None]
    missing = [i for v, i in zip(column, items) if v is None]
    present.sort(key=lambda x: x[0], reverse=k.desc)  # (stable, also reversed)
    ordered = [i for _, i in present]
    return missing + ordered if empty_first else ordered + missing
