"""Emit SQL from a plan, only through the backend's dialect. Values are always bound parameters.

Every stored document is valid against its schema, so where the schema gives a path exactly one
JSON type (its *family*), a member there is either missing or of that type (never ``null``). An
atom comparing in that family needs no JSON-kind guard: its value (the typed generated column, or
the extracted member) is NULL exactly when the member is missing, and NULL reads as false (``NOT``
is two-valued, :meth:`~jarenlab.backends.base.Dialect.negate`). Without a family the guard stays.

This module decides *what* to compute; every piece of SQL text comes from a
:class:`~jarenlab.backends.base.Dialect` method (its fixed vocabulary, and identifiers it checks:
the table, typed columns, registered function names). Paths, literals and externals are bound:
:meth:`Emitter.bind` gives a marker, and :meth:`Emitter.statement` turns the markers into the
dialect's placeholders in text order, so a dialect may place or repeat its operands freely.

>>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
>>> from jarenlab.query.planner.preds import Compare, Field, Slot
>>> e = Emitter(SQLiteDialect())
>>> e.statement(e.pred(Compare(Field(("a",), "integer", "gx_a"), "gt", Slot("literal", 3), "number"))).sql
'(gx_a > ?)'
>>> s = e.statement(e.pred(Compare(Field(("b",), None, None), "gt", Slot("literal", 3), "number")))
>>> s.sql
"(json_type(doc, ?) IN ('integer', 'real') AND json_extract(doc, ?) > ?)"
>>> [x.value for x in s.slots]
['$."b"', '$."b"', 3]
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jarenlab.errors import PlanError
from jarenlab.query.planner.preds import (
    BOOLEAN_KINDS,
    NUMBER_KINDS,
    STRING_KINDS,
    AggOut,
    And,
    Arith,
    ArrOut,
    Compare,
    CompareAny,
    ComparePaths,
    CompareValue,
    Const,
    DateKey,
    DocOut,
    Exists,
    Field,
    FieldOut,
    Framed,
    GroupKey,
    Infix,
    InList,
    KeyOut,
    Length,
    MapOut,
    Matches,
    Not,
    Or,
    OrderKey,
    Out,
    Pred,
    Prefix,
    Quantified,
    Ranged,
    Ranking,
    Slot,
    Suffix,
    Truthy,
    Types,
    Udf,
)
from jarenlab.query.planner.translate import successor

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect

#: The JSON kinds a member of each schema family can have (``integer`` accepts ``2.0``).
_FAMILY_KINDS = {
    "string": STRING_KINDS,
    "integer": NUMBER_KINDS,
    "number": NUMBER_KINDS,
    "boolean": BOOLEAN_KINDS,
}
#: A bound value's marker in emitted text (NUL never reaches SQL text otherwise).
_MARK = re.compile("\x00([0-9]+)\x00")
#: The inner level of a two-level group-by, as the outer level reads it.
_RAW = "g"


@dataclass
class Emitter:
    """Builds SQL text through a dialect; bound values are markers until :meth:`statement`.

    In the outer level of a two-level group-by (:func:`select_groups`) ``keyed`` names the derived
    table's column holding each key member's raw value, and ``partials`` collects what the inner
    level computes per raw group (its text -> its column's name and how the outer level combines
    the column): the aggregates (:meth:`aggregate`, :meth:`count_rows`, :meth:`any_row`,
    :meth:`first_position`) then read as those columns combined.
    """

    dialect: Dialect
    slots: list[Slot] = field(default_factory=list)
    keyed: dict[Field, str] | None = None
    partials: dict[str, tuple[str, Callable[[str], str]]] | None = None
    #: What makes a computed value in the condition being emitted doubtful (:meth:`condition`).
    doubts: list[str] = field(default_factory=list)
    #: How many quantifiers enclose what is being emitted (each names its items ``jl_i<depth>``).
    depth: int = 0

    def bind(self, slot: Slot) -> str:
        """A marker for a bound value: each place it appears in the text binds it once."""
        self.slots.append(slot)
        return f"\x00{len(self.slots) - 1}\x00"

    def literal(self, value: Any) -> str:
        """A marker for a literal value."""
        return self.bind(Slot("literal", value))

    def statement(self, text: str) -> Statement:
        """The finished statement: markers become placeholders, slots follow in text order."""
        parts = _MARK.split(text)
        out: list[str] = []
        slots: list[Slot] = []
        for i, part in enumerate(parts):
            if i % 2:
                slots.append(self.slots[int(part)])
                out.append(self.dialect.placeholder(len(slots)))
            else:
                out.append(part)
        return Statement("".join(out), tuple(slots), self.dialect.exact_float)

    def path(self, f: Field) -> str:
        """The member ``f`` names, as the dialect writes it (a bound path, or the path in the text)."""
        return self.dialect.member(f.steps, lambda value: self.bind(Slot("path", value)))

    def jtype(self, f: Field) -> str:
        return self.dialect.json_type(self.path(f))

    def kinds(self, f: Field, kinds: tuple[str, ...]) -> str:
        return self.dialect.kind_in(self.jtype(f), kinds)

    def typed(self, f: Field, family: str) -> bool:
        """Whether the schema guarantees a present member is in ``family`` (``string`` or ``number``).

        >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
        >>> Emitter(SQLiteDialect()).typed(Field(("a",), "integer", None), "number")
        True
        """
        return (
            f.family in _FAMILY_KINDS
            and _FAMILY_KINDS[f.family] == _FAMILY_KINDS["string" if family == "string" else "number"]
        )

    def guard(self, f: Field, family: str) -> list[str]:
        """The JSON-kind test an untyped member needs before a comparison in ``family`` (none if typed)."""
        if self.typed(f, family):
            return []
        return [self.kinds(f, STRING_KINDS if family == "string" else NUMBER_KINDS)]

    def present(self, f: Field) -> str:
        """The member exists: its typed value is not NULL (the schema forbids ``null``), or its JSON type."""
        if f.column is not None:
            return self.dialect.is_present(self.value(f, "string" if f.family == "string" else "number"))
        return self.dialect.is_present(self.jtype(f))

    def value(self, f: Field, family: str) -> str:
        """The member's value in ``family``: a typed column when one holds exactly that, else as the
        dialect reads it (guarded by the dialect where a present member of another kind could raise)."""
        same = f.column is not None and ((family == "string") == (f.family == "string"))
        return self.dialect.member_value(
            self.path(f), f.steps, family, self.typed(f, family), f.column if same else None
        )

    def pred(self, p: Pred) -> str:
        """A predicate as SQL; NULL there only ever means false, and NOT makes it two-valued."""
        d = self.dialect
        if isinstance(p, Const):
            return d.truth(p.value)
        if isinstance(p, Types):
            known = _FAMILY_KINDS.get(p.field.family or "")
            if known is not None and set(known) <= set(p.types):
                return self.present(p.field)
            if known is not None and not set(known) & set(p.types):
                return d.truth(False)
            return self.kinds(p.field, p.types)
        if isinstance(p, Exists):
            return self.present(p.field)
        if isinstance(p, Compare):
            guard = self.guard(p.field, p.family)
            return d.all_of([*guard, d.compare(self.value(p.field, p.family), p.op, self.bind(p.slot))])
        if isinstance(p, CompareAny):
            branches = []
            fam = p.field.family
            for family, kinds in (("string", STRING_KINDS), ("number", NUMBER_KINDS)):
                if fam is not None and fam != "boolean" and (fam == "string") != (family == "string"):
                    continue  # the schema rules this branch out
                guard = self.guard(p.field, family)
                # Without a kind test in SQL, the value is bound only into the branch of its kind.
                bound = self.bind(p.slot if d.tests_bound_kinds else Slot(f"{family}-external", p.slot.value))
                test = d.bound_kind_in(bound, kinds)
                branches.append(d.all_of([*guard, test, d.compare(self.value(p.field, family), p.op, bound)]))
            return d.any_of(branches) if branches else d.truth(False)
        if isinstance(p, ComparePaths):  # both typed in the family: NULL (missing) reads as false
            return d.all_of([d.compare(self.value(p.field, p.family), p.op, self.value(p.other, p.family))])
        if isinstance(p, InList):
            branches = []
            fam = p.field.family
            for family in ("string", "number"):
                if fam is not None and fam != "boolean" and (fam == "string") != (family == "string"):
                    continue  # the schema rules this branch out
                guard = self.guard(p.field, family)
                test = d.in_list(self.value(p.field, family), self.bind(p.slot), family)
                branches.append(d.all_of([*guard, test]))
            return d.any_of(branches) if branches else d.truth(False)
        if isinstance(p, Prefix):
            guard = self.guard(p.field, "string")
            low = d.compare(self.value(p.field, "string"), "ge", self.bind(p.low))
            if p.high is None:
                return d.all_of([*guard, low])
            high = d.compare(self.value(p.field, "string"), "lt", self.bind(p.high))
            return d.all_of([*guard, low, high])
        if isinstance(p, Suffix):
            guard = self.guard(p.field, "string")
            return d.all_of([*guard, d.ends_with(self.value(p.field, "string"), self.bind(p.slot))])
        if isinstance(p, Infix):
            guard = self.guard(p.field, "string")
            return d.all_of([*guard, d.contains(self.value(p.field, "string"), self.bind(p.slot))])
        if isinstance(p, CompareValue):  # NULL (a missing member) reads as false, as the engine's empty
            return d.compare(self.computed(p.value), p.op, self.bind(p.slot))
        if isinstance(p, Matches):
            return d.matches(self.value(p.field, "string"), self.bind(p.slot), p.full)
        if isinstance(p, Truthy):
            fam = p.field.family
            if fam == "string":
                return d.all_of([d.nonempty(self.value(p.field, "string"))])
            if fam in ("integer", "number"):
                return d.all_of([d.nonzero(self.value(p.field, "number"))])
            jt = self.jtype(p.field)
            return d.truthiness(jt, self.value(p.field, "number"), self.value(p.field, "string"))
        if isinstance(p, Quantified):
            return self.quantified(p)
        if isinstance(p, Udf):
            return d.call(p.name, d.document())
        if isinstance(p, And):
            return d.all_of([self.pred(x) for x in p.items])
        if isinstance(p, Or):
            return d.any_of([self.pred(x) for x in p.items])
        if isinstance(p, Not):
            return d.negate(self.pred(p.item))
        raise PlanError("JD0010", f"internal: no SQL for predicate {type(p).__name__}")

    def quantified(self, p: Quantified) -> str:
        """``$some`` as ``EXISTS`` of an item that satisfies the condition, ``$every`` as ``NOT
        EXISTS`` of one that does not (the condition is two-valued, so NULL never decides).

        >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
        >>> e = Emitter(SQLiteDialect())
        >>> item = Compare(Field((), "string", None), "eq", Slot("literal", "a"), "string")
        >>> e.statement(e.pred(Quantified(True, Field(("t",), None, None), item, True))).sql
        '(NOT coalesce(EXISTS (SELECT 1 FROM json_each(doc, ?) AS jl_i0 WHERE (NOT coalesce((jl_i0.value = ?), 0))), 0))'
        """
        d = self.dialect
        alias = f"jl_i{self.depth}"
        inner = Emitter(d.item(alias), self.slots, depth=self.depth + 1)
        cond = inner.pred(p.item)
        some = d.some_item(self.path(p.field), alias, d.negate(cond) if p.every else cond, p.containers)
        return d.negate(some) if p.every else some

    def computed(self, v: Arith | Length | DateKey) -> str:
        """A number computed from members, as the engine computes it wherever :attr:`doubts` (which
        it extends) do not hold: arithmetic over the members' values as the engine reads them, a
        string's length, or a date part or epoch of a date-time written canonically."""
        d = self.dialect
        if isinstance(v, Length):
            return d.text_length(self.value(v.field, "string"))
        if isinstance(v, DateKey):
            text = self.value(v.field, "string")
            self.doubts.append(d.all_of([d.is_present(text), d.negate(d.date_valid(text))]))
            return d.date_part(text, v.arg) if v.fn == "date-part" else d.epoch_ms(text)
        operands = []
        for x in (v.left, v.right):
            if isinstance(x, Slot):
                operands.append(self.bind(x))
                continue
            value = d.operand(self.path(x), x.steps, x.column)
            self.doubts.append(d.inexact_operand(self.path(x), value))
            operands.append(value)
        return d.arith(v.fn, *operands)

    def condition(self, p: Pred) -> str:
        """A predicate as SQL, its computed values' doubts checked first on every row: where one
        holds the statement fails (:meth:`~jarenlab.backends.base.Dialect.unless`) and the run falls
        back to the engine, whatever else the condition says (the engine may evaluate that value
        first, and raise on it).

        >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
        >>> from jarenlab.query.planner.preds import CompareValue, Length
        >>> e = Emitter(SQLiteDialect())
        >>> e.statement(e.condition(CompareValue(Length(Field(("s",), "string", "gx_s")), "gt", Slot("literal", 3)))).sql
        'coalesce(length(gx_s), 0) > ?'
        """
        start = len(self.doubts)
        text = self.pred(p)
        doubts = self.doubts[start:]
        del self.doubts[start:]
        return self.dialect.unless(self.dialect.any_of(doubts), text) if doubts else text

    def where(self, p: Pred) -> str:
        """The filter clause of a predicate (nothing for TRUE)."""
        if isinstance(p, Const) and p.value:
            return ""
        return self.dialect.where(self.condition(p))

    def order(self, keys: tuple[OrderKey, ...], *, grouped: bool = False) -> str:
        """ORDER BY terms in the engine's order, the storage order breaking ties."""
        return self.dialect.order_by(self.order_terms(keys, grouped=grouped))

    def order_terms(self, keys: tuple[OrderKey, ...], *, grouped: bool = False) -> list[str]:
        """The terms of :meth:`order`."""
        d = self.dialect
        terms = []
        for k in keys:
            if k.what == "count":
                expr = self.count_rows()
            elif k.what == "key":
                assert grouped
                expr = d.column_at(k.index + 1)
            elif k.what == "agg":
                assert grouped and k.agg is not None
                expr = _agg_value(self, k.agg)
            else:
                assert k.field is not None
                expr = self.value(k.field, "string" if k.field.family == "string" else "number")
            empty_first = (not k.desc and not k.empty_greatest) or (k.desc and k.empty_greatest)
            terms.append(d.order_term(expr, k.desc, empty_first))
        terms.append(self.first_position() if grouped else d.storage_order())
        return terms

    def window(self, offset: int, limit: int | None) -> str:
        return self.dialect.window(limit, offset, self.literal)

    def aggregate(self, fn: str, expr: str) -> str:
        """``fn`` of ``expr`` over a group's rows (or its raw groups' results of it, combined)."""
        d = self.dialect
        return self._partial(d.aggregate(fn, expr), lambda column: d.regroup(fn, column))

    def count_rows(self) -> str:
        """A group's rows counted."""
        d = self.dialect
        return self._partial(d.count_rows(), lambda column: d.regroup("count", column))

    def any_row(self, cond: str) -> str:
        """Whether ``cond`` holds for some row of a group."""
        return self._partial(self.dialect.any_row(cond), self.dialect.any_row)

    def first_position(self) -> str:
        """A group's place in storage order (its first row's)."""
        d = self.dialect
        return self._partial(d.first_in_storage_order(), lambda column: d.regroup("min", column))

    def _partial(self, inner: str, combine: Callable[[str], str]) -> str:
        if self.partials is None:
            return inner
        name = self.partials.setdefault(inner, (f"jl_p{len(self.partials)}", combine))[0]
        return combine(self.dialect.qualified(_RAW, name))

    def key_value(self, f: Field) -> str:
        """A key member's value (in a two-level group-by's outer level: its raw group's value)."""
        if self.keyed is not None:
            return self.dialect.qualified(_RAW, self.keyed[f])
        return self.value(f, "string" if f.family == "string" else "number")

    def group_key(self, key: GroupKey) -> str:
        """A group key's value: a typed member, or a date function of a string-typed one."""
        if isinstance(key, Field):
            return self.key_value(key)
        d = self.dialect
        v = self.key_value(key.field)
        if key.fn == "date-part":
            return d.date_part(v, key.arg)
        if key.fn == "date-trunc":
            return d.date_trunc(v, key.arg)
        if key.fn == "time-bucket":
            width, origin = key.arg
            return d.time_bucket(v, self.literal(width), self.literal(origin))
        return d.epoch_ms(v)

    def date_flag(self, f: Field) -> str:
        """Whether some present member is not a canonical date-time (then the engine decides)."""
        d = self.dialect
        v = self.key_value(f)  # (the outer level decides it once per raw value)
        return d.any_row(d.all_of([d.is_present(v), d.negate(d.date_valid(v))]))


