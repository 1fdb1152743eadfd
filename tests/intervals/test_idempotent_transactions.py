"""Retry-safe transactions: replay, fingerprints, failures, results, hashing, eviction, restart."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from jarenlab import idempotency
from jarenlab.errors import IdempotencyError, StoreError
from jarenlab.query.lang.values import identical

from .conftest import booking


@pytest.fixture
def store(open_store: Any, model: dict[str, Any]) -> Any:
    return open_store(model)


class Work:
    """A transaction body that counts its runs and writes one record each time."""

    def __init__(self, result: Any = "default") -> None:
        self.runs = 0
        self.result = result

    def __call__(self, store: Any) -> Any:
        self.runs += 1
        key = store["runs"].insert({"run": self.runs})
        return {"run": key} if self.result == "default" else self.result


def test_a_replay_returns_a_copy_of_the_stored_result_without_running(store: Any) -> None:
    work = Work()
    first = store.transaction(work, idempotency_key="order-1", fingerprint={"qty": 2})
    again = store.transaction(work, idempotency_key="order-1", fingerprint={"qty": 2})
    assert first == again == {"run": 1} and work.runs == 1 and store["runs"].count() == 1
    again["run"] = 99
    assert store.transaction(work, idempotency_key="order-1", fingerprint={"qty": 2}) == {"run": 1}
    assert store.transaction(work, idempotency_key="order-2", fingerprint={"qty": 2}) == {"run": 2}


def test_a_different_fingerprint_is_refused(store: Any) -> None:
    work = Work()
    store.transaction(work, idempotency_key="k", fingerprint={"qty": 2, "sku": "x"})
    assert store.transaction(work, idempotency_key="k", fingerprint={"sku": "x", "qty": 2}) == {"run": 1}
    for other in ({"qty": 3, "sku": "x"}, None, "qty=2"):
        with pytest.raises(IdempotencyError) as info:
            store.transaction(work, idempotency_key="k", fingerprint=other)
        assert info.value.code == "JD2092"
    assert work.runs == 1


def test_the_fingerprint_defaults_to_none(store: Any) -> None:
    work = Work()
    store.transaction(work, idempotency_key="k")
    assert store.transaction(work, idempotency_key="k", fingerprint=None) == {"run": 1}
    with pytest.raises(IdempotencyError):
        store.transaction(work, idempotency_key="k", fingerprint={"a": 1})


def test_a_failed_run_keeps_nothing_and_can_be_retried(store: Any) -> None:
    calls = []

    def flaky(s: Any) -> Any:
        calls.append(1)
        s["runs"].insert({"attempt": len(calls)})
        if len(calls) == 1:
            raise RuntimeError("injected failure")
        return len(calls)

    with pytest.raises(RuntimeError):
        store.transaction(flaky, idempotency_key="k")
    assert store["runs"].count() == 0
    assert store.db.connection().execute("SELECT count(*) FROM _jl_transaction_results").fetchone()[0] == 0
    assert store.transaction(flaky, idempotency_key="k") == 2
    assert store.transaction(flaky, idempotency_key="k") == 2 and len(calls) == 2


def test_an_interval_clash_inside_keeps_no_claim(store: Any) -> None:
    store["bookings"].insert(booking("a", "10", "12"))

    def book(s: Any) -> Any:
        return s["bookings"].insert(booking("b", "11", "13"))

    with pytest.raises(jl.JarenlabError) as info:
        store.transaction(book, idempotency_key="book-b")
    assert info.value.code == "JD2090"
    store["bookings"].patch("a", {"status": "cancelled"})
    assert store.transaction(book, idempotency_key="book-b") == "b"


@pytest.mark.parametrize(
    ("result", "words"),
    [
        ((1, 2), "round-trip"),
        ({"when": __import__("datetime").date(2024, 1, 1)}, "round-trip"),
        ({1: "int key"}, "not JSON"),
        (float("nan"), "round-trip"),
        (object(), "not JSON"),
        ("x" * (16 * 1024), "over the 16,384"),
    ],
)
def test_results_must_be_exact_json_within_16_kib(store: Any, result: Any, words: str) -> None:
    with pytest.raises(IdempotencyError) as info:
        store.transaction(Work(result), idempotency_key="k")
    assert info.value.code == "JD2093" and words in info.value.reason
    assert store["runs"].count() == 0


def test_results_that_round_trip_are_kept_exactly(store: Any) -> None:
    value = {
        "ints": [1, -2, 2**62],
        "floats": [1.0, 0.1, -0.0],
        "t": True,
        "n": None,
        "s": "é\u2028",
        "o": {"a": []},
    }
    assert identical(store.transaction(Work(value), idempotency_key="k"), value)
    back = store.transaction(Work(), idempotency_key="k")
    assert identical(back, value) and back is not value
    big = "y" * (16 * 1024 - 2)  # 16 KiB exactly with its quotes
    assert store.transaction(Work(big), idempotency_key="big") == big


def test_keys_and_fingerprints_are_stored_as_sha256_only(store: Any) -> None:
    store.transaction(Work(), idempotency_key="customer-42/order-7", fingerprint="card-4242")
    rows = (
        store.db.connection()
        .execute("SELECT key, fingerprint, result FROM _jl_transaction_results")
        .fetchall()
    )
    assert [tuple(row) for row in rows] == [
        (
            hashlib.sha256(b'"customer-42/order-7"').digest(),
            hashlib.sha256(b'"card-4242"').digest(),
            '{"run":1}',
        )
    ]


@pytest.mark.needs("file", "reads the bytes of the database files")
def test_the_files_hold_no_plain_key_or_fingerprint(store: Any) -> None:
    store.transaction(Work(), idempotency_key="customer-42/order-7", fingerprint="card-4242")
    store.close()
    raw = b"".join(p.read_bytes() for p in Path(store.path).parent.glob("*.db*"))
    assert b'{"run":1}' in raw  # the files do hold what was written
    assert b"customer-42" not in raw and b"card-4242" not in raw


def test_the_newest_1000_keys_are_kept(store: Any) -> None:
    for i in range(idempotency.KEEP + 5):
        store.transaction(lambda s, i=i: i, idempotency_key=f"k{i}")
    conn = store.db.connection()
    assert conn.execute("SELECT count(*) FROM _jl_transaction_results").fetchone()[0] == idempotency.KEEP
    work = Work()
    assert store.transaction(work, idempotency_key="k5") == 5 and work.runs == 0  # the oldest kept
    assert store.transaction(work, idempotency_key=f"k{idempotency.KEEP + 4}") == idempotency.KEEP + 4
    assert (
        store.transaction(work, idempotency_key="k4") == {"run": 1} and work.runs == 1
    )  # evicted: runs again


def test_replay_survives_a_restart(open_store: Any, model: dict[str, Any]) -> None:
    store = open_store(model, name="restart")
    assert store.transaction(Work(), idempotency_key="k", fingerprint=[1]) == {"run": 1}
    store.close()
    store = open_store.reopen(store, model)
    work = Work()
    assert store.transaction(work, idempotency_key="k", fingerprint=[1]) == {"run": 1} and work.runs == 0
    with pytest.raises(IdempotencyError):
        store.transaction(work, idempotency_key="k", fingerprint=[2])


def test_inside_an_outer_transaction_the_claim_rolls_back_with_it(store: Any) -> None:
    work = Work()
    with pytest.raises(RuntimeError), store.transaction():
        store.transaction(work, idempotency_key="k")
        raise RuntimeError("outer fails")
    assert store.transaction(work, idempotency_key="k") == {"run": 1} and work.runs == 2


def test_arguments_are_checked(store: Any) -> None:
    for kwargs in ({"idempotency_key": ""}, {"idempotency_key": 7}, {"fingerprint": "f"}):
        with pytest.raises(StoreError) as info:
            store.transaction(Work(), **kwargs)
        assert info.value.code == "JD2010"
    with pytest.raises(StoreError):
        store.transaction(None, idempotency_key="k")
    with pytest.raises(StoreError):
        store.transaction(Work(), idempotency_key="k", fingerprint={1, 2})


def test_a_call_nested_in_its_own_key_is_refused(store: Any) -> None:
    def outer(s: Any) -> Any:
        return s.transaction(Work(), idempotency_key="k")

    with pytest.raises(StoreError) as info:
        store.transaction(outer, idempotency_key="k")
    assert info.value.code == "JD2010" and store["runs"].count() == 0
    assert store.transaction(Work(), idempotency_key="k") == {"run": 1}


RACE_KEYS = 1_000
RACERS = 4
RESTART_EVERY = 25


def _race(target: dict[str, Any], worker: int, barrier: Any, results: Any) -> None:
    """Every process runs the same keyed transactions, in the same order, at the same time."""
    with jl.open(target["path"], schema=target.get("schema")) as store:
        answers = []
        for k in range(RACE_KEYS):
            if k % RESTART_EVERY == 0:
                # Start together again now and then: a SQLite writer that keeps the lock from one
                # transaction to the next could otherwise win every key while the others sleep.
                barrier.wait(60)
            answers.append(
                store.transaction(
                    lambda s, k=k: {"k": k, "by": worker, "row": s["runs"].insert({"k": k, "by": worker})},
                    idempotency_key=f"key-{k}",
                    fingerprint=k,
                )
            )
    results.put((worker, answers))


@pytest.mark.slow
def test_racing_processes_run_each_key_once(open_store: Any, model: dict[str, Any]) -> None:
    import multiprocessing as mp

    store = open_store(model)
    ctx = mp.get_context("forkserver")  # a fresh interpreter, jarenlab imported once for all racers
    ctx.set_forkserver_preload(["jarenlab", "jarenlab.store"])
    barrier, results = ctx.Barrier(RACERS), ctx.Queue()
    target = open_store.target()
    procs = [ctx.Process(target=_race, args=(target, w, barrier, results)) for w in range(RACERS)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0] * RACERS
    runs = store["runs"].to_list()
    assert sorted(d["k"] for d in runs) == list(range(RACE_KEYS))  # exactly one run per key
    by = {d["k"]: d["by"] for d in runs}
    for k in range(RACE_KEYS):
        seen = {tuple(sorted(answers[k].items())) for _, answers in outcomes}
        assert len(seen) == 1  # every process got the one stored result
        assert dict(next(iter(seen)))["by"] == by[k]
    assert len({w for w in by.values()}) > 1  # the processes really raced
