"""Emitting events: validation, handlers in the same transaction, outcomes, atomicity, dedupe."""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import EventError, StoreError
from jarenlab.events import Event, decode_cursor

from .conftest import child_args


def test_emit_returns_the_stored_event_with_a_cursor(store: jl.Store) -> None:
    store.events.clock = lambda: 1_357_000_000.25
    ev = store.events.emit("flight.delayed", {"flight": 1545, "minutes": 40})
    assert isinstance(ev, Event)
    assert (ev.seq, ev.type, ev.payload, ev.dedupe_key, ev.outcome) == (
        1,
        "flight.delayed",
        {"flight": 1545, "minutes": 40},
        None,
        None,
    )
    assert ev.at == dt.datetime(2013, 1, 1, 0, 26, 40, 250000, tzinfo=dt.UTC)
    assert decode_cursor(ev.cursor) == 1 and not ev.deduplicated
    assert ev["payload"]["minutes"] == 40 and ev.to_dict()["cursor"] == ev.cursor
    assert [e.to_dict() for e in store.events.resume()] == [ev.to_dict()]


def test_global_order_across_types(store: jl.Store) -> None:
    emitted = [
        store.events.emit("flight.delayed" if i % 3 else "flight.cancelled", {"flight": i, "minutes": i})
        for i in range(10)
    ]
    assert [e.seq for e in emitted] == list(range(1, 11))
    assert [(e.seq, e.payload["flight"]) for e in store.events.resume()] == [
        (e.seq, i) for i, e in enumerate(emitted)
    ]


def test_undeclared_type_is_refused_on_emit_and_on_register(store: jl.Store, raw_count: Any) -> None:
    with pytest.raises(EventError) as err:
        store.events.emit("flight.landed", {})
    assert err.value.code == "JD2080" and "flight.delayed" in err.value.reason
    with pytest.raises(EventError, match="JD2080"):
        store.events.on("flight.landed")
    assert raw_count(store, "_jl_events") == 0


def test_invalid_payload_carries_every_validator_message(store: jl.Store, raw_count: Any) -> None:
    with pytest.raises(EventError) as err:
        store.events.emit("flight.delayed", {"flight": "1545", "minutes": -3, "extra": 1})
    e = err.value
    assert e.code == "JD2080"
    assert len(e.errors) == 3
    assert any(m.startswith("/flight:") and "integer" in m for m in e.errors)
    assert any(m.startswith("/minutes:") and "minimum" in m for m in e.errors)
    assert any("extra" in m for m in e.errors)
    assert raw_count(store, "_jl_events") == 0


def test_unrepresentable_payload_is_event_invalid(store: jl.Store) -> None:
    with pytest.raises(EventError) as err:
        store.events.emit("flight.cancelled", {"flight": 1, "why": float("nan")})
    assert err.value.code == "JD2080" and err.value.__cause__ is not None


def test_handlers_run_in_order_inside_the_transaction_and_return_an_outcome(store: jl.Store) -> None:
    calls: list[str] = []

    @store.events.on("flight.delayed")
    def record(event: Event, st: jl.Store) -> None:
        assert st.in_transaction
        calls.append("record")
        st["delays"].insert(event.payload)

    @store.events.on("flight.delayed")
    def decide(event: Event, st: jl.Store) -> dict[str, Any]:
        calls.append("decide")
        return {"rebook": event.payload["minutes"] > 30, "stored": st["delays"].count()}

    ev = store.events.emit("flight.delayed", {"flight": 1545, "minutes": 40})
    assert calls == ["record", "decide"]
    assert ev.outcome == {"rebook": True, "stored": 1}
    assert store["delays"].to_list() == [{"flight": 1545, "minutes": 40}]
    assert next(iter(store.events.resume())).outcome == ev.outcome


