"""Rolling windows and resampled series answered by the columns on every backend: random documents,
widths, partitions and aggregates (float sums among them), each answer equal to SQL's and the engine's (``int`` told from
``float``), fresh after random writes, and the constructs the columns decline, with their reasons."""

from __future__ import annotations

import calendar
import json
import random
from typing import Any

import pytest

from jarenlab.query import agg, evaluate, it, win
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
                    "when": {"type": "string", "format": "date-time"},
                },
            },
        }
    },
}
ORIGINS = ["EWR", "JFK", "LGA", "é", ""]


def doc(rng: random.Random, full: bool = False) -> dict[str, Any]:
    """A document; ``full``: every member present (else each is missing now and then)."""
    d: dict[str, Any] = {}
    if full or rng.random() < 0.9:
        d["o"] = rng.choice(ORIGINS)
    if full or rng.random() < 0.85:
        d["i"] = rng.choice([rng.randint(-50, 50), rng.randint(-(2**40), 2**40)])
    if rng.random() < 0.8:
        d["x"] = rng.choice(
            [rng.uniform(-5, 5), rng.randint(-3, 3), 0.1, 1e15 + 0.5, -1e15 - 0.5, 2.0**-60, 0.5]
        )
    if full or rng.random() < 0.9:
        day, hour, minute = rng.randint(1, 20), rng.randint(0, 23), rng.choice([0, 0, 30, 59])
        d["when"] = f"2013-03-{day:02d}T{hour:02d}:{minute:02d}:{rng.choice([0, 0, 1, 59]):02d}Z"
    return d


def answers(t: Any, q: Any) -> tuple[Any, Any, Any, str]:
    """(columns, SQL, engine) answers of a builder query, and the mode the columns' run took."""
    document = q.document
    got, trace, _ = run_query(t, document, {}, columns=True)
    sql = run_query(t, document, {}, columns=False)[0]
    engine = evaluate(document, [json.loads(x) for x in t.texts()[1]], {})
    return got, sql, engine, trace.mode


def rolled(t: Any, width: str, partition: Any, **compute: Any) -> Any:
    names = {n: getattr(it, n) for n in compute}
    return t.rolling(it.when, width, partition=partition, **compute).select(
        {"when": it.when, "o": it.o, **names}
    )