def output_fields(out: Out | None) -> list[Field]:
    """The distinct fields a native projection reads, in first-use order."""
    found: dict[Field, None] = {}

    def visit(o: Out | None) -> None:
        if isinstance(o, FieldOut):
            found.setdefault(o.field)
        elif isinstance(o, MapOut):
            for _, m in o.members:
                visit(m)
        elif isinstance(o, ArrOut):
            for m in o.items:
                visit(m)

    visit(out)
    return list(found)


def holds_document(out: Out | None) -> bool:
    """Whether a projection holds the whole document inside a map or array (``{"doc": $it}``,
    ``[$it]``): its rows then end with the document column."""
    if isinstance(out, MapOut):
        return any(isinstance(m, DocOut) or holds_document(m) for _, m in out.members)
    if isinstance(out, ArrOut):
        return any(isinstance(m, DocOut) or holds_document(m) for m in out.items)
    return False


def group_aggregates(out: Out | None) -> list[AggOut]:
    """The distinct aggregates a group result reads, in first-use order."""
    if isinstance(out, AggOut):
        return [out]
    if isinstance(out, MapOut):
        seen: dict[AggOut, None] = {}
        for _, m in out.members:
            for a in group_aggregates(m):
                seen.setdefault(a)
        return list(seen)
    return []


