"""The shape of a query document: the layers around its FLWOR, peeled by ordered rules.

A builder chain writes a FLWOR and wraps it: ``take``/``skip`` in ``$subsequence``, ``distinct`` in
``$distinct``, ``count``/``sum``/... in an aggregate call, a list result in ``[...]``. Every planner
(the one-collection planner, store-level joins, keyset pages, live queries) reads the same layers,
so they are recognised once, here: :func:`peel` applies :data:`RULES` in order, each a small pure
function taking one layer off the outside, and each planner then says which :class:`Layers` it can
answer. What is left inside is the node the layers wrap (usually the FLWOR).

>>> from jarenlab.query.lang.document import parse
>>> flwor = {"$for": {"it": "$[*]"}, "$return": "$it.k"}
>>> layers, inner = peel(parse([{"$subsequence": [{"$distinct": [flwor]}, 2, 5]}]).node)
>>> layers.wrap, layers.distinct, layers.window, type(inner).__name__
(True, True, (2, 5), 'Flwor')
>>> layers, inner = peel(parse({"$count": [flwor]}).node)
>>> layers.aggregate, layers.plain
('count', False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from jarenlab.query.lang.nodes import ArrayCons, Call, Lit, Node

#: The aggregates SQL computes over a whole query's items.
AGGREGATES = ("count", "sum", "avg", "min", "max")


@dataclass(frozen=True)
class Layers:
    """What wraps a document's inner node, outermost first (each rule sets one member)."""

    #: ``[ x ]``: the result is one array.
    wrap: bool = False
    #: ``$count x``, ``$sum x``, ...: the name of the aggregate over every item.
    aggregate: str | None = None
    #: ``$subsequence [x, start, length?]``: the call (its bounds may be any expression).
    subsequence: Call | None = None
    #: ``$head x``: the first item.
    head: bool = False
    #: ``$distinct x``.
    distinct: bool = False

    @property
    def plain(self) -> bool:
        """Nothing but an array around the inner node (or nothing at all)."""
        return self == Layers(wrap=self.wrap)

    @property
    def window(self) -> tuple[int, int | None] | None:
        """The items the layers keep as ``(offset, limit)`` when the bounds are integer literals
        (``$head`` is ``(0, 1)``; None also when nothing is cut)."""
        if self.head:
            return (0, 1)
        return None if self.subsequence is None else _subsequence_window(self.subsequence)


def _int_literal(node: Node) -> int | None:
    """An integer literal, or an integral float one (``2.0``, which the engine takes as ``2``)."""
    if isinstance(node, Lit) and (
        type(node.value) is int or (type(node.value) is float and node.value.is_integer())
    ):
        return int(node.value)
    return None


def _subsequence_window(call: Call) -> tuple[int, int | None] | None:
    """``$subsequence [x, start, length?]`` with integer literals as ``(offset, limit)``, else None.

    The engine's positions are 0-based and clip at 0: ``[x, -2, 5]`` keeps items 0..2.

    >>> _subsequence_window(Call("subsequence", (Lit(None, ""), Lit(-2, ""), Lit(5, "")), False, ""))
    (0, 3)
    >>> _subsequence_window(Call("subsequence", (Lit(None, ""), Lit(10**400, ""), Lit(1, "")), False, ""))
    (4611686018427387904, 1)
    """
    start = _int_literal(call.args[1])
    length = _int_literal(call.args[2]) if len(call.args) > 2 else None
    if start is None or (len(call.args) > 2 and length is None):
        return None
    lo = max(start, 0)
    hi = None if length is None else max(start + length, 0)
    limit = None if hi is None else max(hi - lo, 0)
    # Bounds past any table's rows keep every row (or none) whatever their size: held within the
    # integers every database binds (2^62), so ``take(10**400)`` answers as the engine does.
    return min(lo, _ROWS), None if limit is None else min(limit, _ROWS)


#: More rows than any table holds, and an integer every database binds.
_ROWS = 2**62


def _call(node: Node, *names: str) -> Call | None:
    if isinstance(node, Call) and not node.host and node.name in names and node.args:
        return node
    return None


Rule = Callable[[Node, Layers], "tuple[Node, Layers] | None"]


def array(node: Node, layers: Layers) -> tuple[Node, Layers] | None:
    """``[x]`` -> ``x`` with ``wrap``."""
    if isinstance(node, ArrayCons) and len(node.items) == 1:
        return node.items[0], replace(layers, wrap=True)
    return None


def aggregate(node: Node, layers: Layers) -> tuple[Node, Layers] | None:
    """``$count [x]`` -> ``x`` with ``aggregate="count"`` (so for sum, avg, min, max)."""
    call = _call(node, *AGGREGATES)
    if call is not None and len(call.args) == 1:
        return call.args[0], replace(layers, aggregate=call.name)
    return None


def subsequence(node: Node, layers: Layers) -> tuple[Node, Layers] | None:
    """``$subsequence [x, s, l]`` -> ``x`` with the call kept (its bounds are read by whom needs them)."""
    call = _call(node, "subsequence")
    return None if call is None else (call.args[0], replace(layers, subsequence=call))


def head(node: Node, layers: Layers) -> tuple[Node, Layers] | None:
    """``$head [x]`` -> ``x`` with ``head``."""
    call = _call(node, "head")
    return None if call is None else (call.args[0], replace(layers, head=True))


def distinct(node: Node, layers: Layers) -> tuple[Node, Layers] | None:
    """``$distinct [x]`` -> ``x`` with ``distinct``."""
    call = _call(node, "distinct")
    return None if call is None else (call.args[0], replace(layers, distinct=True))


#: The rules, outermost layer first; each is tried once, in this order.
RULES: tuple[Rule, ...] = (array, aggregate, subsequence, head, distinct)


def peel(node: Node) -> tuple[Layers, Node]:
    """The layers around a document's inner node, and that node (see the module docstring)."""
    layers = Layers()
    for rule in RULES:
        got = rule(node, layers)
        if got is not None:
            node, layers = got
    return layers, node
