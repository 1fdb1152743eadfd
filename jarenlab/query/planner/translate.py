"""Translate one ``$where`` expression into a total predicate, or say why it cannot be.

Paths resolve against the collection's schema: a member whose schema type is exactly
``string``/``integer``/``number``/``boolean`` has a *family*, and a declared index's typed
generated column is used only where it holds exactly the member's value.

>>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
>>> from jarenlab.query.lang.document import parse
>>> ctx = Context("n", {"properties": {"a": {"type": "integer"}}}, {("a",): "gx_a"}, {}, dialect=SQLiteDialect())
>>> translate(parse({"$gt": [3, "$n.a"]}).node, ctx)
Compare(field=Field(steps=('a',), family='integer', column='gx_a'), op='lt', slot=Slot(kind='literal', value=3), family='number')
>>> translate(parse({"$replace": ["$n.s", "a+", "b"]}).node, ctx)
Reason(construct='$replace', reason='the operator has no SQL translation')
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jarenlab.errors import QueryError
from jarenlab.query.lang.compare import FLIP
from jarenlab.query.lang.dates import DEFAULT_ORIGIN, NAMED_ARGUMENT, SECOND, bucket_width, epoch_ms
from jarenlab.query.lang.document import unparse, walk
from jarenlab.query.lang.iregexp import are, check_pattern
from jarenlab.query.lang.nodes import ArrayCons, Call, Lit, MapCons, Node, PathRef, Quant
from jarenlab.query.lang.path import sql_addressable
from jarenlab.query.planner.preds import (
    BOOLEAN_KINDS,
    NUMBER_KINDS,
    STRING_KINDS,
    And,
    Arith,
    Compare,
    CompareAny,
    ComparePaths,
    CompareValue,
    Const,
    DateKey,
    Exists,
    Field,
    Infix,
    InList,
    Length,
    Matches,
    Not,
    Or,
    Pred,
    Prefix,
    Quantified,
    Reason,
    Slot,
    Suffix,
    Truthy,
    Types,
    Udf,
)

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect

_IS = {
    "is-string": STRING_KINDS,
    "is-number": NUMBER_KINDS,
    "is-boolean": BOOLEAN_KINDS,
    "is-null": ("null",),
    "is-array": ("array",),
    "is-object": ("object",),
}
#: The schema types that give a path a family (the family is the type's name).
_FAMILIES = frozenset({"string", "integer", "number", "boolean"})
_MAX_CHAR = 0x10FFFF
#: operators that never raise, whatever their (non-raising) arguments are.
_SAFE = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "exists", "empty", "and", "or", "not", *_IS})


@dataclass
class Context:
    """What translation needs: the binding name, the schema, typed columns, pure host operators,
    and the backend's dialect (what it can compare exactly)."""

    binding: str
    schema: Any
    columns: Mapping[tuple[str | int, ...], str]
    pure_operators: Mapping[str, Callable[..., Any]]
    udfs: dict[str, str] = field(default_factory=dict)
    dialect: Dialect = field(kw_only=True)
    #: Whether conditions over computed values (:class:`~.preds.CompareValue`) and regular
    #: expressions (:class:`~.preds.Matches`) may be planned: only where the run registers the
    #: matchers and falls back when a value's check fails (a collection's own plan, :func:`~.plan.analyze`).
    values: bool = field(default=False, kw_only=True)


def schema_family(schema: Any, steps: tuple[str | int, ...]) -> str | None:
    """The JSON type the schema guarantees at a path (exactly one type), or None.

    >>> schema_family({"properties": {"a": {"type": "string"}}}, ("a",))
    'string'
    >>> schema_family({"properties": {"a": {"type": ["string", "null"]}}}, ("a",)) is None
    True
    """
    t = _declared_type(schema, steps)
    return t if isinstance(t, str) and t in _FAMILIES else None


def _declared_type(schema: Any, steps: tuple[str | int, ...]) -> Any:
    for s in steps:
        if not isinstance(schema, dict):
            return None
        if isinstance(s, int):
            if "prefixItems" in schema:
                return None
            schema = schema.get("items")
        else:
            schema = (schema.get("properties") or {}).get(s)
    return schema.get("type") if isinstance(schema, dict) else None


