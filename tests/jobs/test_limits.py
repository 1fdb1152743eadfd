"""Per-kind limits: at most N starts per period and at most M running at once, counted in the
database. Virtual time shows the window rolling; real worker processes show the limits holding
across processes. On each backend."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.jobs import Handlers, Jobs, VirtualClock

from .workers import lines, worker


def claim_ids(jobs: Jobs, *kinds: str) -> list[str]:
    """Claim until nothing is claimable now; the ids claimed (their leases kept)."""
    ids = []
    while (lease := jobs.claim(kinds=kinds)) is not None:
        ids.append(lease.id)
    return ids


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"rate": "10"}, "rate"),
        ({"rate": "0/s"}, "rate"),
        ({"rate": "-1/s"}, "rate"),
        ({"rate": "10/fortnight"}, "rate"),
        ({"rate": "1/0s"}, "rate"),
        ({"rate": 10}, "rate"),
        ({"rate": "ten/s"}, "rate"),
        ({"max_running": 0}, "max_running"),
        ({"max_running": True}, "max_running"),
        ({"max_running": 1.5}, "max_running"),
        ({"max_running": 2**31}, "max_running"),
    ],
)
def test_a_bad_limit_is_coded_when_the_kind_is_declared(
    jobs: Jobs, options: dict[str, Any], words: str
) -> None:
    for registry in (jobs, Handlers()):
        with pytest.raises(jl.JarenlabError) as err:
            registry.handler("k", **options)(lambda payload, ctx: None)
        assert err.value.code == "JD2171" and words in str(err.value)
    assert "k" not in jobs.handlers


@pytest.mark.parametrize(
    ("spec", "count", "per"),
    [("10/s", 10, 1), ("100/min", 100, 60), ("5/h", 5, 3600), ("3/5s", 3, 5), ("2 / 1.5 minutes", 2, 90)],
)
def test_rates_read_as_a_count_per_span(jobs: Jobs, spec: str, count: int, per: float) -> None:
    jobs.handler("k", rate=spec)(lambda payload, ctx: None)
    rate = jobs.handlers["k"].limit.rate
    assert (rate.count, rate.per) == (count, per)


def test_the_rate_window_rolls_in_virtual_time(jobs: Jobs, clock: VirtualClock) -> None:
    jobs.handler("fetch", rate="3/min", lease=1000)(lambda payload, ctx: None)
    jobs.handler("other")(lambda payload, ctx: None)
    jobs.enqueue_many([{"kind": "fetch", "id": f"f{i}"} for i in range(8)])
    jobs.enqueue_many([{"kind": "other", "id": f"o{i}"} for i in range(2)])
    assert claim_ids(jobs, "fetch") == ["f0", "f1", "f2"]
    # at its limit the kind is left out: a claim takes the other kind instead
    assert claim_ids(jobs, "fetch", "other") == ["o0", "o1"]
    assert jobs.queue.gate(["fetch"]).free_at == clock() + 60
    clock.advance(20)
    assert claim_ids(jobs, "fetch") == []  # a sliding window: nothing until the first start leaves
    clock.advance(39.9)
    assert claim_ids(jobs, "fetch") == []
    clock.advance(0.1)  # the three starts at t0 leave the window together
    assert claim_ids(jobs, "fetch") == ["f3", "f4", "f5"]
    clock.advance(30)
    assert claim_ids(jobs, "fetch") == []
    clock.advance(30)
    assert claim_ids(jobs, "fetch") == ["f6", "f7"]


def test_run_until_idle_waits_for_the_window_and_keeps_the_rate(jobs: Jobs, clock: VirtualClock) -> None:
    starts: list[float] = []

    @jobs.handler("fetch", rate="2/10s")
    def fetch(payload: Any, ctx: Any) -> None:
        starts.append(clock())

    t0 = clock()
    jobs.enqueue_many([{"kind": "fetch"} for _ in range(7)])
    result = jobs.run_until_idle(progress=False)
    assert result["done"] == 7 and result["open"] == 0
    assert [s - t0 for s in starts] == [0, 0, 10, 10, 20, 20, 30]
    assert all(sum(1 for t in starts if s <= t < s + 10) <= 2 for s in starts)


def test_run_until_idle_with_threads_waits_for_the_window(jobs: Jobs, clock: VirtualClock) -> None:
    jobs.handler("fetch", rate="1/s")(lambda payload, ctx: clock())
    t0 = clock()
    jobs.enqueue_many([{"kind": "fetch", "id": f"f{i}"} for i in range(4)])
    assert jobs.run_until_idle(progress=False, concurrency=3, timeout=30)["done"] == 4
    assert sorted(jobs.get(f"f{i}")["result"] - t0 for i in range(4)) == [0, 1, 2, 3]


def test_max_running_counts_leased_jobs_whoever_holds_them(jobs: Jobs, clock: VirtualClock) -> None:
    jobs.handler("render", max_running=2, lease=10)(lambda payload, ctx: None)
    jobs.handler("other")(lambda payload, ctx: None)
    jobs.enqueue_many([{"kind": "render", "id": f"r{i}"} for i in range(5)] + [{"kind": "other", "id": "o"}])
    first = jobs.claim(kinds=["render"])
    assert first is not None
    assert jobs.claim(kinds=["render"], owner="another worker").id == "r1"
    assert claim_ids(jobs, "render", "other") == ["o"]
    assert jobs.queue.gate(["render"]).free_at == first.until
    jobs.queue.complete(first, None, prune=False)
    assert claim_ids(jobs, "render") == ["r2"]  # one finished: one more may start
    clock.advance(10)  # every lease expired: nothing runs any more (the expired are due after r3, r4)
    assert claim_ids(jobs, "render") == ["r3", "r4"]


def test_both_limits_at_once(jobs: Jobs, clock: VirtualClock) -> None:
    jobs.handler("k", rate="3/min", max_running=1, lease=5)(lambda payload, ctx: None)
    jobs.enqueue_many([{"kind": "k", "id": f"k{i}"} for i in range(5)])
    lease = jobs.claim(kinds=["k"])
    assert claim_ids(jobs, "k") == []  # one running
    jobs.queue.complete(lease, None, prune=False)
    assert claim_ids(jobs, "k") == ["k1"]
    assert claim_ids(jobs, "k") == []
    clock.advance(6)  # k1's lease expired: it runs no more, so the third start may come
    assert claim_ids(jobs, "k") == ["k2"]
    clock.advance(6)
    assert claim_ids(jobs, "k") == []  # nothing runs, but three starts in the minute
    clock.advance(60)
    assert claim_ids(jobs, "k") == ["k3"]


def test_limits_apply_to_jobs_staged_and_deferred_too(jobs: Jobs, clock: VirtualClock) -> None:
    runs: list[float] = []

    @jobs.handler("parent")
    def parent(payload: Any, ctx: Any) -> None:
        for _ in range(3):
            ctx.enqueue("child")

    @jobs.handler("child", rate="1/min")
    def child(payload: Any, ctx: Any) -> None:
        runs.append(clock())

    t0 = clock()
    jobs.enqueue("parent")
    assert jobs.run_until_idle(progress=False)["done"] == 4
    assert [r - t0 for r in runs] == [0, 60, 120]


def test_an_idle_background_worker_wakes_when_the_window_frees(open_store: Any) -> None:
    from .conftest import MODEL

    store = open_store(MODEL)
    jobs = store.jobs.configure(poll=5.0)  # a poll far longer than the window
    # each returns its claim's time: its lease's end less the lease
    jobs.handler("tick", rate="2/0.4s")(lambda payload, ctx: ctx.job["lease_until"] - jobs.lease)
    jobs.enqueue_many([{"kind": "tick", "id": f"t{i}"} for i in range(6)])
    started = time.monotonic()
    worker = jobs.start(concurrency=2)
    try:
        assert jobs.wait_for_idle(timeout=4.0)
    finally:
        worker.stop(grace=1)
    assert time.monotonic() - started < 3.0  # three windows, not polls
    claims = sorted(jobs.get(f"t{i}")["result"] for i in range(6))
    assert all(sum(1 for t in claims if s <= t < s + 0.4) <= 2 for s in claims), claims


@pytest.mark.slow
def test_limits_hold_across_worker_processes(open_store: Any, tmp_path: Path) -> None:
    from .conftest import MODEL

    with open_store(MODEL, "limits") as store:
        pass
    db = open_store.target("limits")
    log, other = tmp_path / "limited.log", tmp_path / "other.log"
    with jl.open(**db) as store:
        store.jobs.declare("limited", "record")
        store.jobs.enqueue_many(
            [
                {"kind": "limited", "payload": {"log": str(log), "seconds": 0.15}, "id": f"l{n:02}"}
                for n in range(14)
            ]
            + [{"kind": "record", "payload": {"log": str(other)}, "id": f"r{n:02}"} for n in range(20)]
        )
    procs = [worker(db, "--until-idle", "--concurrency", "3", "--poll", "0.05") for _ in range(3)]
    for proc in procs:
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        assert proc.returncode == 0, err.decode()
    with jl.open(**db) as store:
        assert store.jobs.counts()["done"] == 34
    starts = {p[1]: (float(p[3]), float(p[4])) for p in lines(log) if p[0] == "start"}
    ends = {p[1]: float(p[3]) for p in lines(log) if p[0] == "end"}
    assert len(starts) == 14 and len(ends) == 14
    # max_running=2: never more than two handlers of the kind at once, whichever process ran them
    events = sorted([(s, 1) for s, _ in starts.values()] + [(e, -1) for e in ends.values()])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert peak <= 2
    # rate="4/s": at most four claims in any second, by the queue's clock
    claims = sorted(c for _, c in starts.values())
    assert all(sum(1 for t in claims if c <= t < c + 1.0) <= 4 for c in claims), claims
    assert claims[-1] - claims[0] >= 3.0  # fourteen starts at four a second take over three seconds
    assert len({p[2] for p in lines(log) if p[0] == "start"}) >= 2  # the processes shared the kind
