"""Time series over columns: ``$rolling`` windows and ``$resample`` intervals, as the engine computes them.

A ``$rolling`` (:class:`~jarenlab.query.planner.preds.Ranking` of
:class:`~jarenlab.query.planner.preds.Ranged` aggregates, :attr:`Plan.rolling`) is computed once
for every row: the rows with a time are sorted by partition, time and storage position, and each
row's window ``(t - width, t]`` (``t - width`` calendar subtraction for months) is a range of that order found by two binary searches (peers, rows
at the same instant, fall in each other's windows). Counts and integer sums are differences of
prefix sums, exact in 64 bits (declined where a sum could pass them); an average is that sum over
the count, divided as ``$avg`` divides; a minimum or maximum is read from a sparse table of the
window's range (strings by their rank in code-point order). A row without a time gets no member.

A ``$resample`` is the group-by its plan already is (the ``$by`` keys, then the interval's start as
a ``$time-bucket``); :func:`~jarenlab.query.planner.decode.resampled` hands its groups to the
engine's own gap filling, as it does SQL's rows.

>>> order, lo, hi = windows(np.array([0, 0, 1]), np.array([0, 3_600_000, 0]), 7_200_000)
>>> order.tolist(), (hi - lo).tolist()
([0, 1, 2], [1, 2, 1])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.query.columnar.columns import Column, Decline, bits, computed, taken, values_at
from jarenlab.query.columnar.exact import levels
from jarenlab.query.columnar.keys import encode, instants, member_codes, point_ranks
from jarenlab.query.lang.dates import DAY
from jarenlab.query.planner.preds import Field, Ranged, Ranking


# -- $rolling -------------------------------------------------------------------------------------
def windows(
    codes: np.ndarray, times: np.ndarray, width: int, months: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows (``codes``: partitions, ``times``: epoch milliseconds, all present) sorted by partition,
    time and position, and each sorted row's window ``[lo, hi)`` in that order: the rows of its
    partition whose time is in ``(t - width, t]``, ``t`` first moved back ``months`` calendar months."""
    if not len(times):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    edges = (months_back(times, months) if months else times) - width
    low = int(edges.min())
    span = int(times.max()) - low + 1
    if (int(codes.max()) + 1) * span >= 2**62:
        raise Decline("a rolling window over a time span too wide to index")
    key = codes * span + (times - low)  # partition, then time, in one integer
    order = np.argsort(key, kind="stable")  # ties (peers) in storage order
    edge = (codes * span + (edges - low))[order]
    key = key[order]
    return order, np.searchsorted(key, edge, side="right"), np.searchsorted(key, key, side="right")


def months_back(times: np.ndarray, months: int) -> np.ndarray:
    """Each epoch millisecond moved back ``months`` calendar months, the day clamped to the month's
    end and the time of day kept (:func:`~jarenlab.query.lang.dates.add_duration`'s calendar step).

    >>> from jarenlab.query.lang.dates import epoch_ms, format_ms
    >>> [format_ms(int(t)) for t in months_back(np.array([epoch_ms("2024-03-31T06:00:00Z")]), 1)]
    ['2024-02-29T06:00:00Z']
    """
    days = times // DAY
    day = days.astype("datetime64[D]")
    month = day.astype("datetime64[M]")
    into = (day - month.astype("datetime64[D]")).astype(np.int64)  # the day of the month, from 0
    back = month - months
    start = back.astype("datetime64[D]")
    length = ((back + 1).astype("datetime64[D]") - start).astype(np.int64)
    return (start.astype(np.int64) + np.minimum(into, length - 1)) * DAY + (times - days * DAY)