@dataclass(frozen=True)
class Statement:
    """One emitted statement: its text, the slots bound to its placeholders in order, and how the
    dialect binds a float (:attr:`~jarenlab.backends.base.Dialect.exact_float`; None: as it is)."""

    sql: str
    slots: tuple[Slot, ...]
    exact_float: Callable[[float], Any] | None = None

    def bind(self, externals: dict[str, Any]) -> list[Any]:
        """The parameter values for a run (externals already checked by the caller).

        >>> from decimal import Decimal
        >>> slots = (Slot("string-external", "v"), Slot("number-external", "v"), Slot("literal", 0.1))
        >>> Statement("", slots, lambda x: Decimal(repr(x))).bind({"v": 2})
        [None, 2, Decimal('0.1')]
        """
        out = []
        for s in self.slots:
            kind = s.kind
            if kind == "external":
                out.append(externals[s.value])
            elif kind == "successor":
                v = externals[s.value]
                out.append(successor(v) if type(v) is str else None)
            elif kind == "string-external":
                v = externals[s.value]
                out.append(v if type(v) is str else None)
            elif kind == "number-external":
                v = externals[s.value]
                out.append(v if type(v) in (int, float) else None)
            elif kind == "list-external":
                out.append(json.dumps(externals[s.value], ensure_ascii=False, allow_nan=False))
            elif kind == "list":
                out.append(json.dumps(list(s.value), ensure_ascii=False, allow_nan=False))
            else:
                out.append(s.value)
        exact = self.exact_float  # (a list is JSON text: its numbers are read as written)
        if exact is not None:
            return [exact(v) if type(v) is float else v for v in out]
        return out


