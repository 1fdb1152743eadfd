"""``$window`` answered by the columns on every backend: random documents through ranks, offsets and
framed aggregates (float sums among them) followed by a projection, each answer equal to SQL's and
the engine's (``int`` told from ``float``), fresh after random writes, and what the columns decline,
with their reasons."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest

from jarenlab.query import evaluate, it, win
from jarenlab.query.columnar.windows import ranks
from jarenlab.query.planner.run import run_query
from tests.query.corpus import same

MODEL = {
    "$model": "0.1",
    "collections": {
        "t": {
            "key": None,
            "identity": "integer",
            "schema": {
                "type": "object",
                "properties": {
                    "o": {"type": "string"},
                    "i": {"type": "integer"},
                    "x": {"type": "number"},
                },
            },
        }
    },
}
ORIGINS = ["EWR", "JFK", "LGA", "é", "", "\U0010ffff", "z"]


def doc(rng: random.Random, full: bool = False) -> dict[str, Any]:
    """A document; ``full``: every member present (else each is missing now and then)."""
    d: dict[str, Any] = {}
    if full or rng.random() < 0.85:
        d["o"] = rng.choice(ORIGINS)
    if full or rng.random() < 0.85:
        d["i"] = rng.choice([rng.randint(-5, 5), rng.randint(-(2**40), 2**40)])
    if full or rng.random() < 0.8:
        d["x"] = rng.choice(
            [rng.uniform(-5, 5), rng.randint(-3, 3), 0.1, 1e15 + 0.5, -1e15 - 0.5, 2.0**-60, -0.0, 0.0]
        )
    return d


def answers(t: Any, q: Any) -> tuple[Any, Any, Any, str]:
    """(columns, SQL, engine) answers of a builder query, and the mode the columns' run took."""
    document = q.document
    got, trace, _ = run_query(t, document, {}, columns=True)
    sql = run_query(t, document, {}, columns=False)[0]
    engine = evaluate(document, [json.loads(x) for x in t.texts()[1]], {})
    return got, sql, engine, trace.mode


def windowed(t: Any, partition: Any, order_by: Any, **compute: Any) -> Any:
    names = {n: getattr(it, n) for n in compute}
    return t.window(partition=partition, order_by=order_by, **compute).select(
        {"o": it.o, "i": it.i, "x": it.x, **names}
    )


#: Window shapes whose every row gets each computed member (a default beyond the partition's ends,
#: frames holding the row itself, over rows holding every member).
SHAPES = [
    (it.o, it.i, {"rn": win.row_number(), "rk": win.rank(), "dr": win.dense_rank()}),
    (None, [it.o.desc(), it.x], {"rk": win.rank(), "dr": win.dense_rank()}),
    (it.i, it.x.desc(), {"rn": win.row_number(), "p": win.lag(it.o, 1, "")}),
    (it.o, [it.x, it.i.desc()], {"p": win.lag(it.x, 2, -0.0), "q": win.lead(it.i, 1, 0)}),
    (it.o, it.i, {"c": win.count(), "s": win.sum(it.i), "sx": win.sum(it.x), "ax": win.avg(it.x)}),
    (None, it.x, {"a": win.avg(it.i, frame=(-2, 2)), "lo": win.min(it.o, frame=(-1, 1))}),
    (it.o, it.x, {"hi": win.max(it.i, frame=(0, None)), "k": win.count(it.x, frame=(None, None))}),
    (it.o, it.i, {"sx": win.sum(it.x, frame=(-3, 0)), "c": win.count(frame=(1, 3))}),
]


