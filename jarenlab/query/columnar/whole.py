"""Whole-query aggregates over columns: one group of every kept row, without group codes.

A whole-query aggregate (``q.avg(it.x)``, or the builder's ``select`` of aggregates without
``group_by``: :mod:`jarenlab.query.planner.whole`) is a group-by with no keys, and the general pass
(:func:`.groups.aggregate`) would number every row 0 and add per group. Here each aggregate reads
the column's values at the kept rows once (:func:`~.columns.numbers`: a view of the Arrow buffer,
kept per version of the column) and computes its one value: a count, an exact integer sum
(:func:`~.exact.int_total`), the correctly rounded float sum (:func:`~.exact.total`), a minimum or
maximum (:func:`extremes`: the first of equal values, ``2`` or ``2.0``), a median or a standard
deviation (:mod:`.spread`, one group), a count of distinct values (the column's dictionary
codes). Each is the engine's, bit for bit, as the general pass gives it: integers stay integers, a
sum of only integers written in a number member is an integer, missing members are skipped, and
over no rows the engine's empty answers (counts and sums 0, no item for an average, an extreme, a
median or a deviation). What the general pass declines, this declines
with the same reason.

>>> import pyarrow as pa
>>> from jarenlab.query.columnar.columns import Column
>>> from jarenlab.query.planner.preds import AggOut, Field
>>> f = Field(("x",), "integer", None)
>>> cols = {f: Column(f, pa.array([3, None, 2**62, 2**62]))}
>>> [whole(AggOut(fn, f), cols, None, 4) for fn in ("count", "sum", "min", "median")]
[[3], [9223372036854775811], [3], [4.611686018427388e+18]]
>>> whole(AggOut("avg", f), cols, np.array([1]), 4), whole(AggOut("sum", f), cols, np.array([], dtype=np.int64), 4)
([], [0])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.errors import JarenlabError
from jarenlab.query.columnar.columns import Column, Decline, Kept, numbers, values_at
from jarenlab.query.columnar.exact import int_total, total
from jarenlab.query.columnar.keys import member_codes
from jarenlab.query.columnar.spread import medians, stddevs
from jarenlab.query.planner.preds import AggOut, Field

#: Why the columns leave an aggregate to SQL or the engine (the general pass says the same).
DISTINCT_KINDS = "a count of distinct values other than a string or integer member runs in SQL"
BEYOND_INTEGERS = "an integer sum of 2^53 or more beside floats"
DEVIATION_BEYOND = "a standard deviation beyond the largest float"


def ratio(total: Any, count: int) -> Any:
    """An average as ``$avg`` divides: the sum over the count (:class:`Decline` beyond the largest float)."""
    try:
        return total / count
    except OverflowError:
        raise Decline("an average beyond the largest float") from None


def spread(fn: str, raw: np.ndarray, groups: np.ndarray, count: int) -> list[list[Any]]:
    """Each group's ``$median`` or ``$stddev`` (``stddev``: ddof 1, ``stddev-pop``: ddof 0)."""
    try:
        return (
            medians(raw, groups, count)
            if fn == "median"
            else stddevs(raw, groups, count, int(fn == "stddev"))
        )
    except (OverflowError, JarenlabError):
        raise Decline(DEVIATION_BEYOND) from None


def whole(a: AggOut, cols: dict[Field, Column], rows: np.ndarray | None, n: int) -> list[Any]:
    """The items of aggregate ``a`` over the ``rows`` kept of ``n`` (all of them when None), as one
    group of :func:`.groups.aggregate` gives them (``[]`` where the engine gives no item)."""
    if a.field is None:  # $count of the rows
        return [n if rows is None else len(rows)]
    col = cols[a.field]
    kind = col.values.type
    if a.fn == "count-distinct":
        return [_distinct(col, rows)]
    if kind == pa.large_string():
        return _strings(a.fn, values_at(col, rows))
    if kind not in (pa.int64(), pa.float64()):
        raise Decline(f"no columnar form for ${a.fn} of {kind}")
    if rows is None and kind == pa.int64() and a.fn in _ARROW and len(col.values) >= ARROW_ROWS:
        return _ints(a.fn, col)
    data, present = numbers(col)
    ints = col.ints
    if rows is not None:
        data = data[rows]
        present = None if present is None else present[rows]
        ints = None if ints is None else ints[rows]
    if present is not None:
        data = data[present]
        ints = None if ints is None else ints[present]
    count = len(data)
    if a.fn == "count":
        return [count]
    if a.fn in ("min", "max"):
        return extremes(a.fn, data, ints)[0]
    if a.fn in ("median", "stddev", "stddev-pop"):
        return spread(a.fn, data, np.zeros(count, dtype=np.int64), 1)[0]
    if kind == pa.int64():
        got: Any = int_total(data)
    else:
        floats = count > 0 if ints is None else not bool(ints.all())  # some value written as a float
        got = total(data)
        if not floats:
            got = int(got)
            if count and abs(got) >= 2**53:
                raise Decline(BEYOND_INTEGERS)
    if a.fn == "sum":
        return [got]
    if a.fn == "avg":
        return [ratio(got, count)] if count else []
    raise Decline(f"no columnar form for ${a.fn}")


