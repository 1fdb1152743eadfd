"""SQLite's spelling of the SQL the planner emits (see :mod:`jarenlab.query.sql`)."""

from __future__ import annotations

from jarenlab.backends.base import IDENTIFIER
from jarenlab.errors import PlanError

_JSON_TYPES = frozenset({"integer", "real", "text", "true", "false", "null", "array", "object"})


class SQLiteDialect:
    """SQLite's spelling of the constructs the planner needs.

    >>> d = SQLiteDialect()
    >>> d.type_in(("integer", "real"))
    "json_type(doc, ?) IN ('integer', 'real')"
    """

    name = "sqlite"
    doc = "doc"
    rowid = "rowid"

    def json_type(self) -> str:
        return f"json_type({self.doc}, ?)"

    def json_value(self) -> str:
        return f"json_extract({self.doc}, ?)"

    def type_in(self, types: tuple[str, ...]) -> str:
        if not set(types) <= _JSON_TYPES:
            raise PlanError("JD0010", f"internal: unknown JSON types {types}")
        if len(types) == 1:
            return f"{self.json_type()} = '{types[0]}'"
        return f"{self.json_type()} IN ({', '.join(repr(t) for t in types)})"

    def nulls(self, desc: bool, first: bool) -> str:
        # SQLite's default: NULLs first ascending, last descending.
        default_first = not desc
        return "" if first == default_first else (" NULLS FIRST" if first else " NULLS LAST")

    def table(self, name: str) -> str:
        if not IDENTIFIER.match(name):
            raise PlanError("JD0010", f"internal: {name!r} is not an identifier")
        return f'"{name}"'

    def column(self, name: str) -> str:
        if not IDENTIFIER.match(name):
            raise PlanError("JD0010", f"internal: {name!r} is not an identifier")
        return name
