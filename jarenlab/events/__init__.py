"""The event ledger: durable, ordered events whose handlers write data and enqueue jobs atomically.

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

from jarenlab.events.event import Event, decode_cursor, encode_cursor
from jarenlab.events.ledger import Events, Handler
from jarenlab.events.stream import EventStream
from jarenlab.store import Subsystem

#: Registered with every store by :func:`jarenlab.open`.
SUBSYSTEM = Subsystem("events", create=Events)

__all__ = ["SUBSYSTEM", "Event", "EventStream", "Events", "Handler", "decode_cursor", "encode_cursor"]
