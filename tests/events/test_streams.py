"""Streams: tail and resume with opaque cursors, committed-only reads, expiry, reopen, notebook views."""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any

import pandas as pd
import pytest

import jarenlab as jl
from jarenlab.errors import EventError
from jarenlab.events import Event, encode_cursor
from jarenlab.events.event import events_html

from .conftest import child_args


def emit(store: jl.Store, n: int, *, start: int = 0) -> list[Event]:
    return [store.events.emit("flight.delayed", {"flight": start + i, "minutes": i}) for i in range(n)]


def test_tail_yields_the_last_n_then_follows_new_commits(store: jl.Store) -> None:
    emit(store, 5)

    def later() -> None:
        time.sleep(0.05)
        emit(store, 3, start=100)

    writer = threading.Thread(target=later)
    writer.start()
    stream = store.events.tail(last=2, poll=5.0, timeout=10, until=lambda e: e.payload["flight"] == 102)
    started = time.monotonic()
    got = [e.payload["flight"] for e in stream]
    writer.join()
    assert got == [3, 4, 100, 101, 102]
    assert time.monotonic() - started < 4  # woken by the commit, not by the 5 s poll
    assert stream.stopped and stream.cursor == encode_cursor(8)


def test_tail_last_zero_follows_only_new_events_and_timeout_ends_it(store: jl.Store) -> None:
    emit(store, 3)
    stream = store.events.tail(last=0, poll=0.01, timeout=0.1)
    started = time.monotonic()
    assert list(stream) == []
    assert 0.09 <= time.monotonic() - started < 2
    assert stream.cursor == encode_cursor(3)


def test_tail_by_type_and_its_cursor(store: jl.Store) -> None:
    emit(store, 2)
    store.events.emit("flight.cancelled", {"flight": 9})
    emit(store, 2, start=10)
    stream = store.events.tail(last=5, type="flight.cancelled", follow=False)
    assert [e.seq for e in stream] == [3]
    assert stream.cursor == encode_cursor(5)  # it scanned past the later delays
    assert [e.seq for e in store.events.resume(stream.cursor)] == []


def test_streams_never_see_uncommitted_or_rolled_back_events(store: jl.Store) -> None:
    emit(store, 1)
    seen_inside: list[int] = []
    seen_elsewhere: list[int] = []
    with pytest.raises(RuntimeError), store.transaction():
        ev = store.events.emit("flight.delayed", {"flight": 50, "minutes": 1})
        assert ev.seq == 2
        seen_inside += [e.seq for e in store.events.resume()]  # same thread, inside the transaction
        other = threading.Thread(
            target=lambda: seen_elsewhere.extend(e.seq for e in store.events.tail(last=5, follow=False))
        )
        other.start()
        other.join()
        raise RuntimeError("roll back")
    assert seen_inside == [1] and seen_elsewhere == [1]
    assert [e.seq for e in store.events.resume()] == [1]


def test_resume_after_reopen(open_store: Any, model: dict[str, Any]) -> None:
    store = open_store(model)
    saved = emit(store, 3)[1].cursor
    store.close()
    store = open_store.reopen(store)
    emit(store, 2, start=10)
    got = [(e.seq, e.payload["flight"]) for e in store.events.resume(saved)]
    assert got == [(3, 2), (4, 10), (5, 11)]


@pytest.mark.parametrize(
    "cursor",
    ["", "garbage!", "djE6Mw==", "djE6MDM", "djI6Mw", "djE6LTE", "djE6", 3, None.__class__, "x" * 100],
)
def test_malformed_cursors_are_a_coded_error(store: jl.Store, cursor: Any) -> None:
    emit(store, 5)
    with pytest.raises(EventError) as err:
        store.events.resume(cursor)
    assert err.value.code == "JD2081"


def test_a_cursor_ahead_of_the_ledger_is_refused(store: jl.Store) -> None:
    emit(store, 2)
    with pytest.raises(EventError, match="ahead"):
        store.events.resume(encode_cursor(3))
    with pytest.raises(EventError, match="JD2081"):
        store.events.expire_history(through=encode_cursor(3))


def test_expiry_moves_forward_only_and_deletes_nothing(store: jl.Store, raw_count: Any) -> None:
    events = emit(store, 5)
    assert store.events.expire_history(through=events[2].cursor) == events[2].cursor
    assert store.events.expire_history(through=events[0]) == events[2].cursor  # moving back: a no-op
    assert store.events.expired_through() == events[2].cursor
    with pytest.raises(EventError) as err:
        store.events.resume(events[1].cursor)
    assert err.value.code == "JD2081" and "boundary #3" in err.value.reason
    assert [e.seq for e in store.events.resume(events[2].cursor)] == [4, 5]  # the boundary itself stays valid
    assert [e.seq for e in store.events.resume()] == [4, 5]
    assert [e.seq for e in store.events.tail(last=10, follow=False)] == [4, 5]
    assert list(store.events.frame().index) == [4, 5]
    assert raw_count(store, "_jl_events") == 5
    again = store.events.emit("flight.cancelled", {"flight": 1}, dedupe_key="kept")
    store.events.expire_history(through=again)
    assert store.events.emit("flight.cancelled", {"flight": 1}, dedupe_key="kept").deduplicated


