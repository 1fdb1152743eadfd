"""Signals: sent by a queue handler at once, fenced by its lease; kept while the work their handlers
enqueued runs and deleted in the settlement of the last of it; never in the ledger's history. On
each backend, in the store's virtual time (real processes for settlements at the same moment)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import EventError, JobError
from jarenlab.events import Signal, Work
from jarenlab.events import signals as signals_module
from jarenlab.jobs import VirtualClock, signalwork

from .conftest import child_args

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
    "events": {
        "page.seen": {"type": "object", "required": ["url"], "properties": {"url": {"type": "string"}}},
        "audit": {"type": "object"},
    },
}
CHILD = Path(__file__).with_name("signal_child.py")


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(1_900_000_000.0)


@pytest.fixture
def store(open_store: Any, clock: VirtualClock) -> jl.Store:
    store = open_store(MODEL, clock=clock, random=lambda: 0.5)
    store.jobs.configure(lease=10.0)
    return store


def run_one(store: jl.Store, kind: str | None = None) -> str | None:
    """Claim and run one due job (of ``kind``); its outcome, or None when nothing was due."""
    lease = store.jobs.claim(kinds=None if kind is None else [kind])
    return None if lease is None else store.jobs.executor.execute(lease)


def rows(raw_count: Any, store: jl.Store) -> tuple[int, int]:
    """Committed signal rows and work rows, read by a connection of the driver's own."""
    return raw_count(store, "_jl_signals"), raw_count(store, "_jl_signal_work")


def sender(store: jl.Store, jobs: int, sent: list[Any]) -> None:
    """A ``crawl`` job that sends one signal whose handler enqueues ``jobs`` ``index`` jobs."""

    @store.events.on_signal("page.seen")
    def index(signal: Signal, work: Work) -> None:
        for n in range(jobs):
            work.enqueue("index", {"url": signal.payload["url"], "n": n})

    @store.jobs.handler("crawl")
    def crawl(payload: Any, ctx: Any) -> None:
        sent.append(ctx.signal("page.seen", {"url": payload}))


def test_a_signal_lives_until_the_last_of_its_work_settles(store: jl.Store, raw_count: Any) -> None:
    sent: list[Any] = []
    sender(store, 3, sent)
    seen: list[int] = []
    store.jobs.handler("index")(lambda payload, ctx: seen.append(len(ctx.store.events.signals())))
    store.jobs.enqueue("crawl", "a.html", id="c1")
    assert run_one(store, "crawl") == "done"
    [signal] = sent
    assert isinstance(signal, Signal) and (signal.job, signal.attempt, signal.type) == ("c1", 1, "page.seen")
    assert signal.jobs == tuple(f"{signal.id}^{n}" for n in range(3))
    assert [store.jobs.get(j)["payload"]["n"] for j in signal.jobs] == [0, 1, 2]  # type: ignore[index]
    live = store.events.signals()
    assert list(live.index) == [signal.id] and live.loc[signal.id, "pending"] == 3
    assert live.loc[signal.id, "work"] == list(signal.jobs) and live.loc[signal.id, "job"] == "c1"
    assert live.loc[signal.id, "payload"] == {"url": "a.html"} and str(live["at"].dtype).endswith(", UTC]")
    for left in (2, 1):
        assert run_one(store, "index") == "done"
        assert rows(raw_count, store) == (1, left)
        assert store.events.signals().loc[signal.id, "pending"] == left
    assert run_one(store, "index") == "done"
    assert rows(raw_count, store) == (0, 0) and store.events.signals().empty
    assert seen == [1, 1, 1]  # each job ran while its signal was live


def test_a_signal_whose_handlers_enqueue_nothing_is_not_kept(store: jl.Store, raw_count: Any) -> None:
    sent: list[Any] = []
    sender(store, 0, sent)
    store.jobs.enqueue("crawl", "a.html")
    assert run_one(store) == "done"
    assert sent[0].jobs == () and rows(raw_count, store) == (0, 0)
    assert "none (not kept)" in sent[0]._repr_html_()
    store.events.off_signal("page.seen")
    store.jobs.enqueue("crawl", "b.html")
    assert run_one(store) == "done" and sent[1].jobs == () and rows(raw_count, store) == (0, 0)


def test_a_lost_lease_sends_nothing_and_says_so(store: jl.Store, clock: VirtualClock, raw_count: Any) -> None:
    ran: list[str] = []

    @store.events.on_signal("page.seen")
    def index(signal: Signal, work: Work) -> None:
        ran.append(signal.payload["url"])
        work.enqueue("index", signal.payload)

    results: list[Any] = []

    @store.jobs.handler("crawl")
    def crawl(payload: Any, ctx: Any) -> None:
        if ctx.attempt == 1:
            clock.advance(11)  # past its lease
            results.append(ctx.signal("page.seen", {"url": "expired"}))
            assert store.jobs.claim() is not None  # another claim takes the job
            results.append(ctx.signal("page.seen", {"url": "superseded"}))

    store.jobs.enqueue("crawl", "a.html", id="c1")
    assert run_one(store) == "lost"
    assert results == [None, None] and ran == []
    assert rows(raw_count, store) == (0, 0) and store.jobs.list(kind="index") == []


def test_dead_and_cancelled_work_settle_the_signal_and_a_requeue_changes_nothing(
    store: jl.Store, raw_count: Any
) -> None:
    sent: list[Any] = []
    sender(store, 2, sent)

    @store.jobs.handler("index")
    def index(payload: Any, ctx: Any) -> None:
        ctx.dead_letter("no such page")

    store.jobs.enqueue("crawl", "a.html")
    run_one(store, "crawl")
    first, second = sent[0].jobs
    assert run_one(store, "index") == "dead" and rows(raw_count, store) == (1, 1)
    assert store.jobs.cancel(second) and rows(raw_count, store) == (0, 0)
    store.jobs.requeue(first)
    assert run_one(store, "index") == "dead" and rows(raw_count, store) == (0, 0)
    assert store.jobs.get(first)["state"] == "dead"  # type: ignore[index]


