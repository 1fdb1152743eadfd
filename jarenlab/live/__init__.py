"""Live queries: change capture, maintained results and their RFC 6902 patches.

May import: the store and everything below it (a subsystem), the planner's run; its widget only
on demand.

``collection.live(document, **externals)`` (or a builder query's ``.live(**externals)``) returns a
:class:`LiveQuery`; ``store.changes`` is the store's :class:`ChangeHub` (the change log, bounds,
the poller), and ``store.changes(after=cursor)`` the public change feed, a :class:`ChangePage`
of minimal RFC 6902 patches per document. See ``docs/live.md``.
"""

from __future__ import annotations

from jarenlab.lazy import exports

__getattr__ = exports(
    __name__,
    {
        "ChangeHub": "jarenlab.live.hub",
        "ChangeLog": "jarenlab.live.capture",
        "ChangePage": "jarenlab.live.feed",
        "DocumentChange": "jarenlab.live.feed",
        "LiveMode": "jarenlab.live.live",
        "LiveQuery": "jarenlab.live.live",
        "Record": "jarenlab.live.capture",
    },
)

__all__ = [
    "ChangeHub",
    "ChangeLog",
    "ChangePage",
    "DocumentChange",
    "LiveMode",
    "LiveQuery",
    "Record",
]