def test_random_rolling_windows_are_the_engines(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(3)
    t.insert_many([doc(rng, full=True) for _ in range(600)])
    t.insert_many([{**doc(rng, full=True), "x": float(n % 7)} for n in range(40)])  # integer-valued floats
    shapes = [
        ("PT1H", None, {"n": agg.count(), "s": agg.sum(it.i), "a": agg.avg(it.i)}),
        ("P1D", it.o, {"lo": agg.min(it.i), "hi": agg.max(it.o), "k": agg.count(it.x)}),
        ("PT1S", [it.o, it.i], {"n": agg.count(), "lo": agg.min(it.o)}),
        ("P7D", None, {"a": agg.avg(it.i), "hi": agg.max(it.i), "lo": agg.min(it.o)}),
        ("PT90M", it.o, {"s": agg.sum(it.i), "a": agg.avg(it.i), "c": agg.count(it.i)}),
        ("PT6H", None, {"sx": agg.sum(it.x), "ax": agg.avg(it.x)}),
        ("P2D", it.o, {"sx": agg.sum(it.x), "n": agg.count(it.x)}),
        ("PT1S", None, {"sx": agg.sum(it.x)}),
    ]
    for width, partition, compute in shapes:
        q = rolled(t, width, partition, **compute)
        got, sql, engine, mode = answers(t, q)
        assert mode == "columnar", (width, compute, t.explain(q.document, columns=True, analyze=True).columns)
        assert same(got, engine) and same(sql, engine), (width, compute)


def test_calendar_widths_step_back_by_calendar_months(open_store: Any) -> None:
    """Months and years are calendar steps (the day clamped to the month's end, the time of day
    kept), then the fixed part: times over years, many at the ends of months and in leap years."""
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(11)
    docs = []
    for _ in range(500):
        d = doc(rng, full=True)
        year, month = rng.randint(2011, 2017), rng.randint(1, 12)
        day = rng.choice([1, 28, 29, 30, 31, rng.randint(1, 31)])
        day = min(day, calendar.monthrange(year, month)[1])
        d["when"] = f"{year}-{month:02d}-{day:02d}T{rng.randint(0, 23):02d}:{rng.choice([0, 30]):02d}:00Z"
        docs.append(d)
    t.insert_many(docs)
    shapes = [
        ("P1M", None, {"n": agg.count(), "s": agg.sum(it.i), "a": agg.avg(it.i)}),
        ("P2M", it.o, {"lo": agg.min(it.i), "hi": agg.max(it.o), "k": agg.count(it.x)}),
        ("P1Y", None, {"n": agg.count(), "sx": agg.sum(it.x)}),
        ("P1M1DT1H", it.o, {"a": agg.avg(it.i), "n": agg.count()}),
        ("P13M", None, {"hi": agg.max(it.i)}),
    ]
    for width, partition, compute in shapes:
        q = rolled(t, width, partition, **compute)
        got, sql, engine, mode = answers(t, q)
        assert mode == "columnar", (width, t.explain(q.document, columns=True, analyze=True).columns)
        assert same(got, engine) and same(sql, engine), (width, compute)
    ex = t.explain(rolled(t, "P1M", None, n=agg.count()).document, columns=False)
    assert ex.mode != "native" and "calendar width" in str(ex.rows()), ex.rows()  # SQL frames are fixed


def test_months_back_is_the_engines_calendar_step() -> None:
    import numpy as np

    from jarenlab.query.columnar.series import months_back
    from jarenlab.query.lang.dates import add_duration

    rng = random.Random(2)
    times = np.array([rng.randint(-(2**41), 2**41) for _ in range(3000)], dtype=np.int64)  # 1900-2039
    for months in (1, 2, 11, 12, 13, 25, 1200):
        want = [add_duration(int(x), (-months, 0)) for x in times]
        assert months_back(times, months).tolist() == want, months


def test_a_row_without_a_rolling_value_leaves_the_answer_to_sql(open_store: Any) -> None:
    """A row with no time (or an empty window) gets no member, so the engine shows a stored member
    of that name, which the columns do not hold: they decline, and SQL's answer is the engine's."""
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(5)
    t.insert_many([doc(rng) for _ in range(300)])
    q = rolled(t, "PT6H", it.o, n=agg.count(), a=agg.avg(it.i))
    got, sql, engine, mode = answers(t, q)
    assert mode != "columnar" and same(got, engine) and same(sql, engine)
    assert "no rolling" in t.explain(q.document, columns=True, analyze=True).columns["reason"]
    timed = t.where(it.when.exists() & it.i.exists())
    got, sql, engine, mode = answers(t, rolled(timed, "PT6H", it.o, n=agg.count(), a=agg.avg(it.i)))
    assert mode == "columnar" and same(got, engine) and same(sql, engine)


@pytest.mark.parametrize("fill", ["drop", "previous", 0, None, 2.5])
def test_random_resamples_are_the_engines(open_store: Any, fill: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(9)
    t.insert_many([doc(rng) for _ in range(500)])
    for width, by in (("PT1H", None), ("PT6H", it.o), ("P1D", [it.o, it.i]), ("PT45M", None)):
        q = t.resample(
            it.when,
            width,
            by=by,
            fill=fill,
            n=agg.count(),
            sx=agg.sum(it.x),
            ai=agg.avg(it.i),
            hi=agg.max(it.o),
        )
        got, sql, engine, mode = answers(t, q)
        assert mode == "columnar", (
            width,
            by,
            fill,
            t.explain(q.document, columns=True, analyze=True).columns,
        )
        assert same(got, engine) and same(sql, engine), (width, fill)


def test_a_rolling_query_stays_fresh_through_random_writes(open_store: Any) -> None:
    """Random inserts, puts, patches, deletes and rolled-back transactions, each followed by the
    same rolling query: the columns answer it, equal to SQL's and the engine's, patched not rebuilt."""
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(13)
    t.insert_many([doc(rng, full=True) for _ in range(200)])
    q = rolled(t, "PT12H", it.o, n=agg.count(), s=agg.sum(it.i), a=agg.avg(it.i), hi=agg.max(it.o))
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
            when = f"2013-03-{rng.randint(1, 20):02d}T{rng.randint(0, 23):02d}:00:00Z"
            t.patch(rng.choice(keys), {"i": rng.randint(-6, 6), "o": rng.choice(ORIGINS), "when": when})
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
    reasons = {
        "a rolling returned whole": t.rolling(it.when, "PT1H", n=agg.count()),
        "$rolling aggregate": rolled(t, "PT1H", None, a=agg.min(it.x)),
        "$window": t.window(partition=it.o, order_by=it.i, r=win.rank()),
    }
    for phrase, q in reasons.items():
        ex = t.explain(q.document, columns=True)
        assert not ex.columns["used"] and phrase in ex.columns["reason"], (phrase, ex.columns)
        got, sql, engine, mode = answers(t, q)
        assert mode != "columnar" and same(got, engine) and same(sql, engine)


def test_float_window_sums_are_correctly_rounded() -> None:
    """Window sums of random doubles (cancelling, tiny, at rounding midpoints) against the engine's
    ``$sum`` of the same items, window by window."""
    import numpy as np

    from jarenlab.query.columnar.columns import Decline, pylist
    from jarenlab.query.columnar.series import float_sums
    from jarenlab.query.lang.functions import exact_sum

    rng = random.Random(17)
    pool = [1.0, 2.0**-53, 3 * 2.0**-54, 1e15 + 0.5, -1e15 - 0.5, 0.1, 0.2, 0.3, 2.0**-60, 1e30, -1e30, 5.0]
    for _ in range(30):
        n = rng.randint(1, 60)
        raw = np.array([rng.choice(pool) if rng.random() < 0.6 else rng.uniform(-1e3, 1e3) for _ in range(n)])
        lo = np.array(sorted(rng.randint(0, i) for i in range(n)))
        hi = np.arange(1, n + 1)
        ones = np.ones(n, dtype=np.int64)
        counts = np.cumsum(ones)[hi - 1] - np.concatenate([[0], np.cumsum(ones)])[lo]
        got = pylist(float_sums("sum", raw, counts, counts, lo, hi))
        means = pylist(float_sums("avg", raw, counts, counts, lo, hi))
        for i in range(n):
            want = exact_sum(raw[lo[i] : hi[i]].tolist(), "")
            assert same(got[i], want), (raw[lo[i] : hi[i]].tolist(), got[i], want)
            assert same(means[i], want / int(counts[i]))
    with pytest.raises(Decline):  # 2^-900 beside 1e300: more levels than the columns split into
        float_sums("sum", np.array([1e300, 2.0**-900]), ones[:2], ones[:2], lo[:2] * 0, hi[:2])
