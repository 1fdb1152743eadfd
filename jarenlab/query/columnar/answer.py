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

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.errors import JarenlabError
from jarenlab.query.columnar.columns import Column, Decline, Table, bits, numbers, pylist, values_at
from jarenlab.query.columnar.exact import group_sums, int_sums
from jarenlab.query.columnar.items import flat_maps, group_items, row_items
from jarenlab.query.columnar.keys import date_codes, date_key, encode, member_codes
from jarenlab.query.columnar.reads import member, out_fields, pointer
from jarenlab.query.columnar.series import rolled
from jarenlab.query.columnar.spread import medians, stddevs
from jarenlab.query.columnar.windows import window_rows
from jarenlab.query.planner.decode import resampled
from jarenlab.query.planner.plan import Plan
from jarenlab.query.planner.preds import (
    AggOut,
    And,
    Arith,
    ArrOut,
    Compare,
    CompareAny,
    ComparePaths,
    CompareValue,
    Const,
    DateKey,
    Exists,
    Field,
    FieldOut,
    Infix,
    InList,
    KeyOut,
    Length,
    MapOut,
    Not,
    Or,
    OrderKey,
    Out,
    Pred,
    Prefix,
    Slot,
    Suffix,
    Truthy,
    Types,
)
from jarenlab.query.planner.translate import successor

_OPS = {
    "eq": pc.equal,
    "ne": pc.not_equal,
    "lt": pc.less,
    "le": pc.less_equal,
    "gt": pc.greater,
    "ge": pc.greater_equal,
}
_NUMPY_OPS = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


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


def mask(p: Pred, cols: dict[Field, Column], ext: dict[str, Any], n: int) -> np.ndarray:
    """The rows a total predicate keeps, as a boolean array."""
    if isinstance(p, Const):
        return np.full(n, p.value, dtype=bool)
    if isinstance(p, And):
        out = mask(p.items[0], cols, ext, n)
        for x in p.items[1:]:
            out &= mask(x, cols, ext, n)
        return out
    if isinstance(p, Or):
        out = mask(p.items[0], cols, ext, n)
        for x in p.items[1:]:
            out |= mask(x, cols, ext, n)
        return out
    if isinstance(p, Not):
        return ~mask(p.item, cols, ext, n)
    if isinstance(p, CompareValue):
        return _compare_value(p, cols, ext, n)
    col = cols[p.field]  # type: ignore[union-attr]
    family = "string" if col.field.family == "string" else "number"
    if isinstance(p, Exists):
        return bits(col.values.is_valid())
    if isinstance(p, Types):
        kinds = set(p.types)
        valid = bits(col.values.is_valid())
        if family == "string":
            return valid if "string" in kinds else np.zeros(n, dtype=bool)
        ints = _ints(col)
        return valid & ((ints & ("int" in kinds)) | (~ints & ("float" in kinds)))
    if isinstance(p, Truthy):
        if family == "string":
            return bits(pc.greater(pc.binary_length(col.values), 0))
        return bits(pc.not_equal(col.values, 0))
    if isinstance(p, Compare):
        return _compare(col, p.op, _slot(p.slot, ext), p.family, n)
    if isinstance(p, CompareAny):
        v = ext[p.slot.value]
        if type(v) is str:
            return _compare(col, p.op, v, "string", n)
        if type(v) in (int, float):
            return _compare(col, p.op, v, "number", n)
        raise Decline(f"external ${p.slot.value} is {type(v).__name__}")
    if isinstance(p, ComparePaths):
        other = cols[p.other]
        if family != p.family or ("string" if other.field.family == "string" else "number") != p.family:
            return np.zeros(n, dtype=bool)
        if family == "number" and not _safe_pair(col, other):
            raise Decline("two number members beyond 2^53 compared")
        return bits(_OPS[p.op](col.values, other.values))
    if isinstance(p, InList):
        items = _slot(p.slot, ext)
        if family == "string":
            strs = [x for x in items if type(x) is str]
            return bits(pc.is_in(col.values, value_set=pa.array(strs, type=col.values.type)))
        nums = [x for x in items if type(x) in (int, float)]
        out = np.zeros(n, dtype=bool)
        for x in nums:
            out |= _compare(col, "eq", x, "number", n)
        return out
    if family != "string":
        return np.zeros(n, dtype=bool)
    if isinstance(p, Prefix):
        low = _slot(p.low, ext)
        out = _compare(col, "ge", low, "string", n) if type(low) is str else np.zeros(n, dtype=bool)
        if p.high is not None:
            high = _slot(p.high, ext)
            out &= _compare(col, "lt", high, "string", n) if type(high) is str else False
        return out
    if isinstance(p, Suffix | Infix):
        v = _slot(p.slot, ext)
        if type(v) is not str:
            return np.zeros(n, dtype=bool)
        fn = pc.ends_with if isinstance(p, Suffix) else pc.match_substring
        return bits(fn(col.values, pattern=v))
    raise Decline(f"no columnar form for {type(p).__name__}")


