"""jarenlab: a notebook-native document store, embedded (SQLite) or shared (PostgreSQL).

May import: anything (the front door); it loads the store, the subsystems and pandas only when a
name needs them.

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

import importlib
from typing import TYPE_CHECKING, Any

from jarenlab.errors import (
    CODES,
    EventError,
    IdempotencyError,
    IntervalConflict,
    JarenlabError,
    JobError,
    LiveError,
    MigrationError,
    ModelError,
    PlanError,
    QueryError,
    QueryWarning,
    StoreError,
    ValidationError,
)
from jarenlab.moved import install as _install_moved
from jarenlab.query import Expr, Query, agg, canonical, evaluate, it, key, param, var, win

_install_moved()  # the module paths that moved keep importing, with a warning

if TYPE_CHECKING:
    from jarenlab.assembly import SUBSYSTEMS, open
    from jarenlab.collection import Collection
    from jarenlab.infer import infer_model
    from jarenlab.store import Store, Subsystem
    from jarenlab.typed import schema_of, types

#: Names loaded on first use, so ``import jarenlab`` (or the query language alone) loads no store,
#: no database driver and no subsystem until a store is opened.
_LAZY = {
    "open": "jarenlab.assembly",
    "SUBSYSTEMS": "jarenlab.assembly",
    "Store": "jarenlab.store",
    "Subsystem": "jarenlab.store",
    "Collection": "jarenlab.collection",
    "infer_model": "jarenlab.infer",
    "types": "jarenlab.typed",
    "schema_of": "jarenlab.typed",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jarenlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
    "MigrationError",
    "ModelError",
    "PlanError",
    "QueryError",
    "QueryWarning",
    "StoreError",
    "ValidationError",
    "Query",
    "Store",
    "SUBSYSTEMS",
    "Subsystem",
    "agg",
    "canonical",
    "evaluate",
    "infer_model",
    "it",
    "key",
    "open",
    "param",
    "schema_of",
    "types",
    "var",
    "win",
]
