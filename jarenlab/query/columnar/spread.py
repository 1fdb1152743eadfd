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

from jarenlab.query.columnar.exact import BLOCK, Bounded, group_levels, int_sums
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
    in sorted order (the same one twice for an odd size). Integers of a narrow range: counted, no
    sort (:func:`_counted_middles`); few large groups: each group's values are selected
    (``np.partition``) after one radix sort by group; many small ones: one sort of every value by
    group, then value."""
    if values.dtype == np.int64:
        least, most = int(values.min()), int(values.max())
        if (most - least + 1) * count <= values.size:
            return _counted_middles(values - least, groups, count, most - least + 1, least)
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


def _counted_middles(
    offsets: np.ndarray, groups: np.ndarray, count: int, span: int, least: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_middles` of integers ``least + offsets`` (``0 <= offsets < span``, ``span * count``
    no more than the values): how many times each group holds each value, in one pass, and each
    middle rank's value read off the running counts (the first value whose count passes it).

    >>> _counted_middles(np.array([2, 0, 1, 1, 3]), np.array([0, 0, 0, 2, 2]), 3, 4, 10)
    (array([0, 2]), array([3, 0, 2]), array([11, 11]), array([11, 13]))
    """
    held = np.bincount(groups * span + offsets, minlength=count * span).reshape(count, span)
    sizes = held.sum(axis=1)
    present = np.flatnonzero(sizes)
    running = np.cumsum(held[present], axis=1)
    lows = ((sizes[present] - 1) // 2)[:, None]
    highs = (sizes[present] // 2)[:, None]
    low = np.argmax(running > lows, axis=1) + least  # (argmax: the first True)
    high = np.argmax(running > highs, axis=1) + least
    return present, sizes, low.astype(np.int64), high.astype(np.int64)


def stddevs(values: np.ndarray, groups: np.ndarray, count: int, ddof: int) -> list[list[Any]]:
    """Each group's ``$stddev`` with ``ddof``; ``[]`` for a group of ``ddof`` items or fewer.
    :class:`OverflowError` or the engine's JQ2010 where the result is beyond the largest float."""
    out: list[list[Any]] = [[] for _ in range(count)]
    held = np.bincount(groups, minlength=count)
    sizes = held.tolist()
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
        slow = _float_stddevs(values, groups, count, ddof, held, out)
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
    values: np.ndarray, groups: np.ndarray, count: int, ddof: int, held: np.ndarray, out: list[list[Any]]
) -> set[int]:
    """Fill ``out`` with each group's deviation: the engine's ratio of the exact sums of its values
    and of their squares (each square the exact sum of two doubles, Dekker's product), rounded
    once. Most groups are settled in one pass, from sums known to within a bound
    (:class:`~.exact.Bounded`) where every ratio they allow rounds to the same double
    (:func:`_settled`); the others' sums are added exactly by levels
    (:func:`~.exact.group_levels`) and taken as fractions. Returns the groups left to the engine's
    function (a magnitude whose square does not split, an infinity or a NaN, values spread too
    widely)."""
    size = np.abs(values)
    top = float(size.max())
    slow: set[int] = set()
    x, g = values, groups
    if not top < _HIGH or (size < _LOW).any():  # (a NaN is below nothing)
        odd = ~((size == 0) | ((size >= _LOW) & (size < _HIGH)))
        if odd.any():
            slow = set(np.unique(groups[odd]).tolist())
            x, g = values[~odd], groups[~odd]
            held = np.bincount(g, minlength=count)
            top = float(np.abs(x).max()) if x.size else 0.0
    sizes = held.tolist()
    x, top = _centred(x, top)
    ones, twos = Bounded(top, x.size, count), Bounded(top * top, x.size, count)
    errors = np.zeros(count)
    for start in range(0, x.size, BLOCK):  # (a block's scratch stays in cache)
        part, at = x[start : start + BLOCK], g[start : start + BLOCK]
        square, error = _squares(part)
        ones.add(part, at)
        twos.add(square, at)
        errors += np.bincount(at, weights=error, minlength=count)
    b1, b2 = ones.bound(held), twos.bound(held)
    rest: list[int] = []
    for k, n in enumerate(sizes):
        if n > ddof and k not in slow:
            got = _settled(
                n, ddof, (ones.head[k], ones.tail[k], b1[k]), (twos.head[k], twos.tail[k], b2[k]), errors[k]
            )
            if got is None:
                rest.append(k)
            else:
                out[k] = [math.sqrt(got)]
    if not rest:
        return slow
    keep = np.isin(g, rest)
    x, g = x[keep], g[keep]
    square, error = _squares(x)
    exact_ones, slow_ones = group_levels(x, g, count)
    exact_twos, slow_twos = group_levels(np.concatenate([square, error]), np.concatenate([g, g]), count)
    slow |= slow_ones | slow_twos
    for k in rest:
        if k not in slow:
            n = sizes[k]
            s1 = sum(Fraction(float(level[k])) for level in exact_ones)
            s2 = sum(Fraction(float(level[k])) for level in exact_twos)
            out[k] = [math.sqrt(float((n * s2 - s1 * s1) / (n * (n - ddof))))]
    return slow


def _centred(x: np.ndarray, top: float) -> tuple[np.ndarray, float]:
    """``x`` less a double ``c`` near its mean, when every value is within a factor of two of
    ``c`` (each difference is then exact, Sterbenz's lemma, and so is the variance, which a shift
    does not change), and the largest difference; else ``x`` and ``top`` as they are. Values far
    from zero and spread little (a price of 1,000 give or take 1) would leave almost none of the
    sums' digits once the mean's square is taken away; their differences keep them.

    >>> _centred(np.array([1000.5, 999.0, 1001.0]), 1001.0)
    (array([ 0.33333333, -1.16666667,  0.83333333]), 1.1666666666666288)
    """
    if not x.size:
        return x, top
    sign = 1.0 if x[0] > 0 else -1.0
    least, most = sorted((sign * float(x.min()), sign * float(x.max())))
    if not (least > 2.0**-400 and most <= 4 * least):  # (then every value has x[0]'s sign)
        return x, top
    c = sign * min(max(sign * float(x.mean()), most / 2), 2 * least)  # (within [most/2, 2 least])
    shifted = x - c
    return shifted, float(np.abs(shifted).max())


def _squares(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's square rounded, and its rounding error (exact: Dekker's product, the value
    split in two halves by Veltkamp's splitter); the value's magnitude zero or within
    ``[_LOW, _HIGH)``."""
    high = x * _SPLIT - (x * _SPLIT - x)
    low = x - high
    square = x * x
    return square, ((high * high - square) + 2.0 * high * low) + low * low


def _settled(
    n: int, ddof: int, ones: tuple[float, float, float], twos: tuple[float, float, float], errors: float
) -> float | None:
    """The engine's variance of a group of ``n`` values, rounded, when its sums known to within
    their bounds settle it: ``ones`` the values' sum as ``(head, tail, bound)``
    (:class:`~.exact.Bounded`), ``twos`` their rounded squares' sum, ``errors`` the float sum of
    the squares' rounding errors (each at most 2^-53 of its square, so their sum's error is at
    most ``gamma(n - 1)`` times 2^-53 of the squares' sum). The least and greatest ratios the
    bounds allow are taken exactly (integers: every double times 2^1074 is one; Python's division
    of integers rounds correctly); when both round to one double, so does the exact ratio, a ratio
    between them, and that double is returned; else None.

    >>> _settled(3, 1, (6.0, 0.0, 0.0), (14.0, 0.0, 0.0), 0.0), _settled(3, 1, (6.0, 0.0, 0.0), (14.0, 0.0, 1.0), 0.0)
    (1.0, None)
    """
    s1, b1 = _fixed(ones[0]) + _fixed(ones[1]), _fixed(ones[2])
    squares, b2 = _fixed(twos[0]) + _fixed(twos[1]), _fixed(twos[2])
    s2 = squares + _fixed(errors)
    b2 += -(-(n - 1) * (abs(squares) + b2) // ((2**53 - (n - 1)) << 53))  # (rounded up)
    least, most = abs(s1) - b1, abs(s1) + b1
    smallest = least * least if least > 0 else 0
    low = (n * (s2 - b2) << _SCALE) - most * most
    high = (n * (s2 + b2) << _SCALE) - smallest
    if low < 0:
        return None
    whole = n * (n - ddof) << (2 * _SCALE)
    rounded = low / whole
    return rounded if high / whole == rounded else None


#: Every double times 2^_SCALE is an integer.
_SCALE = 1074


def _fixed(x: float) -> int:
    """``x`` (a finite double) times 2^:data:`_SCALE`, exactly."""
    top, power = float(x).as_integer_ratio()  # (``power`` is a power of two)
    return top << (_SCALE + 1 - power.bit_length())


def _engine(name: str, values: np.ndarray, arg: int | None) -> list[Any]:
    """The engine's own function over one group's values (in storage order)."""
    args = [values.tolist()] + ([] if arg is None else [[arg]])
    got: list[Any] = FUNCTIONS[name](args, "")
    return got
