"""Documents with their keys, by query: ``q.keys()``, ``q.items()``, ``q.update(...)``, ``q.delete()``.

A builder chain of ``where`` calls over a collection names a set of stored documents. The rows the
planner's pushed conjuncts keep are read with their keys (every row when nothing narrows), and the
reference engine decides each one with the whole condition, so the set is exactly the query's
answer (the engine is the oracle) and each member comes with its key: what an identity-keyed
collection's query results otherwise lack.

``update`` and ``delete`` change the set in ONE transaction: each document is read again for update,
patched, validated and written as :meth:`Collection.patch` does it; a failure anywhere writes
nothing. Both answer how many documents they changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.errors import StoreError
from jarenlab.query.lang.engine import compile_query
from jarenlab.query.planner.diagnose import report
from jarenlab.query.planner.run import check_externals, narrowed_rows, prepare

if TYPE_CHECKING:
    from jarenlab.query.planner.source import Readable


def where_document(conditions: tuple[Any, ...]) -> Any:
    """The FLWOR a chain of ``where`` conditions stands for (every document when there are none)."""
    doc: dict[str, Any] = {"$for": {"it": "$[*]"}}
    if conditions:
        doc["$where"] = conditions[0] if len(conditions) == 1 else {"$and": list(conditions)}
    doc["$return"] = "$it"
    return doc


def matching(coll: Readable, conditions: tuple[Any, ...], externals: dict[str, Any]) -> list[tuple[Any, Any]]:
    """``(key, document)`` of every stored document the conditions keep, in storage order."""
    ext = check_externals(externals)
    document = where_document(conditions)
    prepared, _ = prepare(coll, document, pushdown=True, strict=False, profile=None)
    ext = prepared.aligned.bind(ext)
    document = prepared.aligned.document
    if prepared.diagnostics:
        report(prepared.diagnostics, coll.store.planner.checks, coll.name, ext)
    rows = narrowed_rows(coll, document, ext) if conditions else None
    if rows is None:
        keys, texts = coll.texts()
        rows = list(zip(keys, texts))
    loads = orjson.loads
    pairs = [(key, loads(text)) for key, text in rows]
    if not conditions:
        return pairs
    positions = {**document, "$for": {"it": {"$in": "$[*]", "$at": "i"}}, "$return": "$i"}
    chosen = compile_query(positions, operators=coll.store.operators).run([d for _, d in pairs], ext)
    return [pairs[i] for i in chosen]


def update(coll: Readable, conditions: tuple[Any, ...], ops: Any, externals: dict[str, Any]) -> int:
    """Patch every matching document (RFC 6902 list or merge-patch dict) in one transaction."""
    if not isinstance(ops, list | dict):
        raise StoreError(
            "JD2009",
            "update() takes an RFC 6902 list or an RFC 7386 merge-patch object",
            collection=coll.name,
        )
    with coll.store.db.transaction():
        found = matching(coll, conditions, externals)
        for key, _ in found:
            coll.patch(key, ops)
    return len(found)


def delete(coll: Readable, conditions: tuple[Any, ...], externals: dict[str, Any]) -> int:
    """Delete every matching document in one transaction."""
    with coll.store.db.transaction():
        found = matching(coll, conditions, externals)
        for key, _ in found:
            coll.delete(key)
    return len(found)
