"""The physical shape of a model: CREATE statements, and comparing them with a database.

>>> from jarenlab.model import load_model
>>> m = load_model({"$model": "0.1", "collections": {"t": {"schema": {"type": "object",
...     "properties": {"a": {"type": "string"}}}, "key": None, "identity": "integer",
...     "indexes": [{"name": "by_a", "path": "$.a"}]}}})
>>> print(create_statements(m)[0])
CREATE TABLE "t" (key INTEGER PRIMARY KEY, doc TEXT NOT NULL, gx_a TEXT GENERATED ALWAYS AS (json_extract(doc, '$."a"')) VIRTUAL) STRICT
"""

from __future__ import annotations

import re

from jarenlab.backends.base import Alteration, quote
from jarenlab.backends.sqlite import intervals
from jarenlab.backends.sqlite.paths import json_path
from jarenlab.model import CollectionSpec, ColumnSpec, Model, index_name

#: SQLite's column type for each schema family (booleans are 0/1 integers in SQLite's JSON functions).
_TYPES = {"string": "TEXT", "integer": "INTEGER", "number": "REAL", "boolean": "INTEGER"}


def column_definition(column: ColumnSpec) -> str:
    """One typed generated column, as CREATE TABLE and ALTER TABLE ADD COLUMN write it."""
    return (
        f"{quote(column.name)[1:-1]} {_TYPES.get(column.family or '', 'ANY')} GENERATED ALWAYS AS "
        f"(json_extract(doc, '{json_path(column.segments)}')) VIRTUAL"
    )


def table_statement(spec: CollectionSpec) -> str:
    """The CREATE TABLE statement of one collection (an integer key is the rowid)."""
    key = "key INTEGER PRIMARY KEY" if spec.key_type is int else "key TEXT PRIMARY KEY NOT NULL"
    cols = [key, "doc TEXT NOT NULL"] + [column_definition(c) for c in spec.columns]
    return f"CREATE TABLE {quote(spec.name)} ({', '.join(cols)}) STRICT"


