"""Races between separate processes: one booking per slot, one run per idempotency key.

On SQLite the file's single writer orders the racers; on PostgreSQL they write at once (READ
COMMITTED), and the exclusion constraint and the claimed key decide.
"""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import IntervalConflict

from .conftest import booking

ROUNDS = 15
PROCESSES = 4


def _contend(target: dict[str, Any], worker: int, barrier: Any, results: Any) -> None:
    """Each round, every process tries to book the same slot, then to run the same keyed transaction."""
    won, named, answers = [], [], []
    with jl.open(**target) as store:
        for r in range(ROUNDS):
            barrier.wait(30)
            try:
                store["bookings"].insert(booking(f"r{r}-w{worker}", f"{r:02d}", f"{r + 1:02d}", room="race"))
                won.append(r)
            except IntervalConflict as err:
                named.append((r, err.conflict["key"]))
            barrier.wait(30)
            answers.append(
                store.transaction(
                    lambda s, r=r: {
                        "round": r,
                        "by": worker,
                        "row": s["runs"].insert({"round": r, "by": worker}),
                    },
                    idempotency_key=f"round-{r}",
                    fingerprint={"round": r},
                )
            )
    results.put((worker, won, named, answers))


@pytest.mark.slow
def test_racing_processes_book_each_slot_once_and_run_each_key_once(
    open_store: Any, model: dict[str, Any]
) -> None:
    store = open_store(model, name="race")
    store.close()
    target = open_store.target("race")
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [ctx.Process(target=_contend, args=(target, w, barrier, results)) for w in range(PROCESSES)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    wins = sorted(r for _, won, _, _ in outcomes for r in won)
    assert wins == list(range(ROUNDS))  # exactly one winner per slot
    winner = {r: f"r{r}-w{w}" for w, won, _, _ in outcomes for r in won}
    named = [pair for _, _, losses, _ in outcomes for pair in losses]
    assert len(named) == ROUNDS * (PROCESSES - 1)
    assert all(key == winner[r] for r, key in named)  # every loser was told whose booking won
    with open_store.reopen(store) as store:
        booked = sorted(d["start"] for d in store["bookings"].to_list())
        assert booked == sorted({booking("x", f"{r:02d}", "23")["start"] for r in range(ROUNDS)})
        runs = store["runs"].to_list()
        assert sorted(d["round"] for d in runs) == list(range(ROUNDS))  # exactly one run per key
        for r in range(ROUNDS):
            seen = {tuple(sorted(answers[r].items())) for _, _, _, answers in outcomes}
            assert len(seen) == 1  # every process got the one stored result
            (answer,) = seen
            assert dict(answer)["by"] == next(d["by"] for d in runs if d["round"] == r)


SLOTS = 1_000


def _book_every_slot(target: dict[str, Any], worker: int, barrier: Any, results: Any) -> None:
    """Book slots 0..SLOTS-1 of one room, each at the same moment as the other processes."""
    won, named = [], []
    with jl.open(**target) as store:
        bookings = store["bookings"]
        for slot in range(SLOTS):
            barrier.wait(60)  # without it the first process to start runs ahead and wins every slot
            doc = booking(f"s{slot}-w{worker}", _minute(slot), _minute(slot + 1), room="race")
            try:
                bookings.insert(doc)
                won.append(slot)
            except IntervalConflict as err:
                named.append((slot, err.conflict["key"]))
    results.put((worker, won, named))


def _minute(n: int) -> str:
    return f"2024-05-{1 + n // 1440:02d}T{n // 60 % 24:02d}:{n % 60:02d}:00Z"


@pytest.mark.slow
def test_four_processes_race_for_a_thousand_slots_and_each_has_one_winner(
    open_store: Any, model: dict[str, Any]
) -> None:
    open_store(model, name="slots").close()
    target = open_store.target("slots")
    ctx = mp.get_context("forkserver")  # a fresh interpreter, jarenlab imported once for all racers
    ctx.set_forkserver_preload(["jarenlab", "jarenlab.store"])
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [
        ctx.Process(target=_book_every_slot, args=(target, w, barrier, results)) for w in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    assert sorted(s for _, won, _ in outcomes for s in won) == list(range(SLOTS))  # one winner each
    winner = {s: f"s{s}-w{w}" for w, won, _ in outcomes for s in won}
    named = [pair for _, _, losses in outcomes for pair in losses]
    assert len(named) == SLOTS * (PROCESSES - 1)
    assert all(key == winner[s] for s, key in named)
    assert len({w for w, won, _ in outcomes if won}) > 1  # the processes really raced
