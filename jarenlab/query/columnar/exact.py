"""Exact sums over numpy arrays, so a column adds up to what the reference engine adds up to.

The engine's ``$sum`` of floats is the float nearest the exact sum (``math.fsum``), whatever the
order of the items; a vectorised sum adds in its own order and rounds at each step. Here each
group's exact sum is found by Rump, Ogita and Oishi's extraction (:func:`group_sums`) and rounded
once.

>>> import numpy as np
>>> groups = np.array([0, 0, 0, 1, 1])
>>> group_sums(np.array([0.1, 0.2, 0.3, 1e16, 1.0]), groups, 2)
[0.6, 1e+16]
>>> group_sums(np.array([1e16, 1.0, -1e16]), np.zeros(3, dtype=np.int64), 1)
[1.0]
>>> int_sums(np.array([2**62, 2**62, 5]), np.array([0, 0, 1]), 2)
[9223372036854775808, 5]
"""

from __future__ import annotations

import math

import numpy as np

from jarenlab.query.lang.functions import exact_sum

#: Magnitudes from here up are summed by the engine's function (``math.fsum`` may overflow on the way).
_HUGE = 2.0**1000
#: Extraction levels tried before the rest goes to the engine's function (about 30 bits each).
_LEVELS = 8
#: The smallest level's unit stays a normal double (no underflow in the extraction).
_LOWEST = -1000
#: Values summed at a time (128 KiB of doubles: a block and its scratch stay in cache).
BLOCK = 1 << 14


def group_sums(values: np.ndarray, groups: np.ndarray, count: int) -> list[float]:
    """The correctly rounded sum of each group's doubles (``groups[i]`` is ``values[i]``'s group,
    ``0 <= groups[i] < count``), as the engine's ``$sum`` gives it; 0.0 for an empty group.

    With ``sigma`` a power of two above every ``|r|`` times the count, ``q = (sigma + r) - sigma``
    and ``r - q`` are exact, every ``q`` is a multiple of one power of two and their sums in any
    order are exact, so each level's group sums are exact and the remainders shrink by about 30
    bits a level. The few levels are added once, correctly rounded (``math.fsum``). Groups holding
    an infinity, NaN or a magnitude near the largest double (whose sum the engine may overflow on
    the way), and values spread too widely for a few levels, are summed by the engine's function.
    """
    out: list[float] = [0.0] * count
    levels, slow = group_levels(values, groups, count)
    for g in range(count):
        if g not in slow:
            out[g] = math.fsum([float(level[g]) for level in levels]) + 0.0
    if slow:
        order = np.argsort(groups, kind="stable")
        bounds = np.searchsorted(groups[order], np.arange(count + 1))
        for g in slow:
            out[g] = exact_sum(values[order[bounds[g] : bounds[g + 1]]].tolist(), "")
    return out


#: The unit roundoff of doubles.
_U = 2.0**-53


def _first_exponent(top: float, size: int) -> int:
    """The binary exponent of the first extraction level's ``sigma`` for ``size`` values of at
    most ``top`` in magnitude: room above ``top`` for the sum of them all."""
    return math.frexp(top)[1] + int(size).bit_length() + 1


def _extract(values: np.ndarray, sigma: float, q: np.ndarray, r: np.ndarray) -> None:
    """One extraction level, in place: ``q`` the values rounded to the level's unit (``(values +
    sigma) - sigma``, exact), ``r`` what is left (``values - q``, exact); ``r`` may be ``values``."""
    np.add(values, sigma, out=q)
    np.subtract(q, sigma, out=q)
    np.subtract(values, q, out=r)


