"""Plan a store-level ``$asof`` whose pairing SQL answers exactly as the engine.

The engine (:func:`~jarenlab.query.lang.windows.compile_asof`) gives each left item, in order, the right
item with the greatest ``$on`` key at or before its own among those with equal ``$by`` keys (the
last in the right side's order of several with that key), and leaves the member out when there is
none. SQL does the same with a correlated subquery per left row, ``ORDER BY on DESC, storage order
DESC LIMIT 1``, when:

- each side is ``$.name[*]`` or ``{"$for": {"x": "$.name[*]"}, "$where": W, "$return": "$x"}``
  whose ``W`` the collection planner pushes whole (and reads no other variable), so its items are
  the collection's documents in storage order;
- both ``$on`` keys are schema-typed string members: one kind throughout (the engine's ``JQ2005``
  cannot arise), compared in code points (SQLite's ``BINARY``, PostgreSQL's ``"C"`` collation);
  a missing key never matches, as SQL's NULL never compares;
- each ``$by`` pair is schema-typed members of one family (strings, or numbers) that both schemas
  **require**: the engine pairs a missing key with a missing key, where SQL's ``=`` does not.

>>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
>>> from jarenlab.model import load_model
>>> from jarenlab.query.lang.document import parse
>>> s = {"type": "object", "required": ["o"], "properties": {"o": {"type": "string"}, "t": {"type": "string"}}}
>>> m = load_model({"$model": "0.1", "collections": {"f": {"schema": s, "key": None, "identity": "integer"},
...     "w": {"schema": s, "key": None, "identity": "integer"}}})
>>> doc = {"$asof": {"a": "$.f[*]", "b": "$.w[*]", "$on": ["$a.t", "$b.t"], "$by": [["$a.o", "$b.o"]], "$as": "m"}}
>>> push = plan_asof(parse(doc), doc, m.collections, SQLiteDialect())
>>> push.left.collection, push.right.collection, push.document, push.text
('f', 'w', '$_jl_asof[*]', 'a.t >= b.t, a.o = b.o')
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jarenlab import pointer
from jarenlab.query.lang.document import Parsed, unparse, walk
from jarenlab.query.lang.nodes import Asof, Flwor, Node, PathRef
from jarenlab.query.planner.preds import Const, Field, Pred, Reason
from jarenlab.query.planner.translate import Context, field_of, translate

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect
    from jarenlab.model import CollectionSpec

#: The schema families a ``$by`` pair may compare on in SQL, by how SQL compares them.
JOINABLE = {"string": "string", "integer": "number", "number": "number"}


@dataclass(frozen=True)
class AsofSide:
    """One side of a pushed ``$asof``: its variable, its collection, its ``$where`` as conditions
    (``Const(True)`` for ``$.name[*]``), its ``$on`` member and its ``$by`` members."""

    var: str
    collection: str
    where: Pred
    on: Field
    by: tuple[Field, ...]


@dataclass(frozen=True)
class AsofPush:
    """A ``$asof`` SQL pairs: its two sides, each ``$by`` pair's family, the member a match goes
    into, and the rest of the document (the ``$asof`` node replaced by ``$var[*]``, ``var`` the
    external holding the paired items, which reads the collections ``reads``, and the whole root
    when ``whole``)."""

    left: AsofSide
    right: AsofSide
    families: tuple[str, ...]
    name: str
    var: str
    document: Any
    text: str
    reads: tuple[str, ...] = ()
    whole: bool = False


def collection_of(source: Node, specs: Mapping[str, CollectionSpec]) -> str | None:
    """The collection ``$.name[*]`` ranges over, or None for any other node."""
    if (
        isinstance(source, PathRef)
        and source.var is None
        and len(source.steps) == 2
        and source.steps[0][0] == "member"
        and source.steps[0][1] in specs
        and source.steps[1] == ("wild", None)
    ):
        return str(source.steps[0][1])
    return None


def _required(schema: Any, steps: tuple[str | int, ...]) -> bool:
    """Whether every document has the member: each step a member its object schema requires.

    >>> _required({"required": ["a"], "properties": {"a": {"required": ["b"]}}}, ("a", "b"))
    True
    >>> _required({"properties": {"a": {}}}, ("a",))
    False
    """
    for s in steps:
        if not isinstance(schema, dict) or not isinstance(s, str) or s not in schema.get("required", ()):
            return False
        schema = (schema.get("properties") or {}).get(s)
    return True


def _context(binding: str, spec: CollectionSpec, dialect: Dialect) -> Context:
    return Context(binding, spec.schema, {c.segments: c.name for c in spec.columns}, {}, dialect=dialect)


def _source(node: Node, specs: Mapping[str, CollectionSpec], dialect: Dialect) -> tuple[str, Pred] | Reason:
    """A side's collection and its pushed ``$where``, or why the side stays in the engine."""
    name = collection_of(node, specs)
    if name is not None:
        return name, Const(True)
    if not (
        isinstance(node, Flwor)
        and len(node.fors) == 1
        and node.fors[0][2] is None
        and not (node.lets or node.groupby or node.orderby or node.count is not None)
        and isinstance(node.ret, PathRef)
        and node.ret.var == node.fors[0][0]
        and not node.ret.steps
    ):
        return Reason("$asof", "a side other than $.name[*] or a FLWOR filtering one collection")
    var, source, _ = node.fors[0]
    name = collection_of(source, specs)
    if name is None:
        return Reason("$asof", "a side's FLWOR ranges over something other than one collection")
    if node.where is None:
        return name, Const(True)
    if any(isinstance(n, PathRef) and n.var not in (None, var) for n in walk(node.where)):
        return Reason("$asof", "a side's $where reads a variable other than its own binding")
    got = translate(node.where, _context(var, specs[name], dialect))
    if isinstance(got, Reason):
        return Reason("$asof", f"a side's $where runs in the engine ({got.construct}: {got.reason})")
    return name, got


