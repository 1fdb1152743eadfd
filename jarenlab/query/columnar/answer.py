"""The columnar path's answer: a native plan evaluated over a collection's columns.

The planner's analysis decides what SQL may answer exactly (:class:`~jarenlab.query.planner.plan.Plan`,
mode ``native``); this module answers the same plan from Arrow columns with pyarrow's compute
functions and numpy, to the same items: filters (:func:`mask`), whole-query aggregates, group-bys
(groups in the order of their first row, or as ordered, with their ``HAVING``), and rows of members
ordered and windowed. It takes a plan only where every member it reads is schema-typed as one
string, integer or number (a missing member is a null, never a value); :func:`needs` says why
otherwise, and the SQL path answers. Integers stay integers, float sums are the engine's correctly
rounded ones (:mod:`.exact`), strings compare by code point (UTF-8 bytes order as code points do),
missing members order as the engine orders them, and ties keep storage order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.errors import JarenlabError
from jarenlab.query.columnar.columns import Column, Decline, Table, bits, pylist, values_at
from jarenlab.query.columnar.exact import group_sums, int_sums
from jarenlab.query.columnar.filters import mask
from jarenlab.query.columnar.items import flat_maps, group_items, row_items
from jarenlab.query.columnar.keys import date_codes, encode, member_codes
from jarenlab.query.columnar.reads import member, out_fields, pointer
from jarenlab.query.columnar.series import rolled
from jarenlab.query.columnar.spread import medians, stddevs
from jarenlab.query.columnar.windows import window_rows
from jarenlab.query.planner.decode import resampled
from jarenlab.query.planner.plan import Plan
from jarenlab.query.planner.preds import (
    AggOut,
    ArrOut,
    Field,
    FieldOut,
    KeyOut,
    MapOut,
    OrderKey,
    Out,
)


# -- evaluating -----------------------------------------------------------------------------------
class Held(dict[Field, Column]):
    """A table's columns looked up by a plan's fields (a column is held per member and family,
    whichever typed column the plan's field names)."""

    def __init__(self, columns: dict[Field, Column]) -> None:
        super().__init__()
        self.columns = columns

    def __getitem__(self, f: Field) -> Column:
        return self.columns[member(f)]


def evaluate(plan: Plan, table: Table, externals: dict[str, Any], needed: tuple[Field, ...]) -> list[Any]:
    """The flat items of ``plan`` over ``table`` (as :func:`~jarenlab.query.planner.decode.decode`
    gives them from SQL); :class:`Decline` where the columns cannot be exact."""
    cols, keep = kept(plan, table, externals, needed)
    if plan.aggregate == ("count", None):
        return [int(np.count_nonzero(keep))]
    rows = None if keep.all() else np.flatnonzero(keep)
    if plan.aggregate is not None:
        fn, of = plan.aggregate
        n = len(table) if rows is None else len(rows)
        groups = np.zeros(n, dtype=np.int64)
        return _aggregate(AggOut(fn, of), cols, rows, groups, 1, np.array([n]))[0]
    if plan.group is not None:
        return _groups(plan, cols, rows, len(table))
    return _rows(plan, cols, len(table), rows)


def kept(
    plan: Plan, table: Table, externals: dict[str, Any], needed: tuple[Field, ...]
) -> tuple[Held, np.ndarray]:
    """The table's columns by field, and the rows the plan's filter keeps (:class:`Decline` where a
    column the plan reads cannot give the engine's answer)."""
    cols = Held(table.columns)
    for f in needed:
        if cols[f].inexact:
            raise Decline(f"{pointer(f)} holds {cols[f].inexact}")
    return cols, mask(plan.where, cols, externals, len(table))


# -- aggregates ---------------------------------------------------------------------------------
def _aggregate(
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
    if a.fn in ("min", "max"):
        return _extremes(a.fn, values, g, count)
    raw = values.to_numpy(zero_copy_only=False)
    if a.fn in ("median", "stddev", "stddev-pop"):
        try:
            return (
                medians(raw, g, count) if a.fn == "median" else stddevs(raw, g, count, int(a.fn == "stddev"))
            )
        except (OverflowError, JarenlabError):
            raise Decline("a standard deviation beyond the largest float") from None
    if raw.dtype == np.int64:
        totals: list[Any] = int_sums(raw, g, count)
    else:
        if col.ints is None:  # every value written as a float
            floats = present > 0
        else:
            ints = col.ints if rows is None else col.ints[rows]
            if valid is not None:
                ints = ints[valid]
            floats = np.bincount(g, weights=~ints, minlength=count) > 0  # a group holding a float
        sums = group_sums(raw, g, count)
        totals = [s if floats[i] else int(s) for i, s in enumerate(sums)]
        if any(not floats[i] and present[i] and abs(totals[i]) >= 2**53 for i in range(count)):
            raise Decline("an integer sum of 2^53 or more beside floats")
    if a.fn == "sum":
        return [[t] for t in totals]
    if a.fn == "avg":
        return [[_ratio(t, int(c))] if c else [] for t, c in zip(totals, present)]
    raise Decline(f"no columnar form for ${a.fn}")


def _ratio(total: Any, count: int) -> Any:
    try:
        return total / count
    except OverflowError:
        raise Decline("an average beyond the largest float") from None


def _extremes(fn: str, values: pa.Array, groups: np.ndarray, count: int) -> list[list[Any]]:
    """Each group's least or greatest value (strings by code point; none for an empty group)."""
    if values.type == pa.int64():
        raw = values.to_numpy(zero_copy_only=False)
        top = np.iinfo(np.int64)
        acc = np.full(count, top.max if fn == "min" else top.min, dtype=np.int64)
        (np.minimum if fn == "min" else np.maximum).at(acc, groups, raw)
        seen = np.bincount(groups, minlength=count) > 0
        return [[int(v)] if seen[i] else [] for i, v in enumerate(acc.tolist())]
    if values.type != pa.large_string():
        raise Decline("a minimum or maximum of a float member runs in SQL")
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
        raise Decline("a count of distinct values other than a string or integer member runs in SQL")
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
def _groups(plan: Plan, cols: dict[Field, Column], rows: np.ndarray | None, n: int) -> list[Any]:
    """A group-by's items over the ``rows`` kept of ``n``; with no keys, one group of them all
    (a whole-query aggregate: one result even over no rows)."""
    assert plan.group is not None and plan.output is not None
    keys: list[tuple[np.ndarray, list[Any]]] = []
    for k in plan.group:
        if isinstance(k, Field):
            keys.append(member_codes(cols[k], rows))
        else:
            keys.append(date_codes(cols[k.field], rows, k))
    if keys:
        codes, dictionaries, count = encode(keys, whole=rows is None)
    else:
        codes, dictionaries, count = np.zeros(n if rows is None else len(rows), dtype=np.int64), [], 1
    sizes = np.bincount(codes, minlength=count)
    key_values = dictionaries
    aggs: dict[AggOut, list[list[Any]]] = {}
    wanted = [*_group_aggs(plan.output), *plan.order_aggregates]
    wanted += [k.agg for k in plan.order if k.agg is not None]
    wanted += [w for w, _, _ in plan.having if isinstance(w, AggOut)]
    for a in dict.fromkeys(wanted):
        aggs[a] = _aggregate(a, cols, rows, codes, count, sizes)
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


# -- rows ---------------------------------------------------------------------------------------
def positions(plan: Plan, cols: dict[Field, Column], n: int, rows: np.ndarray | None) -> np.ndarray:
    """The table positions of a row plan's results, in its order (ties in storage order), past its
    offset and within its limit; ``rows``: those the filter keeps (None: all ``n``)."""
    idx = np.arange(n) if rows is None else rows
    if plan.order:
        idx = _ordered_rows(
            idx, plan.order, cols, plan.offset + plan.limit if plan.limit is not None else None
        )
    end = None if plan.limit is None else plan.offset + plan.limit
    return idx[plan.offset : end]


def row_values(
    plan: Plan, cols: dict[Field, Column], n: int, rows: np.ndarray | None
) -> tuple[np.ndarray, dict[str, Column]]:
    """The table positions of a row plan's results, and the members a ``$window`` or a
    ``$rolling`` computes that its projection returns, each as a column of the results (the items
    and the Arrow forms read them as they read a held member). :class:`Decline` where a result
    has no such member: the engine shows the row's own stored member of that name there, which
    the columns do not hold."""
    if plan.window is not None:
        idx, computed = window_rows(plan, cols, n, rows)
    else:
        idx = positions(plan, cols, n, rows)
        computed = {} if plan.rolling is None else rolled(plan.rolling, cols, idx)
    assert plan.output is not None
    what = "rolling" if plan.window is None else "window"
    returned = {f.steps[0] for f in _fields_of_out(plan.output) if len(f.steps) == 1}
    for name, col in computed.items():
        if name in returned and col.values.null_count:
            raise Decline(f"a row with no {what} {name!r}: its own member, if any, is not in columns")
    return idx, computed


def _rows(plan: Plan, cols: dict[Field, Column], n: int, rows: np.ndarray | None) -> list[Any]:
    idx, computed = row_values(plan, cols, n, rows)
    assert plan.output is not None
    values: dict[Field, list[Any]] = {}
    for f in _fields_of_out(plan.output):
        name = f.steps[0] if len(f.steps) == 1 else None
        values[f] = pylist(computed[name]) if name in computed else pylist(cols[f], idx)
    out = plan.output
    if isinstance(out, MapOut) and all(isinstance(m, FieldOut) for _, m in out.members):
        # the common flat projection ({"name": $it.name, ...}): one dict per row, built by zip
        lists = [values[m.field] for _, m in out.members if isinstance(m, FieldOut)]
        return flat_maps([k for k, _ in out.members], lists, len(idx))
    return [item for i in range(len(idx)) for item in row_items(out, i, values)]


def _fields_of_out(out: Out) -> list[Field]:
    found: dict[Field, None] = {}
    out_fields(out, found)
    return list(found)


def _ordered_rows(
    idx: np.ndarray, keys: tuple[OrderKey, ...], cols: dict[Field, Column], top: int | None
) -> np.ndarray:
    """``idx`` ordered by the keys, ties in storage order (the engine's stable sort)."""
    if top is not None and top < len(idx) // 8:
        near = _contenders(idx, keys[0], cols, top)
        if near is not None:
            idx = near
    sort_keys = []
    columns: dict[str, Any] = {}
    for n, k in enumerate(keys):
        assert k.field is not None
        values = values_at(cols[k.field], idx)
        empty_first = (not k.desc and not k.empty_greatest) or (k.desc and k.empty_greatest)
        columns[f"e{n}"] = pc.is_null(values)
        sort_keys.append((f"e{n}", "descending" if empty_first else "ascending"))
        columns[f"v{n}"] = values
        sort_keys.append((f"v{n}", "descending" if k.desc else "ascending"))
    columns["pos"] = pa.array(np.arange(len(idx)))
    sort_keys.append(("pos", "ascending"))
    order = pc.sort_indices(pa.table(columns), sort_keys=sort_keys).to_numpy()
    return idx[order]


def _contenders(idx: np.ndarray, k: OrderKey, cols: dict[Field, Column], top: int) -> np.ndarray | None:
    """The rows of ``idx`` (in storage order) that can be among the first ``top`` by the first key:
    those at or before the ``top``-th value, so every row tied with it stays for the later keys and the
    storage order to decide (None: missing members would come first, or too few rows to prune).

    >>> v = Field(("v",), "number", None)
    >>> col = Column(v, pa.array([3.0, 9.0, 5.0, 9.0, 1.0, 9.0, 2.0, 0.0]))
    >>> _contenders(np.arange(8), OrderKey(v, "field", True, False), {v: col}, 2).tolist()
    [1, 3, 5]
    """
    assert k.field is not None
    values = values_at(cols[k.field], idx)
    empty_first = (not k.desc and not k.empty_greatest) or (k.desc and k.empty_greatest)
    if empty_first and values.null_count:
        return None
    present = pc.drop_null(values)
    if len(present) < top:
        return None
    picked = present.take(
        pc.select_k_unstable(present, k=top, sort_keys=[("", "descending" if k.desc else "ascending")])
    )
    edge = pc.min(picked) if k.desc else pc.max(picked)
    return idx[bits((pc.greater_equal if k.desc else pc.less_equal)(values, edge))]