def index_statements(spec: CollectionSpec) -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) for each declared index (a descending path's column ``DESC``)."""
    out = []
    for ix in spec.indexes:
        name = index_name(spec.name, ix.name)
        cols = ", ".join(c + (" DESC" if desc else "") for c, desc in zip(ix.columns, ix.descending))
        out.append(
            (
                name,
                f"CREATE {'UNIQUE ' if ix.unique else ''}INDEX {quote(name)} ON {quote(spec.name)} ({cols})",
            )
        )
    return out


def extra_statements(spec: CollectionSpec) -> list[tuple[str, str]]:
    """The indexes a collection's declarations add beyond its declared ones (the interval indexes)."""
    return intervals.index_statements(spec)


def create_statements(model: Model) -> list[str]:
    """Every statement that creates a fresh store's model tables (internal tables: the catalogues)."""
    return [sql for spec in model.collections.values() for sql in create_statements_of(spec)]


def _indexes(spec: CollectionSpec) -> dict[str, tuple[str, tuple[ColumnSpec, ...]]]:
    """name -> (CREATE INDEX, the typed columns it reads) of every index of a collection."""
    columns = {c.name: c for c in spec.columns}
    declared = {index_name(spec.name, ix.name): tuple(columns[c] for c in ix.columns) for ix in spec.indexes}
    return {
        name: (sql, declared.get(name, ())) for name, sql in index_statements(spec) + extra_statements(spec)
    }


def alter(old: CollectionSpec | None, new: CollectionSpec | None) -> Alteration:
    """The statements that turn collection ``old`` into ``new`` (see :class:`Alteration`).

    SQLite adds a typed generated column with ``ALTER TABLE ADD COLUMN`` (after the others) and
    drops one with ``DROP COLUMN``; when the model's column order cannot be reached that way the
    table is **rebuilt**: copied into a fresh table, rowids (the storage order) kept. SQLite cannot
    rename an index, so a renamed collection's indexes are made again under their new names.

    >>> from jarenlab.model import load_model
    >>> def spec(*paths):
    ...     return load_model({"$model": "0.1", "collections": {"t": {"schema": {"type": "object"},
    ...         "key": None, "identity": "integer", "indexes": [
    ...         {"name": f"i{n}", "path": p} for n, p in enumerate(paths)]}}}).collections["t"]
    >>> a = alter(spec("$.a"), spec("$.a", "$.b"))
    >>> a.before, a.rebuild, a.after[1]
    ((), False, 'CREATE INDEX "t_i1" ON "t" (gx_b)')
    >>> alter(spec("$.b"), spec("$.a", "$.b")).rebuild
    True
    """
    if new is None:
        assert old is not None
        return Alteration(before=(f"DROP TABLE {quote(old.name)}",))
    if old is None:
        return Alteration(before=tuple(create_statements_of(new)))
    table = quote(new.name)
    before: list[str] = []
    after: list[str] = []
    wanted = {c.name: c for c in new.columns}
    had = {c.name: c for c in old.columns}
    kept = [c for c in old.columns if wanted.get(c.name) == c]
    added = [c for c in new.columns if had.get(c.name) != c]
    rebuild = [c.name for c in kept + added] != [c.name for c in new.columns]
    old_ix, new_ix = _indexes(old), _indexes(new)
    same = set() if rebuild or old.name != new.name else {n for n in old_ix if new_ix.get(n) == old_ix[n]}
    before += [f"DROP INDEX {quote(name)}" for name in old_ix if name not in same]
    if old.name != new.name:
        before.append(f"ALTER TABLE {quote(old.name)} RENAME TO {table}")
    if rebuild:
        moved = quote(f"_jl_rebuild_{new.name}")
        rows = "key, doc" if new.key_type is int else "rowid, key, doc"
        before += [
            f"ALTER TABLE {table} RENAME TO {moved}",
            table_statement(new),
            f"INSERT INTO {table}({rows}) SELECT {rows} FROM {moved} ORDER BY rowid",
            f"DROP TABLE {moved}",
        ]
    else:
        before += [f"ALTER TABLE {table} DROP COLUMN {quote(c.name)}" for c in old.columns if c not in kept]
        after += [f"ALTER TABLE {table} ADD COLUMN {column_definition(c)}" for c in added]
    after += [sql for name, (sql, _) in new_ix.items() if name not in same]
    return Alteration(before=tuple(before), after=tuple(after), rebuild=rebuild)


def create_statements_of(spec: CollectionSpec) -> list[str]:
    """The statements that create one collection's table and its indexes."""
    return [table_statement(spec)] + [sql for _, sql in index_statements(spec) + extra_statements(spec)]


def _norm(sql: str) -> str:
    return re.sub(r"\s+", " ", sql.strip())


def first_shape_difference(model: Model, found: dict[str, str]) -> str | None:
    """The first way the database (``{name: sql}`` from sqlite_master) differs from the model."""
    for spec in model.collections.values():
        sql = found.get(spec.name)
        if sql is None:
            return f"table {spec.name!r} is missing"
        if _norm(sql) != _norm(table_statement(spec)):
            return f"table {spec.name!r} is {_norm(sql)!r}, the model expects {table_statement(spec)!r}"
        expected = dict(index_statements(spec) + extra_statements(spec))
        for name, want in expected.items():
            have = found.get(name)
            if have is None:
                return f"index {name!r} on {spec.name!r} is missing"
            if _norm(have) != _norm(want):
                return f"index {name!r} is {_norm(have)!r}, the model expects {want!r}"
        table = re.compile(rf'\bON\s+"?{re.escape(spec.name)}"?\s*\(', re.I)
        for name, sql in found.items():
            is_index = sql.upper().startswith(("CREATE INDEX", "CREATE UNIQUE INDEX"))
            if is_index and table.search(sql) and name not in expected:
                return f"index {name!r} on {spec.name!r} is not declared in the model"
    return None
