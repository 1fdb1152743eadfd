"""The hub's log reads: the records after the last delivered seq and the high watermark come from
one snapshot, so commits landing between the two reads are never taken for a gap."""

from __future__ import annotations

from typing import Any

from .conftest import MODEL

ALL = {"$for": {"r": "$[*]"}, "$return": "$r.id"}


def _count_reseeds(hub: Any) -> list[int]:
    """The watermarks the hub re-seeds at, as it does."""
    reseeds: list[int] = []
    reseed = hub._reseed_all

    def counted(high: int) -> None:
        reseeds.append(high)
        reseed(high)

    hub._reseed_all = counted
    return reseeds


def test_commits_between_the_log_read_and_the_watermark_are_not_a_gap(open_store: Any) -> None:
    a = open_store(MODEL)
    b = open_store.reopen(a, MODEL)  # another writer of the same store (as another process is)
    hub = a.changes
    hub.poll_interval = 3600  # drive delivery by hand (the poller still wakes on a commit)
    live = a["items"].live(ALL)
    reseeds = _count_reseeds(hub)
    real_read = hub.log.read
    b.changes.log.retention = 2  # b prunes behind every commit it makes

    def read_then_commit(db: Any, *, after: int, limit: int = 1000) -> list[Any]:
        records = real_read(db, after=after, limit=limit)
        for i in range(4):  # land between this read and the watermark read, pruning past `after`
            b["items"].put({"id": f"late{i}"})
        return records

    # Under the lock throughout: the poller (woken by any commit, b's opening included) must not
    # drain with the patched read, nor between the two drains and their checks.
    with hub.lock:
        hub.log.read = read_then_commit  # type: ignore[method-assign]
        hub._drain(check_log=True)
        hub.log.read = real_read  # type: ignore[method-assign]
        # One snapshot: the drain saw nothing after its seq and no watermark past it, so nothing
        # happened. Read apart, the bounds saw the late commits past a pruned seq: a re-seed.
        assert reseeds == [] and live.rows == []
        hub._drain(check_log=True)
        # Now the log really misses the seqs after it (b pruned them): one re-seed, from a fresh run.
        assert len(reseeds) == 1 and live.rows == ["late0", "late1", "late2", "late3"]


def test_a_burst_from_another_writer_arrives_without_a_reseed(open_store: Any) -> None:
    a = open_store(MODEL)
    b = open_store.reopen(a, MODEL)
    hub = a.changes
    reseeds = _count_reseeds(hub)
    live = a["items"].live(ALL)
    for i in range(300):
        b["items"].put({"id": f"b{i:03}"})
        if i % 3 == 0:
            a["items"].put({"id": f"a{i:03}"})
    with hub.lock:
        hub._drain(check_log=True)
    assert reseeds == []
    assert sorted(live.rows) == sorted(
        [f"b{i:03}" for i in range(300)] + [f"a{i:03}" for i in range(0, 300, 3)]
    )