class Bounded:
    """Each group's sum of doubles to within a bound, added a block at a time in one pass (the
    caller's blocks, whose scratch stays in cache): after :meth:`add` of every value,
    ``head[g] + tail[g]`` (exact reals) is within :meth:`bound` of group ``g``'s exact sum.

    ``head`` is the group's sum of the first extraction level (:func:`group_levels`, with
    ``sigma`` set by ``top``, the largest magnitude of the ``size`` values to come), exact; every
    remainder is at most ``rho``, half the level's unit, and ``tail`` is their float sum, whose
    error in any order of adding is at most ``gamma(m - 1)`` times the sum of their magnitudes,
    ``m * rho`` (Higham, *Accuracy and Stability of Numerical Algorithms*, 4.2), ``m`` the
    group's number of values. Values too small for the extraction leave the bound infinite.

    >>> from fractions import Fraction
    >>> x = np.array([0.1, 0.2, 0.3])
    >>> s = Bounded(0.3, 3, 1)
    >>> s.add(x, np.zeros(3, dtype=np.int64))
    >>> bound = s.bound(np.array([3]))
    >>> abs(Fraction(s.head[0]) + Fraction(s.tail[0]) - sum(map(Fraction, x.tolist()))) <= bound[0]
    True
    """

    def __init__(self, top: float, size: int, count: int) -> None:
        self.head, self.tail = np.zeros(count), np.zeros(count)
        self.top = top
        self.exponent = _first_exponent(top, size)
        self.usable = top > 0.0 and self.exponent <= 1023 and self.exponent - 53 >= _LOWEST
        self.sigma = 2.0**self.exponent if self.usable else 0.0
        self.q = np.empty(min(BLOCK, size))
        self.r = np.empty_like(self.q)

    def add(self, part: np.ndarray, groups: np.ndarray) -> None:
        """Add one block of values (at most :data:`BLOCK`, each at most ``top`` in magnitude)."""
        if not self.usable:
            return
        q, r = self.q[: part.size], self.r[: part.size]
        _extract(part, self.sigma, q, r)
        count = len(self.head)
        self.head += np.bincount(groups, weights=q, minlength=count)
        self.tail += np.bincount(groups, weights=r, minlength=count)

    def bound(self, sizes: np.ndarray) -> np.ndarray:
        """Each group's bound, ``sizes[g]`` its number of values added."""
        if not self.usable:  # (no value but zeros: the sums are exact)
            return np.full(len(self.head), 0.0 if self.top == 0.0 else np.inf)
        m = sizes.astype(np.float64)
        gamma = (m - 1) * _U / (1 - (m - 1) * _U)
        bound: np.ndarray = gamma * m * 2.0 ** (self.exponent - 53) * (1 + 2.0**-40)
        return bound


def group_levels(
    values: np.ndarray, groups: np.ndarray | None, count: int, *, block: int = BLOCK
) -> tuple[list[np.ndarray], set[int]]:
    """Each group's exact sum as a few doubles (``levels[k][g]``: the exact sum of group ``g``'s
    values is ``sum(levels[k][g] for k)``, no rounding anywhere), and the groups left out (an
    infinity, a NaN, a magnitude near the largest double, or values spread too widely for the
    levels): see :func:`group_sums`. ``groups`` None: every value is in group 0 (no codes; each
    level's sum is exact in any order, so numpy's own sum adds it).

    The values are worked on ``block`` at a time, every block with the same ``sigma`` per level
    (set by the largest magnitude of all), so each level's sum over the blocks is a sum of the
    same exact parts in another order, exact too. A block's scratch arrays stay in the processor's
    cache through the few passes each level makes over them (a question right after a commit, its
    cache cold, cost twice a warm one when each pass went through the whole column), and no array
    the size of the column is allocated per question. A block whose remainders are all zero stops
    early."""
    levels: list[np.ndarray] = []
    if values.size == 0:
        return levels, set()
    top = float(np.abs(values).max())
    slow: set[int] = set()
    vals, grps = values, groups
    if not top < _HUGE:  # an infinity, a NaN (which is below nothing) or a huge magnitude
        if groups is None:
            return levels, {0}
        wild = ~(np.abs(values) < _HUGE)
        slow = set(np.unique(groups[wild]).tolist())
        keep = ~np.isin(groups, list(slow))
        vals, grps = values[keep], groups[keep]
        top = float(np.abs(vals).max()) if vals.size else 0.0
    if top == 0.0:
        return levels, slow
    bits = int(vals.size).bit_length() + 1
    first = _first_exponent(top, vals.size)
    rest = np.empty(min(block, vals.size), dtype=np.float64)
    q = np.empty_like(rest)
    for start in range(0, vals.size, block):
        part = vals[start : start + block]
        g = None if grps is None else grps[start : start + block]
        r, p = rest[: part.size], q[: part.size]
        r[...] = part  # (the levels work in place)
        exponent = first
        for k in range(_LEVELS + 1):
            if k == _LEVELS or exponent - 53 < _LOWEST:
                # What is left is spread too widely.
                slow.update({0} if g is None else np.unique(g[r != 0]).tolist())
                break
            _extract(r, 2.0**exponent, p, r)
            level = np.array([p.sum()]) if g is None else np.bincount(g, weights=p, minlength=count)
            if k == len(levels):
                levels.append(level)
            else:
                levels[k] += level
            if not r.any():
                break
            # What is left is at most half a unit of the level's last place, 2^(exponent - 53):
            # the next level's bound, whose binary exponent is one more.
            exponent += bits - 52
    return levels, slow