def read_kind(f: Field) -> str:
    """How a projected member is read: ``string`` (the schema types it a string: its value, NULL when
    missing), ``number`` (typed integer or number: its value as the document holds it, so ``2.0``
    stays a float; NULL when missing) or ``pair`` (its JSON kind and its value).

    >>> read_kind(Field(("a",), "integer", None)), read_kind(Field(("a",), None, None))
    ('number', 'pair')
    """
    if f.family == "string":
        return "string"
    return "number" if f.family in ("integer", "number") else "pair"


@dataclass(frozen=True)
class Layout:
    """How to read a native row: the projected fields (``string`` or ``number`` column, or kind/value
    ``pair``: :func:`read_kind`) or aggregates."""

    fields: tuple[tuple[Field, str], ...] = ()
    aggregates: tuple[AggOut, ...] = ()
    real_flags: int = 0
    keys: int = 1
    date_flags: int = 0
    #: The group rows kept after every group's flags are read (``skip``, then ``take`` when not
    #: None): SQL returns them all where a window could cut a flagged group away unseen.
    skip: int = 0
    take: int | None = None


def select_rows(
    dialect: Dialect,
    table: str,
    where: Pred,
    order: tuple[OrderKey, ...],
    offset: int,
    limit: int | None,
    out: Out | None,
) -> tuple[Statement, Layout]:
    """Rows of a native projection (``out``) or whole documents (``out`` None), filtered and ordered."""
    e = Emitter(dialect)
    cols: list[str] = []
    layout: list[tuple[Field, str]] = []
    if out is None or (not output_fields(out) and not isinstance(out, MapOut | ArrOut | FieldOut)):
        cols.append(dialect.document())
    else:
        for f in output_fields(out):
            kind = read_kind(f)
            if kind == "string":  # a string or missing: the value alone says which
                cols.append(e.value(f, "string"))
            elif kind == "number":  # a number or missing, read from the document (2.0 stays 2.0)
                cols.append(dialect.json_value(e.path(f)))
            else:  # the JSON kind tells true from 1 and null from missing
                cols += [e.jtype(f), dialect.json_value(e.path(f))]
            layout.append((f, kind))
        if holds_document(out):  # read last (the decoder's whole document is the row's last cell)
            cols.append(dialect.document())
        if not cols:
            cols.append(dialect.truth(True))
    text = dialect.select(cols, table) + e.where(where) + e.order(order) + e.window(offset, limit)
    return e.statement(text), Layout(fields=tuple(layout))


