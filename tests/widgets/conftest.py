"""Widget fixtures: ``live_store``, the live tests' store (a text-keyed ``items`` collection)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.live.conftest import MODEL


@pytest.fixture
def live_store(open_store: Any) -> Any:
    """A store with the live tests' collections (``items``: text keys)."""
    return open_store(MODEL)
