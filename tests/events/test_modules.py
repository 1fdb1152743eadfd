"""Handler modules: names namespaced by module, handlers in install order, the module list recorded in
the store and checked when installed, job queues owned by a module."""

from __future__ import annotations

from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import EventError, StoreError
from jarenlab.events import Module


def _model(model: dict[str, Any]) -> dict[str, Any]:
    """The ledger tests' model with a second module's event (``billing.charged``)."""
    model["events"]["billing.charged"] = {"type": "object", "required": ["flight"]}
    return model


def _noop(name: str) -> Module:
    module = Module(name)
    if name == "billing":
        module.on("charged")(lambda ev, st: None)
    return module


def test_names_are_namespaced_and_checked() -> None:
    flight = Module("flight")
    assert flight.event("delayed") == "flight.delayed" and flight.kind("rebook") == "flight.rebook"
    delays = flight.materialization("delays", version=1)
    assert delays.full_name == "flight.delays" and delays.collection == "delays"
    assert flight.materialization("late", version=2, collection="delays").collection == "delays"
    bad: list[Any] = [
        lambda: Module("has space"),
        lambda: Module(""),
        lambda: flight.on("bad name"),
        lambda: flight.on("delayed", of="not a module"),
        lambda: flight.materialization("m", version=0),
        lambda: flight.materialization("m", version=True),
        lambda: flight.materialization("m-1", version=1),  # not a collection name
        lambda: flight.on("delayed")("not callable"),
        lambda: flight.queue("rebook")(42),
    ]
    for make in bad:
        with pytest.raises(EventError) as err:
            make()
        assert err.value.code == "JD2210"


def test_module_repr_and_html() -> None:
    flight = Module("flight")

    @flight.on("delayed")
    def note(event: Any, store: Any) -> None: ...

    @flight.queue("rebook")
    def rebook(payload: Any, ctx: Any) -> None: ...

    flight.materialization("delays", version=2).on("delayed")(note)
    assert repr(flight) == "<Module flight: 1 handlers, 1 queues, 1 materializations>"
    page = flight._repr_html_()
    assert (
        "module flight" in page
        and "queue flight.rebook" in page
        and "materialization flight.delays v2" in page
    )


def test_install_is_checked_before_any_write(store: jl.Store) -> None:
    stray = Module("flight")
    stray.on("landed")(lambda ev, st: None)
    with pytest.raises(EventError, match="JD2080"):  # an event type the model does not declare
        store.events.install(stray)
    elsewhere = Module("flight")
    elsewhere.materialization("nowhere", version=1).on("delayed")(lambda ev, st: None)
    with pytest.raises(EventError, match=r"JD2210.*nowhere"):
        store.events.install(elsewhere)
    twice = Module("flight")
    twice.materialization("a", version=1, collection="delays")
    twice.materialization("b", version=1, collection="delays")
    with pytest.raises(EventError, match=r"JD2210.*both"):
        store.events.install(twice)
    with pytest.raises(EventError, match=r"JD2210.*twice"):
        store.events.install(Module("flight"), Module("flight"))
    with pytest.raises(EventError, match="JD2210"):
        store.events.install("flight")  # type: ignore[arg-type]
    with store.transaction(), pytest.raises(EventError, match=r"JD2210.*transaction of its own"):
        store.events.install(Module("flight"))
    for bad in (
        {"progress": "no"},
        {"dry_run": "yes"},
        {"dry_run": None},
        {"retire": "flight"},
        {"retire": [1]},
    ):
        with pytest.raises(StoreError, match="JD0006"):  # ("no" would show a bar, "yes" would write)
            store.events.install(Module("flight"), **bad)
    assert store.events.modules() == ()


def test_handlers_run_in_install_order_and_fail_together(
    open_store: Any, model: dict[str, Any], raw_count: Any
) -> None:
    store = open_store(_model(model))
    trace: list[str] = []
    flight, billing = Module("flight"), Module("billing")

    @flight.on("delayed")
    def source(event: Any, st: jl.Store) -> None:
        st["delays"].insert(event.payload)
        trace.append("flight")

    @billing.on("delayed", of=flight)
    def consumer(event: Any, st: jl.Store) -> Any:
        trace.append(f"billing saw {st['delays'].count()}")  # the earlier module's write
        if event.payload["minutes"] == 99:
            raise RuntimeError("billing refuses")
        return {"charged": True}

    @billing.on("charged")
    def charged(event: Any, st: jl.Store) -> None: ...

    plan = store.events.install(flight, billing)
    assert plan.added == ("flight", "billing") and store.events.modules() == ("flight", "billing")
    ev = store.events.emit("flight.delayed", {"flight": 1, "minutes": 5})
    assert trace == ["flight", "billing saw 1"] and ev.outcome == {"charged": True}
    with pytest.raises(RuntimeError, match="billing refuses"):
        store.events.emit("flight.delayed", {"flight": 2, "minutes": 99})
    assert raw_count(store, "delays") == 1 and raw_count(store, "_jl_events") == 1
    with pytest.raises(EventError, match=r"JD2210.*flight.*not installed before"):
        store.events.install(billing, flight)


