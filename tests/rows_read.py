"""How many rows of a table PostgreSQL read running a statement, by its own account."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def rows_read(store: Any, sql: str, params: Sequence[Any], table: str) -> int:
    """Rows PostgreSQL read from ``table`` running ``sql`` (``EXPLAIN ANALYZE``: the rows each scan
    of the table returned and those it read and removed by a filter, times its loops)."""
    text = store.db.connection().execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()[0]
    plan = text if isinstance(text, list) else json.loads(text)

    def walk(node: dict[str, Any]) -> int:
        here = 0
        if node.get("Relation Name") == table:
            here = (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node.get("Actual Loops", 1)
        return here + sum(walk(child) for child in node.get("Plans", ()))

    return walk(plan[0]["Plan"])