#: Why an ordering key stays out of SQL when it is not a typed string or number path.
UNORDERED = "an ordering key that is not a schema-typed string or number path"


def order_refusal(f: Field | Reason | None, schema: Any) -> str:
    """Why an ordering key cannot be pushed (a page or an include must push it): a member declared
    with ``null`` beside one type says how to declare it; anything else is :data:`UNORDERED`.

    >>> schema = {"properties": {"x": {"type": ["number", "null"]}}}
    >>> order_refusal(Field(("x",), None, None), schema).partition("}:")[0]
    'x is declared {"type": ["number", "null"]'
    """
    if isinstance(f, Field):
        t = _declared_type(schema, f.steps)
        if isinstance(t, list) and "null" in t and len(t) == 2:
            (kind,) = [x for x in t if x != "null"]
            if kind in ("string", "integer", "number"):
                name = ".".join(map(str, f.steps))
                return (
                    f'{name} is declared {{"type": {json.dumps(t)}}}: the language cannot order a stored '
                    f"null among {kind}s (JQ2005), so SQL cannot answer this ordering for every document; "
                    f'declare it {{"type": "{kind}"}} and leave the member out where there is no value '
                    "(a missing member orders as empty: first, or last with empty='greatest'; a "
                    "DataFrame's NaN is written so)"
                )
    return UNORDERED


def field_of(node: Node, ctx: Context) -> Field | Reason | None:
    """The field a node names (a singular path from the binding), a reason, or None if not a path."""
    if not isinstance(node, PathRef) or node.var != ctx.binding:
        return None
    steps: list[str | int] = []
    for kind, arg in node.steps:
        if kind == "member" and isinstance(arg, str):
            if not sql_addressable(arg):
                return Reason(
                    unparse(node), "SQL cannot name this member (empty, a quote, \\ or unprintable)"
                )
            steps.append(arg)
        elif kind == "index" and isinstance(arg, int) and arg >= 0:
            steps.append(arg)
        else:
            return Reason(unparse(node), "the path is not singular (wildcard or negative index)")
    key = tuple(steps)
    family = schema_family(ctx.schema, key)
    column = ctx.columns.get(key)
    usable = column if family in ("string", "integer") else None
    return Field(key, family, usable)


def beyond(limit: int) -> str:
    """How a number at or past a dialect's :attr:`~jarenlab.backends.base.Dialect.integer_limit` is named.

    >>> beyond(2**63), beyond(2**53)
    ('of magnitude 2^63 or more', 'of magnitude 2^53 or more')
    """
    return f"of magnitude 2^{limit.bit_length() - 1} or more"


def successor(prefix: str) -> str | None:
    """The smallest string greater than every string that starts with ``prefix`` (code points).

    >>> successor("ab"), successor("a\\U0010ffff"), successor("\\U0010ffff") is None
    ('ac', 'b', True)
    >>> successor("\\ud7ff") == "\\ue000"
    True
    """
    chars = list(prefix)
    while chars and ord(chars[-1]) == _MAX_CHAR:
        chars.pop()
    if not chars:
        return None
    nxt = ord(chars[-1]) + 1
    if 0xD800 <= nxt <= 0xDFFF:
        nxt = 0xE000
    chars[-1] = chr(nxt)
    return "".join(chars)


def can_raise(node: Node, binding: str | None = None) -> bool:
    """Whether evaluating a boolean position could raise (so it must not be skipped by narrowing).

    Comparisons, ``$exists``/``$empty``, type tests and logic over paths and literals never
    raise; the EBV of a singular path never raises.

    >>> from jarenlab.query.lang.document import parse
    >>> can_raise(parse({"$and": [{"$eq": ["$n.a", 1]}, "$n.b"]}).node, "n")
    False
    >>> can_raise(parse({"$starts-with": ["$n.s", "x"]}).node, "n")
    True
    """
    if isinstance(node, Lit):
        return False
    if isinstance(node, PathRef):
        return any(k == "wild" for k, _ in node.steps)  # EBV of several items raises JQ2003
    if isinstance(node, Call) and not node.host and node.name in _SAFE:
        return any(
            value_raises(a) if node.name not in ("and", "or", "not") else can_raise(a) for a in node.args
        )
    if isinstance(node, Quant):
        return value_raises(node.seq) or can_raise(node.pred)
    return True