def test_random_windows_are_the_engines(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(7)
    t.insert_many([doc(rng, full=True) for _ in range(300)])
    t.insert_many([{**doc(rng, full=True), "x": float(n % 5), "i": n % 3} for n in range(60)])  # ties
    for partition, order_by, compute in SHAPES:
        q = windowed(t, partition, order_by, **compute)
        got, sql, engine, mode = answers(t, q)
        assert mode == "columnar", (compute, t.explain(q.document, columns=True, analyze=True).columns)
        assert same(got, engine) and same(sql, engine), compute


def test_missing_members_partition_and_order_as_the_engine(open_store: Any) -> None:
    """Missing partition keys are a partition of their own, missing ordering keys come first or last
    as the spec says; a row left without a computed member declines (its stored member would show)."""
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(11)
    t.insert_many([doc(rng) for _ in range(400)])
    for empty in ("least", "greatest"):
        for desc in (False, True):
            order = it.i.desc(empty=empty) if desc else it.i.asc(empty=empty)
            q = windowed(t, it.o, [order], rn=win.row_number(), rk=win.rank(), c=win.count())
            got, sql, engine, mode = answers(t, q)
            assert mode == "columnar" and same(got, engine) and same(sql, engine), (empty, desc)
    q = windowed(t, it.o, it.i, p=win.lag(it.x))
    got, sql, engine, mode = answers(t, q)
    assert mode != "columnar" and same(got, engine) and same(sql, engine)
    assert "no window 'p'" in t.explain(q.document, columns=True, analyze=True).columns["reason"]


def test_a_filter_on_ranks_is_applied_after_the_window(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(17)
    t.insert_many([doc(rng, full=True) for _ in range(300)])
    q = t.where(it.x > 0).window(partition=it.o, order_by=it.i.desc(), rk=win.rank()).where(it.rk <= 3)
    q = q.select({"o": it.o, "i": it.i, "rk": it.rk})
    got, sql, engine, mode = answers(t, q)
    assert mode == "columnar" and same(got, engine) and same(sql, engine)
    assert got[0] and all(r["rk"] <= 3 for r in got[0])


def test_a_window_query_stays_fresh_through_random_writes(open_store: Any) -> None:
    """Random inserts, puts, patches, deletes and rolled-back transactions, each followed by the
    same window query: the columns answer it, equal to SQL's and the engine's, patched not rebuilt."""
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(19)
    t.insert_many([doc(rng, full=True) for _ in range(200)])
    q = windowed(
        t, it.o, [it.i, it.x.desc()], rk=win.rank(), p=win.lag(it.i, 1, 0), s=win.sum(it.x), c=win.count()
    )
    for step in range(40):
        keys = t.texts()[0]
        op = rng.choice(["insert", "put", "patch", "delete", "rollback", "many"])
        if op == "insert":
            t.insert(doc(rng, full=True))
        elif op == "many":
            t.insert_many([doc(rng, full=True) for _ in range(rng.randint(1, 5))])
        elif op == "put" and keys:
            t.put(doc(rng, full=True), rng.choice(keys))
        elif op == "patch" and keys:
            t.patch(rng.choice(keys), {"i": rng.randint(-6, 6), "o": rng.choice(ORIGINS), "x": rng.random()})
        elif op == "delete" and keys:
            t.delete(rng.choice(keys))
        elif op == "rollback":
            with pytest.raises(RuntimeError), store.transaction():
                t.insert(doc(rng, full=True))
                raise RuntimeError("rolled back")
        got, sql, engine, mode = answers(t, q)
        assert mode == "columnar" and same(got, engine) and same(sql, engine), (step, op)
    stats = store.columns.stats()
    assert stats["patches"] > 20 and stats["rebuilds"] == 0, stats


def test_what_the_columns_decline_and_why(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([doc(random.Random(1), full=True) for _ in range(50)])
    t.insert({"o": "a", "i": 2.0, "x": 1})
    reasons = {
        "a window returned whole": t.window(partition=it.o, order_by=it.i, r=win.rank()),
        "$min": windowed(t, it.o, it.i, lo=win.min(it.x)),
        "$partition": windowed(t, it.x, it.i, r=win.rank()),
        "2.0": windowed(t, it.o, it.i, r=win.rank()),
    }
    for phrase, q in reasons.items():
        ex = t.explain(q.document, columns=True, analyze=True)
        assert not ex.columns["used"] and phrase in ex.columns["reason"], (phrase, ex.columns)
        got, sql, engine, mode = answers(t, q)
        assert mode != "columnar" and same(got, engine) and same(sql, engine)


def test_ranks_count_ties_within_each_partition() -> None:
    rank, dense = ranks(np.array([0, 0, 0, 0, 1, 1]), [np.array([1, 1, 2, 3, 3, 3])])
    assert rank == [1, 1, 3, 4, 1, 1] and dense == [1, 1, 2, 3, 1, 1]
    assert ranks(np.array([], dtype=np.int64), []) == ([], [])
