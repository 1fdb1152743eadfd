"""Migrations: evolve a store's model in one visible, all-or-nothing transaction.

May import: the store, collections, the model and the interval check (a subsystem).

``store.migrate(new_model, dry_run=True)`` shows the plan (steps, documents affected, the
violations the new model would refuse) and changes nothing; ``store.migrate(new_model,
transforms={"flights": fn})`` carries it out; ``store.migrations()`` is the history.

- :mod:`jarenlab.migrations.plan`: the difference between two models, as steps (pure).
- :mod:`jarenlab.migrations.migration`: :class:`Migration`, the result a notebook shows.
- :mod:`jarenlab.migrations.runner`: the transaction that carries a plan out, and the history.

The DDL of each step comes from the store's backend (:meth:`jarenlab.backends.base.Backend.alter`);
the history table is the backend's ``migrations`` catalogue.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"notes": {"key": "/id", "schema": {"type": "object",
...     "required": ["id"], "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}}}}}
>>> with jl.open(model=model) as store:
...     store["notes"].insert_many([{"id": "a", "n": 1}, {"id": "b", "n": 2}])
...     evolved = {**model, "version": 2}
...     evolved["collections"] = {"notes": {**model["collections"]["notes"],
...         "indexes": [{"name": "by_n", "path": "$.n"}]}}
...     store.migrate(evolved, dry_run=True).to_frame()[["kind", "detail", "documents"]]
...     store.migrate(evolved, progress=False)
...     store.migrations()[["to_version", "steps", "documents"]]
2
        kind       detail  documents
0  add index  by_n on $.n          2
1    version    none -> 2       <NA>
<jarenlab.Migration applied: 2 steps, 0 documents rewritten, 0 violations>
   to_version                     steps  documents
0           2  add index notes; version          0
"""

from __future__ import annotations

from jarenlab.lazy import exports

__getattr__ = exports(
    __name__,
    {
        "Migration": "jarenlab.migrations.migration",
        "Migrator": "jarenlab.migrations.runner",
        "Plan": "jarenlab.migrations.plan",
        "Step": "jarenlab.migrations.plan",
        "make_plan": "jarenlab.migrations.plan",
    },
)

__all__ = ["Migration", "Migrator", "Plan", "Step", "make_plan"]
