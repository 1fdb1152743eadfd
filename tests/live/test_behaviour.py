"""Delivery, bounds, identity, re-seeding after log gaps, other stores on the file, close."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from jarenlab.errors import LiveError

from .conftest import MODEL, fresh

TOP = {
    "$subsequence": [
        {"$for": {"r": "$[*]"}, "$orderby": {"$key": "$r.n", "$dir": "desc"}, "$return": "$r"},
        0,
        3,
    ]
}


def _fill(coll: Any, n: int) -> None:
    coll.insert_many([{"id": f"k{i:03}", "n": i, "g": "ab"[i % 2]} for i in range(n)])


def test_unchanged_rows_keep_identity_and_deletes_slide_in(store: Any) -> None:
    coll = store["items"]
    _fill(coll, 10)
    live = coll.live(TOP)
    first = list(live.rows)
    seen: list[Any] = []
    live.subscribe(lambda patch, seq: seen.append(patch))
    coll.put({"id": "k000", "n": -5})  # far below the window: no emission
    assert seen == [] and all(a is b for a, b in zip(first, live.rows))
    coll.delete("k008")  # inside the window: the next row slides in
    assert [r["n"] for r in live.rows] == [9, 7, 6]
    assert live.rows[0] is first[0] and live.rows[1] is first[2]
    assert seen == [
        [{"op": "remove", "path": "/rows/1"}, {"op": "add", "path": "/rows/2", "value": live.rows[2]}]
    ]


def test_ties_break_by_key_in_code_point_order(store: Any) -> None:
    coll = store["items"]
    for key in ["b", "é", "B", "a", "😀"]:
        coll.put({"id": key, "n": 1})
    live = coll.live(
        {"$for": {"r": "$[*]"}, "$orderby": {"$key": "$r.n", "$dir": "desc"}, "$return": "$r.id"}
    )
    assert live.rows == ["B", "a", "b", "é", "😀"]


def test_subscriber_that_writes_does_not_recurse(store: Any) -> None:
    coll = store["items"]
    live = coll.live({"$count": "$[*]"})
    calls: list[tuple[int, Any]] = []
    depth = [0]

    def writer(patch: Any, seq: int) -> None:
        depth[0] += 1
        assert depth[0] == 1, "re-entered"
        calls.append((seq, live.rows[0]))
        if live.rows[0] < 3:
            coll.insert({"id": f"w{live.rows[0]}"})
        depth[0] -= 1

    live.subscribe(writer)
    coll.insert({"id": "start"})
    assert [c[1] for c in calls] == [1, 2, 3]
    assert [c[0] for c in calls] == sorted(c[0] for c in calls)


def test_maintained_bound_closes_with_a_coded_error(store: Any) -> None:
    store.changes.max_maintained = 5
    coll = store["items"]
    _fill(coll, 4)
    live = coll.live(TOP)
    errors: list[Any] = []
    live.subscribe(lambda patch, seq: None, on_error=errors.append)
    _fill_more = [{"id": f"z{i}", "n": 100 + i} for i in range(2)]
    coll.insert_many(_fill_more)
    assert [e.code for e in errors] == ["JD2060"] and live.closed and live.error is errors[0]
    with pytest.raises(LiveError) as err:
        live.subscribe(lambda patch, seq: None)
    assert err.value.code == "JD2127"


def test_query_bound(store: Any) -> None:
    store.changes.max_queries = 2
    lives = [store["items"].live({"$count": "$[*]"}) for _ in range(2)]
    with pytest.raises(LiveError) as err:
        store["items"].live({"$count": "$[*]"})
    assert err.value.code == "JD0052"
    lives[0].close()
    assert store["items"].live({"$count": "$[*]"}).rows == [0]


def test_gap_past_retention_and_compact_records_reseed(open_store: Any) -> None:
    a = open_store(MODEL)
    b = open_store.reopen(a, MODEL)
    a.changes.poll_interval = 3600  # drive delivery by hand
    live = a["items"].live(TOP)
    b.changes.log.retention = 3
    for i in range(10):
        b["items"].put({"id": f"r{i}", "n": i})
    with pytest.raises(LiveError) as err:
        a.changes.read(after=1)
    assert err.value.code == "JD2128"
    with a.changes.lock:
        a.changes._drain(check_log=True)
    assert live.rows == fresh(a["items"], TOP, {}, windowed=True) and len(live.rows) == 3
    b.changes.log.inline_limit = 2
    b["items"].insert_many([{"id": f"s{i}", "n": 50 + i} for i in range(5)])
    assert a.changes.read(after=a.changes.bounds()[1] - 1)[0].changes is None  # compact
    with a.changes.lock:
        a.changes._drain(check_log=True)
    assert [r["n"] for r in live.rows] == [54, 53, 52]


def test_a_gap_is_a_pruned_next_record_not_a_commit_that_just_landed(store: Any) -> None:
    # A reader's empty read followed by a commit is not a gap: only a pruned next record is.
    log, db = store.changes.log, store.db
    for i in range(3):
        store["items"].put({"id": f"r{i}"})
    assert not log.pruned(db, 3) and not log.pruned(db, 2)  # nothing after 3; 3 is held
    log.retention = 1
    for i in range(64):
        store["items"].put({"id": f"p{i}"})
    lo, _ = log.bounds(db)
    assert lo > 2 and log.pruned(db, 1) and not log.pruned(db, lo - 1)
    assert store.changes.read(after=lo - 1)[0].seq == lo


def test_close_stops_queries_and_poller(open_store: Any) -> None:
    s = open_store(MODEL)
    live = s["items"].live({"$count": "$[*]"})
    poller = s.changes._poller
    assert poller is not None and poller.is_alive()
    s.close()
    assert live.closed and not poller.is_alive()


def test_close_stops_a_sleeping_poller_at_once_and_closes_its_watch(
    open_store: Any, monkeypatch: Any
) -> None:
    s = open_store(MODEL)
    s.changes.poll_interval = 3600
    watches: list[Any] = []
    real = s.db.watch

    class Spy:
        def __init__(self, interval: float) -> None:
            self.watch, self.closed = real(interval), False
            watches.append(self)

        def wait(self, timeout: float) -> bool:
            return bool(self.watch.wait(timeout))

        def close(self) -> None:
            self.closed = True
            self.watch.close()

    monkeypatch.setattr(s.db, "watch", Spy)
    s["items"].live({"$count": "$[*]"})
    poller = s.changes._poller
    assert poller is not None and poller.is_alive()
    deadline = time.monotonic() + 5
    while not watches and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    s.close()
    assert time.monotonic() - started < 1.0 and not poller.is_alive()
    assert len(watches) == 1 and watches[0].closed


def _write_elsewhere(target: dict[str, Any], doc: dict[str, Any]) -> float:
    """Insert ``doc`` into items from another process; the monotonic time it committed."""
    script = textwrap.dedent(f"""
        import time, jarenlab as jl
        s = jl.open({str(target["path"])!r}, schema={target.get("schema")!r})
        s["items"].insert({doc!r})
        print(time.monotonic(), flush=True)
        s.close()
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return float(out.stdout.strip())


