"""The physical shape of a model on PostgreSQL: CREATE statements, and the catalogue's rendering of them.

Each collection is one table: ``key`` (``bigint`` or ``text COLLATE "C"``), ``doc json`` (the exact
text the store wrote: member order and number lexemes, handed back to users), ``body jsonb``
generated from it (what filters, orders and indexes read), and ``pos``, the storage order (the key
itself for integer keys, as SQLite's rowid is; an identity for text keys, kept through updates).
A declared index is an expression index over the typed value of each path, collated ``"C"``,
``NULLS FIRST``, with ``pos`` last (the tie-break SQLite's rowid gives).

PostgreSQL renders DDL in its own words, so verify-never-alter compares renderings: the catalogue's
rendering is recorded when the store is created and compared on every open.

>>> from jarenlab.model import load_model
>>> m = load_model({"$model": "0.1", "collections": {"t": {"schema": {"type": "object",
...     "properties": {"a": {"type": "string"}}}, "key": None, "identity": "integer",
...     "indexes": [{"name": "by_a", "path": "$.a"}]}}})
>>> print(create_statements(m)[-1])
CREATE INDEX "t_by_a" ON "t" (((body->>'a') COLLATE "C") NULLS FIRST, pos)
"""

from __future__ import annotations

import dataclasses

from jarenlab.backends.base import quote
from jarenlab.model import CollectionSpec, Model, index_name


def literal(text: str) -> str:
    """A SQL string literal (member names inside path expressions are literals, not parameters,
    because PostgreSQL matches an expression index by the text of its expression).

    >>> literal("it's")
    "'it''s'"
    """
    if "\x00" in text:
        raise ValueError("U+0000 cannot be written into SQL text")
    return "'" + text.replace("'", "''") + "'"


def member(segments: tuple[str | int, ...], root: str = "body") -> str:
    """The jsonb value at a path: ``body->'a'->0``.

    >>> member(("a", 0, "b"))
    "body->'a'->0->'b'"
    """
    out = root
    for seg in segments:
        out += f"->{seg}" if isinstance(seg, int) else f"->{literal(seg)}"
    return out


def text(segments: tuple[str | int, ...], root: str = "body") -> str:
    """The text of the member at a path (a string member's value, unquoted): ``body->'a'->>'b'``.

    >>> text(("a", "b"))
    "body->'a'->>'b'"
    """
    last = segments[-1]
    head = member(segments[:-1], root)
    return f"{head}->>{last}" if isinstance(last, int) else f"{head}->>{literal(last)}"


def typed(segments: tuple[str | int, ...], family: str | None) -> str | None:
    """The typed expression of a path whose schema gives it one family (None: no typed form).

    Every stored document is valid against its schema, so a member of a one-family path is missing
    or of that type: the bare cast cannot fail. Index and query must use exactly this text.

    >>> print(typed(("n",), "integer"), typed(("s",), "string"))
    ((body->'n')::numeric) ((body->>'s') COLLATE "C")
    """
    value = f"({member(segments)})"
    if family == "string":
        return f'(({text(segments)}) COLLATE "C")'
    if family in ("integer", "number"):
        return f"({value}::numeric)"
    if family == "boolean":
        return f"({value}::boolean)"
    return None


def table_statement(spec: CollectionSpec) -> str:
    """The CREATE TABLE statement of one collection."""
    if spec.key_type is int:
        key = "key bigint PRIMARY KEY"  # an allocated identity is max + 1 under the collection's lock
        pos = "pos bigint GENERATED ALWAYS AS (key) STORED"
    else:
        key = 'key text COLLATE "C" PRIMARY KEY'
        pos = "pos bigint GENERATED ALWAYS AS IDENTITY"
    return (
        f"CREATE TABLE {quote(spec.name)} ({key}, {pos}, doc json NOT NULL, "
        "body jsonb GENERATED ALWAYS AS (doc::jsonb) STORED, "
        f"CONSTRAINT {quote(spec.name + '_doc_object')} CHECK (jsonb_typeof(body) = 'object'))"
    )


