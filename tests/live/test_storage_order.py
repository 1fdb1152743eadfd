"""Storage order comes from the backend: the maintainers' positions reproduce the order it scans in."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab.live.strategies import Positions


def _writes(keys: list[Any]) -> list[tuple[str, Any]]:
    """Keys inserted out of key order, then an update of the first and a delete and re-insert of
    the second: key order, insertion order and "an update moves a row" all end differently."""
    first, second, _ = keys
    return [*[("put", k) for k in keys], ("put", first), ("delete", second), ("put", second)]


@pytest.mark.parametrize("name", ["items", "nums"])
def test_positions_follow_the_backend_scan(store: Any, name: str) -> None:
    coll = store[name]
    positions = Positions(coll.storage_order)
    alive: set[Any] = set()
    for n, (op, key) in enumerate(_writes(["c", "a", "b"] if name == "items" else [30, 10, 20])):
        if op == "delete":
            assert coll.delete(key)
            positions.forget(key)
            alive.discard(key)
        else:
            if name == "items":
                coll.put({"id": key, "n": n})
            else:
                coll.put({"n": n}, key)
            positions.of(key)
            alive.add(key)
    assert coll.keys() == sorted(alive, key=positions.of)
