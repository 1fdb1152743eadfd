"""SQLite's statements for the interval constraint, built from each declaration.

A declaration's SQL is a function of the declaration (its bound pointers and kind, its ``within``
and owner members, its ``when`` filter), so it is built here rather than kept as a fixed statement
in ``sql/intervals.sql`` (which holds the fixed ones). Three things are built per declaration:

- its **partial expression index** ``_jl_iv_<collection>_<n>``, keyed by (owner?, within...,
  start), part of the model's DDL and of the verified shape;
- the **conflict lookup** the write check runs: stored intervals never overlap, so the only record
  a new ``[start, end)`` can clash with is the one that starts last before ``end``, one
  ``ORDER BY start DESC LIMIT 1`` search of that index;
- the two **activation checks** of stored data (invalid bounds; overlapping neighbours).

Date-time bounds become integer epoch milliseconds *in the index expression*: ``julianday()`` is
deterministic when given an argument, but ``julianday('now')`` in an index is an error, so a
``GLOB`` guard keeps anything that is not a UTC date-time away from it. ``when`` values are SQL
literals: a partial index is used only when the query repeats its WHERE terms literally.

>>> from jarenlab.model.intervals import IntervalSpec
>>> d = IntervalSpec(0, ("s",), ("e",), "number", (("room",),), "collection", ((("status",), "booked"),), None)
>>> print(when_sql(d))
json_type(doc, '$."status"') = 'text' AND json_extract(doc, '$."status"') = 'booked'
>>> print(statements("bookings", d).conflict)
SELECT key FROM (SELECT key, json_extract(doc, '$."e"') AS e FROM "bookings" WHERE json_type(doc, '$."status"') = 'text' AND json_extract(doc, '$."status"') = 'booked' AND json_extract(doc, '$."room"') = ? AND json_extract(doc, '$."s"') < ? AND key IS NOT ? ORDER BY json_extract(doc, '$."s"') DESC LIMIT 1) WHERE e > ?
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jarenlab.backends.base import IntervalStatements, quote
from jarenlab.backends.sqlite.paths import json_path

if TYPE_CHECKING:
    from jarenlab.model import CollectionSpec
    from jarenlab.model.intervals import IntervalSpec, Segments

# What SQLite must see before julianday() runs: never 'now' (non-deterministic in an index).
_UTC_GLOB = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]*Z"


def _extract(segments: Segments) -> str:
    return f"json_extract(doc, '{json_path(segments)}')"


def bound_sql(decl: IntervalSpec, segments: Segments) -> str:
    """A bound as SQL: the number itself, or a date-time as integer epoch milliseconds (NULL when
    the member is not a UTC date-time; Python's reading is :func:`jarenlab.intervals.instant`)."""
    x = _extract(segments)
    if decl.kind == "number":
        return x
    return f"CASE WHEN {x} GLOB '{_UTC_GLOB}' THEN CAST(round((julianday({x}) - 2440587.5) * 86400000.0) AS INTEGER) END"


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def when_sql(decl: IntervalSpec) -> str:
    """The partial index's WHERE clause: one type-guarded equality per ``when`` member ("" if none).

    The ``json_type`` guard makes the SQL reading equal Python's (``jarenlab.intervals`` ``_matches``):
    ``true`` never matches 1, nor ``"1"`` the number 1.
    """
    terms = []
    for segments, value in decl.when:
        path = f"'{json_path(segments)}'"
        if value is None:
            terms.append(f"json_type(doc, {path}) = 'null'")
        elif isinstance(value, bool):
            terms.append(f"json_type(doc, {path}) = '{'true' if value else 'false'}'")
        elif isinstance(value, str):
            terms.append(f"json_type(doc, {path}) = 'text' AND {_extract(segments)} = {_literal(value)}")
        else:
            terms.append(
                f"json_type(doc, {path}) IN ('integer', 'real') AND {_extract(segments)} = {_literal(value)}"
            )
    return " AND ".join(terms)


def _group_sql(decl: IntervalSpec) -> list[str]:
    return ([_extract(decl.owner)] if decl.owner else []) + [_extract(w) for w in decl.within]


def index_name(spec: CollectionSpec, decl: IntervalSpec) -> str:
    """``_jl_iv_<collection>_<n>``: collections never start with ``_jl``, so no declared index collides."""
    return f"_jl_iv_{spec.name}_{decl.position}"


def index_statements(spec: CollectionSpec) -> list[tuple[str, str]]:
    """(name, CREATE INDEX) for the partial index of each interval declaration of a collection."""
    out = []
    for decl in spec.intervals:
        name = index_name(spec, decl)
        where = when_sql(decl)
        columns = ", ".join([*_group_sql(decl), bound_sql(decl, decl.start)])
        out.append(
            (
                name,
                f"CREATE INDEX {quote(name)} ON {quote(spec.name)} ({columns}){f' WHERE {where}' if where else ''}",
            )
        )
    return out


def statements(table: str, decl: IntervalSpec) -> IntervalStatements:
    """The statements that enforce one declaration of collection ``table`` (see
    :class:`~jarenlab.backends.base.IntervalStatements` for their parameters and rows)."""
    start, end = bound_sql(decl, decl.start), bound_sql(decl, decl.end)
    group = _group_sql(decl)
    where = when_sql(decl)
    name = quote(table)
    terms = ([where] if where else []) + [f"{g} = ?" for g in group] + [f"{start} < ?", "key IS NOT ?"]
    conflict = (
        f"SELECT key FROM (SELECT key, {end} AS e FROM {name} WHERE {' AND '.join(terms)} "
        f"ORDER BY {start} DESC LIMIT 1) WHERE e > ?"
    )
    matching = where or "1"
    invalid = f"SELECT key, doc FROM {name} WHERE {matching} AND coalesce({start} < {end}, 0) = 0 LIMIT 1"
    partition = f"PARTITION BY {', '.join(group)} " if group else ""
    overlap = (
        f"SELECT key, prev_key FROM (SELECT key, {start} AS s, LAG(key) OVER w AS prev_key, "
        f"LAG({end}) OVER w AS prev_end FROM {name} WHERE {matching} "
        f"WINDOW w AS ({partition}ORDER BY {start}, key)) WHERE prev_end > s LIMIT 1"
    )
    return IntervalStatements(conflict=conflict, invalid=invalid, overlap=overlap)
