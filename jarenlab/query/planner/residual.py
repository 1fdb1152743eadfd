"""The residual: the reference engine over SQL-fetched documents, never a second implementation.

- **row** mode: SQL filtered and ordered the rows; each row runs the one-row document
  ``{"$for": {b: "$[*]"}, "$return": <original $return>}`` and the items concatenate in order.
  It streams (a generator over the cursor).
- **set** mode: SQL only narrowed the candidates (storage order); the whole original document
  runs over them. Re-applying the pushed conditions is idempotent, so narrowing is pure.

>>> from jarenlab.query.lang.engine import compile_query
>>> cq = compile_query({"$for": {"n": "$[*]"}, "$return": {"v": "$n.a"}})
>>> list(run_rows(cq, iter([{"a": 1}, {"b": 2}]), {}, ""))
[{'v': 1}, {}]
>>> run_set(compile_query({"$count": "$[*]"}), [{"a": 1}], {})
[1]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from jarenlab.errors import QueryError
from jarenlab.query.lang.engine import CompiledQuery


def run_rows(
    row_query: CompiledQuery, docs: Iterable[Any], externals: dict[str, Any], return_path: str
) -> Iterator[Any]:
    """Yield the items of the one-row document for each document, in order.

    An error's ``doc_path`` is moved from the one-row document to the original
    (``/$return...`` becomes ``<flwor path>/$return...``).
    """
    run = row_query.run
    for doc in docs:
        try:
            yield from run([doc], externals)
        except QueryError as err:
            if return_path and err.doc_path and err.doc_path.startswith("/$return"):
                err.doc_path = return_path + err.doc_path
            raise


def run_set(query: CompiledQuery, candidates: list[Any], externals: dict[str, Any]) -> list[Any]:
    """The whole document over the candidate documents (the engine's flat result)."""
    return query.run(candidates, externals)
