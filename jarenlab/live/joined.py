"""Live queries over several collections (``store.live(document, **externals)``).

A store-level document (a join, or anything reading ``$.name``) is kept current by re-running it
after every commit that touches a collection it reads: the strategy is ``rerun``, with the reason
in ``live.mode``. Each re-run goes through the store's planner (SQL joins where it can), and the
difference to the previous rows is emitted as one RFC 6902 patch, as for any live query.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {
...     "f": {"schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"},
...           "c": {"type": "string"}}}, "key": "/id"},
...     "a": {"schema": {"type": "object", "required": ["c"], "properties": {"c": {"type": "string"}}},
...           "key": "/c"}}}
>>> doc = {"$for": {"x": "$.f[*]", "y": "$.a[*]"}, "$where": {"$eq": ["$x.c", "$y.c"]}, "$return": "$x.id"}
>>> with jl.open(model=model) as store:
...     live = store.live(doc)
...     _ = store["a"].insert({"c": "AA"})
...     _ = store["f"].insert({"id": 7, "c": "AA"})
...     live.mode.strategy, live.rows
('rerun', [7])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jarenlab.live.capture import Record
from jarenlab.live.live import LiveMode, LiveQuery
from jarenlab.query.joins.plan import reads
from jarenlab.query.joins.run import run
from jarenlab.query.lang.document import parse

if TYPE_CHECKING:
    from jarenlab.store import Store

#: Why a query over several collections re-runs.
REASON = "a query over several collections re-runs after each commit to a collection it reads"


class _Scope:
    """What a live query asks of its source: the store and a name for messages."""

    def __init__(self, store: Store, names: list[str]) -> None:
        self.store = store
        self.name = "+".join(names)


class JoinedLive(LiveQuery):
    """A live store-level query: ``rows``, ``mode``, ``subscribe``, ``widget``, ``close`` as
    :class:`~jarenlab.live.live.LiveQuery`; it re-runs after each commit to a collection it reads."""

    def __init__(self, store: Store, document: Any, externals: dict[str, Any]) -> None:
        names, whole = reads(
            parse(document, operators=frozenset(store.operators)).node, store.model.collections
        )
        #: The collections whose commits re-run the query.
        self.watched = frozenset(store.model.collections if whole else names)
        super().__init__(_Scope(store, names), document, externals)  # type: ignore[arg-type]
        self.mode = LiveMode("rerun", REASON)

    def _fresh_rows(self) -> list[Any]:
        """A fresh run through the store's planner (inside the reseed's snapshot)."""
        return run(self.collection.store, self.document, self.externals)[0]

    def receive(self, rec: Record) -> None:
        """Re-run when a committed change record touches a collection the query reads."""
        if self.closed or rec.seq <= self.seq:
            return
        touched = set(rec.collections) if rec.changes is None else set(rec.changes)
        if touched & self.watched:
            self.reseed()
        self.seq = max(self.seq, rec.seq)
