"""Versioned materializations: built and rebuilt by replaying the ledger in one transaction, shown as a
plan first, recorded in the store, never seen half-built, and left intact by a rebuild that fails
or is killed."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import EventError
from jarenlab.events import Module, RebuildPlan

from .conftest import child_args
from .rebuild_child import module

CHILD = str(pathlib.Path(__file__).with_name("rebuild_child.py"))


def _emit(store: jl.Store, n: int) -> None:
    with store.transaction():
        for i in range(n):
            store.events.emit("flight.delayed", {"flight": i, "minutes": i % 7})


def _stamps(store: jl.Store) -> list[int]:
    return sorted({d["minutes"] for d in store["delays"].to_list()})


def test_first_install_builds_from_every_event_expired_or_not(store: jl.Store) -> None:
    _emit(store, 12)
    store.events.emit("flight.cancelled", {"flight": 99})
    store.events.expire_history(through=store.events.head())
    plan = store.events.install(module(1))
    assert isinstance(plan, RebuildPlan) and plan.ran and plan.through == 13
    assert [(s.name, s.collection, s.recorded, s.version, s.events) for s in plan.steps] == [
        ("flight.delays", "delays", None, 1, 12)
    ]
    assert store["delays"].count() == 12 and _stamps(store) == [1]
    frame = store.events.materializations()
    assert frame.loc["flight.delays", "version"] == 1 and frame.loc["flight.delays", "replayed"] == 12
    assert str(frame["rebuilt_at"].dt.tz) == "UTC"
    assert store.events.modules() == ("flight",)


def test_live_emits_maintain_it_and_what_its_handlers_return_is_ignored(store: jl.Store) -> None:
    flight = Module("flight")
    delays = flight.materialization("delays", version=1)

    @delays.on("delayed")
    def project(event: Any, st: jl.Store) -> Any:
        st["delays"].insert(event.payload)
        return {"not": "an outcome"}

    store.events.install(flight)
    ev = store.events.emit("flight.delayed", {"flight": 1, "minutes": 5})
    assert ev.outcome is None and store["delays"].count() == 1


def test_dry_run_shows_the_plan_and_writes_nothing(store: jl.Store, raw_count: Any) -> None:
    store.events.install(module(1))
    _emit(store, 30)
    plan = store.events.install(module(3), dry_run=True)
    assert not plan.ran and plan.seconds is None and plan.events == 30 and plan.through == 30
    assert [(s.name, s.recorded, s.version) for s in plan.steps] == [("flight.delays", 1, 3)]
    assert repr(plan) == (
        "<RebuildPlan (dry run) modules flight; flight.delays v1 -> v3 replays 30 events (through #30)>"
    )
    page = plan._repr_html_()
    assert "<table>" in page and "flight.delays" in page and "<td>1</td><td>3</td><td>30</td>" in page
    assert plan.frame().loc["flight.delays"].tolist() == ["delays", 1, 3, 30]
    # nothing changed: same version recorded, same documents, the old handlers still run
    assert store.events.materializations().loc["flight.delays", "version"] == 1
    assert _stamps(store) == [1] and raw_count(store, "delays") == 30
    store.events.emit("flight.delayed", {"flight": 1, "minutes": 1})
    assert _stamps(store) == [1]


def test_raising_the_version_rebuilds_and_records_it(open_store: Any, model: dict[str, Any]) -> None:
    store = open_store(model)
    store.events.install(module(1))
    _emit(store, 40)
    store.close()
    again = open_store.reopen(store)
    plan = again.events.install(module(2))
    assert plan.ran and plan.events == 40 and [s.recorded for s in plan.steps] == [1]
    assert _stamps(again) == [2] and again["delays"].count() == 40
    assert again.events.materializations().loc["flight.delays", "version"] == 2
    # the same version again rebuilds nothing
    again.close()
    third = open_store.reopen(again)
    assert third.events.install(module(2)).steps == ()
    third.events.emit("flight.delayed", {"flight": 1, "minutes": 1})
    assert third["delays"].count() == 41


def test_a_lower_version_than_recorded_is_refused_on_open(open_store: Any, model: dict[str, Any]) -> None:
    store = open_store(model)
    store.events.install(module(4))
    older = open_store.reopen(store)
    with pytest.raises(EventError) as err:
        older.events.install(module(3))
    assert (
        err.value.code == "JD2213" and "flight.delays" in err.value.reason and "version 4" in err.value.reason
    )
    with pytest.raises(EventError, match="JD2213"):
        older.events.install(module(3), dry_run=True)
    with pytest.raises(EventError, match="JD2214"):  # and it may not emit with its old handlers
        older.events.emit("flight.delayed", {"flight": 1, "minutes": 1})
    assert store.events.materializations().loc["flight.delays", "version"] == 4


def test_a_failing_rebuild_leaves_the_old_one_and_its_version(store: jl.Store) -> None:
    store.events.install(module(1))
    _emit(store, 20)
    flight = Module("flight")
    delays = flight.materialization("delays", version=2)

    @delays.on("delayed")
    def project(event: Any, st: jl.Store) -> None:
        st["delays"].insert({"flight": event.payload["flight"], "minutes": 2})
        if event.seq == 15:
            raise KeyError("boom")

    with pytest.raises(KeyError) as err:
        store.events.install(flight)
    assert "while replaying event #15 'flight.delayed' into flight.delays" in err.value.__notes__
    assert _stamps(store) == [1] and store["delays"].count() == 20
    assert store.events.materializations().loc["flight.delays", "version"] == 1
    store.events.emit("flight.delayed", {"flight": 1, "minutes": 1})  # the old install still holds
    assert _stamps(store) == [1] and store["delays"].count() == 21


def test_a_replay_may_not_emit(store: jl.Store, raw_count: Any) -> None:
    _emit(store, 3)
    flight = Module("flight")
    delays = flight.materialization("delays", version=1)

    @delays.on("delayed")
    def project(event: Any, st: jl.Store) -> None:
        st.events.emit("flight.cancelled", {"flight": event.payload["flight"]})

    with pytest.raises(EventError) as err:
        store.events.install(flight)
    assert err.value.code == "JD2215" and "flight.delays" in err.value.reason
    assert raw_count(store, "_jl_events") == 3 and store.events.modules() == ()


def test_a_long_replay_shows_a_progress_bar(store: jl.Store, capsys: Any) -> None:
    _emit(store, 300)
    store.events.install(module(1), progress=True)
    assert "replaying events" in capsys.readouterr().err
    store.events.install(module(2), progress=False)
    assert "replaying events" not in capsys.readouterr().err and _stamps(store) == [2]


def test_a_reader_in_another_process_sees_old_then_new_never_half(
    open_store: Any, model: dict[str, Any], tmp_path: pathlib.Path
) -> None:
    store = open_store(model)
    store.events.install(module(1))
    _emit(store, 300)
    marker = tmp_path / "reading"
    reader = subprocess.Popen(
        [sys.executable, CHILD, *child_args(open_store.target()), "read", "2", str(marker), "60"],
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 60
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.01)
    started = time.time()
    store.events.install(module(2, pause=0.004))  # over a second of replay in one transaction
    ended = time.time()
    out, _ = reader.communicate(timeout=60)
    assert reader.returncode == 0
    reads = [(float(t), versions, int(n)) for t, versions, n in (line.split() for line in out.splitlines())]
    assert {(v, n) for _, v, n in reads} == {("1", 300), ("2", 300)}  # whole: never mixed, never partial
    kinds = [v for _, v, _ in reads]
    assert kinds == sorted(kinds) and kinds[-1] == "2"  # old, then new, never back
    assert sum(1 for t, v, _ in reads if started < t < ended and v == "1") >= 3  # read old while it ran


def test_a_rebuild_killed_halfway_leaves_the_old_one_intact(
    open_store: Any, model: dict[str, Any], tmp_path: pathlib.Path, raw_count: Any
) -> None:
    store = open_store(model)
    store.events.install(module(1))
    _emit(store, 200)
    marker = tmp_path / "halfway"
    child = subprocess.Popen(
        [sys.executable, CHILD, *child_args(open_store.target()), "rebuild", "2", str(marker), "100"]
    )
    deadline = time.time() + 60
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.01)
    assert marker.exists() and child.poll() is None
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    assert raw_count(store, "delays") == 200 and _stamps(store) == [1]
    assert store.events.materializations().loc["flight.delays", "version"] == 1
    store.events.emit("flight.delayed", {"flight": 1, "minutes": 1})  # the ledger is not held
    assert store["delays"].count() == 201
    plan = store.events.install(module(2))
    assert plan.events == 201 and _stamps(store) == [2] and store["delays"].count() == 201
