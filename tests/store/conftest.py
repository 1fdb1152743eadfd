"""Fixtures the many-to-many tests share: ``statements`` counts the statements a test runs on the
store its module's ``linked`` fixture seeds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def statements(linked: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    seen: list[str] = []
    query = linked.db.query

    def counted(sql: str, params: Any) -> Any:
        seen.append(sql)
        return query(sql, params)

    monkeypatch.setattr(linked.db, "query", counted)
    yield seen
