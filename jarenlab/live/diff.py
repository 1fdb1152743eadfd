"""The minimal RFC 6902 patch from one JSON document to another (what the change feed publishes).

It is :func:`jarenlab.patch.diff`, named here where the live room and its readers look for it.

>>> diff({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1]})
[{'op': 'remove', 'path': '/b/1'}]
"""

from __future__ import annotations

from jarenlab.patch import Op, diff

__all__ = ["Op", "diff"]