def _agg_columns(e: Emitter, a: AggOut) -> list[str]:
    d = e.dialect
    if a.field is None:
        return [e.count_rows()]
    family = "string" if a.field.family == "string" else "number"
    if a.fn == "count-distinct":
        return [d.count_distinct(e.value(a.field, family))]
    if a.fn == "count":
        # A typed member's value is NULL exactly when it is missing; an untyped one may be null.
        typed = a.field.family in ("string", "integer", "number")
        return [e.aggregate("count", e.value(a.field, family) if typed else e.jtype(a.field))]
    if a.fn in ("sum", "avg") and a.field.family == "number":
        # The engine's own sum, fed each member's JSON type and value (see Dialect.float_sum).
        total = d.float_sum(e.jtype(a.field), d.json_value(e.path(a.field)))
        return [total] if a.fn == "sum" else [total, e.aggregate("count", e.value(a.field, family))]
    if a.fn == "avg":
        # Integer-typed: the value is NULL exactly when missing.
        return [e.aggregate("sum", e.value(a.field, family)), e.aggregate("count", e.value(a.field, family))]
    return [e.aggregate(a.fn, e.value(a.field, family))]


def _agg_value(e: Emitter, a: AggOut) -> str:
    """A group's aggregate as one SQL value, as the engine has it (a sum of nothing is 0; an average
    the float division of its sum by its count, exact while the sum is below 2^53 in magnitude)."""
    d = e.dialect
    cols = _agg_columns(e, a)
    if a.fn == "avg":
        return d.ratio(*cols)
    return d.or_zero(cols[0]) if a.fn == "sum" else cols[0]


def _having(
    e: Emitter,
    keys: tuple[GroupKey, ...],
    having: tuple[tuple[AggOut | KeyOut, str, Any], ...],
    flags: list[str],
) -> str:
    """The HAVING clause of a filter over groups (nothing without one). A group the flags mark (the
    engine decides for them), or whose compared average has a sum or a member of 2^53 or more in
    magnitude, passes, so the decoder sees it and hands the run to the engine."""
    if not having:
        return ""
    d = e.dialect
    terms = []
    passes = list(flags)
    for out, op, value in having:
        expr = e.group_key(keys[out.index]) if isinstance(out, KeyOut) else _agg_value(e, out)
        terms.append(d.compare(expr, op, e.literal(value)))
        if isinstance(out, AggOut) and out.fn == "avg":
            total = _agg_columns(e, out)[0]
            passes += [d.compare(total, "ge", e.literal(2**53)), d.compare(total, "le", e.literal(-(2**53)))]
            if out.field is not None and out.field.family == "integer":
                passes.append(_beyond(e, out.field))
    return d.having(d.any_of([d.all_of(terms), *passes]) if passes else d.all_of(terms))


def _beyond(e: Emitter, f: Field, limit: int = 2**53) -> str:
    """Some member of an integer-typed path is ``limit`` or more in magnitude: 2^53 where the
    database may read it otherwise than the engine (see
    :attr:`~jarenlab.backends.base.Dialect.typed_integers_exact`), the dialect's ``integer_limit``
    where it may read distinct integers as one number (SQLite reads an integer beyond 64 bits as a
    rounded real; -2^63 itself cannot be told from a smaller integer read so, and is flagged too).
    Bound as ``limit - 1``, which every dialect binds as an integer."""
    d = e.dialect
    v = e.value(f, "number")
    high = d.compare(e.aggregate("max", v), "gt", e.literal(limit - 1))
    return d.any_of([high, d.compare(e.aggregate("min", v), "lt", e.literal(1 - limit))])


