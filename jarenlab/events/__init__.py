"""The event ledger: durable, ordered events whose handlers write data and enqueue jobs atomically.

May import: the store and everything below it (a subsystem); never another subsystem's room.

``store.events`` is an :class:`Events`. See ``docs/events.md`` for the guide.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
...     "events": {"ping": {"type": "object"}}}
>>> with jl.open(model=model) as store:
...     ev = store.events.emit("ping", {"n": 1})
...     [e.seq for e in store.events.resume()]
[1]
"""

from __future__ import annotations

from jarenlab.lazy import exports

__getattr__ = exports(
    __name__,
    {
        "Event": "jarenlab.events.event",
        "EventStream": "jarenlab.events.stream",
        "Events": "jarenlab.events.ledger",
        "Handler": "jarenlab.events.ledger",
        "Materialization": "jarenlab.events.modules",
        "Module": "jarenlab.events.modules",
        "RebuildPlan": "jarenlab.events.rebuild",
        "Signal": "jarenlab.events.signals",
        "SignalHandler": "jarenlab.events.signals",
        "Work": "jarenlab.events.signals",
        "Step": "jarenlab.events.rebuild",
        "decode_cursor": "jarenlab.events.event",
        "encode_cursor": "jarenlab.events.event",
    },
)

__all__ = [
    "Event",
    "EventStream",
    "Events",
    "Handler",
    "Materialization",
    "Module",
    "RebuildPlan",
    "Signal",
    "SignalHandler",
    "Step",
    "Work",
    "decode_cursor",
    "encode_cursor",
]
