"""Medians and standard deviations per group over numpy arrays, bit for bit as the reference
engine's ``$median`` and ``$stddev`` give them.

The engine's median is the middle item of the sorted numbers (a stable sort: ties keep their
order), as a float, or the float nearest the exact mean of the two middle ones; its standard
deviation is the square root of a ratio of exact sums, rounded once (so the order of the items
cannot change it). Here the groups are sorted at once (:func:`medians`), and a standard deviation
of integers is computed from the exact integer sums and squares (:func:`stddevs`); anything else
(floats, a group holding an infinity or a NaN) takes the engine's own function, per group.

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

from jarenlab.query.columnar.exact import int_sums
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
    order = np.lexsort((values, groups))  # a stable sort by group, then value
    ranked = values[order]
    bounds = np.searchsorted(groups[order], np.arange(count + 1))
    sizes = np.diff(bounds)
    present = np.flatnonzero(sizes)
    low = ranked[bounds[present] + (sizes[present] - 1) // 2]
    high = ranked[bounds[present] + sizes[present] // 2]
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
    order = np.argsort(groups, kind="stable")
    bounds = np.searchsorted(groups[order], np.arange(count + 1))
    for g, n in enumerate(sizes):
        if n > ddof:
            out[g] = _engine("stddev", values[order[bounds[g] : bounds[g + 1]]], ddof)
    return out


def _engine(name: str, values: np.ndarray, arg: int | None) -> list[Any]:
    """The engine's own function over one group's values (in storage order)."""
    args = [values.tolist()] + ([] if arg is None else [[arg]])
    got: list[Any] = FUNCTIONS[name](args, "")
    return got
