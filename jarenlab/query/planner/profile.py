"""The safe profile: bounds for query documents you did not write (tenants, language models).

- **engine limits** (items, steps, depth) apply to every residual run;
- a **row bound**: every non-aggregate fetch reads at most ``max_rows + 1`` rows, and going
  over refuses the whole result with ``JD2007`` (never a truncated answer);
- **allow-lists** for collections, externals and host operators (``JD0011``); no UDFs;
- **mandatory predicates** per collection, ANDed into every statement the planner runs
  (native, residual candidates, diverted runs, ``pushdown=False``); each must translate
  natively, else the profile is refused when first used;
- optional **full-scan refusal**, read from the database's own plan (SQLite's ``EXPLAIN QUERY
  PLAN``, PostgreSQL's ``EXPLAIN (FORMAT JSON)``; the dialect says which plan rows scan a table
  whole: ``SCAN t``, a ``Seq Scan`` on ``t``).

A per-call profile replaces the store's profile; it does not merge.

>>> p = Profile(max_rows=10, mandatory={"notes": {"$eq": ["$it.tag", "a"]}})
>>> p.key()
'{"collections":null,"externals":[],"limits":{"depth":32,"result_items":10000,"sequence_items":100000,"steps":1000000},"mandatory":{"notes":"{\\\\"$eq\\\\":[\\\\"$it.tag\\\\",\\\\"a\\\\"]}"},"max_rows":10,"operators":[],"refuse_full_scan":false}'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jarenlab.arguments import is_count
from jarenlab.errors import PlanError, StoreError
from jarenlab.query.lang.document import canonical

DEFAULT_LIMITS: Mapping[str, int] = {
    "sequence_items": 100_000,
    "result_items": 10_000,
    "steps": 1_000_000,
    "depth": 32,
}


@dataclass(frozen=True)
class Profile:
    """Bounds for untrusted documents; pass ``jl.open(..., profile=Profile(...))`` or per call."""

    max_rows: int = 1000
    limits: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    collections: frozenset[str] | None = None
    externals: frozenset[str] = frozenset()
    operators: frozenset[str] = frozenset()
    mandatory: Mapping[str, Any] = field(default_factory=dict)
    refuse_full_scan: bool = False

    def __post_init__(self) -> None:
        if not is_count(self.max_rows):
            raise StoreError("JD0006", f"max_rows must be an integer >= 0, not {self.max_rows!r}")
        for name in ("collections", "externals", "operators"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, frozenset):
                object.__setattr__(self, name, frozenset(value))

    def key(self) -> str:
        """The profile's complete canonical text (part of the statement-cache key)."""
        return json.dumps(
            {
                "max_rows": self.max_rows,
                "limits": dict(sorted(self.limits.items())),
                "collections": None if self.collections is None else sorted(self.collections),
                "externals": sorted(self.externals),
                "operators": sorted(self.operators),
                "mandatory": {k: canonical(v) for k, v in sorted(self.mandatory.items())},
                "refuse_full_scan": self.refuse_full_scan,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )

    def check(self, collection: str, externals: frozenset[str], host_operators: set[str]) -> None:
        """Refuse (JD0011) a collection, external or host operator outside the allow-lists."""
        if self.collections is not None and collection not in self.collections:
            raise PlanError(
                "JD0011", f"the profile does not allow collection {collection!r}", collection=collection
            )
        extra = sorted(externals - self.externals)
        if extra:
            raise PlanError(
                "JD0011", f"the profile does not allow external ${extra[0]}", collection=collection
            )
        ops = sorted(host_operators - self.operators)
        if ops:
            raise PlanError(
                "JD0011", f"the profile does not allow host operator ${ops[0]}", collection=collection
            )