def value_raises(node: Node) -> bool:
    """Whether computing a value (not its EBV) could raise: only plain paths and literals cannot."""
    if isinstance(node, Lit | PathRef):
        return False
    if isinstance(node, ArrayCons):
        return any(value_raises(x) for x in node.items)
    if isinstance(node, MapCons):
        return True
    return can_raise(node)


def translate(node: Node, ctx: Context) -> Pred | Reason:
    """A total predicate equal to the node's EBV for every document, or the reason it is not."""
    if isinstance(node, Lit):
        v = node.value
        return Const(True if type(v) in (list, dict) else _ebv_scalar(v))  # arrays and objects are true
    f = field_of(node, ctx)
    if isinstance(f, Reason):
        return f
    if f is not None:
        return Truthy(f)
    if isinstance(node, Call):
        got = _udf(node, ctx) if node.host else _call(node, ctx)
        if isinstance(got, Reason) and not node.host and _has_host(node):
            hatch = _udf(node, ctx)  # a condition over pure host operators runs as one function
            # Where the database cannot call host functions at all, that is the reason to give.
            return hatch if not isinstance(hatch, Reason) or not ctx.dialect.host_functions else got
        return got
    if isinstance(node, PathRef):
        return Reason(unparse(node), "a variable other than the binding (external or outer) as a condition")
    if isinstance(node, Quant):
        return _quantified(node, ctx)
    return Reason(type(node).__name__, "a constructor or nested FLWOR as a condition")


def _ebv_scalar(v: Any) -> bool:
    if type(v) is str:
        return v != ""
    if type(v) in (int, float):
        return v != 0
    return bool(v)


def _call(node: Call, ctx: Context) -> Pred | Reason:
    name = node.name
    if name in ("and", "or"):
        parts = [translate(a, ctx) for a in node.args]
        bad = next((p for p in parts if isinstance(p, Reason)), None)
        if bad is not None:
            return bad
        return (And if name == "and" else Or)(tuple(parts))  # type: ignore[arg-type]
    if name == "not":
        inner = translate(node.args[0], ctx)
        return inner if isinstance(inner, Reason) else Not(inner)
    if name in ("exists", "empty"):
        items = _items(node.args[0], ctx)
        if isinstance(items, Quantified):  # some item is there: the builder's it.tags.any()
            return items if name == "exists" else Not(items)
        f = field_of(node.args[0], ctx)
        if isinstance(f, Field):
            return Exists(f) if name == "exists" else Not(Exists(f))
        if isinstance(node.args[0], Lit):
            return Const(name == "exists")
        return f or Reason(f"${name}", "the argument is not a singular path of the binding")
    if name in _IS:
        f = field_of(node.args[0], ctx)
        if isinstance(f, Field):
            return Types(f, _IS[name])
        return f or Reason(f"${name}", "the argument is not a singular path of the binding")
    if name in FLIP:
        return _compare(node, ctx)
    if name in ("starts-with", "ends-with", "contains"):
        return _string_op(node, ctx)
    if name in ("match", "search") and ctx.values:
        return _regex(node, ctx)
    return Reason(f"${name}", "the operator has no SQL translation")