def index_statements(spec: CollectionSpec) -> list[tuple[str, str]]:
    """(name, CREATE INDEX) for the storage order and each declared index."""
    columns = {c.name: c for c in spec.columns}
    out = [
        (
            f"{spec.name}_pos",
            f"CREATE UNIQUE INDEX {quote(spec.name + '_pos')} ON {quote(spec.name)} (pos)",
        )
    ]
    for ix in spec.indexes:
        parts = []
        for name, desc in zip(ix.columns, ix.descending):
            col = columns[name]
            expr = typed(col.segments, col.family) or f"({member(col.segments)})"
            # Empty (NULL) is least: first ascending, last descending (the order a query asks for).
            parts.append(f"{expr} {'DESC NULLS LAST' if desc else 'NULLS FIRST'}")
        tail = [] if ix.unique else ["pos"]
        name = index_name(spec.name, ix.name)
        out.append(
            (
                name,
                f"CREATE {'UNIQUE ' if ix.unique else ''}INDEX {quote(name)} ON {quote(spec.name)} "
                f"({', '.join(parts + tail)})",
            )
        )
    return out


def alter(old: CollectionSpec | None, new: CollectionSpec | None) -> list[list[str]]:
    """(before, after) statements that turn collection ``old``'s table into ``new``'s (the
    declarations' constraints are :func:`jarenlab.backends.postgres.intervals.alter_statements`).

    The table is first locked against other writers (readers go on) for the rest of the migration.
    An index that stays the same under the collection's new name is renamed; any other is dropped
    before the documents change and created after.
    """
    if new is None:
        assert old is not None
        return [[f"DROP TABLE {quote(old.name)}"], []]
    if old is None:
        return [[table_statement(new)] + [sql for _, sql in index_statements(new)], []]
    table = quote(new.name)
    before = [f"LOCK TABLE {quote(old.name)} IN EXCLUSIVE MODE"]
    after: list[str] = []
    as_new = dict(index_statements(dataclasses.replace(old, name=new.name)))
    wanted = dict(index_statements(new))
    old_names = dict(zip(as_new, (name for name, _ in index_statements(old)), strict=True))
    for name, sql in as_new.items():
        if wanted.get(name) != sql:
            before.append(f"DROP INDEX {quote(old_names[name])}")
        elif old.name != new.name:
            after.append(f"ALTER INDEX {quote(old_names[name])} RENAME TO {quote(name)}")
    if old.name != new.name:
        before.append(f"ALTER TABLE {quote(old.name)} RENAME TO {table}")
        before.append(
            f"ALTER TABLE {table} RENAME CONSTRAINT {quote(old.name + '_doc_object')} "
            f"TO {quote(new.name + '_doc_object')}"
        )
    after += [sql for name, sql in wanted.items() if as_new.get(name) != sql]
    return [before, after]


def create_statements(model: Model) -> list[str]:
    """Every statement that creates a fresh store's model tables and indexes."""
    out: list[str] = []
    for spec in model.collections.values():
        out.append(table_statement(spec))
        out += [sql for _, sql in index_statements(spec)]
    return out


#: The catalogue's rendering of every column, index and constraint of the tables in one schema, except
#: the store's own ``_jl_*`` tables: (table, what, its definition).
RENDER = """
SELECT c.relname, 'column ' || c.relname || '.' || a.attname,
       format_type(a.atttypid, a.atttypmod)
       || coalesce(' COLLATE ' || nullif(co.collname, 'default'), '')
       || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
       || coalesce(' GENERATED ' || a.attgenerated::text || ' ' || pg_get_expr(d.adbin, d.adrelid), '')
       || CASE WHEN a.attidentity <> '' THEN ' IDENTITY ' || a.attidentity::text ELSE '' END
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_collation co ON co.oid = a.attcollation
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE n.nspname = %s AND c.relkind = 'r' AND c.relname NOT LIKE '\\_jl\\_%%'
UNION ALL
SELECT c.relname, 'index ' || i.relname, pg_get_indexdef(i.oid)
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class c ON c.oid = x.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname NOT LIKE '\\_jl\\_%%'
UNION ALL
SELECT c.relname, 'constraint ' || con.conname, pg_get_constraintdef(con.oid)
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname NOT LIKE '\\_jl\\_%%'
ORDER BY 1, 2
"""


def first_difference(recorded: dict[str, str], found: dict[str, str]) -> str | None:
    """The first way the catalogue's rendering now differs from the one recorded at creation."""
    for name, want in recorded.items():
        have = found.get(name)
        if have is None:
            return f"{name} is missing"
        if have != want:
            return f"{name} is {have!r}, the model expects {want!r}"
    for name in found:
        if name not in recorded:
            return f"{name} is not declared in the model"
    return None
