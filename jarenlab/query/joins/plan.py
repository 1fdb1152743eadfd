"""Plan a query over several collections: the store-level document, pushed to SQL joins.

At the store, a query document's root ``$`` is the object of every collection
(``{"flights": [...], "airlines": [...]}``), so ``$.flights[*]`` ranges over the flights. The
reference engine defines the answer: ``$for`` bindings are nested loops in the order they are
written, ``$where`` filters the tuples, ``$orderby`` sorts them stably. The plan, a plain value with
no SQL text, is one of:

- ``single``: one binding over one collection; the document, rewritten over ``$[*]``, goes to the
  collection's own planner (everything it pushes, it pushes here too);
- ``row``: every condition pushed. Conditions on one binding filter its collection, equalities
  between two bindings' schema-typed members become the join, ``$orderby`` keys on typed members
  and a literal ``$subsequence`` window are pushed; SQL returns the joined documents in the
  engine's order and the engine computes each tuple's ``$return``;
- ``native``: a ``$count`` of such a join (SQL counts);
- ``asof``: one ``$asof`` over two collections paired in SQL (each left row with a correlated
  subquery picking its right row); the engine runs the rest of the document with the paired items
  bound as an external in the ``$asof`` node's place;
- ``set``: the residual. The conditions on one binding still narrow that collection (when it is
  read through that binding only, and no residual condition before them may raise); the engine
  runs the whole document over the narrowed collections.

>>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
>>> from jarenlab.model import load_model
>>> m = load_model({"$model": "0.1", "collections": {
...     "f": {"schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"},
...           "c": {"type": "string"}}}, "key": "/id"},
...     "a": {"schema": {"type": "object", "required": ["c"], "properties": {"c": {"type": "string"}}},
...           "key": "/c"}}})
>>> p = analyze({"$for": {"x": "$.f[*]", "y": "$.a[*]"}, "$where": {"$eq": ["$x.c", "$y.c"]},
...              "$return": "$y"}, m.collections, dialect=SQLiteDialect())
>>> p.mode, [b.collection for b in p.bindings], p.edges[0].text
('row', ['f', 'a'], 'x.c = y.c')
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from jarenlab import pointer
from jarenlab.errors import QueryError, StoreError
from jarenlab.query.joins.asof import JOINABLE, AsofPush, collection_of, plan_asof
from jarenlab.query.lang.document import parse, unparse, walk
from jarenlab.query.lang.nodes import ArrayCons, Call, Flwor, Lit, MapCons, Node, PathRef
from jarenlab.query.planner.plan import conjoin
from jarenlab.query.planner.preds import (
    ArrOut,
    Const,
    Field,
    FieldOut,
    LitOut,
    MapOut,
    OrderKey,
    Out,
    Pred,
    Reason,
)
from jarenlab.query.planner.shape import peel
from jarenlab.query.planner.sql import read_kind
from jarenlab.query.planner.translate import Context, can_raise, field_of, translate, value_raises

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect
    from jarenlab.model import CollectionSpec


@dataclass(frozen=True)
class Binding:
    """One ``$for`` variable over one collection (``f`` over ``$.flights[*]``)."""

    name: str
    collection: str


@dataclass(frozen=True)
class Edge:
    """An equality between two bindings' schema-typed members: the join condition."""

    left: int
    right: int
    left_field: Field
    right_field: Field
    family: str
    text: str


@dataclass(frozen=True)
class JoinPlan:
    """The plan of one store-level document (see the module docstring for the modes)."""

    mode: str
    reads: tuple[str, ...]
    whole: bool = False
    bindings: tuple[Binding, ...] = ()
    filters: tuple[Pred, ...] = ()
    edges: tuple[Edge, ...] = ()
    order: tuple[tuple[int, OrderKey], ...] = ()
    offset: int = 0
    limit: int | None = None
    wrap: bool = False
    ret: Any = None
    return_path: str = ""
    reasons: tuple[Reason, ...] = ()
    narrow: dict[str, Pred] = field(default_factory=dict)
    single: tuple[str, Any] | None = None
    output: Out | None = None
    projected: tuple[Projected, ...] = ()
    count: bool = False
    asof: AsofPush | None = None


@dataclass(frozen=True)
class Projected:
    """A member a native join projection reads: its binding, its field there, the field the
    decoder knows it by (the steps prefixed with the binding, so two bindings' ``carrier`` differ)
    and how it is read (:func:`~jarenlab.query.planner.sql.read_kind`)."""

    binding: int
    field: Field
    key: Field
    kind: str


