"""Medians and standard deviations per group over numpy arrays, bit for bit as the reference
engine's ``$median`` and ``$stddev`` give them.

The engine's median is the middle item of the sorted numbers (a stable sort: ties keep their
order), as a float, or the float nearest the exact mean of the two middle ones; its standard
deviation is the square root of a ratio of exact sums, rounded once (so the order of the items
cannot change it). Here each group's middle values are selected or sorted out of all the groups
at once (:func:`medians`), and a standard deviation
is computed from exact sums of the values and their squares (:func:`stddevs`: integers as
integers, floats as exact levels of doubles); a group holding an infinity, a NaN or magnitudes
whose squares do not split into two doubles takes the engine's own function.

>>> import numpy as np
>>> g = np.array([0, 0, 0, 1, 1, 1, 1])
>>> medians(np.array([3, 1, 2, 8, 2, 4, 1]), g, 3)
[[2.0], [3.0], []]
>>> medians(np.array([0.5, -0.0, 0.25, 1e308, 1e308, 1.0, 2.0]), g, 2)
[[0.25], [5e+307]]
>>> stddevs(np.array([2, 4, 4, 4, 5, 5, 7, 9]), np.zeros(8, dtype=np.int64), 1, 0)
[[2.0]]
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from jarenlab.query.columnar.exact import group_levels, int_sums
from jarenlab.query.lang.functions import FUNCTIONS

#: The bound under which an integer's square and a pair's sum are exact in 64 bits.
_SQUARE = 3037000499
#: A float sum from here down in magnitude may not halve exactly (subnormal): such means are exact.
_TINY = 2.0**-1021


def medians(values: np.ndarray, groups: np.ndarray, count: int) -> list[list[Any]]:
    """Each group's ``$median`` (``groups[i]`` is ``values[i]``'s group, ``0 <= groups[i] <
    count``; ``values`` in storage order, int64 or float64); ``[]`` for an empty group."""
    out: list[list[Any]] = [[] for _ in range(count)]
    if values.size == 0:
        return out
    present, sizes, low, high = _middles(values, groups, count)
    odd = (sizes[present] % 2).astype(bool)
    slow = np.zeros(len(present), dtype=bool)
    if values.dtype == np.int64:
        small = float(np.abs(values.astype(np.float64)).max()) < 2.0**52  # a pair's sum is exact
        if small:
            mid = np.where(odd, low.astype(np.float64), (low + high).astype(np.float64) / 2)
        else:
            mid = low.astype(np.float64)
            slow = ~odd
    else:
        wild = np.bincount(groups, weights=~np.isfinite(values), minlength=count)[present] > 0
        with np.errstate(over="ignore", invalid="ignore"):
            total = low + high
        # The rounded sum halves exactly unless it overflowed or is near the subnormals; a zero
        # is +0.0 (the exact mean of -0.0 and 0.0 is a zero without a sign).
        inexact = ~np.isfinite(total) | ((total != 0) & (np.abs(total) < _TINY))
        mid = np.where(odd, low, total / 2 + 0.0)
        slow = ~odd & inexact & ~wild
        # A middle zero's sign is the one the engine's stable sort puts there (a selection may put
        # another zero): its function decides, as for an infinity or a NaN.
        wild |= odd & (low == 0)
        for i in np.flatnonzero(wild).tolist():
            g = int(present[i])
            out[g] = _engine("median", values[groups == g], None)
    low_items, high_items = low.tolist(), high.tolist()
    for i, (g, m) in enumerate(zip(present.tolist(), mid.tolist())):
        if slow[i]:
            m = float((Fraction(low_items[i]) + Fraction(high_items[i])) / 2)
        if not out[g]:
            out[g] = [m]
    return out


def _middles(
    values: np.ndarray, groups: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The groups holding values, every group's size, and each present group's two middle values
    in sorted order (the same one twice for an odd size). Few large groups: each group's values
    are selected (``np.partition``) after one radix sort by group; many small ones: one sort of
    every value by group, then value."""
    if count < 2**15 and 16 * count <= values.size:
        order = np.argsort(groups.astype(np.int16), kind="stable")
        grouped = values[order]
        bounds = np.searchsorted(groups[order], np.arange(count + 1))
        sizes = np.diff(bounds)
        present = np.flatnonzero(sizes)
        low, high = np.empty(len(present), dtype=values.dtype), np.empty(len(present), dtype=values.dtype)
        for i, g in enumerate(present.tolist()):
            size, start = int(sizes[g]), int(bounds[g])
            lo, hi = (size - 1) // 2, size // 2
            picked = np.partition(grouped[start : start + size], [lo, hi] if lo != hi else lo)
            low[i], high[i] = picked[lo], picked[hi]
        return present, sizes, low, high
    order = np.lexsort((values, groups))  # a stable sort by group, then value
    ranked = values[order]
    bounds = np.searchsorted(groups[order], np.arange(count + 1))
    sizes = np.diff(bounds)
    present = np.flatnonzero(sizes)
    return (
        present,
        sizes,
        ranked[bounds[present] + (sizes[present] - 1) // 2],
        ranked[bounds[present] + sizes[present] // 2],
    )


def stddevs(values: np.ndarray, groups: np.ndarray, count: int, ddof: int) -> list[list[Any]]:
    """Each group's ``$stddev`` with ``ddof``; ``[]`` for a group of ``ddof`` items or fewer.
    :class:`OverflowError` or the engine's JQ2010 where the result is beyond the largest float."""
    out: list[list[Any]] = [[] for _ in range(count)]
    sizes = np.bincount(groups, minlength=count).tolist()
    if values.size == 0:
        return out
    if values.dtype == np.int64 and float(np.abs(values.astype(np.float64)).max()) <= _SQUARE:
        # The engine's sums of integers are these (their scale is 1), and so is its one division.
        s1, s2 = int_sums(values, groups, count), int_sums(values * values, groups, count)
        for g, n in enumerate(sizes):
            if n > ddof:
                out[g] = [math.sqrt((n * s2[g] - s1[g] * s1[g]) / (n * (n - ddof)))]
        return out
    slow: set[int] = set()
    if values.dtype == np.float64:
        slow = _float_stddevs(values, groups, count, ddof, sizes, out)
    else:  # integers beyond 2^31.5: the engine's function
        slow = {g for g, n in enumerate(sizes) if n > ddof}
    if slow:
        order = np.argsort(groups, kind="stable")
        bounds = np.searchsorted(groups[order], np.arange(count + 1))
        for g in slow:
            out[g] = _engine("stddev", values[order[bounds[g] : bounds[g + 1]]], ddof)
    return out


#: Magnitudes whose square splits exactly into two doubles (Dekker: neither overflows nor
#: underflows on the way).
_LOW, _HIGH = 2.0**-480, 2.0**500
#: Veltkamp's splitter for doubles (2^27 + 1).
_SPLIT = 134217729.0


def _float_stddevs(
    values: np.ndarray, groups: np.ndarray, count: int, ddof: int, sizes: list[int], out: list[list[Any]]
) -> set[int]:
    """Fill ``out`` with each group's deviation from the exact sums of its values and of their
    squares (each square the exact sum of two doubles, Dekker's product), added exactly by levels
    (:func:`~.exact.group_levels`) and taken as fractions once: the engine's ratio, rounded once.
    Returns the groups left to the engine's function (a magnitude whose square does not split,
    an infinity or a NaN, values spread too widely)."""
    size = np.abs(values)
    odd = ~((size == 0) | ((size >= _LOW) & (size < _HIGH)))  # (a NaN is odd too)
    slow: set[int] = set()
    x, g = values, groups
    if odd.any():
        slow = set(np.unique(groups[odd]).tolist())
        x, g = values[~odd], groups[~odd]
    high = x * _SPLIT - (x * _SPLIT - x)
    low = x - high
    square = x * x
    error = ((high * high - square) + 2.0 * high * low) + low * low
    ones, slow_ones = group_levels(x, g, count)
    twos, slow_twos = group_levels(np.concatenate([square, error]), np.concatenate([g, g]), count)
    slow |= slow_ones | slow_twos
    for k, n in enumerate(sizes):
        if n > ddof and k not in slow:
            s1 = sum(Fraction(float(level[k])) for level in ones)
            s2 = sum(Fraction(float(level[k])) for level in twos)
            out[k] = [math.sqrt(float((n * s2 - s1 * s1) / (n * (n - ddof))))]
    return slow


def _engine(name: str, values: np.ndarray, arg: int | None) -> list[Any]:
    """The engine's own function over one group's values (in storage order)."""
    args = [values.tolist()] + ([] if arg is None else [[arg]])
    got: list[Any] = FUNCTIONS[name](args, "")
    return got
