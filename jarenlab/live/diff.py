"""The minimal RFC 6902 patch from one JSON document to another (what the change feed publishes).

Objects are compared member by member (a member that went away is ``remove``d, a new one is
``add``ed, a changed one is patched where it changed); arrays element by element, growing at the
end with ``add`` and shrinking from the end with ``remove`` (highest index first), or replaced whole
when that is fewer operations. Values are compared exactly (``1`` is not ``1.0``, ``True`` is not
``1``), so applying the patch gives back the new document value for value. Member order is not part
of a JSON object's value, so reordering members alone is no change.

>>> diff({"a": 1, "b": [1, 2], "c": {"d": 1}}, {"a": 1.0, "b": [1], "c": {"d": 1, "e": None}})
[{'op': 'replace', 'path': '/a', 'value': 1.0}, {'op': 'remove', 'path': '/b/1'}, {'op': 'add', 'path': '/c/e', 'value': None}]
>>> diff({"a": 1, "b": 2}, {"b": 2, "a": 1})
[]
"""

from __future__ import annotations

from typing import Any

from jarenlab.pointer import escape
from jarenlab.query.lang.values import identical

Op = dict[str, Any]


def diff(old: Any, new: Any, path: str = "") -> list[Op]:
    """The operations that turn ``old`` into ``new`` (pointers start with ``path``); ``[]`` if equal."""
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