def test_a_failing_signal_handler_writes_nothing(store: jl.Store, raw_count: Any) -> None:
    @store.events.on_signal("page.seen")
    def index(signal: Signal, work: Work) -> None:
        work.enqueue("index", signal.payload)
        work.store["notes"].insert({"url": signal.payload["url"]})
        raise KeyError("no index")

    caught: list[BaseException] = []

    @store.jobs.handler("crawl")
    def crawl(payload: Any, ctx: Any) -> None:
        try:
            ctx.signal("page.seen", {"url": payload})
        except KeyError as exc:
            caught.append(exc)
            raise

    store.jobs.enqueue("crawl", "a.html", id="c1", max_attempts=1)
    assert run_one(store) == "dead"
    assert "while handling signal 'page.seen'" in caught[0].__notes__[0]
    assert rows(raw_count, store) == (0, 0) and store["notes"].count() == 0
    assert store.jobs.list(kind="index") == []


def test_bad_signals_are_refused(store: jl.Store, raw_count: Any) -> None:
    with pytest.raises(EventError) as err:
        store.events.signal("page.seen", {"url": "a"})
    assert err.value.code == "JD2216"
    with pytest.raises(EventError) as err:
        store.events.on_signal("nope")
    assert err.value.code == "JD2080"
    with pytest.raises(EventError) as err:
        store.events.on_signal("page.seen")(42)  # type: ignore[arg-type]
    assert err.value.code == "JD2217"

    @store.events.on_signal("audit")
    def coalesced(signal: Signal, work: Work) -> None:
        work.enqueue("index", {}, coalescing_key="k")

    codes: list[str] = []

    @store.jobs.handler("crawl")
    def crawl(payload: Any, ctx: Any) -> None:
        for type_, body in (("page.seen", {"url": 3}), ("audit", {})):
            try:
                ctx.signal(type_, body)
            except EventError as exc:
                codes.append(exc.code)

    store.jobs.enqueue("crawl", "a.html")
    assert run_one(store) == "done"
    assert codes == ["JD2080", "JD2217"] and rows(raw_count, store) == (0, 0)
    assert store.events.signal_handlers("audit") == [coalesced]


def test_an_ended_attempt_cannot_signal(store: jl.Store) -> None:
    contexts: list[Any] = []
    store.jobs.handler("crawl")(lambda payload, ctx: contexts.append(ctx))
    store.jobs.enqueue("crawl", "a.html")
    assert run_one(store) == "done"
    with pytest.raises(JobError) as err:
        contexts[0].signal("page.seen", {"url": "late"})
    assert err.value.code == "JD2065"


def test_signals_never_appear_in_the_history(store: jl.Store, raw_count: Any) -> None:
    sent: list[Any] = []
    sender(store, 1, sent)
    first = store.events.emit("audit", {"n": 1})
    head, changes = store.events.head(), store.changes.cursor()
    store.jobs.enqueue("crawl", "a.html")
    run_one(store, "crawl")
    assert rows(raw_count, store) == (1, 1)
    assert store.events.head() == head and store.changes.cursor() == changes
    assert [e.seq for e in store.events.resume()] == [first.seq]
    assert list(store.events.resume(head)) == [] and list(store.events.tail(last=5, follow=False)) == [first]
    assert list(store.events.frame().index) == [first.seq]
    assert raw_count(store, "_jl_events") == 1


def test_the_work_ids_carry_the_mark_the_queue_looks_for() -> None:
    assert signals_module.MARK == signalwork.MARK
    assert signalwork.maybe_work(signalwork.work_id("s1", 0)) and not signalwork.maybe_work("s1-0")


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [2, 3])
def test_work_settling_at_once_in_two_processes_deletes_the_signal_exactly_with_its_last(
    open_store: Any, raw_count: Any, tmp_path: Path, jobs: int
) -> None:
    store = open_store(MODEL, "race")
    store.jobs.declare(*(f"index{n}" for n in range(jobs)))  # run by the child processes
    sent: list[Any] = []

    @store.events.on_signal("page.seen")
    def index(signal: Signal, work: Work) -> None:
        for n in range(jobs):
            work.enqueue(f"index{n}", {"n": n})

    @store.jobs.handler("crawl")
    def crawl(payload: Any, ctx: Any) -> None:
        sent.append(ctx.signal("page.seen", {"url": payload}))

    for round_ in range(4):
        store.jobs.enqueue("crawl", f"{round_}.html")
        assert run_one(store, "crawl") == "done"
        ready = tmp_path / f"ready{round_}"
        ready.mkdir()
        children = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(CHILD),
                    *child_args(open_store.target("race")),
                    f"index{n}",
                    str(ready),
                    "2",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for n in range(2)
        ]
        for child in children:
            out, err = child.communicate(timeout=60)
            assert child.returncode == 0 and out.decode().split() == ["done"], err.decode()
        signal = sent[-1]
        if jobs == 2:
            assert rows(raw_count, store) == (0, 0)
        else:  # the third is still pending: the signal is kept with it alone
            assert rows(raw_count, store) == (1, 1)
            assert store.events.signals().loc[signal.id, "work"] == [signal.jobs[2]]
            store.jobs.handler("index2")(lambda payload, ctx: None)
            assert run_one(store, "index2") == "done" and rows(raw_count, store) == (0, 0)
        assert {store.jobs.get(j)["state"] for j in signal.jobs} == {"done"}  # type: ignore[index]