def rolled(ranking: Ranking, cols: dict[Field, Column], rows: np.ndarray) -> dict[str, Column]:
    """Each computed member of a ``$rolling`` at ``rows`` (positions in the table, in storage
    order), as the engine computes it: a column per member (:func:`~.columns.computed`), null
    where a row gets no member (no time, or no value in its window)."""
    first = ranking.compute[0][2]
    assert isinstance(first, Ranged)
    stamps = instants(cols[first.time]).take(pa.array(rows))
    timed = np.flatnonzero(bits(pc.is_valid(stamps)))
    times = pc.cast(stamps, pa.int64()).to_numpy(zero_copy_only=False)[timed] * 1000
    if ranking.partition:
        keys = [member_codes(cols[f], rows[timed]) for f in ranking.partition]
        codes = encode(keys)[0]
    else:
        codes = np.zeros(len(timed), dtype=np.int64)
    order, lo, hi = windows(codes, times, first.width, first.months)
    at = timed[order]  # each sorted row's place among ``rows``
    # each row's place in the sorted order (past the end: a row without a time, no member)
    place = np.full(len(rows), len(at), dtype=np.int64)
    place[at] = np.arange(len(at))
    untimed = None if len(at) == len(rows) else place == len(at)
    out: dict[str, Column] = {}
    for name, fn, ranged in ranking.compute:
        assert isinstance(ranged, Ranged)
        out[name] = taken(over_ranges(fn, ranged.field, cols, rows[at], lo, hi), place, untimed)
    return out


