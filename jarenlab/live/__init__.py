"""Live queries: change capture, maintained results and their RFC 6902 patches.

``collection.live(document, **externals)`` (or a builder query's ``.live(**externals)``) returns a
:class:`LiveQuery`; ``store.changes`` is the store's :class:`ChangeHub` (the change log, bounds,
the poller), and ``store.changes(after=cursor)`` the public change feed, a :class:`ChangePage`
of minimal RFC 6902 patches per document. See ``docs/live.md``.
"""

from __future__ import annotations

from jarenlab.live.capture import ChangeLog, Record
from jarenlab.live.feed import ChangePage, DocumentChange
from jarenlab.live.hub import ChangeHub
from jarenlab.live.live import LiveMode, LiveQuery
from jarenlab.store import Subsystem

#: Registered with every store by :func:`jarenlab.open`.
SUBSYSTEM = Subsystem("live", create=ChangeHub, eager=True, stats=ChangeHub.stats)

__all__ = [
    "SUBSYSTEM",
    "ChangeHub",
    "ChangeLog",
    "ChangePage",
    "DocumentChange",
    "LiveMode",
    "LiveQuery",
    "Record",
]