def extremes(
    fn: str,
    data: np.ndarray,
    ints: np.ndarray | None,
    groups: np.ndarray | None = None,
    count: int = 1,
    held: np.ndarray | None = None,
) -> list[list[Any]]:
    """Each group's ``$min`` or ``$max`` (``fn``) of numbers as the engine picks it (``[]`` for an
    empty group): ``data`` int64, or float64 with ``ints`` marking the values written as integers
    (None: none was), in row order; ``groups`` each value's group of ``count`` (None: one group of
    them all, no codes), ``held`` each group's number of values when known. The least or greatest
    by value, and of equal values the first, as Python's ``min``/``max`` return it: ``2`` or
    ``2.0``, ``0.0`` or ``-0.0`` or ``0``, kind and sign kept.
    Comparing the doubles is exact: a float64 column holds only integers a double holds exactly
    (one it cannot makes the column inexact, :mod:`.columns`, and the columns decline), and no NaN
    (a store keeps none). Only a group whose extreme could be written another way (a zero, or a
    whole number where integers are marked) looks up which of its equal values comes first.

    >>> data = np.array([2.0, -0.0, 2.0, 0.0, 2.5])
    >>> ints = np.array([True, False, False, True, False])
    >>> extremes("max", data[:4], ints[:4]), extremes("min", data[1:4], ints[1:4])
    ([[2]], [[-0.0]])
    >>> extremes("min", data, ints, np.array([0, 1, 1, 1, 2]), 4), extremes("max", data, None, np.array([2, 1, 1, 1, 0]), 3)
    ([[2], [-0.0], [2.5], []], [[2.5], [2.0], [2.0]])
    """
    pick = np.minimum if fn == "min" else np.maximum
    if groups is None:
        if not len(data):
            return [[]]
        best = pick.reduce(data, keepdims=True)
        seen = np.ones(1, dtype=bool)
    else:
        best = np.full(count, _START[data.dtype.kind][fn], dtype=data.dtype)
        pick.at(best, groups, data)
        seen = (np.bincount(groups, minlength=count) if held is None else held) > 0
    out = best.tolist()
    if data.dtype.kind == "f":
        doubtful = seen & ((best == 0) if ints is None else (best == np.floor(best)))
        for g, i in _firsts(data, best, doubtful, groups):
            out[g] = int(data[i]) if ints is not None and ints[i] else float(data[i])
    return [[v] if s else [] for v, s in zip(out, seen.tolist())]


#: Where a group's running least (``min``) or greatest (``max``) starts, per numpy kind.
_START: dict[str, dict[str, Any]] = {
    "i": {"min": np.iinfo(np.int64).max, "max": np.iinfo(np.int64).min},
    "f": {"min": np.inf, "max": -np.inf},
}


def _firsts(
    data: np.ndarray, best: np.ndarray, doubtful: np.ndarray, groups: np.ndarray | None
) -> list[tuple[int, int]]:
    """(group, the position of its first value equal to its ``best``) for each ``doubtful`` group."""
    if not doubtful.any():
        return []
    if groups is None:
        return [(0, int(np.argmax(data == best[0])))]  # (argmax: the first True)
    hit = np.flatnonzero((data == best[groups]) & doubtful[groups])
    first = np.full(len(best), len(data), dtype=np.int64)
    np.minimum.at(first, groups[hit], hit)
    return [(g, int(first[g])) for g in np.flatnonzero(doubtful).tolist()]


#: What an integer member's every row gives from Arrow's own kernels (nulls skipped, no copy).
_ARROW = ("count", "min", "max", "sum", "avg")
#: From this many rows Arrow's kernels (about 30 us a call to set up) beat copying the present
#: values out for numpy.
ARROW_ROWS = 1 << 16


def _ints(fn: str, col: Column) -> list[Any]:
    """``fn`` over every row of an int64 column: Arrow's kernels skip the missing members in place
    (no copy of the present ones); the sum is Arrow's where no partial sum can pass 64 bits
    (the least and greatest bound it), else :func:`~.exact.int_total` of the present values."""
    values = col.values
    count = len(values) - values.null_count
    if fn == "count":
        return [count]
    if not count:
        return [0] if fn == "sum" else []
    low, high = _range(col)
    if fn in ("min", "max"):
        return [low if fn == "min" else high]
    if max(-low, high) * count < 2**63:
        got = pc.sum(values).as_py()
    else:
        data, present = numbers(col)
        got = int_total(data if present is None else data[present])
    return [got] if fn == "sum" else [ratio(got, count)]


def _range(col: Column) -> tuple[Any, Any]:
    """An int64 column's least and greatest value (None, None: no value), kept per version of
    its values and grown when rows are appended (a question over every row reads no pass for
    them again)."""
    got = col.derived.get("range")
    if got is None:
        got = col.derived["range"] = Kept(_min_max(col.values), _grown_range)
    low, high = got.value
    return low, high


def _min_max(values: pa.Array) -> tuple[Any, Any]:
    got = pc.min_max(values)
    return got["min"].as_py(), got["max"].as_py()


def _grown_range(old: tuple[Any, Any], part: Column) -> tuple[Any, Any]:
    low, high = _min_max(part.values)
    if low is None:
        return old
    if old[0] is None:
        return low, high
    return min(old[0], low), max(old[1], high)


def _strings(fn: str, values: pa.Array) -> list[Any]:
    """An aggregate of a string member's values (least and greatest by code point: Arrow compares
    UTF-8 bytes, which order as code points do)."""
    if fn == "count":
        return [len(values) - values.null_count]
    if fn in ("min", "max"):
        got = pc.min_max(values)[fn].as_py()
        return [] if got is None else [got]
    raise Decline(f"no columnar form for ${fn} of a string member")


def _distinct(col: Column, rows: np.ndarray | None) -> int:
    """The number of distinct values (strings by code point, integers by value) at ``rows``: the
    member's dictionary codes marked in one array, the missing member's code not counted."""
    if col.values.type not in (pa.int64(), pa.large_string()):
        raise Decline(DISTINCT_KINDS)
    codes, values = member_codes(col, rows)
    seen = np.zeros(max(len(values), 1), dtype=bool)
    seen[codes] = True
    if None in values:
        seen[values.index(None)] = False
    return int(np.count_nonzero(seen))
