"""jarenlab: a notebook-native document store on SQLite.

>>> import jarenlab as jl
>>> from jarenlab import it, param
>>> model = {"$model": "0.1", "collections": {"notes": {"schema": {"type": "object",
...     "required": ["id"], "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}},
...     "key": "/id"}}}
>>> with jl.open(model=model) as store:
...     store["notes"].insert_many([{"id": "a", "n": 1}, {"id": "b", "n": 5}])
...     store["notes"].where(it.n > param("lo")).to_list(lo=2)
2
[{'id': 'b', 'n': 5}]
"""

from __future__ import annotations

from jarenlab.collection import Collection
from jarenlab.errors import (
    CODES,
    EventError,
    IdempotencyError,
    IntervalConflict,
    JarenlabError,
    JobError,
    LiveError,
    ModelError,
    PlanError,
    QueryError,
    StoreError,
    ValidationError,
)
from jarenlab.query import Expr, Query, agg, canonical, evaluate, it, key, param
from jarenlab.store import Store, open

__all__ = [
    "CODES",
    "Collection",
    "EventError",
    "Expr",
    "IdempotencyError",
    "IntervalConflict",
    "JarenlabError",
    "JobError",
    "LiveError",
    "ModelError",
    "PlanError",
    "QueryError",
    "StoreError",
    "ValidationError",
    "Query",
    "Store",
    "agg",
    "canonical",
    "evaluate",
    "it",
    "key",
    "open",
    "param",
]
