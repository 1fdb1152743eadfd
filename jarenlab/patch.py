"""JSON Patch (RFC 6902) and JSON Merge Patch (RFC 7386): applied to a copy of a document, and
computed from two documents (:func:`diff`, the minimal RFC 6902 patch; :func:`merge_diff`, the merge
patch of the changed members where one can say it).

Pointers are read exactly as RFC 6901 says (:mod:`jarenlab.pointer`): a ``~`` not followed by ``0``
or ``1`` is an error, and an array index is ASCII digits without leading zeros. ``test`` compares
with JSON equality (:func:`jarenlab.query.lang.values.json_eq`): JSON types recursively, numbers by
value. Every failure is ``JD2009`` naming the operation.

>>> apply_patch({"a": 1, "b": [1]}, [{"op": "add", "path": "/b/-", "value": 2}, {"op": "remove", "path": "/a"}])
{'b': [1, 2]}
>>> merge_patch({"a": 1, "b": {"c": 2}}, {"a": None, "b": {"d": 3}})
{'b': {'c': 2, 'd': 3}}
>>> diff({"a": 1, "b": [1, 2], "c": {"d": 1}}, {"a": 1.0, "b": [1], "c": {"d": 1, "e": None}})
[{'op': 'replace', 'path': '/a', 'value': 1.0}, {'op': 'remove', 'path': '/b/1'}, {'op': 'add', 'path': '/c/e', 'value': None}]
>>> diff({"a": 1, "b": 2}, {"b": 2, "a": 1})
[]
>>> merge_diff({"a": 1, "b": {"c": 2, "d": 3}, "e": 5}, {"a": 1, "b": {"c": 2}, "e": 6})
{'b': {'d': None}, 'e': 6}
>>> merge_diff({"a": 1}, {"a": None}) is None  # a member set to null: no merge patch says it
True
"""

from __future__ import annotations

import copy
from typing import Any

from jarenlab import pointer
from jarenlab.errors import StoreError
from jarenlab.pointer import escape
from jarenlab.query.lang.values import identical, json_eq

Op = dict[str, Any]


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


def diff(old: Any, new: Any, path: str = "") -> list[Op]:
    """The minimal RFC 6902 patch from ``old`` to ``new`` (pointers start with ``path``); ``[]`` if equal.

    Objects are compared member by member (a member that went away is ``remove``d, a new one is
    ``add``ed, a changed one is patched where it changed); arrays element by element, growing at the
    end with ``add`` and shrinking from the end with ``remove`` (highest index first), or replaced
    whole when that is fewer operations. Values are compared exactly (``1`` is not ``1.0``, ``True``
    is not ``1``), so applying the patch gives back the new document value for value. Member order
    is not part of a JSON object's value, so reordering members alone is no change. The change feed
    publishes these patches, and a session's save finds what changed with them.
    """
    ops: list[Op] = []
    _diff(old, new, path, ops)
    return ops


def _diff(old: Any, new: Any, path: str, ops: list[Op]) -> None:
    if type(old) is dict and type(new) is dict:
        for name in old:
            if name not in new:
                ops.append({"op": "remove", "path": path + "/" + escape(name)})
        for name, value in new.items():
            here = path + "/" + escape(name)
            if name in old:
                _diff(old[name], value, here, ops)
            else:
                ops.append({"op": "add", "path": here, "value": value})
        return
    if type(old) is list and type(new) is list:
        inner: list[Op] = []
        common = min(len(old), len(new))
        for i in range(common):
            _diff(old[i], new[i], f"{path}/{i}", inner)
        for i in range(common, len(new)):
            inner.append({"op": "add", "path": f"{path}/{i}", "value": new[i]})
        for i in range(len(old) - 1, common - 1, -1):
            inner.append({"op": "remove", "path": f"{path}/{i}"})
        if len(inner) > 1 and len(inner) >= len(new):
            ops.append({"op": "replace", "path": path, "value": new})  # fewer operations whole
        else:
            ops.extend(inner)
        return
    if not identical(old, new):
        ops.append({"op": "replace", "path": path, "value": new})


def merge_diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """The RFC 7386 merge patch that turns object ``old`` into object ``new`` by its changed members
    alone (``{}`` when nothing changed), or None when no merge patch can say it: a member (of the
    document or of a nested object) whose new value is ``null`` or holds an object with a ``null``
    member, since a merge patch reads ``null`` as "remove". Arrays are replaced whole; objects are
    patched member by member, removed members as ``null``."""
    out: dict[str, Any] = {}
    for name in old:
        if name not in new:
            out[name] = None
    for name, value in new.items():
        if name in old and type(old[name]) is dict and type(value) is dict:
            inner = merge_diff(old[name], value)
            if inner is None:
                return None
            if inner:
                out[name] = inner
        elif name not in old or not identical(old[name], value):
            if value is None or (type(value) is dict and _holds_null_member(value)):
                return None
            out[name] = value
    return out


def _holds_null_member(obj: dict[str, Any]) -> bool:
    """Whether an object, or an object nested in it through objects, has a member holding null."""
    return any(v is None or (type(v) is dict and _holds_null_member(v)) for v in obj.values())
