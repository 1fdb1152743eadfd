"""The declared non-overlap constraint on intervals (declarations are checked with the model)."""

from __future__ import annotations

from typing import Any

from jarenlab.errors import ModelError


def check_declarations(decls: list[Any], schema: dict[str, Any], owner: str | None, doc_path: str) -> tuple[Any, ...]:
    """Check a collection's ``intervals`` declarations (none are supported yet)."""
    if decls:
        raise ModelError("JD0005", "intervals are not supported yet", doc_path=doc_path)
    return ()


def index_statements(spec: object) -> list[tuple[str, str]]:
    """(name, CREATE INDEX) for the partial index of each interval declaration (none yet)."""
    return []