def _compare(node: Call, ctx: Context) -> Pred | Reason:
    op = node.name
    a, b = node.args
    if not isinstance(field_of(a, ctx), Field) and isinstance(field_of(b, ctx), Field):
        a, b, op = b, a, FLIP[op]
    f = field_of(a, ctx)
    if isinstance(f, Reason):
        return f
    if f is None:
        value = _compare_value(op, a, b, ctx) if ctx.values and ctx.dialect.computes_values else None
        return value or Reason(f"${node.name}", "neither side is a singular path of the binding")
    if isinstance(b, Lit):
        return _compare_literal(f, op, b.value, node.name, ctx.dialect)
    if isinstance(b, PathRef) and b.var not in (None, ctx.binding) and not b.steps:
        eq = CompareAny(f, "eq" if op == "ne" else op, Slot("external", b.var))
        return And((Exists(f), Not(eq))) if op == "ne" else eq
    if (
        op == "eq"
        and isinstance(b, PathRef)
        and b.var not in (None, ctx.binding)
        and b.steps == (("wild", None),)
    ):
        return InList(f, Slot("list-external", b.var))
    if op == "eq" and isinstance(b, Call) and b.name == "seq" and not b.host:
        return _literal_list(f, b, ctx.dialect)
    if isinstance(b, PathRef) and b.var == ctx.binding:
        return _compare_paths(f, op, b, node.name, ctx)
    return Reason(f"${node.name}", "the compared value is neither a literal nor a plain external")


def _compare_value(op: str, a: Node, b: Node, ctx: Context) -> CompareValue | Reason | None:
    """A number computed from members (:func:`computed_value`) compared with a number literal or
    a plain external (either side), the reason the dialect cannot compute it exactly
    (:func:`value_reason`), or None.

    >>> from jarenlab.query.planner.plan import column_traits
    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> from jarenlab.query.lang.document import parse
    >>> schema = {"properties": {"a": {"type": "integer"}, "b": {"type": "number"}}}
    >>> ctx = Context("n", schema, {}, {}, dialect=column_traits(SQLiteDialect()), values=True)
    >>> p = translate(parse({"$lt": [30, {"$sub": ["$n.a", "$n.b"]}]}).node, ctx)
    >>> p.op, p.value.fn, p.slot
    ('gt', 'sub', Slot(kind='literal', value=30))
    """
    value = computed_value(a, ctx)
    if value is None:
        value, b, op = computed_value(b, ctx), a, FLIP[op]
    if value is None:  # a division, or a date function SQL does not compute, says why
        found = (_division(a), _division(b), date_key(a, ctx), date_key(b, ctx))
        why = [r for r in found if isinstance(r, Reason)]
        return why[0] if why else None
    if isinstance(b, Lit) and type(b.value) in (int, float):
        slot = Slot("literal", b.value)
    elif isinstance(b, PathRef) and b.var not in (None, ctx.binding) and not b.steps:
        slot = Slot("external", b.var)
    else:
        return None
    return value_reason(value, slot, ctx.dialect) or CompareValue(value, op, slot)


def _division(node: Node) -> Reason | None:
    """Why a division stays in the engine (None for anything else)."""
    if isinstance(node, Call) and not node.host and node.name in ("div", "idiv", "mod"):
        return Reason(
            f"${node.name}", "a division: a zero divisor gives NaN, an infinity or an error in the engine"
        )
    return None


def value_reason(value: Arith | Length | DateKey, slot: Slot, dialect: Dialect) -> Reason | None:
    """Why a dialect's SQL would not compute a value exactly as the engine and compare it with
    ``slot`` (None where it does, or where the dialect computes no SQL: the columns).

    The number compared must be a literal below 2^53 in magnitude (an external's value is known
    only when bound; a result past 64 bits, which SQLite computes as a rounded real, then
    compares as the engine's). Arithmetic over floats is the engine's IEEE arithmetic only where
    the database computes floats so (:attr:`~jarenlab.backends.base.Dialect.computes_floats`).

    >>> from jarenlab.backends.postgres.dialect import PostgresDialect
    >>> n = Field(("n",), "number", None)
    >>> value_reason(Arith("sub", n, Slot("literal", 1)), Slot("literal", 0), PostgresDialect()).reason
    'arithmetic over a float member: the database computes the decimals as written, not the floats'
    """
    limit = dialect.computed_limit
    if limit is None:
        return None
    construct = "$" + (value.fn if isinstance(value, Arith | DateKey) else "string-length")
    if slot.kind != "literal":
        return Reason(
            construct, "a computed value compared with an external (its magnitude is known only when bound)"
        )
    if abs(slot.value) >= limit:
        return Reason(construct, f"a computed value compared with a number {beyond(limit)}")
    if isinstance(value, Arith) and not dialect.computes_floats:
        for x in (value.left, value.right):
            if (isinstance(x, Field) and x.family != "integer") or (
                isinstance(x, Slot) and type(x.value) is not int
            ):
                what = "a float member" if isinstance(x, Field) else "a float literal"
                return Reason(
                    construct,
                    f"arithmetic over {what}: the database computes the decimals as written, not the floats",
                )
    return None