def test_the_module_list_is_recorded_and_checked(open_store: Any, model: dict[str, Any]) -> None:
    store = open_store(_model(model))
    store.events.install(_noop("flight"), _noop("billing"))
    again = open_store.reopen(store)
    with pytest.raises(EventError) as err:
        again.events.install(_noop("flight"))
    assert err.value.code == "JD2211" and "'billing'" in err.value.reason
    with pytest.raises(EventError) as err:
        again.events.install(_noop("billing"), _noop("flight"))
    assert err.value.code == "JD2212" and "'billing'" in err.value.reason and "position 1" in err.value.reason
    with pytest.raises(EventError, match="JD2212"):
        again.events.install(_noop("extra"), _noop("flight"), _noop("billing"), dry_run=True)
    # a new module goes after the recorded ones
    plan = again.events.install(_noop("flight"), _noop("billing"), _noop("extra"))
    assert plan.added == ("extra",) and again.events.modules() == ("flight", "billing", "extra")
    # retiring one drops it from the record on purpose
    with pytest.raises(EventError, match=r"JD2210.*no such module"):
        again.events.install(_noop("flight"), retire=["ghost"])
    plan = again.events.install(_noop("flight"), _noop("extra"), retire=["billing"])
    assert plan.retired == ("billing",) and again.events.modules() == ("flight", "extra")
    assert "retired: billing" in repr(plan)


def test_an_emit_needs_the_recorded_modules_installed(open_store: Any, model: dict[str, Any]) -> None:
    store = open_store(model)
    plain = open_store.reopen(store)
    plain.events.emit("flight.delayed", {"flight": 1, "minutes": 1})  # nothing recorded: as ever
    flight = Module("flight")
    flight.on("delayed")(lambda ev, st: st["delays"].insert(ev.payload) and None)
    store.events.install(flight)
    with pytest.raises(EventError) as err:
        plain.events.emit("flight.delayed", {"flight": 2, "minutes": 1})
    assert err.value.code == "JD2214"
    plain.events.install(flight)
    plain.events.emit("flight.delayed", {"flight": 3, "minutes": 1})
    assert store["delays"].count() == 1  # only the emit that ran the module's handler wrote
    # another store object changes the graph: this one must install again before emitting
    store.events.install(flight, Module("extra"))
    with pytest.raises(EventError, match="JD2214"):
        plain.events.emit("flight.delayed", {"flight": 4, "minutes": 1})


def test_installing_again_replaces_the_handlers(store: jl.Store) -> None:
    calls: list[int] = []

    def build(tag: int) -> Module:
        flight = Module("flight")
        flight.on("delayed")(lambda ev, st: calls.append(tag))
        return flight

    store.events.install(build(1))
    store.events.install(build(2))
    store.events.emit("flight.delayed", {"flight": 1, "minutes": 1})
    assert calls == [2] and len(store.events.handlers("flight.delayed")) == 1


def test_a_module_owns_its_queues(store: jl.Store) -> None:
    flight = Module("flight")

    @flight.on("delayed")
    def record(event: Any, st: jl.Store) -> None:
        st.jobs.enqueue(flight.kind("rebook"), {"flight": event.payload["flight"]})

    @flight.queue("rebook", max_attempts=2)
    def rebook(payload: Any, ctx: Any) -> Any:
        return {"rebooked": payload["flight"]}

    store.events.install(flight)
    ev = store.events.emit("flight.delayed", {"flight": 1545, "minutes": 40})
    assert store.jobs.run_until_idle(progress=False)["done"] == 1
    [job] = store.jobs.list(source_event=ev)
    assert job["kind"] == "flight.rebook" and job["result"] == {"rebooked": 1545}


def test_open_installs_modules_and_refuses_a_graph_that_does_not_match(
    open_store: Any, model: dict[str, Any]
) -> None:
    store = open_store(_model(model), modules=[_noop("flight"), _noop("billing")])
    assert store.events.modules() == ("flight", "billing")
    store.events.emit("billing.charged", {"flight": 1})
    with pytest.raises(EventError) as err:
        open_store.reopen(store, modules=[_noop("billing"), _noop("flight")])
    assert err.value.code == "JD2212" and "'billing'" in err.value.reason
    again = open_store.reopen(store, modules=[_noop("flight"), _noop("billing")])
    assert again.events.emit("billing.charged", {"flight": 2}).seq == 2


def test_open_refuses_modules_that_are_not_a_list_before_making_a_file(
    tmp_path: Any, model: dict[str, Any]
) -> None:
    """``jl.open(path, model, modules=flights)`` (one module, not a list) and ``modules=5`` were
    TypeErrors (argument after * must be an iterable) raised after the file was made, and
    ``modules="flight"`` was refused for its first letter 'f': each is JD0006 saying modules is a
    list, and no file is made."""
    path = tmp_path / "lab.db"
    for given, shown in ((_noop("flight"), "Module 'flight'"), (5, "not 5"), ("flight", "'flight'")):
        with pytest.raises(jl.JarenlabError) as info:
            jl.open(str(path), _model(model), modules=given)
        assert info.value.code == "JD0006" and "modules is a list" in info.value.reason
        assert shown in info.value.reason
    assert not path.exists()
