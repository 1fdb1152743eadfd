"""Exports of row queries taken straight from warm columns equal the items path's, batch for batch."""

from __future__ import annotations

import random
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from jarenlab.query import agg, it, win

from .test_columns import MODEL, doc


def row_queries(t: Any) -> list[Any]:
    """Row queries returning members (``x`` holds integers and fractions: the columns decline it),
    after a rolling window or window functions too."""
    return [
        t.where(it.i > 2).select({"s": it.s, "i": it.i}),
        t.where(it.s == "a").select({"when": it.when, "i": it.i, "s": it.s}),
        t.order_by(it.i.desc(), it.s).take(25).select({"i": it.i, "s": it.s}),
        t.where(it.i.exists()).order_by(it.i).skip(10).take(40).select({"s": it.s, "i": it.i}),
        t.where(it.i < 0).select(it.s),
        t.select({"i": it.i}),
        t.where(~it.i.exists()).select({"i": it.i, "s": it.s}),
        t.where(it.i == 99).select({"s": it.s}),
        t.where(it.i >= 0).select({"x": it.x, "s": it.s}),
        # rolling windows: their computed members taken as arrays too (an average, a count, a
        # minimum of strings); every row of a rolling needs its time and member, or SQL answers
        t.where(it.when.exists() & it.i.exists() & it.s.exists())
        .rolling(it.when, "P7D", partition=it.s, avg=agg.avg(it.i), n=agg.count(), low=agg.min(it.s))
        .select({"when": it.when, "s": it.s, "avg": it.avg, "n": it.n, "low": it.low}),
        # window functions: ranks, offsets with defaults and framed aggregates, beside members that
        # are missing (a null) in some rows
        t.where(it.i.exists() & it.s.exists())
        .window(partition=it.s, order_by=it.i, rk=win.rank(), run=win.sum(it.i), prev=win.lag(it.s, 1, "-"))
        .select({"when": it.when, "s": it.s, "rk": it.rk, "run": it.run, "prev": it.prev}),
        t.where(it.i.exists() & it.s.exists())
        .window(partition=it.s, order_by=it.when, n=win.count(), nxt=win.lead(it.i, 2, 0), hi=win.max(it.s))
        .select({"i": it.i, "n": it.n, "nxt": it.nxt, "hi": it.hi, "s": it.s}),
        t.where(it.i.exists() & it.s.exists())
        .window(partition=it.s, order_by=it.i, rn=win.row_number(), avg=win.avg(it.i), low=win.min(it.i))
        .select({"rn": it.rn, "avg": it.avg, "low": it.low}),
    ]


def test_warm_columns_export_what_the_rows_export(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(11)
    t.insert_many([doc(rng) for _ in range(300)])
    queries = row_queries(t)
    cold = [(q.to_arrow(), [b for b in q.iter_batches(37)], q.to_pandas()) for q in queries]
    before = store.planner.counters["columnar"]
    store.columns.warm("t", ["s", "i", "x", "when"])
    taken = 0
    for q, (table, parts, frame) in zip(queries, cold):
        n = store.planner.counters["columnar"]
        assert q.to_arrow().equals(table), q.document
        pd.testing.assert_frame_equal(q.to_pandas(), frame)
        got = list(q.iter_batches(37))
        taken += store.planner.counters["columnar"] > n
        assert all(b.num_rows <= 37 for b in got)
        if table.column_names != ["value"]:
            assert [b.schema for b in got] == [b.schema for b in parts], q.document
            assert len(got) == len(parts) and all(a.equals(b) for a, b in zip(got, parts)), q.document
        else:
            # One member per result: SQL's batches are of rows read (a missing member gives no
            # result), the columns' of results; the rows are the same.
            assert pa.Table.from_batches(got).equals(pa.Table.from_batches(parts))
    # Every query but the one returning the mixed number member is taken from the columns.
    assert taken == len(queries) - 1
    assert store.planner.counters["columnar"] - before == 3 * (len(queries) - 1)


def test_exports_follow_commits_and_stay_out_of_transactions(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": n} for n in range(50)])
    store.columns.warm("t", ["s", "i"])
    q = t.where(it.i >= 48).select({"i": it.i})
    before = store.planner.counters["columnar"]
    assert q.to_pandas()["i"].tolist() == [48, 49]
    t.insert({"s": "b", "i": 70})
    t.where(it.i == 48).delete()
    assert q.to_pandas()["i"].tolist() == [49, 70]
    with store.transaction():
        t.insert({"s": "c", "i": 71})
        assert q.to_pandas()["i"].tolist() == [49, 70, 71]  # its own write: SQL answers
    assert q.to_pandas()["i"].tolist() == [49, 70, 71]
    assert store.planner.counters["columnar"] == before + 3


@pytest.mark.parametrize("size", [1, 64])
def test_an_owner_view_exports_only_its_rows(open_store: Any, size: int) -> None:
    model = {
        "$model": "0.1",
        "collections": {
            "notes": {
                "key": None,
                "identity": "integer",
                "owner": "/who",
                "schema": {
                    "type": "object",
                    "required": ["who"],
                    "properties": {
                        "who": {"type": "string"},
                        "n": {"type": "integer"},
                        "tag": {"type": "string"},
                    },
                },
            }
        },
    }
    store = open_store(model)
    notes = store["notes"]
    notes.insert_many([{"who": "ann" if k % 3 else "bob", "n": k, "tag": f"t{k}"} for k in range(90)])
    store.columns.warm("notes", ["who", "n", "tag"])
    mine = store.as_owner("bob")["notes"]
    before = store.planner.counters["columnar"]
    q = mine.where(it.n > 10).select({"tag": it.tag})
    got = pd.concat([b.to_pandas() for b in q.iter_batches(size)])
    assert got["tag"].tolist() == [f"t{k}" for k in range(90) if k > 10 and k % 3 == 0]
    assert store.planner.counters["columnar"] == before + 1
