"""Choose a live strategy for a query document, or say why it must re-run.

A document is maintained incrementally when it is one FLWOR over the collection (``$for`` one
variable over ``$[*]``) whose clauses read only that row and the externals:

- ``rows``: ``$where``/``$let``/``$return``, no order: storage order, as a fresh run gives it;
- ``window``: the same plus ``$orderby``, optionally inside ``$subsequence`` / ``$head``;
- ``accumulator``: ``$count``/``$sum``/``$avg``/``$min``/``$max`` of such a FLWOR or of ``$[*]...``;
- ``groups``: one ``$groupby`` binding, no ``$orderby``;
- ``rerun`` for everything else, with the reason.

>>> plan_live({"$for": {"r": "$[*]"}, "$where": {"$eq": ["$r.a", 1]}, "$return": "$r"}).strategy
'rows'
>>> plan_live({"$head": [{"$for": {"r": "$[*]"}, "$return": "$r"}]}).reason
'skip/take without $orderby (storage order is not a maintained order)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jarenlab.query.lang.document import parse, walk
from jarenlab.query.lang.nodes import Flwor, Lit, Node, OrderSpec, PathRef
from jarenlab.query.planner.shape import Layers, peel


@dataclass(frozen=True)
class LivePlan:
    """What to maintain. ``var`` is the row variable; node fields come from the parsed document."""

    strategy: str
    reason: str | None = None
    var: str = ""
    lets: tuple[tuple[str, Node], ...] = ()
    where: Node | None = None
    orderby: tuple[OrderSpec, ...] = ()
    ret: Node | None = None
    aggregate: str | None = None
    group: tuple[str, Node] | None = None
    start: Node | None = None
    length: Node | None = None


def _rerun(reason: str) -> LivePlan:
    return LivePlan("rerun", reason)


def _reads_root(nodes: list[Node]) -> bool:
    return any(isinstance(n, PathRef) and n.var is None for node in nodes for n in walk(node))


def _row_flwor(f: Flwor) -> str | None:
    """Why this FLWOR is not a per-row FLWOR over the collection (None when it is)."""
    if len(f.fors) != 1:
        return "more than one $for binding (a join)" if f.fors else "no $for over the collection"
    _, source, at = f.fors[0]
    if not (isinstance(source, PathRef) and source.var is None and source.steps == (("wild", None),)):
        return "the $for does not range over $[*]"
    if at is not None:
        return "$at positions depend on storage order"
    if f.count is not None:
        return "$count positions"
    parts = [e for _, e in f.lets] + ([f.where] if f.where is not None else [])
    parts += [e for _, e in f.groupby] + [s.key for s in f.orderby] + [f.ret]
    if _reads_root(parts):
        return "a clause reads the whole collection ($) per row"
    return None


def plan_live(document: Any, operators: frozenset[str] = frozenset()) -> LivePlan:
    """The live strategy of ``document`` (raises the engine's JQ00xx errors for a bad document).

    The layers around the FLWOR are the planner's (:func:`jarenlab.query.planner.shape.peel`); a live
    query maintains a FLWOR, a window of an ordered one (``$subsequence``, ``$head``) or an aggregate
    of one (or of ``$[*]``), and runs anything else again on each change.
    """
    layers, inner = peel(parse(document, operators=operators).node)
    if layers.wrap:
        return _rerun(_NOT_A_FLWOR)
    if layers.aggregate is not None:
        return _accumulator(layers, inner)
    if layers.distinct:
        return _rerun(_NOT_A_FLWOR)
    if layers.subsequence is not None or layers.head:
        return _windowed(layers, inner)
    if not isinstance(inner, Flwor):
        return _rerun(_NOT_A_FLWOR)
    why = _row_flwor(inner)
    if why:
        return _rerun(why)
    if inner.groupby and (len(inner.groupby) > 1 or inner.orderby):
        return _rerun("ordered or multi-key $groupby")
    return _flwor_plan(inner)


_NOT_A_FLWOR = "not a FLWOR over the collection"


def _windowed(layers: Layers, inner: Node) -> LivePlan:
    """``$subsequence [F, start, length?]`` or ``$head F`` over an ordered per-row FLWOR."""
    if not isinstance(inner, Flwor):
        return _rerun(_NOT_A_FLWOR)
    start = length = None
    if layers.subsequence is not None:
        start = layers.subsequence.args[1]
        length = layers.subsequence.args[2] if len(layers.subsequence.args) > 2 else None
        if _reads_root([start] + ([length] if length is not None else [])):
            return _rerun("$subsequence bounds read the collection")
    else:
        length = Lit(1, inner.path)
    why = _row_flwor(inner)
    if why:
        return _rerun(why)
    if not inner.orderby:
        return _rerun("skip/take without $orderby (storage order is not a maintained order)")
    if inner.groupby:
        return _rerun("skip/take over groups")
    plan = _flwor_plan(inner)
    return LivePlan(**{**plan.__dict__, "start": start, "length": length})


def _accumulator(layers: Layers, arg: Node) -> LivePlan:
    """An aggregate of ``$[*]`` or of an unordered, ungrouped per-row FLWOR."""
    name = layers.aggregate
    if layers.subsequence is not None or layers.head or layers.distinct:
        return _rerun(f"${name} of something other than $[*] or a FLWOR over it")
    if isinstance(arg, PathRef) and arg.var is None and arg.steps[:1] == (("wild", None),):
        ret = PathRef("_row", arg.steps[1:], arg.path)
        return LivePlan("accumulator", var="_row", ret=ret, aggregate=name)
    if not isinstance(arg, Flwor):
        return _rerun(f"${name} of something other than $[*] or a FLWOR over it")
    why = _row_flwor(arg)
    if why:
        return _rerun(why)
    if arg.groupby or arg.orderby:
        return _rerun(f"${name} over a grouped or ordered FLWOR")
    plan = _flwor_plan(arg)
    return LivePlan(**{**plan.__dict__, "strategy": "accumulator", "aggregate": name})


def _flwor_plan(f: Flwor) -> LivePlan:
    var = f.fors[0][0]
    if f.groupby:
        return LivePlan("groups", var=var, lets=f.lets, where=f.where, ret=f.ret, group=f.groupby[0])
    strategy = "window" if f.orderby else "rows"
    return LivePlan(strategy, var=var, lets=f.lets, where=f.where, orderby=f.orderby, ret=f.ret)