#: The arithmetic a condition may compute from members (:class:`~.preds.Arith`).
_ARITH = ("add", "sub", "mul")


def computed_value(node: Node, ctx: Context) -> Arith | Length | DateKey | None:
    """A number computed from typed members: ``$add``/``$sub``/``$mul`` of two number members or
    a member and a number literal, ``$string-length`` of a string member, ``$date-part`` or
    ``$epoch`` of a date-time member (:func:`date_key`); None for anything else."""
    if not isinstance(node, Call) or node.host:
        return None
    if node.name in _ARITH and len(node.args) == 2:
        left, right = (_operand(x, ctx) for x in node.args)
        if left is None or right is None or not (isinstance(left, Field) or isinstance(right, Field)):
            return None
        return Arith(node.name, left, right)
    if node.name == "string-length" and len(node.args) == 1:
        f = field_of(node.args[0], ctx)
        return Length(f) if isinstance(f, Field) and f.family == "string" else None
    key = date_key(node, ctx)
    return key if isinstance(key, DateKey) and key.fn in ("date-part", "epoch") else None


def _operand(node: Node, ctx: Context) -> Field | Slot | None:
    """An arithmetic operand: a member typed integer or number, or a number literal (an integer
    within 64 bits)."""
    f = field_of(node, ctx)
    if isinstance(f, Field):
        return f if f.family in ("integer", "number") else None
    if isinstance(node, Lit) and type(node.value) in (int, float):
        return Slot("literal", node.value) if -(2**63) <= node.value < 2**63 else None
    return None


def _compare_literal(f: Field, op: str, v: Any, name: str, dialect: Dialect) -> Pred | Reason:
    t = type(v)
    if v is None or t is bool:
        jt = "null" if v is None else ("true" if v else "false")
        if op == "eq":
            return Types(f, (jt,))
        if op == "ne":
            return And((Exists(f), Not(Types(f, (jt,)))))
        return Const(False)
    if t in (list, dict):
        return Reason(f"${name}", "deep equality against an array or object literal")
    family = "string" if t is str else "number"
    if family == "number" and abs(v) >= dialect.integer_limit:
        return Reason(
            f"${name}",
            f"a number {beyond(dialect.integer_limit)} (the database compares such members inexactly)",
        )
    if family == "string" and not dialect.binds_nul and "\x00" in v:
        return Reason(f"${name}", "a string holding U+0000, which the database's text cannot hold")
    if op == "ne":
        return And((Exists(f), Not(Compare(f, "eq", Slot("literal", v), family))))
    return Compare(f, op, Slot("literal", v), family)


def _compare_paths(f: Field, op: str, b: PathRef, name: str, ctx: Context) -> Pred | Reason:
    """Two members of the document compared: pushed where the schema gives both one family the
    database compares as the engine does (strings; integers; numbers where the dialect keeps
    integers and floats apart, so a stored float is compared as the float it is read as)."""
    g = field_of(b, ctx)
    if not isinstance(g, Field):
        return g or Reason(f"${name}", "the other side is not a singular path of the binding")
    families = {f.family, g.family}
    same = families == {"string"} or families == {"integer"}
    numbers = families <= {"integer", "number"} and ctx.dialect.keeps_integers_apart
    if not (same or numbers) and families <= {"integer", "number"}:
        why = "two number paths: the database compares a stored float as its decimal, not as the float"
        return Reason(f"${name}", f"{why} (they differ for numbers of magnitude 2^53 or more)")
    if not (same or numbers):
        return Reason(
            f"${name}", "a comparison between two paths that are not both schema-typed strings or numbers"
        )
    family = "string" if families == {"string"} else "number"
    if op == "ne":
        return And((Exists(f), Exists(g), Not(ComparePaths(f, "eq", g, family))))
    return ComparePaths(f, op, g, family)