def test_a_failing_handler_leaves_no_trace(store: jl.Store, raw_count: Any) -> None:
    @store.events.on("flight.delayed")
    def record(event: Event, st: jl.Store) -> None:
        st["delays"].insert(event.payload)

    @store.events.on("flight.delayed")
    def explode(event: Event, st: jl.Store) -> None:
        raise KeyError("no crew")

    with pytest.raises(KeyError) as err:
        store.events.emit("flight.delayed", {"flight": 1, "minutes": 5}, dedupe_key="k1")
    assert any("explode" in note for note in err.value.__notes__)
    assert raw_count(store, "_jl_events") == 0 and raw_count(store, "delays") == 0
    assert list(store.events.resume()) == []
    store.events.off("flight.delayed", explode)
    ev = store.events.emit("flight.delayed", {"flight": 1, "minutes": 5}, dedupe_key="k1")
    assert not ev.deduplicated and store["delays"].count() == 1


def test_a_failing_emit_inside_a_transaction_rolls_back_only_its_own_level(store: jl.Store) -> None:
    @store.events.on("flight.cancelled")
    def refuse(event: Event, st: jl.Store) -> None:
        st["delays"].insert({"flight": event.payload["flight"], "minutes": 0})
        raise RuntimeError("refused")

    with store.transaction():
        store["delays"].insert({"flight": 7, "minutes": 1})
        with pytest.raises(RuntimeError):
            store.events.emit("flight.cancelled", {"flight": 8})
        kept = store.events.emit("flight.delayed", {"flight": 9, "minutes": 2})
    assert [d["flight"] for d in store["delays"].to_list()] == [7]
    assert [e.seq for e in store.events.resume()] == [kept.seq]


def test_two_outcomes_or_a_non_json_outcome_are_refused(store: jl.Store, raw_count: Any) -> None:
    store.events.on("flight.cancelled")(lambda ev, st: {"a": 1})
    store.events.on("flight.cancelled")(lambda ev, st: {"b": 2})
    with pytest.raises(EventError) as err:
        store.events.emit("flight.cancelled", {"flight": 1})
    assert err.value.code == "JD2082"
    store.events.off("flight.cancelled")
    store.events.on("flight.cancelled")(lambda ev, st: {1, 2})
    with pytest.raises(EventError, match="JD2082"):
        store.events.emit("flight.cancelled", {"flight": 1})
    assert raw_count(store, "_jl_events") == 0


def test_a_repeated_dedupe_key_returns_the_original_and_runs_nothing(store: jl.Store, raw_count: Any) -> None:
    runs: list[int] = []

    @store.events.on("flight.delayed")
    def record(event: Event, st: jl.Store) -> dict[str, int]:
        runs.append(event.seq)
        st["delays"].insert(event.payload)
        return {"run": len(runs)}

    first = store.events.emit("flight.delayed", {"flight": 1, "minutes": 5}, dedupe_key="d-1")
    again = store.events.emit("flight.delayed", {"flight": 1, "minutes": 99}, dedupe_key="d-1")
    assert again.deduplicated and again == first and again.payload["minutes"] == 5
    assert again.outcome == {"run": 1} and runs == [1]
    assert store["delays"].count() == 1 and raw_count(store, "_jl_events") == 1
    with pytest.raises(EventError) as err:
        store.events.emit("flight.cancelled", {"flight": 1}, dedupe_key="d-1")
    assert err.value.code == "JD2080" and "flight.delayed" in err.value.reason
    with pytest.raises(StoreError, match="JD2010"):
        store.events.emit("flight.cancelled", {"flight": 1}, dedupe_key="")


