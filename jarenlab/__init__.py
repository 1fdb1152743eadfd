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

import os
from typing import Any

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
from jarenlab.store import OPTIONS, Store, Subsystem

# The composition root: each subsystem registers its tables, statements and object with a store.
from jarenlab import events, idempotency, jobs, live, owner, stats  # noqa: E402  isort: skip

#: What :func:`open` registers with every store, in this order.
SUBSYSTEMS: tuple[Subsystem, ...] = (
    live.SUBSYSTEM,
    jobs.SUBSYSTEM,
    events.SUBSYSTEM,
    idempotency.SUBSYSTEM,
    owner.SUBSYSTEM,
    stats.SUBSYSTEM,
)


def open(
    path: str | os.PathLike[str] | None = None,
    model: dict[str, Any] | None = None,
    **options: Any,
) -> Store:
    """Open (or create) a store.

    ``open("lab.db", model)`` creates the file or verifies it against the model;
    ``open("lab.db")`` opens an existing store with its stored model; ``open(model=model)``
    makes a fresh file in a temporary folder that is removed on ``close()``.
    Options: ``read_only``, ``busy_timeout`` (seconds), ``queue_timeout``, ``operators``,
    ``profile`` (a :class:`jarenlab.query.profile.Profile`), ``statement_cache`` (entries).
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise StoreError("JD0006", f"unknown option {unknown[0]!r} (options: {', '.join(OPTIONS)})")
    return Store(path, model, subsystems=SUBSYSTEMS, **options)

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
    "SUBSYSTEMS",
    "Subsystem",
    "agg",
    "canonical",
    "evaluate",
    "it",
    "key",
    "open",
    "param",
]
