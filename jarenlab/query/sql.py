"""Emit SQL from a plan, only through a dialect. Values are always bound parameters.

Every stored document is valid against its schema, so where the schema gives a path exactly one
JSON type (its *family*), a member there is either missing or of that type (never ``null``). An
atom comparing in that family needs no ``json_type`` guard: its value (the typed generated
column, or ``json_extract``) is NULL exactly when the member is missing, and NULL reads as false
(``NOT`` is emitted as ``NOT coalesce(x, 0)``). Without a family the guard stays.

The only text that reaches SQL is the dialect's fixed vocabulary (function names, JSON type
names) and identifiers checked by :func:`jarenlab._sqlite.quote` (the table, typed columns and
registered function names). Paths, literals and externals are parameters.

>>> from jarenlab.query.preds import Compare, Field, Slot
>>> e = Emitter(SQLiteDialect())
>>> e.pred(Compare(Field(("a",), "integer", "gx_a"), "gt", Slot("literal", 3), "number"))
'(gx_a > ?)'
>>> e.pred(Compare(Field(("b",), None, None), "gt", Slot("literal", 3), "number"))
"(json_type(doc, ?) IN ('integer', 'real') AND json_extract(doc, ?) > ?)"
>>> [s.value for s in e.params]
[3, '$."b"', '$."b"', 3]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jarenlab.backends.sqlite.dialect import SQLiteDialect
from jarenlab.errors import PlanError
from jarenlab.query.preds import (
    NUMBER_TYPES,
    AggOut,
    And,
    ArrOut,
    Compare,
    CompareAny,
    Const,
    Exists,
    Field,
    FieldOut,
    Infix,
    MapOut,
    Not,
    Or,
    OrderKey,
    Out,
    Pred,
    Prefix,
    Slot,
    Suffix,
    Truthy,
    Types,
    Udf,
)
from jarenlab.query.translate import successor

_OPS = {"eq": "=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
#: The JSON types a member of each schema family can have (``integer`` accepts ``2.0``).
_FAMILY_TYPES = {
    "text": ("text",),
    "integer": NUMBER_TYPES,
    "number": NUMBER_TYPES,
    "boolean": ("true", "false"),
}
_JSON_TYPES = frozenset({"integer", "real", "text", "true", "false", "null", "array", "object"})


@dataclass
class Emitter:
    """Accumulates SQL fragments and their parameters, in order."""

    dialect: SQLiteDialect
    params: list[Slot] = field(default_factory=list)

    def path(self, f: Field) -> None:
        self.params.append(Slot("path", f.json_path))

    def jtype(self, f: Field) -> str:
        self.path(f)
        return self.dialect.json_type()

    def types(self, f: Field, types: tuple[str, ...]) -> str:
        self.path(f)
        return self.dialect.type_in(types)

    def typed(self, f: Field, family: str) -> bool:
        """Whether the schema guarantees a present member is in ``family`` (``text`` or ``number``).

        >>> Emitter(SQLiteDialect()).typed(Field(("a",), "integer", None), "number")
        True
        """
        return (
            f.family in _FAMILY_TYPES
            and _FAMILY_TYPES[f.family] == _FAMILY_TYPES["text" if family == "text" else "number"]
        )

    def guard(self, f: Field, family: str) -> str:
        """``json_type(...) IN (...) AND `` for an untyped member, nothing for a typed one."""
        if self.typed(f, family):
            return ""
        return self.types(f, ("text",) if family == "text" else NUMBER_TYPES) + " AND "

    def present(self, f: Field) -> str:
        """The member exists: its typed column is not NULL (the schema forbids ``null``), or its JSON type."""
        if f.column is not None:
            return f"{self.dialect.column(f.column)} IS NOT NULL"
        return f"{self.jtype(f)} IS NOT NULL"

    def value(self, f: Field, family: str) -> str:
        """The member's value: its typed column when it holds exactly that family, else extracted."""
        if f.column is not None and ((family == "text") == (f.family == "text")):
            return self.dialect.column(f.column)
        self.path(f)
        return self.dialect.json_value()

    def bind(self, slot: Slot) -> str:
        self.params.append(slot)
        return "?"

    def pred(self, p: Pred) -> str:
        """A predicate as SQL; NULL there only ever means false, and NOT makes it two-valued."""
        d = self.dialect
        if isinstance(p, Const):
            return "1" if p.value else "0"
        if isinstance(p, Types):
            known = _FAMILY_TYPES.get(p.field.family or "")
            if known is not None and set(known) <= set(p.types):
                return self.present(p.field)
            if known is not None and not set(known) & set(p.types):
                return "0"
            return self.types(p.field, p.types)
        if isinstance(p, Exists):
            return self.present(p.field)
        if isinstance(p, Compare):
            guard = self.guard(p.field, p.family)
            return f"({guard}{self.value(p.field, p.family)} {_OPS[p.op]} {self.bind(p.slot)})"
        if isinstance(p, CompareAny):
            branches = []
            fam = p.field.family
            for family, types in (("text", ("text",)), ("number", NUMBER_TYPES)):
                if fam is not None and fam != "boolean" and (fam == "text") != (family == "text"):
                    continue  # the schema rules this branch out
                guard = self.guard(p.field, family)
                typeof = f"typeof({self.bind(p.slot)}) IN ({', '.join(repr(t) for t in types)})"
                cmp = f"{self.value(p.field, family)} {_OPS[p.op]} {self.bind(p.slot)}"
                branches.append(f"({guard}{typeof} AND {cmp})")
            return "(" + " OR ".join(branches) + ")" if branches else "0"
        if isinstance(p, Prefix):
            guard = self.guard(p.field, "text")
            v = self.value(p.field, "text")
            low = f"{v} >= {self.bind(p.low)}"
            if p.high is None:
                return f"({guard}{low})"
            v2 = self.value(p.field, "text")
            return f"({guard}{low} AND {v2} < {self.bind(p.high)})"
        if isinstance(p, Suffix):
            guard = self.guard(p.field, "text")
            v = self.value(p.field, "text")
            return f"({guard}substr({v}, -length({self.bind(p.slot)})) = {self.bind(p.slot)})"
        if isinstance(p, Infix):
            guard = self.guard(p.field, "text")
            return f"({guard}instr({self.value(p.field, 'text')}, {self.bind(p.slot)}) > 0)"
        if isinstance(p, Truthy):
            fam = p.field.family
            if fam in ("text", "integer", "number"):
                family, empty = ("text", "''") if fam == "text" else ("number", "0")
                return f"({self.value(p.field, family)} <> {empty})"
            jt = self.jtype(p.field)
            parts = []
            for t, test in (("integer", "<> 0"), ("real", "<> 0"), ("text", "<> ''")):
                parts.append(
                    f"WHEN '{t}' THEN {self.value(p.field, 'text' if t == 'text' else 'number')} {test}"
                )
            return f"(CASE {jt} WHEN 'true' THEN 1 {' '.join(parts)} WHEN 'array' THEN 1 WHEN 'object' THEN 1 ELSE 0 END)"
        if isinstance(p, Udf):
            return f"{d.column(p.name)}({d.doc})"
        if isinstance(p, And | Or):
            joiner = " AND " if isinstance(p, And) else " OR "
            return "(" + joiner.join(self.pred(x) for x in p.items) + ")"
        if isinstance(p, Not):
            return f"(NOT coalesce({self.pred(p.item)}, 0))"
        raise PlanError("JD0010", f"internal: no SQL for predicate {type(p).__name__}")

    def order(self, keys: tuple[OrderKey, ...], group_key: str | None = None) -> str:
        """ORDER BY terms in the engine's order, the storage order (rowid) breaking ties."""
        d = self.dialect
        terms = []
        for k in keys:
            if k.what == "count":
                expr = "count(*)"
            elif k.what == "key":
                assert group_key is not None
                expr = group_key
            else:
                assert k.field is not None
                expr = self.value(k.field, "text" if k.field.family == "text" else "number")
            empty_first = (not k.desc and not k.empty_greatest) or (k.desc and k.empty_greatest)
            terms.append(f"{expr} {'DESC' if k.desc else 'ASC'}{d.nulls(k.desc, empty_first)}")
        terms.append(f"min({d.rowid})" if group_key is not None else d.rowid)
        return " ORDER BY " + ", ".join(terms)


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
    """One emitted statement: its text and the slots bound to its ``?`` in order."""

    sql: str
    slots: tuple[Slot, ...]

    def bind(self, externals: dict[str, Any]) -> list[Any]:
        """The parameter values for a run (externals already checked by the caller)."""
        out = []
        for s in self.slots:
            if s.kind == "external":
                out.append(externals[s.value])
            elif s.kind == "successor":
                out.append(successor(externals[s.value]))
            else:
                out.append(s.value)
        return out