def _literal_list(f: Field, seq: Call, dialect: Dialect) -> Pred | Reason:
    """``$eq`` against a ``$seq`` of literals: the strings and numbers as one bound list, ``null`` and
    booleans as kind tests beside it."""
    values: list[Any] = []
    others: list[Pred] = []
    for a in seq.args:
        if not isinstance(a, Lit) or type(a.value) in (list, dict):
            return Reason("$eq", "a $seq of values other than scalar literals")
        v = a.value
        if v is None or type(v) is bool:
            others.append(_compare_literal(f, "eq", v, "eq", dialect))  # type: ignore[arg-type]
            continue
        why = list_item_reason(v, dialect)
        if why:
            return Reason("$eq", f"a list holding {why}")
        values.append(v)
    parts = [InList(f, Slot("list", tuple(values)))] if values else []
    return Or(tuple(parts + others)) if len(parts + others) != 1 else (parts + others)[0]


def list_item_reason(v: Any, dialect: Dialect) -> str | None:
    """Why one value of a bound list cannot be compared exactly in SQL, or None.

    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> list_item_reason("a" + chr(0), SQLiteDialect()), list_item_reason(2**63, SQLiteDialect())
    ('a string holding U+0000', 'a number of magnitude 2^63 or more')
    """
    t = type(v)
    if t is str:
        return "a string holding U+0000" if "\x00" in v else None
    if t is int or t is float:
        return f"a number {beyond(dialect.integer_limit)}" if abs(v) >= dialect.integer_limit else None
    return "a value other than a string or a number"


#: The date functions SQL computes as group keys.
DATE_KEYS = ("date-part", "date-trunc", "time-bucket", "epoch")