def _real_flags(
    e: Emitter, checks: tuple[Field, ...], aggs: list[AggOut], keys: tuple[GroupKey, ...] = ()
) -> list[str]:
    """The flags that send a run to the engine: floats in integer paths (``checks``); integers at
    the dialect's ``integer_limit`` or beyond in an integer path whose values are told apart (a
    group key, a count of distinct values), where the database may read two of them as one; and,
    where the dialect's integers are not exact, members of 2^53 or more in the integer paths
    averaged."""
    d = e.dialect
    flags = [e.any_row(d.written_float(e.path(f))) for f in checks]
    told_apart = [k for k in keys if isinstance(k, Field) and k.family == "integer"]
    told_apart += [a.field for a in aggs if a.fn == "count-distinct" and a.field is not None]
    flags += [_beyond(e, f, d.integer_limit) for f in dict.fromkeys(told_apart) if f.family == "integer"]
    if not d.typed_integers_exact:
        averaged = [
            a.field for a in aggs if a.fn == "avg" and a.field is not None and a.field.family == "integer"
        ]
        flags += [_beyond(e, f) for f in dict.fromkeys(averaged)]
    return flags


def select_aggregate(
    dialect: Dialect, table: str, where: Pred, agg: AggOut, checks: tuple[Field, ...]
) -> tuple[Statement, Layout]:
    """One whole-query aggregate; ``checks`` flag floats in integer paths (the engine decides then)."""
    e = Emitter(dialect)
    flags = _real_flags(e, checks, [agg])
    cols = [*_agg_columns(e, agg), *flags]
    text = dialect.select(cols, table) + e.where(where)
    return e.statement(text), Layout(aggregates=(agg,), real_flags=len(flags))


def regroups(keys: tuple[GroupKey, ...], aggs: list[AggOut]) -> bool:
    """Whether a group-by runs in two levels: some key is a date function (computed, with its
    check of the canonical form, once per distinct member value rather than once per row) and every
    aggregate combines exactly from per-value results (counts, integer sums and averages, minima,
    maxima; a float sum rounds once, over every member).

    >>> from jarenlab.query.planner.preds import DateKey
    >>> t, n = Field(("t",), "string", None), Field(("n",), "number", None)
    >>> regroups((DateKey(t, "date-part", "hour"),), [AggOut("avg", Field(("i",), "integer", None))])
    True
    >>> regroups((DateKey(t, "date-part", "hour"),), [AggOut("sum", n)]), regroups((t,), [])
    (False, False)
    """
    dated = any(not isinstance(k, Field) for k in keys)
    exact = all(
        not (a.fn in ("sum", "avg") and a.field is not None and a.field.family == "number") for a in aggs
    )
    return dated and exact


def select_groups(
    dialect: Dialect,
    table: str,
    where: Pred,
    keys: tuple[GroupKey, ...],
    out: Out,
    order: tuple[OrderKey, ...],
    offset: int,
    limit: int | None,
    checks: tuple[Field, ...],
    dates: tuple[Field, ...] = (),
    ordered: tuple[AggOut, ...] = (),
    having: tuple[tuple[AggOut | KeyOut, str, Any], ...] = (),
    firsts: tuple[int, ...] = (),
) -> tuple[Statement, Layout]:
    """A group-by: keys (none: one row over every row ``where`` keeps, a whole-query aggregate),
    aggregates (those of ``out``, then those only ``ordered`` by) and flags per group (``checks``:
    floats in integer paths; ``dates``: date-times not in canonical form), groups in
    first-appearance order unless ordered, those ``having`` keeps (see :func:`_having`).

    ``firsts`` (places in ``keys``): integer keys whose kind is read from each group's first
    document alone, after grouping (see :func:`_first_kinds`), counted with the real flags.

    Where :func:`regroups` allows, in two levels: the inner groups the rows by the raw values of
    the members the keys read and computes each aggregate's part per raw group; the outer computes
    the keys from those values and combines the parts, with the same answer.
    """
    e = Emitter(dialect)
    d = dialect
    aggs = list(dict.fromkeys([*group_aggregates(out), *ordered]))
    raw: list[Field] = []
    if regroups(keys, aggs):
        raw = list(dict.fromkeys(k if isinstance(k, Field) else k.field for k in keys))
        e.keyed = {f: f"jl_k{i}" for i, f in enumerate(raw)}
        e.partials = {}
    flags = _real_flags(e, checks, aggs, keys) + [e.date_flag(f) for f in dates]
    cols = [e.group_key(k) for k in keys] + [c for a in aggs for c in _agg_columns(e, a)] + flags
    # No keys: a whole-query aggregate, one row even over no rows (nothing to group or order).
    tail = d.group_by_leading(len(keys)) + _having(e, keys, having, flags) if keys else ""
    # A flag (or an average's sum of 2^53 or more) speaks for the whole run: a window in SQL could
    # cut its group away, even every group, so the decoder sees all groups and keeps the window.
    checked = bool(flags) or any(a.fn == "avg" for a in aggs)
    cut = checked and (offset > 0 or limit is not None)
    if keys:
        tail += e.order(order, grouped=True) + ("" if cut else e.window(offset, limit))
    if firsts:
        cols = [d.aliased(c, f"jl_c{i}") for i, c in enumerate(cols)]
        cols.append(d.aliased(e.first_position(), "jl_first"))
    if e.partials is None:
        text = d.select(cols, table) + e.where(where) + tail
    else:
        inner = [
            d.aliased(e.value(f, "string" if f.family == "string" else "number"), f"jl_k{i}")
            for i, f in enumerate(raw)
        ]
        inner += [d.aliased(part, name) for part, (name, _) in e.partials.items()]
        grouped = d.select(inner, table) + e.where(where) + d.group_by_leading(len(raw))
        text = d.select_from(cols, [d.derived(grouped, _RAW)]) + tail
    if firsts:
        text = _first_kinds(e, table, text, len(cols) - 1 - len(dates), [keys[i] for i in firsts], len(dates))
    layout = Layout(
        aggregates=tuple(aggs),
        real_flags=len(flags) - len(dates) + len(firsts),
        keys=len(keys),
        date_flags=len(dates),
        skip=offset if cut else 0,
        take=limit if cut else None,
    )
    return e.statement(text), layout


