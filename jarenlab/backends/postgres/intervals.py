"""PostgreSQL's enforcement of declared intervals: one exclusion constraint per declaration.

Under READ COMMITTED a lookup before (or after) a write cannot stop two writers that race for one
slot: neither sees the other's uncommitted row. So the database enforces each declaration itself,
with ``EXCLUDE USING gist`` (``btree_gist`` supplies the ``=`` of text, numbers and booleans):

- the group is ``=`` on the typed expression of the owner (scope ``"owner"``) and of each
  ``within`` member, the canonical ``ddl.typed`` text of its schema type (``btree_gist`` has no
  operator class for ``jsonb``);
- the interval is ``&&`` on a range built from the bounds: ``numrange`` for numbers, ``int8range``
  of epoch milliseconds for date-times (read by ``jl_instant_ms``, an IMMUTABLE function in the
  store's schema: ``text::timestamptz`` depends on the session's time zone, so it cannot appear in a
  constraint). Bounds that do not read as ``start < end`` give no range (NULL), so such a record
  never conflicts and the write check refuses it with JD2091, as on SQLite;
- ``when`` is the constraint's WHERE: one ``jsonb`` equality per member, which compares JSON types
  exactly (``true`` is not ``1``, ``"1"`` is not ``1``, ``1.0`` is ``1``, as the Python reading).

A second writer of an overlapping interval waits for the first, then fails with SQLSTATE 23P01
(condition ``"exclusion"``). The ``conflict`` lookup then only names the other record, after the
write was undone; it repeats the constraint's expressions, so the constraint's index serves it.

>>> from jarenlab.model.intervals import IntervalSpec
>>> d = IntervalSpec(0, ("s",), ("e",), "number", (("room",),), "collection",
...     ((("status",), "booked"),), None, ("string",))
>>> print(when_sql(d))
(body->'status') = '"booked"'::jsonb
>>> print(constraint_statement("bookings", d))
ALTER TABLE "bookings" ADD CONSTRAINT "_jl_iv_bookings_0" EXCLUDE USING gist (((body->>'room') COLLATE "C") WITH =, (CASE WHEN ((body->'s')::numeric) < ((body->'e')::numeric) THEN numrange(((body->'s')::numeric), ((body->'e')::numeric)) END) WITH &&) WHERE ((body->'status') = '"booked"'::jsonb)
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import orjson

from jarenlab.backends.base import Catalogue, IntervalStatements, quote
from jarenlab.backends.postgres import ddl
from jarenlab.errors import ModelError

if TYPE_CHECKING:
    from jarenlab.model import CollectionSpec, Model
    from jarenlab.model.intervals import IntervalSpec, Segments

#: How a bound value is bound in a lookup, by the declaration's kind: epoch milliseconds are
#: integers; numbers go through their text (a float bound as float8 and cast to numeric keeps only
#: 15 digits, so 0.30000000000000004 would read as 0.3).
_BOUND_PARAM = {"date-time": "%s::bigint", "number": "%s::text::numeric"}
_RANGE = {"date-time": "int8range", "number": "numrange"}
#: How a group value is bound, by the member's schema type (the same typed comparison as the index).
_GROUP_PARAM = {
    "string": "%s",
    "integer": "%s::text::numeric",
    "number": "%s::text::numeric",
    "boolean": "%s::boolean",
}


#: PostgreSQL cuts longer names to this many bytes without a word (two constraints would collide).
NAME_BYTES = 63


def constraint_name(table: str, decl: IntervalSpec) -> str:
    """``_jl_iv_<collection>_<n>``: collections never start with ``_jl``, so no declared index
    collides. JD0005 when PostgreSQL would cut it short.

    >>> from jarenlab.model.intervals import IntervalSpec
    >>> constraint_name("c" * 60, IntervalSpec(0, ("s",), ("e",), "number", (), "collection", (), None))
    Traceback (most recent call last):
    ...
    jarenlab.errors.ModelError: JD0005 invalid_model: the interval constraint of this declaration would be named '_jl_iv_cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc_0', longer than PostgreSQL's 63 bytes; use a shorter collection name (at /collections/cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc/intervals/0)
    """
    name = f"_jl_iv_{table}_{decl.position}"
    if len(name.encode()) > NAME_BYTES:
        raise ModelError(
            "JD0005",
            f"the interval constraint of this declaration would be named {name!r}, longer than "
            f"PostgreSQL's {NAME_BYTES} bytes; use a shorter collection name",
            doc_path=f"/collections/{table}/intervals/{decl.position}",
        )
    return name


def bound_sql(decl: IntervalSpec, segments: Segments, *, inline: bool = False) -> str:
    """A bound as SQL: the number itself, or a date-time as epoch milliseconds (NULL when the member
    is not a UTC date-time; Python's reading is :func:`jarenlab.intervals.instant`). ``inline``
    spells ``jl_instant_ms`` out as one expression, for a check that may run before the function
    exists (a migration's, a dry run's)."""
    if decl.kind == "number":
        return str(ddl.typed(segments, "number"))
    if inline:
        return instant_ms_inline().replace("{t}", str(ddl.text(segments)))
    return f"jl_instant_ms({ddl.text(segments)})"


def span_sql(decl: IntervalSpec) -> str:
    """The record's interval as a range: NULL unless its bounds read as ``start < end``."""
    lo, hi = bound_sql(decl, decl.start), bound_sql(decl, decl.end)
    return f"(CASE WHEN {lo} < {hi} THEN {_RANGE[decl.kind]}({lo}, {hi}) END)"


def _group(decl: IntervalSpec) -> list[tuple[str, str]]:
    """(typed expression, its parameter) of the owner (scope ``"owner"``) and each ``within`` member."""
    pointers = ([decl.owner] if decl.owner else []) + list(decl.within)
    out = []
    for segments, family in zip(pointers, decl.group_families, strict=True):
        out.append((str(ddl.typed(segments, family)), _GROUP_PARAM[family]))
    return out


def when_sql(decl: IntervalSpec) -> str:
    """The constraint's WHERE: one type-exact ``jsonb`` equality per ``when`` member ("" if none)."""
    return " AND ".join(
        f"({ddl.member(segments)}) = {ddl.literal(orjson.dumps(value).decode())}::jsonb"
        for segments, value in decl.when
    )


def constraint_statement(table: str, decl: IntervalSpec) -> str:
    """The ALTER TABLE that adds one declaration's exclusion constraint."""
    parts = [f"{expr} WITH =" for expr, _ in _group(decl)] + [f"{span_sql(decl)} WITH &&"]
    where = when_sql(decl)
    return (
        f"ALTER TABLE {quote(table)} ADD CONSTRAINT {quote(constraint_name(table, decl))} "
        f"EXCLUDE USING gist ({', '.join(parts)}){f' WHERE ({where})' if where else ''}"
    )


@cache
def _template(name: str) -> str:
    """The text of statement ``name`` of ``sql/intervals.sql``, as written."""
    return Catalogue.load(__package__ or "jarenlab.backends.postgres", "intervals").statement(name).template


def instant_ms_function() -> str:
    """The CREATE FUNCTION of ``jl_instant_ms`` (``intervals.instant_ms`` in ``sql/intervals.sql``)."""
    return _template("instant_ms")


def instant_ms_inline() -> str:
    """``jl_instant_ms`` as one expression over ``{t}`` (``intervals.instant_ms_inline``)."""
    return _template("instant_ms_inline")


def alter_statements(old: CollectionSpec, new: CollectionSpec) -> tuple[list[str], list[str]]:
    """(before, after) of a migration for the declarations of one collection: a declaration whose
    constraint stays the same (under the collection's new name) is renamed, any other is dropped
    before the documents change and added (with ``jl_instant_ms`` when it reads date-times) after."""
    table = quote(new.name)
    kept = {constraint_statement(new.name, d): d for d in old.intervals}
    wanted = {constraint_statement(new.name, d): d for d in new.intervals}
    before, after = [], []
    for sql, decl in kept.items():
        name = constraint_name(old.name, decl)
        if sql not in wanted:
            before.append(f"ALTER TABLE {quote(old.name)} DROP CONSTRAINT {quote(name)}")
        elif old.name != new.name:
            after.append(
                f"ALTER TABLE {table} RENAME CONSTRAINT {quote(name)} TO {quote(constraint_name(new.name, decl))}"
            )
    added = [decl for sql, decl in wanted.items() if sql not in kept]
    if any(decl.kind == "date-time" for decl in added):
        after.append(instant_ms_function())
    return before, after + [constraint_statement(new.name, decl) for decl in added]


def create_statements(model: Model) -> list[str]:
    """The statements a model's declarations add to its DDL: the function ``jl_instant_ms`` when a
    declaration has date-time bounds, then every declaration's exclusion constraint."""
    decls = [(spec.name, decl) for spec in model.collections.values() for decl in spec.intervals]
    out = [instant_ms_function()] if any(decl.kind == "date-time" for _, decl in decls) else []
    return out + [constraint_statement(table, decl) for table, decl in decls]


def statements(table: str, decl: IntervalSpec) -> IntervalStatements:
    """The statements of one declaration of collection ``table`` (see
    :class:`~jarenlab.backends.base.IntervalStatements`); the constraint enforces it."""
    name = quote(table)
    lo, span = bound_sql(decl, decl.start), span_sql(decl)
    # The checks of stored records run before a migration creates jl_instant_ms (and in dry runs).
    check_lo, check_hi = bound_sql(decl, decl.start, inline=True), bound_sql(decl, decl.end, inline=True)
    group = _group(decl)
    when = when_sql(decl)
    bound = _BOUND_PARAM[decl.kind]
    rng = _RANGE[decl.kind]
    # Parameters arrive as (group..., new end, own key, new start): the range test is split in two
    # halves that the index serves alike, "starts before the new end" and "ends after the new start".
    terms = ([when] if when else []) + [f"{expr} = {param}" for expr, param in group]
    terms += [f"{span} && {rng}(NULL, {bound})", "key IS DISTINCT FROM %s", f"{span} && {rng}({bound}, NULL)"]
    # Of several overlapping records, the one that starts last (SQLite's lookup finds that one).
    conflict = f"SELECT key FROM {name} WHERE {' AND '.join(terms)} ORDER BY {lo} DESC, pos DESC LIMIT 1"
    matching = when or "true"
    invalid = f"SELECT key, doc FROM {name} WHERE {matching} AND NOT coalesce({check_lo} < {check_hi}, false) LIMIT 1"
    partition = f"PARTITION BY {', '.join(expr for expr, _ in group)} " if group else ""
    overlap = (
        f"SELECT key, prev_key FROM (SELECT key, {check_lo} AS s, LAG(key) OVER w AS prev_key, "
        f"LAG({check_hi}) OVER w AS prev_end FROM {name} WHERE {matching} "
        f"WINDOW w AS ({partition}ORDER BY {check_lo}, key)) AS ordered WHERE prev_end > s LIMIT 1"
    )
    return IntervalStatements(conflict=conflict, invalid=invalid, overlap=overlap, enforced=True)
