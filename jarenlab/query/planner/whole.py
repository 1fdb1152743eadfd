"""Whole-query aggregates: the builder's ``select`` of aggregates without ``group_by``, read as a
group-by with no keys (one group of every row the filter keeps, exactly one result even over none).

The builder writes ``select({"n": agg.count(), "m": agg.avg(it.x)})`` as the rows bound once and
each aggregate reading them::

    [{"$for": {"it": [{"$let": {"jl_rows": F},
                       "$return": {"n": {"$count": [{"$for": {"it": "$jl_rows"}, "$return": "$it"}]},
                                   "m": {"$avg": [{"$for": {"it": "$jl_rows"}, "$return": "$it.x"}]}}}]},
      "$return": "$it"}]

where ``F`` is the FLWOR over the collection. :func:`whole_return` recognises that shape by its
structure (any names; without the outer identity ``$for``, with or without the array constructor)
and rewrites the map as a group-by's ``$return`` over ``F``'s own binding
(``{"n": {"$count": ["$it"]}, "m": {"$avg": ["$it.x"]}}``), so the group-by's planning decides
what SQL and the columns compute exactly, with the same rules.

>>> from jarenlab.query.lang.document import parse
>>> rows = {"$for": {"r": "$[*]"}, "$return": "$r"}
>>> each = {"$for": {"v": "$all"}, "$return": "$v.x"}
>>> root = parse({"$let": {"all": rows}, "$return": {"s": {"$sum": [each]}, "c": 1}}).node
>>> wrap, ret = whole_return(root, root.lets[0][1])
>>> wrap, [(k, type(v).__name__) for k, v in ret.members], ret.members[0][1].args[0].var
(False, [('s', 'Call'), ('c', 'Lit')], 'r')
"""

from __future__ import annotations

from dataclasses import replace

from jarenlab.query.lang.nodes import ArrayCons, Call, Flwor, Lit, MapCons, Node, PathRef
from jarenlab.query.planner.preds import Reason
from jarenlab.query.planner.shape import AGGREGATES

#: The aggregates a whole-query map may hold (those a group's ``$return`` plans).
_NAMES = (*AGGREGATES, "median", "stddev")
#: Why a whole-query aggregate stays in the engine when it is not the shape planned here.
WHOLE = (
    "a whole-query aggregate runs as a group-by without keys when it is a map of literals and of "
    "aggregates of the rows (each a $for over the bound rows returning the row or a path of it), over "
    "an unordered FLWOR returning its rows whole"
)

#: Why a whole-query average falls back to the engine after SQL ran (nothing orders or filters by
#: it, unlike a group's: SQL's sum of 2^53 or more in magnitude is not relied on for the average).
WHOLE_AVERAGE = (
    "a whole-query average over a sum of 2^53 or more in magnitude: the engine computes it "
    "(SQL's sum is not relied on that far)"
)


def _bare(node: Flwor) -> bool:
    """A FLWOR of one binding and a ``$return`` alone."""
    plain = not (node.lets or node.where or node.groupby or node.orderby or node.count is not None)
    return plain and len(node.fors) == 1 and node.fors[0][2] is None


def _let_of(root: Node) -> tuple[bool, Flwor] | None:
    """``L``, ``[L]``, ``{$for: {v: [L]}, $return: $v}`` or that in ``[ ]``, where ``L`` is a
    ``$let`` of one binding and a ``$return`` (no ``$for``): whether wrapped, and ``L``."""
    wrap, node = False, root
    if isinstance(node, ArrayCons) and len(node.items) == 1:
        wrap, node = True, node.items[0]
    if isinstance(node, Flwor) and node.fors and _bare(node):
        var, seq, _ = node.fors[0]
        ret = node.ret
        identity = isinstance(ret, PathRef) and ret.var == var and not ret.steps
        if not (identity and isinstance(seq, ArrayCons) and len(seq.items) == 1):
            return None
        node = seq.items[0]
    if not isinstance(node, Flwor) or node.fors or len(node.lets) != 1:
        return None
    if node.where or node.groupby or node.orderby or node.count is not None:
        return None
    return wrap, node


def whole_return(root: Node, target: Flwor) -> tuple[bool, MapCons] | Reason | None:
    """The document as a whole-query aggregate over ``target`` (see the module docstring): whether
    its result is wrapped in an array, and its map as a group's ``$return`` over ``target``'s
    binding; the reason it cannot be planned as one; None for another document."""
    found = _let_of(root)
    if found is None or found[1].lets[0][1] is not target:
        return None
    wrap, let = found
    name = let.lets[0][0]
    binding = target.fors[0][0]
    rows = not (target.lets or target.groupby or target.orderby or target.count is not None)
    whole = isinstance(target.ret, PathRef) and target.ret.var == binding and not target.ret.steps
    if not (rows and whole and isinstance(let.ret, MapCons)) or let.ret.computed:
        return Reason("$let", WHOLE)
    members = []
    for key, value in let.ret.members:
        got = _member(value, name, binding)
        if got is None or not isinstance(key, str):
            return Reason("$let", WHOLE)
        members.append((key, got))
    return wrap, replace(let.ret, members=tuple(members))


def _member(node: Node, name: str, binding: str) -> Node | None:
    """A member of the map over the group: a literal as it is; ``$fn [{$for: {v: $name}, $return:
    $v.p}, ...]`` as ``$fn [$binding.p, ...]``; ``$count [$distinct [that]]`` likewise."""
    if isinstance(node, Lit):
        return node
    if not isinstance(node, Call) or node.host or node.name not in _NAMES or not node.args:
        return None
    first = node.args[0]
    if node.name == "count" and isinstance(first, Call) and first.name == "distinct" and not first.host:
        inner = _each(first.args[0], name, binding) if len(first.args) == 1 else None
        return None if inner is None else replace(node, args=(replace(first, args=(inner,)),))
    each = _each(first, name, binding)
    return None if each is None else replace(node, args=(each, *node.args[1:]))


def _each(node: Node, name: str, binding: str) -> PathRef | None:
    """``{$for: {v: $name}, $return: $v.p}`` as ``$binding.p`` (None for anything else)."""
    if not isinstance(node, Flwor) or not node.fors or not _bare(node):
        return None
    var, seq, _ = node.fors[0]
    over = isinstance(seq, PathRef) and seq.var == name and not seq.steps
    ret = node.ret
    if not over or not isinstance(ret, PathRef) or ret.var != var:
        return None
    return replace(ret, var=binding)
