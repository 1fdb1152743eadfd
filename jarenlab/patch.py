"""JSON Patch (RFC 6902) and JSON Merge Patch (RFC 7386), applied to a copy of a document.

Pointers are read exactly as RFC 6901 says (:mod:`jarenlab.pointer`): a ``~`` not followed by ``0``
or ``1`` is an error, and an array index is ASCII digits without leading zeros. ``test`` compares
with JSON equality (:func:`jarenlab.query.lang.values.json_eq`): JSON types recursively, numbers by
value. Every failure is ``JD2009`` naming the operation.

>>> apply_patch({"a": 1, "b": [1]}, [{"op": "add", "path": "/b/-", "value": 2}, {"op": "remove", "path": "/a"}])
{'b': [1, 2]}
>>> merge_patch({"a": 1, "b": {"c": 2}}, {"a": None, "b": {"d": 3}})
{'b': {'c': 2, 'd': 3}}
"""

from __future__ import annotations

import copy
from typing import Any

from jarenlab import pointer
from jarenlab.errors import StoreError
from jarenlab.query.lang.values import json_eq


def _bad(reason: str, i: int | None = None) -> StoreError:
    return StoreError("JD2009", reason, doc_path=None if i is None else f"/{i}")


def _tokens(text: Any, i: int) -> list[str]:
    why = pointer.problem(text)
    if why is not None:
        raise _bad(f"not a JSON Pointer: {why}", i)
    return pointer.split(text)


def _index(container: list[Any], token: str, i: int, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not pointer.is_array_index(token):
        raise _bad(f"{token!r} is not an array index", i)
    # no leading zeros: more digits than the length has is beyond it (and spares int() a huge string)
    n = int(token) if len(token) <= len(str(len(container))) else len(container) + 1
    if n > len(container) or (n == len(container) and not allow_end):
        raise _bad(f"array index {token} is out of range", i)
    return n


def _parent(doc: Any, tokens: list[str], i: int) -> Any:
    node = doc
    for t in tokens[:-1]:
        if isinstance(node, dict) and t in node:
            node = node[t]
        elif isinstance(node, list):
            node = node[_index(node, t, i, allow_end=False)]
        else:
            raise _bad(f"path {pointer.of(tokens)} does not exist", i)
    return node


def _get(doc: Any, tokens: list[str], i: int) -> Any:
    if not tokens:
        return doc
    parent = _parent(doc, tokens, i)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, i, allow_end=False)]
    raise _bad(f"path {pointer.of(tokens)} does not exist", i)


def _add(doc: Any, tokens: list[str], value: Any, i: int) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens, i)
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, tokens[-1], i, allow_end=True), value)
    else:
        raise _bad(f"cannot add below a {type(parent).__name__}", i)
    return doc


def _remove(doc: Any, tokens: list[str], i: int) -> Any:
    if not tokens:
        raise _bad("cannot remove the whole document", i)
    parent = _parent(doc, tokens, i)
    _get(doc, tokens, i)
    if isinstance(parent, dict):
        del parent[tokens[-1]]
    else:
        del parent[_index(parent, tokens[-1], i, allow_end=False)]
    return doc


def apply_patch(doc: Any, ops: Any) -> Any:
    """Apply an RFC 6902 operation list to a deep copy of ``doc``; raise JD2009 on any bad step."""
    if not isinstance(ops, list):
        raise _bad("a JSON Patch is a list of operations")
    doc = copy.deepcopy(doc)
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise _bad("each operation needs 'op' and 'path'", i)
        name, tokens = op["op"], _tokens(op["path"], i)
        if name in ("add", "replace", "test") and "value" not in op:
            raise _bad(f"'{name}' needs a 'value'", i)
        if name == "add":
            doc = _add(doc, tokens, copy.deepcopy(op["value"]), i)
        elif name == "remove":
            doc = _remove(doc, tokens, i)
        elif name == "replace":
            _get(doc, tokens, i)
            doc = _add(_remove(doc, tokens, i) if tokens else doc, tokens, copy.deepcopy(op["value"]), i)
        elif name in ("move", "copy"):
            source = _tokens(op.get("from"), i)
            if name == "move" and tokens[: len(source)] == source and tokens != source:
                raise _bad("cannot move a value into itself", i)
            value = copy.deepcopy(_get(doc, source, i))
            if name == "move":
                doc = _remove(doc, source, i)
            doc = _add(doc, tokens, value, i)
        elif name == "test":
            if not json_eq(_get(doc, tokens, i), op["value"]):
                raise _bad(f"test failed at {op['path']}", i)
        else:
            raise _bad(f"unknown operation {name!r}", i)
    return doc


def merge_patch(doc: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch, returning a new document."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(doc) if isinstance(doc, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out