def over_ranges(
    fn: str, field: Field | None, cols: dict[Field, Column], rows: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> Column:
    """``fn`` (``$count``, ``$sum``, ``$avg``, ``$min``, ``$max``) of ``field`` (None: the rows)
    over each range ``[lo, hi)`` of ``rows`` (table positions), as the engine aggregates the
    range's values: a column of one value per range (null: no item; integers marked among
    floats). Also a ``$window``'s frames (:mod:`.windows`)."""
    if field is None or not len(lo):
        return computed(hi - lo)
    values = values_at(cols[field], rows)
    present = bits(values.is_valid())
    counts = _ranges(present.astype(np.int64), lo, hi)
    if fn == "count":
        return computed(counts)
    if fn in ("min", "max"):
        return _extremes(fn, values, present, counts, lo, hi)
    if values.type == pa.float64():
        ints = cols[field].ints
        written = np.zeros(len(rows), dtype=bool) if ints is None else ints[rows]
        floats = _ranges((present & ~written).astype(np.int64), lo, hi)
        raw = pc.fill_null(values, 0.0).to_numpy(zero_copy_only=False)
        return float_sums(fn, raw, floats, counts, lo, hi)
    if values.type != pa.int64():
        raise Decline(f"no columnar form for a rolling ${fn} of {values.type}")
    raw = pc.fill_null(values, 0).to_numpy(zero_copy_only=False)
    top = max(abs(int(raw.max())), abs(int(raw.min()))) if len(raw) else 0  # (abs of -2^63 wraps)
    if top * len(raw) >= 2**63:
        raise Decline("an integer sum over windows that may pass 64 bits")
    sums = _ranges(raw, lo, hi)
    if fn == "sum":
        return computed(sums)
    empty = counts == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        means = sums.astype(np.float64) / counts  # one IEEE division is Python's below 2^53
    for i in np.flatnonzero((np.abs(sums) > 2**53) & ~empty).tolist():
        means[i] = int(sums[i]) / int(counts[i])  # (the exact sum, divided as Python divides)
    return computed(means, empty)


def float_sums(
    fn: str, raw: np.ndarray, floats: np.ndarray, counts: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> Column:
    """Each window's ``$sum`` (or ``$avg``) of a number member as the engine's: the float nearest
    the exact sum where the window holds a float, the integer sum where it holds integers only
    (marked as an integer: declined from 2^53); no average of an empty window.

    The values are split into levels (:func:`~.exact.levels`): each level's prefix sums, and so
    each window's level sum (a difference of two), are exact. A window's levels are added as a
    double-double (``TwoSum``), rounded once, and the rounding checked against a bound of what
    the double-double may miss: a sum that may lie at a rounding midpoint (rare) is added by
    ``math.fsum`` of its levels. Values from 2^1000 up, infinities and NaN decline.

    >>> from jarenlab.query.columnar.columns import pylist
    >>> lo, hi = np.array([0, 0, 1]), np.array([1, 2, 3])
    >>> pylist(float_sums("sum", np.array([0.1, 0.2, 0.3]), np.array([1, 2, 2]), np.array([1, 2, 2]), lo, hi))
    [0.1, 0.30000000000000004, 0.5]
    """
    if raw.size and not float(np.abs(raw).max()) < 2.0**1000:
        raise Decline("a rolling sum of an infinity, a NaN or a magnitude near the largest double")
    parts, spread = levels(raw)
    if spread:
        raise Decline("a rolling sum of values spread too widely for exact levels")
    sums = [_ranges_float(level, lo, hi) for level in parts]
    total = sums[0] if sums else np.zeros(len(lo))
    low = np.zeros(len(lo))  # the rounding errors so far, exactly: total + sum(errors) is the sum
    size = np.zeros(len(lo))  # a bound on the magnitude of those errors
    for level in sums[1:]:
        total, error = _two_sum(total, level)
        low += error
        size += np.abs(error)
    rounded = total + low
    a, b = _two_sum(total, -rounded)  # what rounding left out, a + b + (the errors)
    left = a + b + low
    bound = 2.0**-45 * (np.abs(a) + np.abs(b) + size + np.abs(low))
    half = np.spacing(np.nextafter(np.abs(rounded), 0)) / 2  # the smaller of the gaps about it
    unsure = ~(np.abs(left) + bound < half)
    rounded = rounded + 0.0
    for i in np.flatnonzero(unsure).tolist():
        rounded[i] = math.fsum([float(s[i]) for s in sums]) + 0.0
    whole = floats == 0  # integers only (or nothing): an integer sum
    if np.abs(rounded[whole]).max(initial=0.0) >= 2**53:
        raise Decline("an integer-only rolling sum of 2^53 or more beside floats")
    if fn == "sum":
        return computed(rounded, ints=whole if whole.any() else None)
    empty = counts == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return computed(
            rounded / counts, empty
        )  # an integer sum below 2^53 is that double: the same division


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a + b`` rounded and its exact error (Knuth's TwoSum, element by element)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _ranges_float(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The sum of ``values[lo:hi]`` for each window, exact where every prefix sum is (a level)."""
    prefix = np.concatenate([np.zeros(1), np.cumsum(values)])
    return prefix[hi] - prefix[lo]


def _ranges(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The sum of ``values[lo:hi]`` for each window (int64 prefix sums)."""
    prefix = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(values, dtype=np.int64)])
    return prefix[hi] - prefix[lo]


def _extremes(
    fn: str, values: pa.Array, present: np.ndarray, counts: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> Column:
    """Each window's least or greatest present value (strings by code point), from a sparse table
    of ranks over the sorted rows (null: a window without one)."""
    empty = counts == 0
    if values.type == pa.int64():
        ranks, lookup = pc.fill_null(values, 0).to_numpy(zero_copy_only=False), None
    elif values.type == pa.large_string():
        if not present.any():
            return computed(pa.nulls(len(lo), pa.large_string()))
        ranks = point_ranks(values)
        where = np.empty(int(ranks[present].max()) + 1, dtype=np.int64)  # a row holding each rank
        where[ranks[present]] = np.flatnonzero(present)
        lookup = values.take(pa.array(where))
    else:
        raise Decline(f"no columnar form for a rolling ${fn} of {values.type}")
    pick = np.minimum if fn == "min" else np.maximum
    limit = np.iinfo(np.int64)
    ranks = np.where(present, ranks, limit.max if fn == "min" else limit.min)
    got = _sparse(ranks, lo, hi, pick)
    if lookup is None:
        return computed(got, empty)
    return computed(lookup.take(pa.array(np.where(empty, 0, got), mask=empty if empty.any() else None)))


def _sparse(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, pick: Any) -> np.ndarray:
    """``pick`` (``np.minimum`` or ``np.maximum``) over each non-empty range ``values[lo:hi]``: a
    sparse table of levels of doubling length, as deep as the longest range needs."""
    lengths = hi - lo
    levels = [values]
    while len(levels[-1]) and (1 << len(levels)) <= int(lengths.max()):
        prev, step = levels[-1], 1 << (len(levels) - 1)
        levels.append(pick(prev[:-step], prev[step:]))
    k = np.floor(np.log2(np.maximum(lengths, 1))).astype(np.int64)
    out = np.empty(len(lo), dtype=values.dtype)
    for level in np.unique(k).tolist():
        sel = np.flatnonzero(k == level)
        table = levels[level]
        out[sel] = pick(table[lo[sel]], table[hi[sel] - (1 << level)])
    return out