# -- what the document reads ---------------------------------------------------------------------
def reads(root: Node, specs: Mapping[str, CollectionSpec]) -> tuple[list[str], bool]:
    """The declared collections the document names (``$.flights...``, in first-use order) and whether
    it reads ``$`` some other way (then the engine needs every collection).

    Raises JD2004 for an undeclared collection and JD0033 when no collection is named at all.
    """
    names, whole = _named(root, specs)
    if not names:
        example = next(iter(specs), "flights")
        raise QueryError(
            "JD0033",
            "a store-level query binds a collection, e.g. "
            f'{{"$for": {{"x": "$.{example}[*]"}}, ...}} (declared: {", ".join(specs)})',
            doc_path="",
        )
    return names, whole


def _named(root: Node, specs: Mapping[str, CollectionSpec]) -> tuple[list[str], bool]:
    names: list[str] = []
    whole = False
    for n in walk(root):
        if isinstance(n, PathRef) and n.var is None:
            first = n.steps[0] if n.steps else None
            if first is not None and first[0] == "member" and isinstance(first[1], str):
                if first[1] not in specs:
                    raise StoreError(
                        "JD2004",
                        f"the query reads $.{first[1]}, which is not a collection "
                        f"(declared: {', '.join(specs)})",
                        collection=first[1],
                        doc_path=n.path,
                    )
                if first[1] not in names:
                    names.append(first[1])
            else:
                whole = True
    return names, whole


def _target(root: Node, specs: Mapping[str, CollectionSpec]) -> tuple[Flwor, set[str]] | Reason:
    """The outermost FLWOR whose ``$for`` bindings all range over collections, and the collections
    the document also reads elsewhere (a nested FLWOR of a group join, say)."""
    refs = [n for n in walk(root) if isinstance(n, PathRef) and n.var is None]
    for n in walk(root):
        if isinstance(n, Flwor) and n.fors and all(collection_of(e, specs) for _, e, _ in n.fors):
            if any(at is not None for _, _, at in n.fors):
                return Reason("$at", "positional bindings count positions in a whole collection")
            sources = [e for _, e, _ in n.fors]
            outside = {str(r.steps[0][1]) for r in refs if not any(r is s for s in sources) and r.steps}
            return n, outside
    return Reason("$", "the collections are read other than through the $for bindings of a FLWOR")


# -- rewrites of the document --------------------------------------------------------------------
def over_collection(document: Any, flwor: Flwor) -> Any:
    """The document with the one binding's ``$.name[*]`` replaced by ``$[*]`` (a collection query).

    >>> d = [{"$for": {"x": "$.f[*]"}, "$return": "$x.a"}]
    >>> over_collection(d, parse(d).node.items[0])
    [{'$for': {'x': '$[*]'}, '$return': '$x.a'}]
    """
    out = copy.deepcopy(document)
    node: Any = out
    for token in pointer.split(flwor.path) if flwor.path else []:
        node = node[int(token)] if isinstance(node, list) else node[token]
    (name,) = node["$for"]
    spec = node["$for"][name]
    if isinstance(spec, dict):
        spec["$in"] = "$[*]"
    else:
        node["$for"][name] = "$[*]"
    return out


# -- analysis ------------------------------------------------------------------------------------
@dataclass
class _Shape:
    wrap: bool = False
    count: bool = False
    offset: int = 0
    limit: int | None = None
    windowed: bool = False


def _shape(root: Node, target: Flwor) -> _Shape | None:
    """``[ $subsequence [F, s, l] ]``, ``$count F`` or ``F`` itself around the join FLWOR (:func:`peel`)."""
    layers, inner = peel(root)
    if inner is not target or layers.head or layers.distinct:
        return None
    if layers.aggregate is not None:
        if layers.aggregate != "count" or layers.subsequence is not None:
            return None
        return _Shape(layers.wrap, count=True)
    if layers.subsequence is None:
        return _Shape(layers.wrap)
    window = layers.window
    if window is None:
        return None
    return _Shape(layers.wrap, offset=window[0], limit=window[1], windowed=True)


def _exactly_one(node: Node, names: set[str]) -> bool:
    """Whether a ``$return`` yields one item per tuple (so a window of tuples is a window of items)."""
    if isinstance(node, MapCons | ArrayCons | Lit):
        return True
    return isinstance(node, PathRef) and node.var in names and not node.steps


