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

from jarenlab.backends.base import quote
from jarenlab.backends.sqlite import intervals
from jarenlab.backends.sqlite.paths import json_path
from jarenlab.model import CollectionSpec, Model, index_name

#: SQLite's column type for each schema family (booleans are 0/1 integers in SQLite's JSON functions).
_TYPES = {"string": "TEXT", "integer": "INTEGER", "number": "REAL", "boolean": "INTEGER"}


def table_statement(spec: CollectionSpec) -> str:
    """The CREATE TABLE statement of one collection (an integer key is the rowid)."""
    key = "key INTEGER PRIMARY KEY" if spec.key_type is int else "key TEXT PRIMARY KEY NOT NULL"
    cols = [key, "doc TEXT NOT NULL"] + [
        f"{quote(c.name)[1:-1]} {_TYPES.get(c.family or '', 'ANY')} GENERATED ALWAYS AS "
        f"(json_extract(doc, '{json_path(c.segments)}')) VIRTUAL"
        for c in spec.columns
    ]
    return f"CREATE TABLE {quote(spec.name)} ({', '.join(cols)}) STRICT"


def index_statements(spec: CollectionSpec) -> list[tuple[str, str]]:
    """(name, CREATE INDEX statement) for each declared index."""
    return [
        (
            index_name(spec.name, ix.name),
            f"CREATE {'UNIQUE ' if ix.unique else ''}INDEX {quote(index_name(spec.name, ix.name))} "
            f"ON {quote(spec.name)} ({', '.join(ix.columns)})",
        )
        for ix in spec.indexes
    ]


def extra_statements(spec: CollectionSpec) -> list[tuple[str, str]]:
    """The indexes a collection's declarations add beyond its declared ones (the interval indexes)."""
    return intervals.index_statements(spec)


def create_statements(model: Model) -> list[str]:
    """Every statement that creates a fresh store's model tables (internal tables: the catalogues)."""
    out = []
    for spec in model.collections.values():
        out.append(table_statement(spec))
        out += [sql for _, sql in index_statements(spec) + extra_statements(spec)]
    return out


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