def _arrival(live: Any) -> list[float]:
    arrived: list[float] = []
    live.subscribe(lambda patch, seq: arrived.append(time.monotonic()))
    return arrived


def _wait_for(arrived: list[float], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not arrived and time.monotonic() < deadline:
        time.sleep(0.005)


@pytest.mark.slow
def test_another_process_write_arrives_within_a_second(open_store: Any) -> None:
    store = open_store(MODEL)
    live = store["items"].live(TOP)
    arrived = _arrival(live)
    wrote = _write_elsewhere(open_store.target(), {"id": "remote", "n": 1000})
    _wait_for(arrived, 1.0)
    assert arrived and arrived[0] - wrote < 1.0
    assert live.rows[0]["id"] == "remote"


@pytest.mark.needs("notify", "NOTIFY wakes the poller")
def test_a_notification_wakes_the_poller_at_once(open_store: Any) -> None:
    store = open_store(MODEL)
    store.changes.poll_interval = 3600  # no polling to speak of: only the NOTIFY can wake it
    live = store["items"].live(TOP)
    arrived = _arrival(live)
    time.sleep(0.2)  # the poller is listening
    wrote = _write_elsewhere(open_store.target(), {"id": "remote", "n": 1000})
    _wait_for(arrived, 2.0)
    assert arrived and arrived[0] - wrote < 0.5
    assert live.rows[0]["id"] == "remote"


@pytest.mark.needs("notify", "NOTIFY turned off: the poller polls")
def test_without_notify_the_poller_polls_and_writers_send_nothing(open_store: Any) -> None:
    import psycopg

    target = open_store.target()
    store = open_store(MODEL, notify=False)
    store.changes.poll_interval = 0.05
    live = store["items"].live(TOP)
    arrived = _arrival(live)
    with psycopg.connect(str(target["path"]), autocommit=True) as listener:
        listener.execute(f'LISTEN "{store.backend.channel("live")}"')
        wrote = _write_elsewhere(target, {"id": "remote", "n": 1000})  # notify on: it sends one
        assert len(list(listener.notifies(timeout=2.0, stop_after=1))) == 1
        _wait_for(arrived, 2.0)
        assert arrived and arrived[0] - wrote < 0.5 and live.rows[0]["id"] == "remote"
        store["items"].insert({"id": "local", "n": 2000})  # notify off: it sends none
        assert list(listener.notifies(timeout=0.3)) == []
    assert live.rows[0]["id"] == "local"
