"""Per-group aggregates kept up to date by each change, exactly as a fresh run computes them.

A live ``$groupby`` whose ``$return`` reads the group's rows only through ``$count``, ``$sum``,
``$avg``, ``$min`` and ``$max`` of a path (``{"c": {"$count": "$r"}, "t": {"$avg": "$r.x"}}``) does
not need the engine to read every row of a group when one row changes: :func:`split_return` replaces
each such aggregate with a variable, and a :class:`Tally` per group and aggregate keeps what that
variable holds as rows join and leave. A path maps over the items of a sequence one by one, so the
aggregate's argument over the whole group is the concatenation of what it gives for each row, in
storage order; a row's contribution is that path evaluated on the row alone.

Every value is the engine's, bit for bit:

- ``$count``: the number of contributed items.
- ``$sum`` / ``$avg``: integers are added exactly (a Python int); finite floats too, in an **exact
  accumulator**: each float is a multiple of 2**-1074, so the running sum is an integer count of
  that unit, and a delete subtracts exactly what the insert added. The float result is that exact
  sum rounded once (CPython's int division rounds correctly), which is what the engine's
  ``exact_sum`` gives (the exact sum of every item, correctly rounded, in any order). A group holding
  an infinity, a NaN, something that is not a number, or a sum too close to the largest float is
  evaluated through the engine instead (the engine then says what it says: a value or its error).
- ``$min`` / ``$max``: the extreme and where it came from (the row's storage place and the item's
  index): a new item replaces it when it is strictly better, or equal and earlier (the engine keeps
  the first of equal items, so ``1`` and ``1.0`` stay apart). When the row holding the extreme leaves,
  the extreme is found again from the group's kept contributions (one pass over the group, only
  then). Mixed or unorderable kinds go through the engine.

:meth:`Tally.value` returns None whenever it cannot promise the engine's answer, and the caller
evaluates that group through the engine.

>>> from jarenlab.query.lang.document import parse
>>> ret = parse({"$for": {"r": "$[*]"}, "$groupby": {"k": "$r.g"},
...              "$return": {"k": "$k", "n": {"$count": "$r"}}}).node.ret
>>> rest, folds = split_return(ret, ["r"])
>>> [(f.name, f.var) for f in folds]
[('count', ' fold0')]
>>> t = Tally("sum"); t.add([0.1, 2], (0, "a")); t.add([0.2], (1, "b")); t.remove([2], (0, "a")); t.value()
[0.30000000000000004]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from jarenlab.query.lang.functions import order_key
from jarenlab.query.lang.nodes import ArrayCons, Call, Lit, MapCons, Node, PathRef

#: The aggregates kept per group.
FOLDED = frozenset({"count", "sum", "avg", "min", "max"})
#: Every finite float is a whole multiple of this unit (2**-1074, the smallest subnormal).
_SCALE = 2**1074
#: Past this magnitude a float (or a sum) goes through the engine, whose fsum may overflow on the way.
_NEAR_MAX = 2.0**1000
_KEYS = {"number": order_key([0], "/"), "string": order_key([""], "/")}


@dataclass(frozen=True)
class Fold:
    """One aggregate of a group's ``$return``: ``name`` over ``arg`` (a path on a row variable),
    read back through the variable ``var``."""

    name: str
    arg: PathRef
    var: str


def split_return(ret: Node, own: list[str]) -> tuple[Node, list[Fold]] | None:
    """``ret`` with each aggregate of a row variable's path replaced by a variable of its own, and
    those aggregates; None when ``ret`` reads a row variable any other way or holds a nested scope
    (a FLWOR, a quantifier, a window...), so the group must go through the engine.
    The variables' names have a space in them, which no query can write."""
    folds: list[Fold] = []

    def swap(node: Node) -> Node | None:
        if isinstance(node, Call) and node.name in FOLDED and not node.host and len(node.args) == 1:
            arg = node.args[0]
            if isinstance(arg, PathRef) and arg.var in own:
                folds.append(Fold(node.name, arg, f" fold{len(folds)}"))
                return PathRef(folds[-1].var, (), node.path)
        if isinstance(node, Lit):
            return node
        if isinstance(node, PathRef):
            return None if node.var in own or node.var is None else node
        if isinstance(node, ArrayCons):
            items = [swap(x) for x in node.items]
            return None if None in items else replace(node, items=tuple(items))  # type: ignore[arg-type]
        if isinstance(node, Call):
            args = [swap(x) for x in node.args]
            return None if None in args else replace(node, args=tuple(args))  # type: ignore[arg-type]
        if isinstance(node, MapCons):
            members = []
            for k, v in node.members:
                kk = k if isinstance(k, str) else swap(k)
                vv = swap(v)
                if kk is None or vv is None:
                    return None
                members.append((kk, vv))
            return replace(node, members=tuple(members))
        return None

    rest = swap(ret)
    return None if rest is None or not folds else (rest, folds)


