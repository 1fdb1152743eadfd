"""Declared outcomes ({"payload", "outcome"}) and causation: events record the job attempt that emitted
them, jobs the event whose handlers enqueued them; both frames show the links. On each backend."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import EventError, ModelError

from .conftest import MODEL

DECLARED: dict[str, Any] = {
    **copy.deepcopy(MODEL),
    "events": {
        **copy.deepcopy(MODEL["events"]),
        "booking.requested": {
            "payload": {
                "type": "object",
                "required": ["flight"],
                "properties": {"flight": {"type": "integer"}},
            },
            "outcome": {"type": "object", "required": ["job"], "properties": {"job": {"type": "string"}}},
        },
        "booking.noted": {"payload": {"type": "object"}},
    },
}


@pytest.fixture
def model() -> dict[str, Any]:
    return copy.deepcopy(DECLARED)


def test_a_declared_outcome_is_stored_and_returned_again_for_a_repeat(store: jl.Store) -> None:
    @store.events.on("booking.requested")
    def book(event: Any, st: jl.Store) -> dict[str, str]:
        return {"job": st.jobs.enqueue("book", event.payload)}

    first = store.events.emit("booking.requested", {"flight": 1545}, dedupe_key="b1")
    again = store.events.emit("booking.requested", {"flight": 1545}, dedupe_key="b1")
    assert again.deduplicated and again.outcome == first.outcome and set(first.outcome) == {"job"}
    assert store.events.outcome_schema("booking.requested")["required"] == ["job"]
    assert store.events.outcome_schema("flight.delayed") is None


@pytest.mark.parametrize(
    ("returned", "type_", "says"),
    [
        (None, "booking.requested", "no handler returned one"),
        ({"job": 7}, "booking.requested", "is invalid"),
        ({"job": "x"}, "booking.noted", "declares none"),
    ],
)
def test_an_outcome_that_breaks_its_declaration_rolls_the_emit_back(
    store: jl.Store, raw_count: Any, returned: Any, type_: str, says: str
) -> None:
    @store.events.on(type_)
    def handle(event: Any, st: jl.Store) -> Any:
        st["delays"].insert({"flight": 1, "minutes": 1})
        st.jobs.enqueue("book", {})
        return returned

    payload = {"flight": 1} if type_ == "booking.requested" else {}
    with pytest.raises(EventError) as err:
        store.events.emit(type_, payload)
    assert err.value.code == "JD2122" and says in err.value.reason
    if says == "is invalid":
        assert err.value.errors  # the validator's messages
    assert raw_count(store, "_jl_events") == 0 and store["delays"].count() == 0 and store.jobs.list() == []


def test_plain_declarations_keep_taking_any_outcome(store: jl.Store) -> None:
    store.events.on("flight.cancelled")(lambda ev, st: [1, 2])
    assert store.events.emit("flight.cancelled", {"flight": 1}).outcome == [1, 2]


@pytest.mark.parametrize(
    ("declared", "where"),
    [
        ({"payload": {"type": "object"}, "result": {}}, "/events/x/result"),
        ({"payload": {"type": "string"}}, "/events/x/payload/type"),
        ({"payload": {"type": "object"}, "outcome": "an int"}, "/events/x/outcome"),
        ({"payload": {"type": "object"}, "outcome": {"type": "nonsense"}}, "/events/x/outcome"),
    ],
)
def test_a_bad_declaration_is_refused_before_anything_is_written(declared: Any, where: str) -> None:
    with pytest.raises(ModelError) as err:
        jl.open(model={**MODEL, "events": {"x": declared}})
    assert err.value.code == "JD0005" and err.value.doc_path == where


def test_the_frames_show_who_caused_what(store: jl.Store) -> None:
    @store.events.on("booking.requested")
    def book(event: Any, st: jl.Store) -> dict[str, str]:
        return {"job": st.jobs.enqueue("book", event.payload, id=f"book-{event.payload['flight']}")}

    @store.jobs.handler("book")
    def run(payload: Any, ctx: Any) -> None:
        ctx.emit("booking.noted", {"flight": payload["flight"]})

    requested = store.events.emit("booking.requested", {"flight": 7})
    store.jobs.run_until_idle(progress=False, timeout=30)
    jobs = store.jobs.frame(source_event=requested)
    assert list(jobs.index) == ["book-7"] and jobs.loc["book-7", "source_event"] == requested.seq
    events = store.events.frame("booking.noted")
    assert events.iloc[0]["caused_by_job"] == "book-7" and events.iloc[0]["caused_by_attempt"] == 1
