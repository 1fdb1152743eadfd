"""Keeping warm columns current cheaply: a store's own commits hand their keys to the columns (no
log read, one statement), proven by the log position against other stores' and processes'
commits and rolled-back transactions; appends grow arrays in place without changing any array
already read; warm() inside a transaction reads committed data only. Both backends."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from jarenlab.query import agg, it, key
from jarenlab.query.columnar.fresh import KEEP, OwnCommits
from jarenlab.query.columnar.grow import extend, extend_arrow, spare_bytes
from jarenlab.query.planner.run import run_query
from tests.columnar.test_columns import MODEL, doc, queries

INSERT_TWO = (
    "import jarenlab as jl, sys, json; "
    "s = jl.open(sys.argv[1], **json.loads(sys.argv[2])); "
    "s['t'].insert({'s': 'other', 'i': 5}); s['t'].insert({'s': 'other', 'i': 6}); s.close()"
)


def agree(t: Any, q: Any, columnar: bool = True) -> Any:
    got, trace, _ = run_query(t, q.document, {}, columns=True)
    assert trace.mode == "columnar" or not columnar
    assert got == run_query(t, q.document, {}, columns=False)[0]
    return got[0]


def statements(store: Any, fn: Any) -> set[str]:
    """The named statements ``fn()`` runs."""
    ran: set[str] = set()
    store.db.record_statements(ran)
    try:
        fn()
    finally:
        store.db.record_statements(None)
    return ran


def other_process(open_store: Any, script: str = INSERT_TWO) -> None:
    target = open_store.target("lab")
    path = str(target.pop("path"))
    subprocess.run([sys.executable, "-c", script, path, json.dumps(target)], check=True, timeout=120)


def test_own_commits_are_not_read_back_from_the_log(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(2)
    t.insert_many([doc(rng) for _ in range(100)])
    q = t.group_by(s=it.s).select({"s": key("s"), "n": agg.count(), "x": agg.sum(it.x)})
    agree(t, q)
    for step in range(12):  # inserts, several commits between questions, puts, patches, deletes
        keys = t.texts()[0]
        for _ in range(step % 3 + 1):
            op = rng.choice(["insert", "insert", "put", "patch", "delete"])
            if op == "insert":
                t.insert(doc(rng))
            elif op == "put":
                t.put(doc(rng), rng.choice(keys))
            elif op == "patch":
                t.patch(rng.choice(keys), {"s": rng.choice(["a", "b"])})
            else:
                t.delete(rng.choice(keys))
        ran = statements(store, lambda: agree(t, q))
        assert "live.read" not in ran, step
    # Nothing new: the answer needs only the log's newest record.
    assert statements(store, lambda: agree(t, q)) <= {"live.high_watermark"}
    stats = store.columns.stats()
    assert stats["rebuilds"] == 0 and stats["patches"] >= 12


def test_another_store_between_own_commits_is_read_from_the_log(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": n} for n in range(20)])
    q = t.group_by(s=it.s).select({"s": key("s"), "n": agg.count(), "i": agg.sum(it.i)})
    agree(t, q)
    other = open_store.reopen(store)
    t.insert({"s": "a", "i": 100})  # own
    other["t"].insert({"s": "b", "i": 1})  # another store's, between
    t.insert({"s": "a", "i": 200})  # own again: the records are not all this store's
    ran = statements(store, lambda: agree(t, q))
    assert "live.read" in ran
    assert t.execute(q.document, {}, columns=True) == [
        {"s": "a", "n": 22, "i": 490},
        {"s": "b", "n": 1, "i": 1},
    ]
    # Another store's commit after an own one: the statement's newest record is not the own one.
    t.patch(1, {"s": "b"})
    other["t"].delete(2)
    assert "live.read" in statements(store, lambda: agree(t, q))


def test_an_own_commit_racing_another_process(open_store: Any) -> None:
    """This store commits, another process commits twice before the question: the own keys are
    not enough (the newest record is the other process's), the log is read, nothing is missed."""
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": n} for n in range(10)])
    q = t.group_by(s=it.s).select({"s": key("s"), "n": agg.count(), "i": agg.sum(it.i)})
    agree(t, q)
    t.insert({"s": "a", "i": 1000})
    other_process(open_store)
    assert agree(t, q) == [{"s": "a", "n": 11, "i": 1045}, {"s": "other", "n": 2, "i": 11}]
    # And the other way round: the other process first, then an own commit on top of it.
    other_process(open_store)
    t.insert({"s": "a", "i": 1})
    assert agree(t, q) == [{"s": "a", "n": 12, "i": 1046}, {"s": "other", "n": 4, "i": 22}]
    assert store.columns.stats()["rebuilds"] == 0


def test_a_rolled_back_own_transaction_is_never_taken_for_an_own_record(open_store: Any) -> None:
    """A rolled-back transaction of this store writes no record its number can be mistaken for:
    another process's commit that takes that number is read from the log."""
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": 1}] * 5)
    q = t.group_by(s=it.s).select({"s": key("s"), "n": agg.count()})
    agree(t, q)
    with pytest.raises(RuntimeError), store.transaction():
        t.insert({"s": "rolled back", "i": 1})
        raise RuntimeError("no")
    other_process(open_store)
    t.insert({"s": "a", "i": 1})
    assert agree(t, q) == [{"s": "a", "n": 6}, {"s": "other", "n": 2}]


def test_every_question_after_own_appends(open_store: Any) -> None:
    """Appends grow the columns and what is kept of them (group codes, instants) in place: every
    question agrees with SQL after each of many single inserts."""
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(4)
    t.insert_many([doc(rng) for _ in range(50)])
    qs = [q for n, q in enumerate(queries(t)) if n not in (0, 2, 5)]
    for q in qs:
        agree(t, q, columnar=False)
    qs = [q for q in qs if run_query(t, q.document, {}, columns=True)[1].mode == "columnar"]
    assert len(qs) >= 4
    for step in range(40):
        t.insert(doc(rng))
        agree(t, qs[step % len(qs)])
    assert store.columns.stats()["rebuilds"] == 0


def test_warm_inside_a_transaction_reads_committed_data(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": 1}] * 3)
    q = t.group_by(s=it.s).select({"s": key("s"), "n": agg.count()})
    with pytest.raises(RuntimeError), store.transaction():
        t.insert({"s": "rolled back", "i": 1})
        store.columns.warm("t", ["s", "i"])
        raise RuntimeError("no")
    assert agree(t, q) == [{"s": "a", "n": 3}]


def test_own_commits_kept_and_gaps() -> None:
    own = OwnCommits()
    assert own.since(0, "t") is None
    own.record(1, [("t", 1, {"n": 1}, None)])
    own.record(2, [("t", 2, {"n": 2}, None), ("t", 3, {"n": 3}, None)])
    assert own.since(0, "t") == (2, {1, 2, 3}, True)
    own.record(3, None)  # a migration's: its keys are unknown
    assert own.since(0, "t") is None and own.since(3, "t") is None
    own.record(5, [("t", 1, None, '{"n": 1}')])  # a record 4 this store did not commit: a gap
    assert own.since(3, "t") is None and own.since(4, "t") == (5, {1}, False)
    own.record(6, [("t", 1, {"n": 1}, None)])  # written again after its delete: not new
    assert own.since(4, "t") == (6, {1}, False)
    for seq in range(7, 7 + KEEP + 5):
        own.record(seq, [("t", seq, {}, None)])
    assert len(own.records) == KEEP and own.since(4, "t") is None


@pytest.mark.parametrize("kind", ["int64", "float64", "large_string", "timestamp"])
def test_grown_arrays_equal_concatenation_and_never_change(kind: str) -> None:
    rng = random.Random(kind)

    def part(k: int) -> pa.Array:
        if kind == "large_string":
            return pa.array(
                [None if rng.random() < 0.3 else "é" * rng.randint(0, 4) for _ in range(k)], pa.large_string()
            )
        if kind == "float64":
            return pa.array(
                [None if rng.random() < 0.3 else rng.uniform(-1, 1) for _ in range(k)], pa.float64()
            )
        typ = pa.timestamp("s") if kind == "timestamp" else pa.int64()
        return pa.array([None if rng.random() < 0.3 else rng.randint(-9, 9) for _ in range(k)], typ)

    for _ in range(40):
        cur = part(rng.randint(0, 30))
        if len(cur) > 2:
            cur = cur.slice(1)  # an offset into its buffers
        seen = [(cur, cur.to_pylist())]
        for _ in range(rng.randint(1, 25)):
            # Mostly the newest array; sometimes an older one (its room is another array's now).
            src = cur if rng.random() < 0.8 else rng.choice(seen)[0]
            more = part(rng.choice([0, 1, 2, 7, 9, 3000]))
            grown = extend_arrow(src, more)
            grown.validate(full=True)
            assert grown.to_pylist() == src.to_pylist() + more.to_pylist()
            seen.append((grown, grown.to_pylist()))
            cur = grown
        assert all(a.to_pylist() == values for a, values in seen)
    assert spare_bytes(extend_arrow(part(5), part(1))) > 0


def test_grown_numpy_arrays_never_change() -> None:
    rng = random.Random(1)
    cur = np.arange(4)
    seen = [(cur, cur.tolist())]
    for _ in range(500):
        src = cur if rng.random() < 0.8 else rng.choice(seen)[0]
        grown = extend(src, np.arange(rng.randint(0, 700)))
        seen.append((grown, grown.tolist()))
        cur = grown
    assert all(a.tolist() == values for a, values in seen)