def test_dedupe_under_concurrent_threads_has_one_winner(store: jl.Store, raw_count: Any) -> None:
    runs: list[int] = []
    store.events.on("flight.delayed")(lambda ev, st: runs.append(ev.seq) or {"winner": ev.payload["flight"]})
    barrier = threading.Barrier(8)
    results: list[Event] = []
    lock = threading.Lock()

    def emit(i: int) -> None:
        barrier.wait()
        ev = store.events.emit("flight.delayed", {"flight": i, "minutes": 1}, dedupe_key="same")
        with lock:
            results.append(ev)

    threads = [threading.Thread(target=emit, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(runs) == 1 and len({e.seq for e in results}) == 1
    assert sum(not e.deduplicated for e in results) == 1
    winner = next(e for e in results if not e.deduplicated)
    assert all(e.outcome == {"winner": winner.payload["flight"]} for e in results)
    assert raw_count(store, "_jl_events") == 1


def test_handlers_may_emit_further_events(store: jl.Store) -> None:
    @store.events.on("flight.delayed")
    def cascade(event: Event, st: jl.Store) -> dict[str, int] | None:
        if event.payload["minutes"] > 120:
            return {
                "cancelled_as": st.events.emit("flight.cancelled", {"flight": event.payload["flight"]}).seq
            }
        return None

    ev = store.events.emit("flight.delayed", {"flight": 3, "minutes": 200})
    assert ev.outcome == {"cancelled_as": 2}
    assert [(e.seq, e.type) for e in store.events.resume()] == [
        (1, "flight.delayed"),
        (2, "flight.cancelled"),
    ]


def test_re_registering_a_top_level_handler_replaces_it(store: jl.Store) -> None:
    def first(event: Event, st: jl.Store) -> str:
        return "old"

    def second(event: Event, st: jl.Store) -> str:
        return "new"

    first.__qualname__ = second.__qualname__ = "handle"  # what re-running a notebook cell looks like
    store.events.on("flight.cancelled")(first)
    store.events.on("flight.cancelled")(second)
    assert store.events.handlers("flight.cancelled") == [second]
    assert store.events.emit("flight.cancelled", {"flight": 1}).outcome == "new"
    store.events.on("flight.cancelled")(lambda ev, st: None)
    store.events.on("flight.cancelled")(lambda ev, st: None)
    assert len(store.events.handlers("flight.cancelled")) == 3
    assert store.events.off("flight.cancelled") == 3 and store.events.handlers("flight.cancelled") == []


def test_repr_and_html(store: jl.Store) -> None:
    ev = store.events.emit("flight.delayed", {"flight": 1545, "minutes": 40}, dedupe_key="x")
    text = repr(ev)
    assert text.startswith(
        '<Event #1 flight.delayed {"flight":1545,"minutes":40} key=\'x\''
    ) and text.endswith("Z>")
    page = ev._repr_html_()
    assert "flight.delayed" in page and "1545" in page and "<table>" in page
    assert "flight.delayed" in store.events._repr_html_() and "2 types" in repr(store.events)


@pytest.mark.slow
def test_dedupe_across_processes_has_one_winner(
    open_store: Any, model: dict[str, Any], raw_count: Any
) -> None:
    import subprocess
    import sys

    store = open_store(model)
    script = (
        "import sys, time, jarenlab as jl\n"
        "with jl.open(sys.argv[1], schema=sys.argv[2] or None) as s:\n"
        "    s.events.on('flight.delayed')(lambda ev, st: st['delays'].insert(ev.payload) and None)\n"
        "    while time.time() < float(sys.argv[4]): time.sleep(0.001)\n"
        "    ev = s.events.emit('flight.delayed', {'flight': int(sys.argv[3]), 'minutes': 1}, dedupe_key='same')\n"
        "    print(ev.seq, ev.deduplicated, ev.payload['flight'])\n"
    )
    start = str(time.time() + 1.5)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, *child_args(open_store.target()), str(i), start],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    answers = [child.communicate(timeout=60)[0].split() for child in children]
    assert all(child.returncode == 0 for child in children)
    assert {a[0] for a in answers} == {"1"} and sorted(a[1] for a in answers) == ["False", "True", "True"]
    assert len({a[2] for a in answers}) == 1  # every process got the winner's payload
    assert raw_count(store, "_jl_events") == 1 and store["delays"].count() == 1