def _output(
    node: Node, index: dict[str, int], ctxs: list[Context], found: dict[Field, Projected], dialect: Dialect
) -> Out | None:
    """A projection SQL columns rebuild (members of bindings, literals, maps and arrays of them), or None.

    A member that may be a number is read with its JSON kind, so only where the dialect keeps ``2``
    apart from ``2.0`` (as the one-collection planner decides).
    """
    if isinstance(node, Lit):
        return LitOut(node.value)
    if isinstance(node, PathRef) and node.var in index and node.steps:
        i = index[node.var]
        f = field_of(node, ctxs[i])
        if not isinstance(f, Field):
            return None
        numeric = f.family not in ("string", "boolean")
        if numeric and not dialect.keeps_integers_apart:
            return None
        key = Field((f"#{i}", *f.steps), f.family, f.column)
        found.setdefault(key, Projected(i, f, key, read_kind(f)))
        return FieldOut(key)
    if isinstance(node, MapCons) and not node.computed and all(isinstance(k, str) for k, _ in node.members):
        members = [(str(k), _output(v, index, ctxs, found, dialect)) for k, v in node.members]
        if all(o is not None for _, o in members):
            return MapOut(tuple((k, o) for k, o in members if o is not None))
    if isinstance(node, ArrayCons):
        items = [_output(x, index, ctxs, found, dialect) for x in node.items]
        if all(o is not None for o in items):
            return ArrOut(tuple(o for o in items if o is not None))
    return None


def _let_raises(node: Node) -> bool:
    """Whether a ``$let`` value could raise. A nested FLWOR of paths and safe conditions returning a
    path (a group join's matches) cannot, so conditions after it may still narrow the collections.

    >>> _let_raises(parse([{"$for": {"a": "$.a[*]"}, "$where": {"$eq": ["$a.c", "$f.c"]}, "$return": "$a"}]).node)
    False
    """
    if isinstance(node, ArrayCons):
        return any(_let_raises(x) for x in node.items)
    if isinstance(node, Flwor):
        return bool(
            node.lets
            or node.groupby
            or node.orderby
            or node.count is not None
            or any(at is not None or value_raises(e) for _, e, at in node.fors)
            or (node.where is not None and can_raise(node.where))
            or value_raises(node.ret)
        )
    return value_raises(node)


def _conjuncts(where: Node | None) -> list[Node]:
    if where is None:
        return []
    if isinstance(where, Call) and where.name == "and" and not where.host:
        return [c for a in where.args for c in _conjuncts(a)]
    return [where]


def _vars(node: Node, names: set[str]) -> set[str]:
    return {n.var for n in walk(node) if isinstance(n, PathRef) and n.var in names}


def _edge(node: Node, index: dict[str, int], ctxs: list[Context]) -> Edge | Reason:
    """An equality between two bindings' typed members, or why it does not join in SQL."""
    if not (isinstance(node, Call) and not node.host and node.name == "eq"):
        return Reason(_name(node), "a condition between two bindings other than an equality")
    a, b = node.args
    if not (isinstance(a, PathRef) and isinstance(b, PathRef) and a.var in index and b.var in index):
        return Reason("$eq", "an equality between two bindings that is not between two member paths")
    fa, fb = field_of(a, ctxs[index[a.var]]), field_of(b, ctxs[index[b.var]])
    if not isinstance(fa, Field) or not isinstance(fb, Field) or not fa.steps or not fb.steps:
        return Reason("$eq", "a join key that is not a singular member path")
    ka, kb = JOINABLE.get(fa.family or ""), JOINABLE.get(fb.family or "")
    if ka is None or kb is None or ka != kb:
        why = "join keys must both be schema-typed strings or both numbers (an untyped key may be null, an array or an object, which the engine compares deeply)"
        return Reason("$eq", why)
    return Edge(index[a.var], index[b.var], fa, fb, ka, f"{_show(a)} = {_show(b)}")


def _show(p: PathRef) -> str:
    text = unparse(p)
    return text[1:] if isinstance(text, str) and text.startswith("$") else str(text)


def _name(node: Node) -> str:
    return f"${node.name}" if isinstance(node, Call) else type(node).__name__


def _connected(count: int, edges: list[Edge]) -> bool:
    seen = {0}
    grew = True
    while grew:
        grew = False
        for e in edges:
            if (e.left in seen) != (e.right in seen):
                seen.update((e.left, e.right))
                grew = True
    return len(seen) == count


def analyze(
    document: Any,
    specs: Mapping[str, CollectionSpec],
    *,
    dialect: Dialect,
    operators: frozenset[str] = frozenset(),
) -> JoinPlan:
    """Plan a store-level document (already checked by the engine's compile); see the module docstring."""
    parsed = parse(document, operators=operators)
    root = parsed.node
    names, whole = reads(root, specs)
    asof = plan_asof(parsed, document, specs, dialect)
    if isinstance(asof, AsofPush):
        rest, rest_whole = _named(parse(asof.document, operators=operators).node, specs)
        asof = replace(asof, reads=tuple(rest), whole=rest_whole)
        why = Reason("document", "the engine runs the rest of the document over the items SQL paired")
        return JoinPlan("asof", tuple(names), whole, reasons=(why,), asof=asof)
    plan = _join(root, document, specs, dialect, names, whole)
    if asof is not None and plan.mode == "set":
        plan = replace(plan, reasons=(asof, *plan.reasons))
    return plan