def total(values: np.ndarray) -> float:
    """The correctly rounded sum of every one of ``values`` (doubles), as the engine's ``$sum``
    gives it: :func:`group_sums` of one group, without group codes; 0.0 for none.

    >>> total(np.array([0.1, 0.2, 0.3])), total(np.array([1e16, 1.0, -1e16])), total(np.array([]))
    (0.6, 1.0, 0.0)
    """
    levels, slow = group_levels(values, None, 1)
    if slow:
        return float(exact_sum(values.tolist(), ""))
    return math.fsum([float(level[0]) for level in levels]) + 0.0


def int_total(values: np.ndarray) -> int:
    """The exact sum of every one of ``values`` (int64) as a Python int, however large: numpy's
    own sum where no partial sum can pass 64 bits, else the high and low 32 bits summed apart.

    >>> int_total(np.array([2**62, 2**62, 2**62, -5])), int_total(np.array([-(2**63), -1]))
    (13835058055282163707, -9223372036854775809)
    """
    if values.size == 0:
        return 0
    bound = max(-int(values.min()), int(values.max())) * values.size
    if bound < 2**63:
        return int(values.sum())
    if values.size < 2**31:  # each half's sum stays within 64 bits
        return (int((values >> 32).sum()) << 32) + int((values & 0xFFFFFFFF).sum())
    return sum(values.tolist())


def levels(values: np.ndarray) -> tuple[list[np.ndarray], bool]:
    """``values`` (finite, below 2^1000 in magnitude) split into levels: ``values[i]`` is exactly
    ``sum(level[i] for level in levels)``, and each level's items are multiples of one power of
    two small enough that any of its partial sums, prefix sums included, is exact. True beside
    them when what is left is spread too widely for :data:`_LEVELS` levels.

    >>> parts, spread = levels(np.array([0.1, 1e16, -3.0]))
    >>> [float(sum(p[i] for p in parts)) for i in range(3)] == [0.1, 1e16, -3.0], spread
    (True, False)
    """
    out: list[np.ndarray] = []
    top = float(np.abs(values).max()) if values.size else 0.0
    rest = np.array(values, dtype=np.float64)
    while top > 0.0:
        exponent = _first_exponent(top, values.size)
        if len(out) == _LEVELS or exponent - 53 < _LOWEST:
            return out, True
        q = np.empty_like(rest)
        _extract(rest, 2.0**exponent, q, rest)
        out.append(q)
        top = 2.0 ** (exponent - 53) if rest.any() else 0.0
    return out, False


def int_sums(values: np.ndarray, groups: np.ndarray, count: int) -> list[int]:
    """Each group's exact integer sum (Python ints, however large)."""
    if values.size == 0:
        return [0] * count
    bound = float(np.abs(values.astype(np.float64)).max()) * values.size  # (abs of -2**63 wraps in int64)
    if bound < 2.0**53:  # every partial sum is exact in a double
        return [int(x) for x in np.bincount(groups, weights=values.astype(np.float64), minlength=count)]
    if bound < 2.0**62:
        acc = np.zeros(count, dtype=np.int64)
        np.add.at(acc, groups, values)
        return [int(x) for x in acc]
    out = [0] * count
    for g, v in zip(groups.tolist(), values.tolist()):
        out[g] += v
    return out