@dataclass(frozen=True)
class Layout:
    """How to read a native row: the projected fields (``text`` column or type/value pair) or aggregates."""

    fields: tuple[tuple[Field, str], ...] = ()
    aggregates: tuple[AggOut, ...] = ()
    real_flags: int = 0


def _where(e: Emitter, where: Pred) -> str:
    text = e.pred(where)
    return "" if text == "1" else f" WHERE {text}"


def _window(e: Emitter, offset: int, limit: int | None) -> str:
    if limit is None and not offset:
        return ""
    lim = e.bind(Slot("literal", -1 if limit is None else limit))
    return f" LIMIT {lim} OFFSET {e.bind(Slot('literal', offset))}" if offset else f" LIMIT {lim}"


def select_rows(
    dialect: SQLiteDialect,
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
        cols.append(dialect.doc)
    else:
        for f in output_fields(out):
            if f.family == "text":  # a string or missing: the value alone says which
                cols.append(e.value(f, "text"))
                layout.append((f, "text"))
            else:  # the JSON type tells 2.0 from 2 (an INTEGER column holds both as 2)
                jt = e.jtype(f)
                e.path(f)
                cols.append(f"{jt}, {dialect.json_value()}")
                layout.append((f, "pair"))
        if not cols:
            cols.append("1")
    head = f"SELECT {', '.join(cols)} FROM {dialect.table(table)}"
    sql = head + _where(e, where) + e.order(order) + _window(e, offset, limit)
    return Statement(sql, tuple(e.params)), Layout(fields=tuple(layout))


def _agg_sql(e: Emitter, a: AggOut) -> str:
    if a.field is None:
        return "count(*)"
    family = "text" if a.field.family == "text" else "number"
    if a.fn == "count":
        # A typed member's value is NULL exactly when it is missing; an untyped one may be null.
        typed = a.field.family in ("text", "integer", "number")
        return f"count({e.value(a.field, family) if typed else e.jtype(a.field)})"
    if a.fn == "avg":
        # Integer-typed (the only averages pushed): the value is NULL exactly when missing.
        return f"sum({e.value(a.field, family)}), count({e.value(a.field, family)})"
    return f"{a.fn}({e.value(a.field, family)})"


def _real_flags(e: Emitter, checks: tuple[Field, ...]) -> list[str]:
    return [f"max({e.types(f, ('real',))})" for f in checks]


def select_aggregate(
    dialect: SQLiteDialect, table: str, where: Pred, agg: AggOut, checks: tuple[Field, ...]
) -> tuple[Statement, Layout]:
    """One whole-query aggregate; ``checks`` flag real values in integer paths (the engine decides then)."""
    e = Emitter(dialect)
    cols = [_agg_sql(e, agg), *_real_flags(e, checks)]
    sql = f"SELECT {', '.join(cols)} FROM {dialect.table(table)}" + _where(e, where)
    return Statement(sql, tuple(e.params)), Layout(aggregates=(agg,), real_flags=len(checks))


def select_groups(
    dialect: SQLiteDialect,
    table: str,
    where: Pred,
    key: Field,
    out: Out,
    order: tuple[OrderKey, ...],
    offset: int,
    limit: int | None,
    checks: tuple[Field, ...],
) -> tuple[Statement, Layout]:
    """A single-level group-by: key, aggregates and flags per group, groups in first-appearance order."""
    e = Emitter(dialect)
    aggs = group_aggregates(out)
    cols = [e.value(key, "text" if key.family == "text" else "number")]
    cols += [_agg_sql(e, a) for a in aggs] + _real_flags(e, checks)
    head = f"SELECT {', '.join(cols)} FROM {dialect.table(table)}" + _where(e, where)
    sql = head + " GROUP BY 1" + e.order(order, group_key="1") + _window(e, offset, limit)
    return Statement(sql, tuple(e.params)), Layout(aggregates=tuple(aggs), real_flags=len(checks))


def select_candidates(dialect: SQLiteDialect, table: str, where: Pred, bound: int | None) -> Statement:
    """Whole documents in storage order for the set residual (narrowed by ``where``)."""
    e = Emitter(dialect)
    sql = (
        f"SELECT {dialect.doc} FROM {dialect.table(table)}" + _where(e, where) + f" ORDER BY {dialect.rowid}"
    )
    sql += _window(e, 0, bound)
    return Statement(sql, tuple(e.params))