def _join(
    root: Node,
    document: Any,
    specs: Mapping[str, CollectionSpec],
    dialect: Dialect,
    names: list[str],
    whole: bool,
) -> JoinPlan:
    """The plan of a document with no pushed ``$asof``: one collection, a join or the residual."""
    found = _target(root, specs)
    if isinstance(found, Reason):
        return JoinPlan("set", tuple(names), whole, reasons=(found,))
    target, outside = found
    bindings = tuple(Binding(n, str(collection_of(e, specs))) for n, e, _ in target.fors)
    if len(bindings) == 1 and not whole and not outside:
        return JoinPlan(
            "single", tuple(names), single=(bindings[0].collection, over_collection(document, target))
        )
    index = {b.name: i for i, b in enumerate(bindings)}
    ctxs = [
        Context(
            b.name,
            specs[b.collection].schema,
            {c.segments: c.name for c in specs[b.collection].columns},
            {},
            dialect=dialect,
        )
        for b in bindings
    ]
    reasons: list[Reason] = []
    filters: list[list[Pred]] = [[] for _ in bindings]
    edges: list[Edge] = []
    blocked = any(_let_raises(e) for _, e in target.lets)
    for node in _conjuncts(target.where):
        used = sorted(_vars(node, set(index)))
        got: Pred | Edge | Reason
        if len(used) == 1:
            got = translate(node, ctxs[index[used[0]]])
        elif len(used) == 2:
            got = _edge(node, index, ctxs)
        else:
            got = Reason(_name(node), "a condition over no binding, or over three or more")
        if isinstance(got, Reason):
            reasons.append(got)
            blocked = blocked or can_raise(node)
        elif blocked:
            reasons.append(Reason(_name(node), "follows a residual condition that may raise"))
        elif isinstance(got, Edge):
            edges.append(got)
        else:
            filters[index[used[0]]].append(got)
    narrow = _narrowing(bindings, filters, outside, whole)
    if target.lets:
        reasons.append(Reason("$let", "let bindings run in the engine"))
    if target.groupby:
        reasons.append(Reason("$groupby", "grouping a join runs in the engine"))
    if target.count is not None:
        reasons.append(Reason("$count", "tuple numbering runs in the engine"))
    if whole:
        reasons.append(Reason("$", "the document reads the root other than through a collection"))
    if outside:
        reasons.append(
            Reason("$", f"the document also reads {', '.join(sorted(outside))} outside the join's bindings")
        )
    if not _connected(len(bindings), edges):
        reasons.append(Reason("$for", "a cartesian product: some binding is not joined by an equality"))
    order: list[tuple[int, OrderKey]] = []
    for spec in target.orderby:
        keyed = sorted(_vars(spec.key, set(index)))
        f = field_of(spec.key, ctxs[index[keyed[0]]]) if len(keyed) == 1 else None
        if not isinstance(f, Field) or f.family not in ("string", "integer", "number"):
            reasons.append(
                Reason("$orderby", "an ordering key that is not a schema-typed string or number path")
            )
            break
        order.append((index[keyed[0]], OrderKey(f, "field", spec.desc, spec.empty_greatest)))
    shape = _shape(root, target)
    if shape is None:
        reasons.append(Reason("document", "the join is wrapped in expressions SQL does not compute"))
    elif (shape.windowed or shape.count) and not _exactly_one(target.ret, set(index)):
        reasons.append(Reason("$return", "a window or count over a return of any number of items"))
    if reasons or shape is None:
        return JoinPlan("set", tuple(names), whole, bindings, reasons=tuple(reasons), narrow=narrow)
    projected: dict[Field, Projected] = {}
    output = None if shape.count else _output(target.ret, index, ctxs, projected, dialect)
    native = shape.count or output is not None
    return JoinPlan(
        "native" if native else "row",
        tuple(names),
        False,
        bindings,
        tuple(conjoin(f) for f in filters),
        tuple(edges),
        tuple(order),
        shape.offset,
        shape.limit,
        shape.wrap,
        None if shape.count else unparse(target.ret),
        target.path,
        () if native else (Reason("$return", "the engine computes each joined tuple's $return"),),
        narrow,
        output=output,
        projected=tuple(projected.values()),
        count=shape.count,
    )


def _narrowing(
    bindings: tuple[Binding, ...], filters: list[list[Pred]], outside: set[str], whole: bool
) -> dict[str, Pred]:
    """Per collection, the pushed conditions that may narrow it for the set residual: only where the
    document reads the collection through this one binding (another reading would see it narrowed)."""
    if whole:
        return {}
    out: dict[str, Pred] = {}
    for b, preds in zip(bindings, filters):
        once = sum(1 for x in bindings if x.collection == b.collection) == 1
        if once and b.collection not in outside and preds:
            p = conjoin(preds)
            if p != Const(True):
                out[b.collection] = p
    return out