def date_key(node: Node, ctx: Context) -> DateKey | Reason | None:
    """A date function of a string-typed member that SQL computes (a group key), a reason it is
    not one, or None when the node is no date function.

    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> from jarenlab.query.lang.document import parse
    >>> ctx = Context("n", {"properties": {"t": {"type": "string"}}}, {}, {}, dialect=SQLiteDialect())
    >>> date_key(parse({"$time-bucket": ["$n.t", "PT1H"]}).node, ctx).arg
    (3600, 946857600)
    """
    if not isinstance(node, Call) or node.host or node.name not in DATE_KEYS:
        return None
    construct = f"${node.name}"
    f = _string_field(node, ctx, "the date-time")
    if isinstance(f, Reason):
        return f
    literals = [a.value if isinstance(a, Lit) and type(a.value) is str else None for a in node.args[1:]]
    if None in literals:
        return Reason(construct, "a unit, width or origin that is not a literal string")
    if node.name == "date-trunc" and len(node.args) > 2:
        return Reason(construct, "a time zone's rules (the engine applies them)")
    if node.name == "epoch":
        return DateKey(f, "epoch", None)
    if node.name == "time-bucket":
        try:
            width = bucket_width(literals[0], node.path)  # type: ignore[arg-type]
            origin = epoch_ms(literals[1] if len(literals) > 1 else DEFAULT_ORIGIN, node.path)  # type: ignore[arg-type]
        except QueryError:
            return Reason(construct, "a width or origin the engine refuses (it raises)")
        if width % SECOND or origin % SECOND:
            return Reason(construct, "a width or origin finer than a second")
        return DateKey(f, "time-bucket", (width // SECOND, origin // SECOND))
    name = literals[0]
    if node.name == "date-part" and name not in ctx.dialect.date_parts:
        return Reason(construct, f"the database does not compute the part {name!r}")
    if name not in NAMED_ARGUMENT[node.name][1]:
        return Reason(construct, "a unit the engine refuses")
    return DateKey(f, node.name, name)


def _string_field(node: Call, ctx: Context, what: str) -> Field | Reason:
    """The string-typed path a call's first argument names, or why SQL cannot take it there."""
    f = field_of(node.args[0], ctx)
    if isinstance(f, Reason):
        return f
    if f is None or f.family != "string":
        return Reason(
            f"${node.name}", f"{what} is not a string-typed path (the engine raises on non-strings)"
        )
    return f


def _pattern(node: Call, construct: str) -> str | Reason:
    """A string function's second argument, where it is a literal string (a pattern SQL can take)."""
    pattern = node.args[1]
    if not isinstance(pattern, Lit) or type(pattern.value) is not str:
        return Reason(construct, "the pattern is not a literal string")
    return pattern.value


def _string_op(node: Call, ctx: Context) -> Pred | Reason:
    construct = f"${node.name}"
    f = _string_field(node, ctx, "the first argument")
    if isinstance(f, Reason):
        return f
    p = _pattern(node, construct)
    if isinstance(p, Reason):
        return p
    if p == "":
        return Const(True)
    if "\x00" in p and not ctx.dialect.binds_nul:
        return Reason(construct, "a pattern holding U+0000, which the database's text cannot hold")
    if "\x00" in p and not ctx.dialect.strings_hold_nul:
        return Reason(construct, "SQLite's JSON functions cut strings at U+0000")
    if node.name == "starts-with":
        hi = successor(p)
        return Prefix(f, Slot("literal", p), Slot("literal", hi) if hi is not None else None)
    return (Suffix if node.name == "ends-with" else Infix)(f, Slot("literal", p))


def _regex(node: Call, ctx: Context) -> Pred | Reason:
    """``$match``/``$search`` of a string-typed member with a literal I-Regexp: where the database
    calls this process's functions (:attr:`~jarenlab.backends.base.Dialect.regexes` ``engine``), the
    engine's own matcher registered on the connection; where its regular expressions are
    PostgreSQL's (``are``), the pattern's exact ARE (:func:`~jarenlab.query.lang.iregexp.are`:
    none for a category ``\\p{..}`` or a count above 255), bound in its place.

    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> from jarenlab.backends.postgres.dialect import PostgresDialect
    >>> from jarenlab.query.lang.document import parse
    >>> ctx = Context("n", {"properties": {"s": {"type": "string"}}}, {}, {}, dialect=SQLiteDialect(), values=True)
    >>> translate(parse({"$match": ["$n.s", "a+"]}).node, ctx)
    Matches(field=Field(steps=('s',), family='string', column=None), slot=Slot(kind='literal', value='a+'), full=True)
    >>> ctx.dialect = PostgresDialect()
    >>> print(translate(parse({"$match": ["$n.s", "a."]}).node, ctx).slot.value)
    ^(?:a[^\\n\\r])$
    """
    construct = f"${node.name}"
    if ctx.dialect.regexes is None:
        return Reason(construct, "the columns do not match regular expressions")
    f = _string_field(node, ctx, "the first argument")
    if isinstance(f, Reason):
        return f
    pattern = _pattern(node, construct)
    if isinstance(pattern, Reason):
        return pattern
    if "\x00" in pattern:
        why = "SQLite's JSON functions cut strings at U+0000" if ctx.dialect.regexes == "engine" else ""
        return Reason(construct, why or "a pattern holding U+0000, which the database's text cannot hold")
    try:
        check_pattern(pattern, node.path)
    except QueryError:
        return Reason(construct, "a pattern the engine refuses (it raises)")
    full = node.name == "match"
    if ctx.dialect.regexes == "engine":
        return Matches(f, Slot("literal", pattern), full)
    try:
        return Matches(f, Slot("literal", are(pattern, full)), full)
    except ValueError as exc:
        return Reason(construct, f"the I-Regexp has no exact PostgreSQL form: {exc}")


def _items(node: Node, ctx: Context) -> Quantified | Reason | None:
    """The items of an array member (``$it.tags[*]``: a singular path, then ``[*]``), as
    ``$some`` of them that holds for every item; a reason, or None when the node is no such path."""
    if not (isinstance(node, PathRef) and node.var == ctx.binding and len(node.steps) > 1):
        return None
    if node.steps[-1][0] != "wild":
        return None
    if not ctx.dialect.quantifies:
        return Reason(unparse(node), "the items of an array member (the columns hold no arrays)")
    f = field_of(PathRef(node.var, node.steps[:-1], node.path), ctx)
    if not isinstance(f, Field):
        return f
    containers = _declared_type(ctx.schema, f.steps) == "array"
    return Quantified(False, f, Const(True), containers)


def _quantified(node: Quant, ctx: Context) -> Pred | Reason:
    """``$some``/``$every`` over an array member's items (:func:`_items`) with a condition on the
    item that translates on its own, the item as its binding (its fields are paths from the item,
    typed by the schema's ``items`` where the member is typed as an array): ``EXISTS`` or ``NOT
    EXISTS`` of the items. The condition must not read the document or compute values (those
    need the engine's matchers or a check that falls back).

    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> from jarenlab.query.lang.document import parse
    >>> schema = {"properties": {"t": {"type": "array", "items": {"type": "string"}}}}
    >>> ctx = Context("n", schema, {}, {}, dialect=SQLiteDialect())
    >>> q = translate(parse({"$every": {"x": "$n.t[*]", "$satisfies": {"$eq": ["$x", "a"]}}}).node, ctx)
    >>> q.every, q.field.steps, q.item.field, q.containers
    (True, ('t',), Field(steps=(), family='string', column=None), True)
    """
    construct = "$every" if node.every else "$some"
    items = _items(node.seq, ctx)
    if items is None:
        return Reason(construct, "the items are not an array member of the binding ($it.tags[*])")
    if isinstance(items, Reason):
        return Reason(construct, items.reason)
    if node.var != ctx.binding and any(
        isinstance(n, PathRef) and n.var in (ctx.binding, None) for n in walk(node.pred)
    ):
        return Reason(construct, "a condition on the items that reads the document itself")
    inner = Context(
        node.var,
        _item_schema(ctx.schema, items.field.steps) if items.containers else None,
        {},
        {},
        dialect=ctx.dialect,
    )
    cond = translate(node.pred, inner)
    if isinstance(cond, Reason):
        return Reason(construct, f"the condition on each item: {cond.construct}: {cond.reason}")
    return Quantified(node.every, items.field, cond, items.containers)


def _item_schema(schema: Any, steps: tuple[str | int, ...]) -> Any:
    """The schema of an array member's items (none where it declares ``prefixItems``)."""
    for s in steps:
        if not isinstance(schema, dict):
            return None
        schema = schema.get("items") if isinstance(s, int) else (schema.get("properties") or {}).get(s)
    if not isinstance(schema, dict) or "prefixItems" in schema:
        return None
    return schema.get("items")


def _has_host(node: Node) -> bool:
    return any(isinstance(n, Call) and n.host for n in walk(node))


def _udf(node: Call, ctx: Context) -> Pred | Reason:
    """The UDF hatch: a condition over pure host operators, run by the engine inside the database
    (where the database can call this process's functions: SQLite)."""
    construct = f"${node.name}"
    if not ctx.dialect.host_functions:
        return Reason(construct, "host operators run in this process; the database cannot call them")
    for n in walk(node):
        if isinstance(n, Call) and n.host and n.name not in ctx.pure_operators:
            return Reason(
                construct,
                "a host operator not registered as pure and scalar (jarenlab.query.planner.run.operator(fn, pure=True))",
            )
        if isinstance(n, PathRef) and n.var != ctx.binding:
            return Reason(construct, "a host-operator condition that reads externals or the root")
    if not ctx.pure_operators:
        return Reason(construct, "host operators run in SQLite only when marked pure (the hatch is off)")
    fragment = unparse(node)
    text = json.dumps([ctx.binding, fragment], sort_keys=True, ensure_ascii=False)
    name = "jl_p_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    if ctx.udfs.setdefault(name, text) != text:  # a hash collision must never share a function
        return Reason(construct, "two fragments share a function name")
    return Udf(name, text)