def _first_kinds(e: Emitter, table: str, grouped: str, before: int, keys: list[GroupKey], dates: int) -> str:
    """``grouped`` (its columns ``jl_c0``..., then ``jl_first``, its first row's storage position)
    with one flag per integer key after its first ``before`` columns: whether the group's first
    document holds the key written as a float. One document is read per group, by its position.

    Read in the order ``grouped`` returns its rows: the outer query only adds columns to each.
    """
    d = e.dialect
    at = d.compare(d.storage_order(), "eq", d.qualified("jl_g", "jl_first"))
    probes = []
    for key in keys:
        assert isinstance(key, Field)
        probes.append("(" + d.select([d.written_float(e.path(key))], table) + d.where(at) + ")")
    cells = [d.qualified("jl_g", f"jl_c{i}") for i in range(before + dates)]
    return d.select_from([*cells[:before], *probes, *cells[before:]], [d.derived(grouped, "jl_g")])


def select_ranked(
    dialect: Dialect,
    table: str,
    where: Pred,
    ranking: Ranking,
    offset: int,
    limit: int | None,
    checks: tuple[Field, ...],
    dates: tuple[Field, ...] = (),
) -> tuple[Statement, Layout]:
    """Whole documents in storage order with their computed members (``ranking``: ranks, offsets,
    framed aggregates and ``$rolling``'s time-ranged ones), those the ranks keep.

    The ranks are computed over every row ``where`` keeps, in a derived table the filter on them
    reads; one more column says whether some row holds a float in an integer path (``checks``),
    and every row passes when one does, so the decoder always sees it and the engine decides; one
    per ``dates`` field says whether some present time is not a canonical date-time.
    """
    e = Emitter(dialect)
    d = dialect
    parts = parts_of(e, ranking)
    order = e.order_terms(ranking.order)  # the storage order last: it numbers rows, never makes peers
    ranks: list[str] = []
    ranged: Ranged | None = None  # (a rolling's members share one time, width and window)
    first: list[int] = []  # each computed member's first column (an average has two: sum, count)
    for _, fn, arg in ranking.compute:
        first.append(len(ranks))
        if arg is None:
            ranks.append(d.ranking(fn, parts, order if fn == "row-number" else order[:-1]))
        elif isinstance(arg, Framed):
            ranks += _framed_columns(e, fn, arg, parts, order)
        elif isinstance(arg, Ranged):
            ranks += _ranged_columns(e, fn, arg)
            ranged = arg
        else:
            f, rows, default = arg
            args = [e.value(f, "number"), e.literal(rows)] + ([] if default is None else [e.literal(default)])
            ranks.append(d.offset_value(fn, args, parts, order))
    # The ranks are computed over positions alone: the documents of the rows kept are read after
    # the filter, by position, rather than carried through the window's sort.
    cols = [d.aliased(d.storage_order(), "jl_pos")]
    cols += [d.aliased(r, f"jl_r{i}") for i, r in enumerate(ranks)]
    flag = [d.written_float(e.path(f)) for f in checks]
    if flag:
        cols.append(d.aliased(d.over_all(d.any_row(d.any_of(flag))), "jl_real"))
    cols += [d.aliased(d.over_all(e.date_flag(f)), f"jl_date{i}") for i, f in enumerate(dates)]
    inner = d.select(cols, table) + e.where(where)
    if ranged is not None:
        t = d.epoch_ms(e.value(ranged.time, "string"))
        keyed = [*parts_of(e, ranking), d.negate(d.is_present(t))]
        inner += d.range_window("jl_w", keyed, t, ranged.width - 1, e.literal)
    outer = [d.qualified("t", d.document())] + [d.qualified("w", f"jl_r{i}") for i in range(len(ranks))]
    keep = [d.compare(d.qualified("w", f"jl_r{first[i]}"), op, e.literal(n)) for i, op, n in ranking.keep]
    if flag:
        outer.append(d.qualified("w", "jl_real"))
        keep = [d.any_of([d.all_of(keep), d.qualified("w", "jl_real")])] if keep else []
    outer += [d.qualified("w", f"jl_date{i}") for i in range(len(dates))]
    read = d.compare(d.qualified("t", d.storage_order()), "eq", d.qualified("w", "jl_pos"))
    text = d.select_from(outer, [d.derived(inner, "w"), d.aliased(d.table(table), "t")])
    text += d.where(d.all_of([read, *keep]))
    text += d.order_by([d.qualified("w", "jl_pos")]) + e.window(offset, limit)
    return e.statement(text), Layout(real_flags=1 if flag else 0, date_flags=len(dates))


