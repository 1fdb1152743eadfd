"""The conformance corpus: query cases as data files, one loader for every path.

Each ``corpus/*.json`` file holds ``{"cases": [...]}`` and may name shared inputs in
``_datasets.json``. A case is ``{"name", "query" | "where", "data"?, "externals"?,
"expected" | "error", "doc_path"?, "operators"?, "limits"?, "allowed_externals"?}``:

- ``data`` is the root ``$`` (a list of documents) or the name of a shared dataset;
  absent means ``[]``.
- ``where`` is shorthand for ``{"$for": {"it": "$[*]"}, "$where": <where>,
  "$return": "$it.id"}`` (the ids of the matching documents, in order).
- ``expected`` is the flat result sequence; numbers compare with their type, so
  ``2`` and ``2.0`` differ (the engine keeps ints as ints).
- ``operators`` names host operators from :data:`HOST_OPERATORS`.

Other test suites (the planner's differential tests) reuse :func:`load_cases`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "corpus"


def _boom(*args: Any) -> Any:
    raise RuntimeError("boom")


#: host operators a case may register by name.
HOST_OPERATORS: dict[str, Callable[..., Any]] = {
    "twice": lambda x: x * 2,
    "total": lambda xs: sum(xs),
    "boom": _boom,
}


@dataclass(frozen=True)
class Case:
    """One corpus case."""

    name: str
    group: str
    query: Any
    data: Any
    externals: dict[str, Any] | None
    expected: list[Any] | None
    error: str | None
    doc_path: str | None = None
    operators: dict[str, Callable[..., Any]] = field(default_factory=dict)
    limits: dict[str, int] = field(default_factory=dict)
    allowed_externals: frozenset[str] | None = None


def _expand(raw: dict[str, Any]) -> Any:
    if "where" in raw:
        return {"$for": {"it": "$[*]"}, "$where": raw["where"], "$return": "$it.id"}
    return raw["query"]


def load_cases(directory: Path = CORPUS) -> Iterator[Case]:
    """Yield every case of every corpus file, in file then case order."""
    datasets = json.loads((directory / "_datasets.json").read_text(encoding="utf-8"))
    for path in sorted(directory.glob("*.json")):
        if path.name.startswith("_"):
            continue
        for raw in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            data = raw.get("data", [])
            if isinstance(data, str):
                data = datasets[data]
            allowed = raw.get("allowed_externals")
            yield Case(
                name=f"{path.stem}/{raw['name']}",
                group=path.stem,
                query=_expand(raw),
                data=data,
                externals=raw.get("externals"),
                expected=raw.get("expected"),
                error=raw.get("error"),
                doc_path=raw.get("doc_path"),
                operators={n: HOST_OPERATORS[n] for n in raw.get("operators", [])},
                limits=raw.get("limits", {}),
                allowed_externals=frozenset(allowed) if allowed is not None else None,
            )


def same(a: Any, b: Any) -> bool:
    """Deep equality that also tells ``int`` from ``float`` and ``bool`` from numbers."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)