def _slot(slot: Slot, ext: dict[str, Any]) -> Any:
    """A slot's value as the engine compares it (an external's, a literal, a prefix's successor)."""
    kind = slot.kind
    if kind in ("literal", "list"):
        return slot.value
    v = ext[slot.value]
    if kind == "successor":
        return successor(v) if type(v) is str else None
    if kind == "string-external":
        return v if type(v) is str else None
    if kind == "number-external":
        return v if type(v) in (int, float) else None
    return v


def _ints(col: Column) -> np.ndarray:
    """Where the member is written as an integer."""
    if col.values.type == pa.int64():
        return np.ones(len(col.values), dtype=bool)
    if col.ints is None:
        return np.zeros(len(col.values), dtype=bool)
    return col.ints


def _safe_pair(a: Column, b: Column) -> bool:
    """Two number columns compare exactly in Arrow (int64 against float64 casts the integers)."""
    if a.values.type == b.values.type:
        return True
    ints = a if a.values.type == pa.int64() else b
    top = pc.max(pc.abs(ints.values)).as_py()
    return top is None or top < 2**53


def _compare(col: Column, op: str, value: Any, family: str, n: int) -> np.ndarray:
    """``member op value`` in ``family``: false where the member is missing or of the other family."""
    col_family = "string" if col.field.family == "string" else "number"
    if value is None or col_family != family:
        return np.zeros(n, dtype=bool)
    if family == "string":
        if type(value) is not str:
            return np.zeros(n, dtype=bool)
        return bits(_OPS[op](col.values, pa.scalar(value, type=col.values.type)))
    kind = col.values.type
    if (kind == pa.int64() and type(value) is int and -(2**63) <= value < 2**63) or (
        kind == pa.float64()
        and ((type(value) is float and not math.isnan(value)) or (type(value) is int and abs(value) <= 2**53))
    ):
        # Exactly as Python compares (an int within 2^53 is a float exactly): one numpy pass.
        data, present = numbers(col)
        out: np.ndarray = _NUMPY_OPS[op](data, value)
        if present is not None:
            out &= present
        return out
    return _compare_numbers(col.values, op, value, n)


def _compare_numbers(values: pa.Array, op: str, value: Any, n: int) -> np.ndarray:
    """Numbers (int64 or float64, null where empty) ``op`` a number, exactly as Python compares an
    int with a float: false where empty."""
    if type(value) not in (int, float) or (type(value) is float and math.isnan(value)):
        return np.zeros(n, dtype=bool)
    if values.type == pa.int64() and type(value) is int and -(2**63) <= value < 2**63:
        return bits(_OPS[op](values, pa.scalar(value, type=pa.int64())))
    valid = bits(values.is_valid())
    if values.type == pa.int64():
        if type(value) is float:
            if math.isinf(value):
                below = value > 0  # every integer is below +inf
                return valid & (
                    below if op in ("lt", "le", "ne") else (not below) if op in ("gt", "ge", "ne") else False
                )
            if value != math.floor(value):
                if op == "eq":
                    return np.zeros(n, dtype=bool)
                if op == "ne":
                    return valid
                # x < 2.5 is x <= 2; x > 2.5 is x >= 3.
                value, op = (math.floor(value), "le") if op in ("lt", "le") else (math.ceil(value), "ge")
            value = int(value)
        if not -(2**63) <= value < 2**63:
            above = value > 0
            if op == "eq":
                return np.zeros(n, dtype=bool)
            if op == "ne":
                return valid
            return valid & ((op in ("lt", "le")) == above)
        return bits(_OPS[op](values, pa.scalar(value, type=pa.int64())))
    if type(value) is int and abs(value) > 2**53:
        if float(value) != value:
            raise Decline("an integer beyond 2^53 compared with a float member")
        value = float(value)
    return bits(_OPS[op](values, pa.scalar(float(value), type=pa.float64())))


