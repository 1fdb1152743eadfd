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


@pytest.mark.needs("concurrent_writers", "two writers' transactions interleave only on a server")
def test_rows_keep_storage_order_when_writers_commit_out_of_order(store: Any) -> None:
    """Writer A inserts first (its row takes the earlier storage position) but commits after
    writer B: a live ``rows`` query shows the rows in storage order, as a fresh run does (it showed
    them in commit order)."""
    import threading

    from jarenlab import it
    from tests.waiting import wait_for

    items = store["items"]
    items.insert({"id": "m", "n": 0})
    live = items.where(it.n >= 0).live()
    try:
        inserted, go = threading.Event(), threading.Event()

        def writer_a() -> None:
            with store.transaction():
                items.insert({"id": "a", "n": 1})
                inserted.set()
                assert go.wait(30)

        thread = threading.Thread(target=writer_a)
        thread.start()
        assert inserted.wait(30)
        items.insert({"id": "b", "n": 2})  # writer B commits first
        go.set()
        thread.join(30)
        fresh = items.where(it.n >= 0).to_list()
        assert [d["id"] for d in fresh] == ["m", "a", "b"]  # storage order: a took its place first
        wait_for(lambda: len(live.rows) == 3, 30, what="both commits in the live query")
        assert live.rows == fresh
    finally:
        live.close()
