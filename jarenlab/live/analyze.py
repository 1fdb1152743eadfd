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

from jarenlab.query.lang.document import Call, Flwor, Node, OrderSpec, PathRef, parse, walk

AGGREGATES = ("count", "sum", "avg", "min", "max")


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
    """The live strategy of ``document`` (raises the engine's JQ00xx errors for a bad document)."""
    node = parse(document, operators=operators).node
    start = length = None
    if isinstance(node, Call) and node.name in ("subsequence", "head") and isinstance(node.args[0], Flwor):
        if node.name == "subsequence":
            start = node.args[1]
            length = node.args[2] if len(node.args) > 2 else None
            if _reads_root([start] + ([length] if length is not None else [])):
                return _rerun("$subsequence bounds read the collection")
        else:
            start, length = None, None
        inner: Node = node.args[0]
        assert isinstance(inner, Flwor)
        why = _row_flwor(inner)
        if why:
            return _rerun(why)
        if not inner.orderby:
            return _rerun("skip/take without $orderby (storage order is not a maintained order)")
        if inner.groupby:
            return _rerun("skip/take over groups")
        plan = _flwor_plan(inner)
        take = length
        if node.name == "head":
            from jarenlab.query.lang.document import Lit

            take = Lit(1, node.path)
        return LivePlan(**{**plan.__dict__, "start": start, "length": take})
    if isinstance(node, Call) and node.name in AGGREGATES and not node.host and len(node.args) == 1:
        arg = node.args[0]
        if isinstance(arg, PathRef) and arg.var is None and arg.steps[:1] == (("wild", None),):
            ret = PathRef("_row", arg.steps[1:], arg.path)
            return LivePlan("accumulator", var="_row", ret=ret, aggregate=node.name)
        if isinstance(arg, Flwor):
            why = _row_flwor(arg)
            if why:
                return _rerun(why)
            if arg.groupby or arg.orderby:
                return _rerun(f"${node.name} over a grouped or ordered FLWOR")
            plan = _flwor_plan(arg)
            return LivePlan(**{**plan.__dict__, "strategy": "accumulator", "aggregate": node.name})
        return _rerun(f"${node.name} of something other than $[*] or a FLWOR over it")
    if not isinstance(node, Flwor):
        return _rerun("not a FLWOR over the collection")
    why = _row_flwor(node)
    if why:
        return _rerun(why)
    if node.groupby and (len(node.groupby) > 1 or node.orderby):
        return _rerun("ordered or multi-key $groupby")
    return _flwor_plan(node)


def _flwor_plan(f: Flwor) -> LivePlan:
    var = f.fors[0][0]
    if f.groupby:
        return LivePlan("groups", var=var, lets=f.lets, where=f.where, ret=f.ret, group=f.groupby[0])
    strategy = "window" if f.orderby else "rows"
    return LivePlan(strategy, var=var, lets=f.lets, where=f.where, orderby=f.orderby, ret=f.ret)
