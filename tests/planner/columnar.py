"""The columnar path as one more differential path for the DuckDB cross-checks: a query answered by
the columns (forced, and required to be theirs), tallied, and the columns dropped again so the
store's other runs keep choosing as they would."""

from __future__ import annotations

from typing import Any

from jarenlab.query.planner.run import run_query
from tests.planner.tally import TALLY


def by_columns(coll: Any, document: Any, externals: dict[str, Any] | None = None) -> Any:
    """The items of ``document`` (its one list for a builder query) as the columns answer it."""
    items, trace, _ = run_query(coll, document, dict(externals or {}), columns=True)
    coll.store.columns.drop()
    assert trace.mode == "columnar", trace.columns
    TALLY.add("columnar")
    return items[0] if type(document) is list and len(items) == 1 else items