def _member(node: Node, ctx: Context) -> Field | None:
    f = field_of(node, ctx)
    return f if isinstance(f, Field) and f.steps else None


def plan_asof(
    parsed: Parsed, document: Any, specs: Mapping[str, CollectionSpec], dialect: Dialect
) -> AsofPush | Reason | None:
    """The pushed pairing of the document's one ``$asof``, why it stays in the engine, or None when
    the document has no ``$asof`` (see the module docstring for what is pushed)."""
    nodes = [n for n in walk(parsed.node) if isinstance(n, Asof)]
    if not nodes:
        return None
    if len(nodes) > 1:
        return Reason("$asof", "a document with several $asof runs them in the engine")
    node = nodes[0]
    sides = [_source(node.left, specs, dialect), _source(node.right, specs, dialect)]
    for got in sides:
        if isinstance(got, Reason):
            return got
    (lname, lwhere), (rname, rwhere) = (s for s in sides if not isinstance(s, Reason))
    lspec, rspec = specs[lname], specs[rname]
    lctx, rctx = _context(node.left_var, lspec, dialect), _context(node.right_var, rspec, dialect)
    lon, ron = _member(node.on[0], lctx), _member(node.on[1], rctx)
    if lon is None or ron is None or lon.family != "string" or ron.family != "string":
        return Reason(
            "$on",
            "$asof keys are pushed when both are schema-typed string members "
            "(a number or untyped key is ordered in the engine)",
        )
    lby, rby, families = [], [], []
    for a, b in node.by:
        fa, fb = _member(a, lctx), _member(b, rctx)
        family = JOINABLE.get(fa.family or "") if fa is not None else None
        if fa is None or fb is None or family is None or family != JOINABLE.get(fb.family or ""):
            return Reason("$by", "$by keys are pushed when both are schema-typed strings or both numbers")
        if not (_required(lspec.schema, fa.steps) and _required(rspec.schema, fb.steps)):
            return Reason(
                "$by",
                "a $by member the schema does not require (the engine pairs a missing key with a "
                "missing key, SQL's = does not)",
            )
        lby.append(fa)
        rby.append(fb)
        families.append(family)
    text = json.dumps(document)
    var = "_jl_asof"
    while var in text:
        var += "_"
    rest = f"${var}[*]"
    if node.path:
        rest = copy.deepcopy(document)
        tokens = pointer.split(node.path)
        parent: Any = rest
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        parent[int(tokens[-1]) if isinstance(parent, list) else tokens[-1]] = f"${var}[*]"
    shown = [(node.on[0], node.on[1], ">=")] + [(a, b, "=") for a, b in node.by]
    return AsofPush(
        AsofSide(node.left_var, lname, lwhere, lon, tuple(lby)),
        AsofSide(node.right_var, rname, rwhere, ron, tuple(rby)),
        tuple(families),
        node.name,
        var,
        rest,
        ", ".join(f"{_show(a)} {op} {_show(b)}" for a, b, op in shown),
    )


def _show(node: Node) -> str:
    text = unparse(node)
    return text[1:] if isinstance(text, str) and text.startswith("$") else str(text)