class Tally:
    """One aggregate over one group: items join with :meth:`add` and leave with :meth:`remove`
    (each with the row's storage place), :meth:`value` is the engine's result or None."""

    __slots__ = ("best", "floats", "ints", "lost", "n", "name", "others", "scaled", "specials", "strings")

    def __init__(self, name: str) -> None:
        self.name = name
        self.n = 0  # items
        self.strings = 0
        self.others = 0  # neither numbers nor strings
        self.specials = 0  # infinities and NaNs
        self.floats = 0  # finite floats
        self.ints = 0  # their sum, exactly
        self.scaled = 0  # the finite floats' sum in units of 2**-1074, exactly
        #: ``$min``/``$max``: (value, (place, index)) of the extreme, None when unknown.
        self.best: tuple[Any, tuple[Any, int]] | None = None
        self.lost = False  # the extreme left: find it again before reading it

    @classmethod
    def loaded(
        cls, name: str, *, n: int, best: tuple[Any, tuple[Any, int]] | None = None, **counts: int
    ) -> Tally:
        """A tally as adding its group's rows one by one leaves it, from counts made in bulk
        (``n`` items, ``best`` of ``$min``/``$max``, and :attr:`ints`, :attr:`floats`,
        :attr:`scaled`, :attr:`strings`, :attr:`specials`, :attr:`others` where they are read:
        ``$min``/``$max`` read only the kinds, ``$count`` nothing but ``n``).

        >>> Tally.loaded("sum", n=2, ints=3).value()
        [3]
        """
        tally = cls(name)
        tally.n, tally.best = n, best
        for field, value in counts.items():
            setattr(tally, field, value)
        return tally

    def _count(self, items: list[Any], sign: int) -> None:
        self.n += sign * len(items)
        if self.name == "count":
            return
        for x in items:
            t = type(x)
            if t is int:
                self.ints += sign * x
            elif t is float:
                if math.isfinite(x) and abs(x) < _NEAR_MAX:
                    self.floats += sign
                    num, den = x.as_integer_ratio()
                    self.scaled += sign * num * (_SCALE // den)
                else:  # the engine's fsum may overflow on the way: it answers
                    self.specials += sign
            elif t is str:
                self.strings += sign
            else:
                self.others += sign

    def add(self, items: list[Any], place: Any) -> None:
        """A row at storage ``place`` contributes ``items``."""
        self._count(items, +1)
        if self.name not in ("min", "max") or self.lost or not items:
            return
        kinds = self._kind()
        if kinds is None:
            return
        key = _KEYS[kinds]
        for i, x in enumerate(items):
            best = self.best
            if best is None:
                self.best = (x, (place, i))
                continue
            a, b = key(x), key(best[0])
            better = a < b if self.name == "min" else a > b
            if better or (a == b and (place, i) < best[1]):
                self.best = (x, (place, i))

    def remove(self, items: list[Any], place: Any) -> None:
        """The row at storage ``place`` takes back ``items``."""
        self._count(items, -1)
        if not self.n:
            self.best, self.lost = None, False
        elif self.best is not None and self.best[1][0] == place:
            self.best, self.lost = None, True

    def _kind(self) -> str | None:
        """The one orderable kind of the items (None: mixed, or not orderable)."""
        if self.others or (self.strings and self.strings != self.n):
            return None
        return "string" if self.strings else "number"

    def found(self, contributions: Iterable[tuple[Any, list[Any]]]) -> None:
        """Find the extreme again from every ``(place, items)`` of the group, in storage order."""
        self.best, self.lost = None, False
        kinds = self._kind()
        if kinds is None:
            return
        key = _KEYS[kinds]
        pick: Callable[[Any, Any], bool] = (
            (lambda a, b: a < b) if self.name == "min" else (lambda a, b: a > b)
        )
        best_key: Any = None
        for place, items in contributions:
            for i, x in enumerate(items):
                k = key(x)
                if self.best is None or pick(k, best_key):
                    self.best, best_key = (x, (place, i)), k

    @property
    def needs_scan(self) -> bool:
        """The extreme left the group and must be found again (:meth:`found`)."""
        return self.lost and self.n > 0

    def value(self) -> list[Any] | None:
        """The aggregate as the engine gives it (``[value]`` or ``[]``), or None: ask the engine."""
        name = self.name
        if name == "count":
            return [self.n]
        if name in ("min", "max"):
            if not self.n:
                return []
            if self._kind() is None or self.lost or self.best is None:
                return None
            return [self.best[0]]
        if self.strings or self.others or self.specials:
            return None
        total = self._sum()
        if total is None:
            return None
        if name == "sum":
            return [total]
        if not self.n:
            return []
        try:
            return [total / self.n]
        except OverflowError:
            return None

    def _sum(self) -> int | float | None:
        if not self.floats:
            return self.ints
        try:
            if abs(float(self.ints)) >= _NEAR_MAX:  # (past the largest float: the engine's JQ2010)
                return None
            total = (self.ints * _SCALE + self.scaled) / _SCALE
        except OverflowError:
            return None
        return None if abs(total) >= _NEAR_MAX else total


__all__ = ["FOLDED", "Fold", "Tally", "split_return"]