# -- computed values ----------------------------------------------------------------------------
def _compare_value(p: CompareValue, cols: dict[Field, Column], ext: dict[str, Any], n: int) -> np.ndarray:
    """A number computed from members ``op`` a number, as the engine compares them (false where
    the value is empty; ``ne`` true wherever it is not equal)."""
    v = _slot(p.slot, ext)
    if type(v) not in (int, float):
        raise Decline("a computed value compared with an external that is not a number")
    values = _computed(p.value, cols, n)
    if p.op == "ne":
        return bits(values.is_valid()) & ~_compare_numbers(values, "eq", v, n)
    return _compare_numbers(values, p.op, v, n)


def _computed(v: Arith | Length | DateKey, cols: dict[Field, Column], n: int) -> pa.Array:
    """A computed value per row (int64 or float64; null where the engine's value is empty)."""
    if isinstance(v, Length):
        return pc.cast(pc.fill_null(pc.utf8_length(cols[v.field].values), 0), pa.int64())
    if isinstance(v, DateKey):
        return date_key(cols[v.field], None, v)[0]
    return _arith(v, cols, n)


_ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def _arith(v: Arith, cols: dict[Field, Column], n: int) -> pa.Array:
    """``$add``/``$sub``/``$mul`` per row as the engine computes them: integers exactly (declined
    where 64 bits, or a double's 53 for integers held beside floats, may not hold the result), an
    integer with a float as the float nearest it with that float, floats as IEEE doubles."""
    valid = np.ones(n, dtype=bool)
    operands: list[tuple[np.ndarray, np.ndarray]] = []
    for x in (v.left, v.right):
        if isinstance(x, Field):
            col = cols[x]
            valid &= bits(col.values.is_valid())
            operands.append((pc.fill_null(col.values, 0).to_numpy(zero_copy_only=False), _ints(col)))
        else:
            kind = np.int64 if type(x.value) is int else np.float64
            operands.append((np.full(n, x.value, dtype=kind), np.full(n, type(x.value) is int)))
    (a, a_ints), (b, b_ints) = operands
    if a.dtype == np.int64 and b.dtype == np.int64:
        if v.fn == "mul":
            _bounded(v.fn, a[valid], b[valid], 2**63 - 1)
        with np.errstate(over="ignore"):
            out = _ARITH[v.fn](a, b)
        # a sum passes 64 bits where both operands' signs differ from its; a difference where the
        # operands' signs differ and its sign differs from the first's
        wrapped = (((a ^ out) & (b ^ out)) if v.fn == "add" else ((a ^ b) & (a ^ out))) < 0
        if (wrapped & valid).any():
            raise Decline("integer arithmetic whose result passes 64 bits")
        return pa.array(out, mask=~valid)
    both = a_ints & b_ints & valid  # integers the engine computes exactly
    _bounded(v.fn, a[both], b[both], 2**53)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _ARITH[v.fn](a.astype(np.float64), b.astype(np.float64))
    return pa.array(out, mask=~valid)


def _bounded(fn: str, a: np.ndarray, b: np.ndarray, bound: int) -> None:
    """:class:`Decline` unless every result of the integers ``a`` and ``b`` (int64, or floats
    holding integers) is at most ``bound`` in magnitude (computed exactly, as Python integers)."""
    if a.size == 0:
        return
    top_a = max(abs(int(a.max())), abs(int(a.min())))
    top_b = max(abs(int(b.max())), abs(int(b.min())))
    if (top_a * top_b if fn == "mul" else top_a + top_b) > bound:
        raise Decline("integer arithmetic whose result may pass what the columns hold exactly")


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
