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

from jarenlab import pointer
from jarenlab.errors import QueryError, StoreError
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


def update(
    coll: Readable,
    conditions: tuple[Any, ...],
    ops: Any,
    externals: dict[str, Any],
    assign: dict[str, Any] | None = None,
) -> int:
    """Patch every matching document in one transaction: with ``ops`` (an RFC 6902 list or a
    merge-patch dict), or with ``assign``, ``{JSON Pointer: query expression}`` computed from each
    document as stored (``it``) by the reference engine: one item sets the member, none removes it,
    several are JQ2001."""
    if assign is not None:
        if ops is not None:
            raise StoreError("JD2009", "update() takes ops or set=, not both", collection=coll.name)
        return _assign(coll, conditions, assign, externals)
    if not isinstance(ops, list | dict):
        raise StoreError(
            "JD2009",
            "update() takes an RFC 6902 list or an RFC 7386 merge-patch object, or set={member: value}",
            collection=coll.name,
        )
    with coll.store.db.transaction():
        found = matching(coll, conditions, externals)
        for key, _ in found:
            coll.patch(key, ops)
    return len(found)


def _assign(
    coll: Readable, conditions: tuple[Any, ...], assign: dict[str, Any], externals: dict[str, Any]
) -> int:
    """``update(set=...)``: each document's new members computed from it, then patched."""
    if not assign or not all(
        isinstance(p, str) and p.startswith("/") and not pointer.problem(p) for p in assign
    ):
        raise StoreError(
            "JD2009",
            f"update(set=...) takes {{member: value}} with at least one member, not {assign!r}",
            collection=coll.name,
        )
    paths = list(assign)
    values = compile_query(
        {"$for": {"it": "$[*]"}, "$return": [[assign[p]] for p in paths]}, operators=coll.store.operators
    )
    with coll.store.db.transaction():
        found = matching(coll, conditions, externals)
        computed = values.run([d for _, d in found], check_externals(externals))
        for (key, doc), items in zip(found, computed, strict=True):
            ops: list[dict[str, Any]] = []
            for path, got in zip(paths, items):
                if len(got) > 1:
                    raise QueryError(
                        "JQ2001", f"set= gives {path} {len(got)} values for document {key!r}: one or none"
                    )
                if got:
                    ops.append({"op": "add", "path": path, "value": got[0]})
                elif _holds(doc, path):
                    ops.append({"op": "remove", "path": path})
            if ops:
                coll.patch(key, ops)
    return len(found)


def _holds(doc: Any, path: str) -> bool:
    """Whether ``doc`` has a value at the JSON Pointer ``path``."""
    for token in pointer.split(path):
        if isinstance(doc, dict) and token in doc:
            doc = doc[token]
        elif isinstance(doc, list) and pointer.is_array_index(token) and int(token) < len(doc):
            doc = doc[int(token)]
        else:
            return False
    return True


def delete(coll: Readable, conditions: tuple[Any, ...], externals: dict[str, Any]) -> int:
    """Delete every matching document in one transaction."""
    with coll.store.db.transaction():
        found = matching(coll, conditions, externals)
        for key, _ in found:
            coll.delete(key)
    return len(found)