def test_expiry_past_a_running_resume_raises_and_a_tail_skips(store: jl.Store) -> None:
    events = emit(store, 600)
    resumed = store.events.resume()
    tailing = store.events.tail(last=600, follow=False)
    assert next(resumed).seq == 1 and next(tailing).seq == 1
    store.events.expire_history(through=events[400])
    with pytest.raises(EventError, match="JD2081"):
        list(resumed)  # its next batch starts before the boundary
    rest = [e.seq for e in tailing]
    assert rest[:2] == [2, 3] and rest[-1] == 600  # the backlog was read before the expiry


def test_stop_and_close_end_a_following_stream(open_store: Any, model: dict[str, Any]) -> None:
    store = open_store(model)
    stream = store.events.tail(poll=30)
    threading.Timer(0.05, stream.stop).start()
    started = time.monotonic()
    assert list(stream) == [] and time.monotonic() - started < 5
    stream = store.events.tail(poll=30)
    closing = threading.Timer(0.05, store.close)
    closing.start()
    assert list(stream) == [] and time.monotonic() - started < 10
    closing.join()  # the store is closed before the fixture closes it again


def test_show_prints_events_outside_a_notebook(store: jl.Store, capsys: Any) -> None:
    emit(store, 2)
    assert store.events.tail(last=5, follow=False).show() == 2
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in lines] == ["#1", "#2"]
    page = events_html(store.events.tail(last=5, follow=False), title="t", note="n")
    assert page.count("<tr>") == 3 and "flight.delayed" in page
    assert "EventStream after" in repr(store.events.resume())


def test_frame(store: jl.Store) -> None:
    store.events.clock = lambda: 1_000.0
    emit(store, 3)
    store.events.clock = lambda: 2_000.0
    store.events.emit("flight.cancelled", {"flight": 7}, dedupe_key="c7")
    frame = store.events.frame()
    assert list(frame.index) == [1, 2, 3, 4] and frame.index.name == "seq"
    assert list(frame.columns) == [
        "type", "at", "payload", "outcome", "dedupe_key", "caused_by_job", "caused_by_attempt", "cursor",
    ]  # fmt: skip
    assert frame.loc[4, "dedupe_key"] == "c7" and frame.loc[4, "at"] == pd.Timestamp(
        2_000, unit="s", tz="UTC"
    )
    assert str(frame["caused_by_attempt"].dtype) == "Int64"
    assert list(store.events.frame("flight.cancelled").index) == [4]
    assert list(store.events.frame(since=encode_cursor(2)).index) == [3, 4]
    assert list(store.events.frame(since=dt.datetime(1970, 1, 1, 0, 30)).index) == [4]
    assert list(store.events.frame(limit=2).index) == [3, 4]
    flat = store.events.frame("flight.delayed", flatten=True)
    assert list(flat["payload.flight"]) == [0, 1, 2] and "payload" not in flat.columns
    assert store.events.frame("flight.delayed", since=encode_cursor(4)).empty


@pytest.mark.slow
def test_events_from_another_process_appear_by_polling(open_store: Any, model: dict[str, Any]) -> None:
    import subprocess
    import sys

    store = open_store(model)
    emit(store, 1)
    stream = store.events.tail(last=0, poll=0.05, timeout=30, until=lambda e: e.payload["flight"] == 2)
    script = (
        "import sys, jarenlab as jl\n"
        "with jl.open(sys.argv[1], schema=sys.argv[2] or None) as s:\n"
        "    for i in range(3): s.events.emit('flight.delayed', {'flight': i, 'minutes': 1})\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script, *child_args(open_store.target())])
    got = [(e.seq, e.payload["flight"]) for e in stream]
    assert child.wait(timeout=30) == 0
    assert got == [(2, 0), (3, 1), (4, 2)]


def test_show_updates_one_display_in_a_notebook(store: jl.Store, monkeypatch: Any) -> None:
    from jarenlab.events import stream as stream_module

    class Handle:
        def __init__(self) -> None:
            self.pages: list[str] = []

        def update(self, obj: Any) -> None:
            self.pages.append(obj._repr_html_())

    handle = Handle()
    monkeypatch.setattr(stream_module, "_display_handle", lambda: handle)
    emit(store, 3)
    assert store.events.tail(last=2, follow=False).show(rows=5) == 2
    assert handle.pages and handle.pages[-1].count("<tr>") == 3 and "2 shown" in handle.pages[-1]
    assert "ended" in handle.pages[-1]


@pytest.mark.needs("notify", "the emit's NOTIFY wakes a following stream")
def test_a_notification_wakes_a_following_stream_at_once(open_store: Any, model: dict[str, Any]) -> None:
    import subprocess
    import sys

    store = open_store(model)
    arrived: list[float] = []
    stream = store.events.tail(last=0, poll=30, timeout=30)
    follower = threading.Thread(target=lambda: arrived.extend(time.monotonic() for _ in stream))
    follower.start()
    time.sleep(0.3)  # the stream waits and the watcher listens
    script = (
        "import sys, time, jarenlab as jl\n"
        "with jl.open(sys.argv[1], schema=sys.argv[2] or None) as s:\n"
        "    s.events.emit('flight.delayed', {'flight': 1, 'minutes': 1})\n"
        "    print(time.monotonic(), flush=True)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, *child_args(open_store.target())],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    emitted = float(out.stdout.strip())
    deadline = time.monotonic() + 5
    while not arrived and time.monotonic() < deadline:
        time.sleep(0.005)
    stream.stop()
    follower.join(5)
    assert arrived and arrived[0] - emitted < 0.5  # not the 30 s poll
