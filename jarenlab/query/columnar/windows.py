"""``$window`` over columns: ranks, offsets and framed aggregates, as the engine computes them.

A ``$window`` followed by a projection of members (:attr:`Plan.window`, a
:class:`~jarenlab.query.planner.preds.Ranking`) is computed once over the rows the filter keeps,
in storage order (the engine's order of ``$[*]``). The rows are sorted by partition (typed string
or integer members; a missing key is a partition of its own), then by each ``$orderby`` key as the
engine's stable sort orders it (strings by code point, numbers by value, a missing key first or
last as the spec says), then by storage position: the engine's order within each partition. Each
key is read as its dense rank among the present values, so two rows tie (share a ``$rank``) where
every key's rank is equal, a missing key equal only to another missing one, as the engine's deep
equality finds them.

- ``$row-number``, ``$rank`` and ``$dense-rank`` are positions in that order: the row's own, the
  first of its run of ties, and the number of runs so far, each counted from its partition's start.
- ``$lag``/``$lead`` read the member ``offset`` sorted rows away inside the partition (no member
  where it is missing), or the literal default beyond the partition's ends.
- ``$count``, ``$sum``, ``$avg``, ``$min`` and ``$max`` over a frame of rows are the aggregates of
  a ``$rolling``'s windows (:func:`~.series.over_ranges`: prefix sums, exact levels for float sums,
  a sparse table for extremes), each row's frame a range of the sorted rows cut to its partition.

The filter on ranks, the offset and the limit apply after, as the engine's outer FLWOR does.

>>> ranks(np.array([0, 0, 0, 1]), [np.array([5, 5, 7, 1])])
([1, 1, 3, 1], [1, 1, 2, 1])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.query.columnar.columns import Column, Decline, bits, computed, taken, values_at
from jarenlab.query.columnar.keys import encode, member_codes, point_ranks
from jarenlab.query.columnar.series import over_ranges
from jarenlab.query.planner.plan import Plan
from jarenlab.query.planner.preds import Field, Framed, OrderKey, Ranking

_HOLDS = {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
}


def window_rows(
    plan: Plan, cols: dict[Field, Column], n: int, rows: np.ndarray | None
) -> tuple[np.ndarray, dict[str, Column]]:
    """The table positions of a window plan's results (storage order, those the filter on ranks
    keeps, past the offset and within the limit) and each computed member there, as a column of
    the results (null: no member)."""
    assert plan.window is not None
    if plan.order:
        raise Decline("an ordering after a window")
    idx = np.arange(n) if rows is None else rows
    members = windowed(plan.window, cols, idx)
    if plan.window.keep:
        names = [name for name, _, _ in plan.window.compute]
        held = np.ones(len(idx), dtype=bool)
        for at, op, value in plan.window.keep:
            held &= _HOLDS[op](members[names[at]].values.to_numpy(), value)
        picked = np.flatnonzero(held)
        idx = idx[picked]
        members = {k: taken(v, picked) for k, v in members.items()}
    end = len(idx) if plan.limit is None else min(len(idx), plan.offset + plan.limit)
    start = min(plan.offset, end)
    if start or end < len(idx):  # slices of the same buffers
        idx = idx[start:end]
        members = {
            k: Column(
                v.field, v.values.slice(start, end - start), None if v.ints is None else v.ints[start:end]
            )
            for k, v in members.items()
        }
    return idx, members


def windowed(ranking: Ranking, cols: dict[Field, Column], rows: np.ndarray) -> dict[str, Column]:
    """Each computed member of a ``$window`` at ``rows`` (table positions, in storage order), as
    the engine computes it: a column per member (:func:`~.columns.computed`; null: no member)."""
    n = len(rows)
    if ranking.partition and n:
        codes = encode([member_codes(cols[f], rows) for f in ranking.partition])[0]
    else:
        codes = np.zeros(n, dtype=np.int64)
    keys = [_order_ranks(cols[k.field], rows, k) for k in ranking.order if k.field is not None]
    order = _sorted(codes, keys)
    part = codes[order]
    sorted_keys = [k[order] for k in keys]
    at = rows[order]
    first = np.ones(n, dtype=bool)
    first[1:] = part[1:] != part[:-1]
    here = np.arange(n)
    start = np.maximum.accumulate(np.where(first, here, 0)) if n else here
    ends = np.append(np.flatnonzero(first)[1:], n)
    end = ends[np.cumsum(first) - 1] if n else here
    back = np.empty(n, dtype=np.int64)  # each row's place in the sorted order
    back[order] = here
    out: dict[str, Column] = {}
    for name, fn, got in ranking.compute:
        if fn in ("row-number", "rank", "dense-rank"):
            out[name] = computed(_rank_of(fn, first, sorted_keys, start)[back])
            continue
        if fn in ("lag", "lead"):
            assert isinstance(got, tuple)
            values = _offsets(fn, got, cols, at, start, end)
        else:
            assert isinstance(got, Framed)
            lo, hi = _frames(got, start, end)
            values = over_ranges(fn, got.field, cols, at, lo, hi)
        out[name] = taken(values, back)
    return out


def _sorted(codes: np.ndarray, keys: list[np.ndarray]) -> np.ndarray:
    """The rows' order by partition code, then each key (ranks from -1), then position: one stable
    sort of a joint int64 key where the product of the ranges fits in it, else a lexicographic one.

    >>> _sorted(np.array([1, 0, 1, 0]), [np.array([0, 2, -1, 2])]).tolist()
    [1, 3, 2, 0]
    """
    if not len(codes):
        return np.arange(0)
    joint, span = codes, int(codes.max()) + 1
    for k in keys:
        width = int(k.max()) + 2
        if span * width >= 2**62:
            return np.lexsort((np.arange(len(codes)), *reversed(keys), codes))
        joint, span = joint * width + (k + 1), span * width
    return np.argsort(joint, kind="stable")


def ranks(codes: np.ndarray, keys: list[np.ndarray]) -> tuple[list[int], list[int]]:
    """``$rank`` and ``$dense-rank`` of rows already sorted by partition ``codes`` and ``keys``."""
    first = np.ones(len(codes), dtype=bool)
    first[1:] = codes[1:] != codes[:-1]
    here = np.arange(len(codes))
    start = np.maximum.accumulate(np.where(first, here, 0))
    return _rank_of("rank", first, keys, start).tolist(), _rank_of("dense-rank", first, keys, start).tolist()


def _rank_of(fn: str, first: np.ndarray, keys: list[np.ndarray], start: np.ndarray) -> np.ndarray:
    """A rank per sorted row (``first``: where a partition begins, ``start``: its first row)."""
    here = np.arange(len(first))
    if fn == "row-number":
        return here - start + 1
    new = first.copy()  # where a run of ties begins
    for k in keys:
        new[1:] |= k[1:] != k[:-1]
    if fn == "rank":
        return np.maximum.accumulate(np.where(new, here, 0)) - start + 1
    runs = np.cumsum(new)
    return runs - runs[start] + 1 if len(runs) else here


def _order_ranks(col: Column, rows: np.ndarray, k: OrderKey) -> np.ndarray:
    """An ordering key at ``rows`` as an int64 sort key: the dense rank of each present value in
    the key's direction (strings by code point, numbers by value), a missing value before or after
    them all."""
    values = values_at(col, rows)
    present = bits(values.is_valid())
    if values.type == pa.large_string():
        dense = point_ranks(values)
        size = int(dense[present].max()) + 1 if present.any() else 0
    elif values.type in (pa.int64(), pa.float64()):
        # (a number member's integers are held within 2^53 beside floats: exact as doubles, and
        # -0.0 ties 0.0 as the engine's equality finds them)
        raw = pc.fill_null(values, 0).to_numpy(zero_copy_only=False)
        if raw.dtype == np.float64 and np.isnan(raw).any():
            raise Decline("a window ordering key holding NaN")
        distinct, inverse = np.unique(raw[present], return_inverse=True)
        dense = np.zeros(len(raw), dtype=np.int64)
        dense[present] = inverse
        size = len(distinct)
    else:
        raise Decline(f"a window ordering key of {values.type}")
    if k.desc:
        dense = size - 1 - dense
    empty_first = (not k.desc and not k.empty_greatest) or (k.desc and k.empty_greatest)
    return np.where(present, dense, -1 if empty_first else size)


def _offsets(
    fn: str,
    got: tuple[Field, int, Any],
    cols: dict[Field, Column],
    at: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
) -> Column:
    """``$lag``/``$lead`` per sorted row: the member ``offset`` rows away in the partition, or the
    default beyond its ends (null: no member)."""
    field, offset, default = got
    source = np.arange(len(at)) + (-offset if fn == "lag" else offset)
    inside = (source >= start) & (source < end)
    return defaulted(taken(cols[field], at[np.where(inside, source, 0)]), ~inside, default)


def defaulted(col: Column, beyond: np.ndarray, default: Any) -> Column:
    """``col`` with the literal ``default`` (None: no member) where ``beyond`` holds, typed as the engine holds both:
    an integer beside floats marked as one, held as a double only where that double is exact.

    >>> from jarenlab.query.columnar.columns import computed, pylist
    >>> pylist(defaulted(computed(np.array([4, 5])), np.array([True, False]), 0.5))
    [0.5, 5]
    """
    values, ints = col.values, col.ints
    if default is None:  # no default: no member there
        kind: Any = values.type
        ints = None if ints is None else ints & ~beyond
    elif values.type == pa.large_string() and type(default) is str:
        kind = pa.large_string()
    elif values.type == pa.int64() and type(default) is int and -(2**63) <= default < 2**63:
        kind = pa.int64()
    elif values.type in (pa.int64(), pa.float64()) and type(default) in (int, float):
        if type(default) is int and abs(default) > 2**53:
            raise Decline("an integer default a double cannot hold beside floats")
        if values.type == pa.int64():
            bounds = pc.min_max(values).as_py()
            if bounds["min"] is not None and max(-bounds["min"], bounds["max"]) > 2**53:
                raise Decline("integers a double cannot hold beside a float default")
            ints, values = bits(values.is_valid()), values.cast(pa.float64())
        if type(default) is int:
            ints = beyond | (np.zeros(len(values), dtype=bool) if ints is None else ints)
        elif ints is not None:
            ints = ints & ~beyond
        kind = pa.float64()
    else:
        raise Decline(f"a default {default!r} for a member of {values.type}")
    filled = pc.if_else(pa.array(beyond), pa.scalar(default, type=kind), values)
    return Column(col.field, filled, ints, col.inexact)


def _frames(framed: Framed, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sorted row's frame ``[lo, hi)`` cut to its partition (an empty frame: ``[0, 0)``)."""
    here = np.arange(len(start))
    lo = start if framed.start is None else np.clip(here + framed.start, start, end)
    hi = end if framed.end is None else np.clip(here + framed.end + 1, start, end)
    empty = hi <= lo
    return np.where(empty, 0, lo), np.where(empty, 0, hi)