def _framed_columns(e: Emitter, fn: str, framed: Framed, partition: list[str], order: list[str]) -> list[str]:
    """A framed aggregate's columns: one (an average: its sum and count, divided as the engine
    divides when decoded)."""
    d = e.dialect
    f = framed.field

    def over(aggregate: str) -> str:
        return d.framed(aggregate, partition, order, framed.start, framed.end, e.literal)

    if f is None:
        return [over(d.count_rows())]
    value = e.value(f, "string" if f.family == "string" else "number")
    if fn == "avg":
        return [over(d.aggregate("sum", value)), over(d.aggregate("count", value))]
    return [over(d.aggregate(fn, value))]


def parts_of(e: Emitter, ranking: Ranking) -> list[str]:
    """The values a ranking partitions by."""
    return [e.value(f, "string" if f.family == "string" else "number") for f in ranking.partition]


def _ranged_columns(e: Emitter, fn: str, ranged: Ranged) -> list[str]:
    """A ``$rolling`` aggregate's columns (an average: its sum and count) over the statement's one
    named window ``jl_w``, NULL for a row without a time. The window holds the rows of the
    partition whose epoch milliseconds are within ``width - 1`` below the row's own (a time is
    whole seconds, so that is ``(t - width, t]``), peers included; rows without a time are a
    partition of their own, so no frame holds them; a sum of nothing is 0."""
    d = e.dialect
    t = d.epoch_ms(e.value(ranged.time, "string"))

    def over(aggregate: str, zero: bool = False) -> str:
        value = d.ranged(aggregate, "jl_w")
        return d.only_where(d.is_present(t), d.or_zero(value) if zero else value)

    f = ranged.field
    if f is None:
        return [over(d.count_rows())]
    value = e.value(f, "string" if f.family == "string" else "number")
    if fn in ("sum", "avg"):
        total = over(d.aggregate("sum", value), zero=True)
        return [total] if fn == "sum" else [total, over(d.aggregate("count", value))]
    return [over(d.aggregate(fn, value))]


def select_candidates(dialect: Dialect, table: str, where: Pred, bound: int | None) -> Statement:
    """Whole documents in storage order for the set residual (narrowed by ``where``)."""
    e = Emitter(dialect)
    text = dialect.select([dialect.document()], table) + e.where(where)
    text += dialect.order_by([dialect.storage_order()]) + e.window(0, bound)
    return e.statement(text)


def select_keyed(dialect: Dialect, table: str, where: Pred) -> Statement:
    """``(key, document)`` rows in storage order that ``where`` keeps (a caller's own narrowing)."""
    e = Emitter(dialect)
    text = dialect.select([dialect.key(), dialect.document()], table) + e.where(where)
    return e.statement(text + dialect.order_by([dialect.storage_order()]))


def select_members(
    dialect: Dialect,
    table: str,
    fields: Sequence[Field],
    keyed: str | None = None,
    probe: str | None = None,
    *,
    positioned: bool = False,
) -> Statement:
    """``(storage position, key, member value per field)`` rows in storage order: what the columnar
    path copies (:mod:`jarenlab.query.columnar`); ``positioned`` (a key that is its own storage
    position, as integer keys are): ``(key, member value per field)``, the key read once. A string-typed member reads as its text, a number
    as the document writes it (``2.0`` and ``1e16`` stay floats: :meth:`~Dialect.written_number`);
    NULL when missing. ``keyed`` (the keys' family, ``string`` or ``integer``): only the
    rows whose key is one of the external ``keys`` (a list of the store's own keys, bound as one
    JSON parameter). ``probe``: a one-row query (the change log's newest record) read in the same
    statement, its value first in every row (one row with NULLs for the rest when none matched).
    """
    e = Emitter(dialect)
    cols = [dialect.key()] if positioned else [dialect.storage_order(), dialect.key()]
    for f in fields:
        cols.append(
            e.value(f, "string") if f.family == "string" else dialect.written_number(e.path(f), f.steps)
        )
    text = dialect.select(cols, table)
    if keyed is not None:
        text += dialect.where(dialect.in_list(dialect.key(), e.bind(Slot("list-external", "keys")), keyed))
    text += dialect.order_by([dialect.storage_order()])
    return e.statement(text if probe is None else dialect.beside(probe, text))
