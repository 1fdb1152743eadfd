"""The ledger with the job queue: jobs enqueued by handlers commit with the event; jobs that emit are stamped."""

from __future__ import annotations

from typing import Any

import pytest

import jarenlab as jl
from jarenlab.events import Event


def test_a_failing_handler_takes_its_enqueued_jobs_with_it(store: jl.Store, raw_count: Any) -> None:
    @store.events.on("flight.delayed")
    def rebook(event: Event, st: jl.Store) -> None:
        st["delays"].insert(event.payload)
        st.jobs.enqueue("rebook", {"flight": event.payload["flight"]}, id=f"rebook-{event.payload['flight']}")
        if event.payload["minutes"] > 100:
            raise ValueError("too late to rebook")

    with pytest.raises(ValueError):
        store.events.emit("flight.delayed", {"flight": 1, "minutes": 500})
    assert store.jobs.get("rebook-1") is None and store.jobs.list() == []
    assert raw_count(store, "_jl_events") == 0 and store["delays"].count() == 0

    ev = store.events.emit("flight.delayed", {"flight": 2, "minutes": 40})
    job = store.jobs.get("rebook-2")
    assert job is not None and job["state"] == "pending" and job["payload"] == {"flight": 2}
    assert store.events.emit("flight.delayed", {"flight": 2, "minutes": 40}, dedupe_key="x").seq == ev.seq + 1
    assert len(store.jobs.list()) == 1  # the same job id again: idempotent, no second job


def test_a_deduplicated_emit_enqueues_nothing(store: jl.Store) -> None:
    store.events.on("flight.cancelled")(lambda ev, st: st.jobs.enqueue("refund", ev.payload) and None)
    first = store.events.emit("flight.cancelled", {"flight": 9}, dedupe_key="c9")
    again = store.events.emit("flight.cancelled", {"flight": 9}, dedupe_key="c9")
    assert again.deduplicated and again.seq == first.seq
    assert len(store.jobs.list(kind="refund")) == 1


def test_events_emitted_by_a_job_handler_name_the_job_and_attempt(store: jl.Store) -> None:
    @store.jobs.handler("rebook")
    def rebook(payload: Any, ctx: Any) -> None:
        ctx.store.events.emit(
            "flight.cancelled", {"flight": payload["flight"]}, dedupe_key=f"cancel-{ctx.job['id']}"
        )

    store.jobs.enqueue("rebook", {"flight": 1545}, id="rebook-1545")
    before = store.events.emit("flight.delayed", {"flight": 1545, "minutes": 1})
    store.jobs.run_until_idle(progress=False, timeout=30)
    assert store.jobs.get("rebook-1545")["state"] == "done"  # type: ignore[index]
    emitted = list(store.events.resume(before.cursor))
    assert [(e.type, e.caused_by_job, e.caused_by_attempt) for e in emitted] == [
        ("flight.cancelled", "rebook-1545", 1)
    ]
    assert before.caused_by_job is None and before.caused_by_attempt is None
    frame = store.events.frame("flight.cancelled")
    assert frame.iloc[0]["caused_by_job"] == "rebook-1545" and frame.iloc[0]["caused_by_attempt"] == 1
    after = store.events.emit("flight.delayed", {"flight": 1545, "minutes": 2})
    assert after.caused_by_job is None  # the stamp does not leak out of the job


def test_the_stamp_cannot_be_forged_from_a_cell(store: jl.Store) -> None:
    """The provenance comes from the attempt the worker runs, never from the public variable: a cell
    that sets ``current_job`` emits an event that names no job."""
    from jarenlab.jobs.context import current_job

    token = current_job.set(("job-7", 3))
    try:
        ev = store.events.emit("flight.cancelled", {"flight": 7})
    finally:
        current_job.reset(token)
    assert (ev.caused_by_job, ev.caused_by_attempt) == (None, None)
    assert next(iter(store.events.resume())).caused_by_job is None
    assert store.events.frame("flight.cancelled").iloc[0]["caused_by_job"] is None


def test_a_handler_reads_current_job_and_its_emit_is_stamped(store: jl.Store) -> None:
    from jarenlab.jobs.context import current_job

    seen = []

    @store.jobs.handler("stamp")
    def stamp(payload: Any, ctx: Any) -> None:
        seen.append(current_job.get())
        store.events.emit("flight.cancelled", {"flight": 8})

    store.jobs.enqueue("stamp", {}, id="stamp-1")
    store.jobs.run_until_idle()
    (ev,) = [e for e in store.events.resume() if e.payload == {"flight": 8}]
    assert seen == [("stamp-1", 1)]
    assert (ev.caused_by_job, ev.caused_by_attempt) == ("stamp-1", 1)
    assert repr(ev).endswith("by job 'stamp-1'#1 at " + repr(ev).rsplit(" at ", 1)[1])
