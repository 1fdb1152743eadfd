"""The columnar path against pandas, DuckDB and pyarrow on the same data, side by side in one run.

``python benchmarks/bench_columns.py [--rows N] [--postgresql]``: a generated table of N documents
(default 1,000,000: a UTC date-time ``when``, an integer ``size``, floats ``price`` and ``value``,
strings ``cat`` (50 values) and ``city`` (20)), loaded into a fresh store with no index for any
question asked, and exported once to a pandas DataFrame, a pyarrow Table and DuckDB (over the frame).
Then, as medians of rounds taken in turns, each question answered by: the columns (warm), the
planner's SQL (``columns=False``: every document's JSON read again), pandas on the exported frame,
DuckDB on the frame, and pyarrow's own compute (Acero) on the Arrow table (not asked the medians:
it has no exact one, nor windows). Every contender's answer is checked equal to the columns' first; a
rolling mean and a window are also timed as an Arrow table and a DataFrame (``to_arrow()``,
``to_pandas()``: taken as arrays from the warm columns). Then: the cold first question over two members against
exporting those members with ``to_pandas()``; a commit followed by the same aggregate against the
warm time (the column patched, not rebuilt); the columns' bytes against the Arrow arrays' own.
``--postgresql`` runs the same on a PostgreSQL server the benchmark starts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from common import print_machine

import jarenlab as jl
from jarenlab.query import agg, it, key, win

MODEL = {
    "$model": "0.1",
    "collections": {
        "sales": {
            "key": None,
            "identity": "integer",
            "schema": {
                "type": "object",
                "properties": {
                    "when": {"type": "string", "format": "date-time"},
                    "size": {"type": "integer"},
                    "price": {"type": "number"},
                    "value": {"type": "number"},
                    "cat": {"type": "string"},
                    "city": {"type": "string"},
                },
            },
        }
    },
}
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def generate(n: int) -> list[dict[str, Any]]:
    rng = random.Random(42)
    cats = [f"c{i:02d}" for i in range(50)]
    cities = [f"city{i:02d}" for i in range(20)]
    out = []
    for _ in range(n):
        when = START + dt.timedelta(seconds=rng.randrange(366 * 86400))
        out.append(
            {
                "when": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "size": rng.randrange(1, 200),
                "price": round(rng.uniform(1, 500), 2),
                "value": rng.gauss(100, 30),
                "cat": rng.choice(cats),
                "city": rng.choice(cities),
            }
        )
    return out


def median_ms(fn: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def plain(v: Any) -> Any:
    """A peer's cell as the store answers it (a time as canonical UTC text)."""
    if isinstance(v, pd.Period):
        v = v.start_time.tz_localize("UTC")
    if isinstance(v, pd.Timestamp | dt.datetime):
        ts = pd.Timestamp(v)
        ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
        return ts.strftime("%Y-%m-%dT%H:%M:%SZ")
    return v.item() if hasattr(v, "item") else v


def frame_rows(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: plain(v) for k, v in row.items()} for row in df.to_dict("records")]


def close(a: Any, b: Any) -> bool:
    """Two answers equal, floats to 1e-9 relative (the peers' float sums round at each step)."""
    if isinstance(a, float) or isinstance(b, float):
        return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return bool(a == b)


def keyed(rows: list[dict[str, Any]], by: list[str]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in by))


def questions(
    t: Any, frame: pd.DataFrame, table: pa.Table, duck: Any
) -> list[tuple[str, Any, dict[str, Callable[[], Any]], list[str] | None]]:
    """(name, builder query, the peers' answers as rows, the key to sort by before comparing)."""
    out = []
    q1 = t.group_by(day=it.when.dt.trunc("day")).select(
        {"day": key("day"), "n": agg.count(), "avg": agg.avg(it.price), "total": agg.sum(it.value)}
    )
    out.append(
        (
            "group by day: count, mean, sum (float)",
            q1,
            {
                "pandas": lambda: (
                    frame.groupby(frame["when"].dt.floor("D"), sort=False)
                    .agg(n=("price", "size"), avg=("price", "mean"), total=("value", "sum"))
                    .reset_index(names="day")
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT date_trunc('day', \"when\") AS day, count(*) AS n, avg(price) AS avg, "
                    "sum(value) AS total FROM frame GROUP BY 1"
                ).df(),
                "pyarrow": lambda: (
                    table.append_column("day", pc.floor_temporal(table["when"], unit="day"))
                    .group_by("day", use_threads=False)
                    .aggregate([("price", "count"), ("price", "mean"), ("value", "sum")])
                    .rename_columns({"price_count": "n", "price_mean": "avg", "value_sum": "total"})
                    .to_pandas()
                ),
            },
            ["day"],
        )
    )
    q2 = t.group_by(size=it.size).select(
        {"size": key("size"), "n": agg.count(), "avg": agg.avg(it.price), "top": agg.max(it.size)}
    )
    out.append(
        (
            "group by size (int): count, mean, max",
            q2,
            {
                "pandas": lambda: (
                    frame.groupby("size", sort=False)
                    .agg(n=("price", "size"), avg=("price", "mean"), top=("size", "max"))
                    .reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT size, count(*) AS n, avg(price) AS avg, max(size) AS top FROM frame GROUP BY size"
                ).df(),
                "pyarrow": lambda: (
                    table.group_by("size", use_threads=False)
                    .aggregate([("price", "count"), ("price", "mean"), ("size", "max")])
                    .rename_columns({"price_count": "n", "price_mean": "avg", "size_max": "top"})
                    .to_pandas()
                ),
            },
            ["size"],
        )
    )
    q3 = t.group_by(month=it.when.dt.trunc("month")).select(
        {"month": key("month"), "n": agg.count(), "avg": agg.avg(it.value)}
    )
    out.append(
        (
            "group by month of a UTC timestamp",
            q3,
            {
                "pandas": lambda: (
                    frame.groupby(frame["when"].dt.tz_localize(None).dt.to_period("M"), sort=False)
                    .agg(n=("value", "size"), avg=("value", "mean"))
                    .reset_index(names="month")
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT date_trunc('month', \"when\") AS month, count(*) AS n, avg(value) AS avg "
                    "FROM frame GROUP BY 1"
                ).df(),
                "pyarrow": lambda: (
                    table.append_column("month", pc.floor_temporal(table["when"], unit="month"))
                    .group_by("month", use_threads=False)
                    .aggregate([("value", "count"), ("value", "mean")])
                    .rename_columns({"value_count": "n", "value_mean": "avg"})
                    .to_pandas()
                ),
            },
            ["month"],
        )
    )
    q4 = t.where(it.size == 42).select({"n": agg.count()})
    out.append(
        (
            "count where an int member equals a value",
            t.where(it.size == 42),
            {
                "pandas": lambda: int((frame["size"] == 42).sum()),
                "duckdb": lambda: duck.execute("SELECT count(*) FROM frame WHERE size = 42").fetchone()[0],
                "pyarrow": lambda: pc.sum(pc.equal(table["size"], 42)).as_py(),
            },
            "count",
        )
    )
    del q4
    q5 = t.order_by(it.value.desc()).take(10).select({"value": it.value, "cat": it["cat"]})
    out.append(
        (
            "top 10 by a float member",
            q5,
            {
                "pandas": lambda: frame.nlargest(10, "value")[["value", "cat"]],
                "duckdb": lambda: duck.execute(
                    "SELECT value, cat FROM frame ORDER BY value DESC LIMIT 10"
                ).df(),
                "pyarrow": lambda: (
                    table.take(pc.select_k_unstable(table, k=10, sort_keys=[("value", "descending")]))
                    .select(["value", "cat"])
                    .to_pandas()
                ),
            },
            [],
        )
    )
    q6 = t.group_by(cat=it["cat"], city=it.city).select(
        {
            "cat": key("cat"),
            "city": key("city"),
            "n": agg.count(),
            "total": agg.sum(it.price),
            "low": agg.min(it.size),
        }
    )
    out.append(
        (
            "group by two strings: count, sum, min",
            q6,
            {
                "pandas": lambda: (
                    frame.groupby(["cat", "city"], sort=False)
                    .agg(n=("price", "size"), total=("price", "sum"), low=("size", "min"))
                    .reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT cat, city, count(*) AS n, sum(price) AS total, min(size) AS low FROM frame GROUP BY cat, city"
                ).df(),
                "pyarrow": lambda: (
                    table.group_by(["cat", "city"], use_threads=False)
                    .aggregate([("price", "count"), ("price", "sum"), ("size", "min")])
                    .rename_columns({"price_count": "n", "price_sum": "total", "size_min": "low"})
                    .to_pandas()
                ),
            },
            ["cat", "city"],
        )
    )
    q_ext = t.group_by(city=it.city).select(
        {"city": key("city"), "low": agg.min(it.price), "high": agg.max(it.value)}
    )
    out.append(
        (
            "least and greatest per group (float)",
            q_ext,
            {
                "pandas": lambda: (
                    frame.groupby("city", sort=False)
                    .agg(low=("price", "min"), high=("value", "max"))
                    .reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT city, min(price) AS low, max(value) AS high FROM frame GROUP BY city"
                ).df(),
                "pyarrow": lambda: (
                    table.group_by("city", use_threads=False)
                    .aggregate([("price", "min"), ("value", "max")])
                    .rename_columns({"price_min": "low", "value_max": "high"})
                    .to_pandas()
                ),
            },
            ["city"],
        )
    )
    q7 = t.group_by(city=it.city).select({"city": key("city"), "median": agg.median(it.price)})
    out.append(
        (
            "median per group (float)",
            q7,
            {
                "pandas": lambda: (
                    frame.groupby("city", sort=False)["price"].median().rename("median").reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT city, median(price) AS median FROM frame GROUP BY city"
                ).df(),
            },
            ["city"],
        )
    )
    q8 = t.group_by(cat=it["cat"]).select(
        {"cat": key("cat"), "median": agg.median(it.size), "std": agg.std(it.value)}
    )
    out.append(
        (
            "median (int) and std (float) per group",
            q8,
            {
                "pandas": lambda: (
                    frame.groupby("cat", sort=False)
                    .agg(median=("size", "median"), std=("value", "std"))
                    .reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT cat, median(size)::DOUBLE AS median, stddev_samp(value) AS std FROM frame GROUP BY cat"
                ).df(),
            },
            ["cat"],
        )
    )
    q9 = t.rolling(it.when, "P7D", partition=it.city, avg7=agg.avg(it.size)).select(
        {"when": it.when, "city": it.city, "avg7": it.avg7}
    )
    out.append(
        (
            "7-day rolling mean (int) per city, every row",
            q9,
            {
                # pandas' time window ends at the row itself: a later row at the same instant (a
                # peer) is not in it, where the language's is (checked apart from the peers)
                "pandas": lambda: rolling_pandas(frame),
                "duckdb": lambda: duck.execute(
                    'SELECT avg(size) OVER (PARTITION BY city ORDER BY "when" RANGE BETWEEN '
                    "INTERVAL '604799 seconds' PRECEDING AND CURRENT ROW) AS avg7 FROM frame "
                    "ORDER BY pos"
                ).df()["avg7"],
            },
            "rolling",
        )
    )
    q10 = t.resample(it.when, "P30D", n=agg.count(), avg=agg.avg(it.price))
    origin = pd.Timestamp("2000-01-03")  # (pandas takes an origin for days on naive times only)
    naive = frame.assign(when=frame["when"].dt.tz_localize(None))
    out.append(
        (
            "30-day resample: count, mean (float)",
            q10,
            {
                "pandas": lambda: (
                    naive.resample("30D", on="when", origin=origin)
                    .agg(n=("price", "size"), avg=("price", "mean"))
                    .query("n > 0")
                    .reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    'SELECT to_timestamp(floor((epoch("when") - 946857600) / 2592000) * 2592000 + 946857600) '
                    'AS "when", count(*) AS n, avg(price) AS avg FROM frame GROUP BY 1'
                ).df(),
            },
            ["when"],
        )
    )
    q11 = t.window(
        partition=it.city,
        order_by=it.when,
        rk=win.rank(),
        run=win.sum(it.size),
        prev=win.lag(it.size, 1, 0),
    ).select({"when": it.when, "city": it.city, "rk": it.rk, "run": it.run, "prev": it.prev})
    out.append(
        (
            "window per city: rank by time, running sum (int), lag, every row",
            q11,
            {
                "pandas": lambda: window_pandas(frame),
                "duckdb": lambda: duck.execute(
                    'SELECT rank() OVER (PARTITION BY city ORDER BY "when") AS rk, '
                    'sum(size) OVER (PARTITION BY city ORDER BY "when", pos ROWS BETWEEN UNBOUNDED '
                    "PRECEDING AND CURRENT ROW) AS run, "
                    'lag(size, 1, 0) OVER (PARTITION BY city ORDER BY "when", pos) AS prev '
                    "FROM frame ORDER BY pos"
                ).df(),
            },
            "window",
        )
    )
    return out


def window_pandas(frame: pd.DataFrame) -> pd.DataFrame:
    """pandas' own: per city in time order (ties in row order), the rank of the time, the running
    sum of ``size`` and the previous row's ``size`` (0 first), in the frame's row order."""
    ordered = frame.sort_values(["city", "when"], kind="stable")
    by = ordered.groupby("city", sort=False)
    return pd.DataFrame(
        {
            "rk": by["when"].rank(method="min").astype("int64"),
            "run": by["size"].cumsum(),
            "prev": by["size"].shift(1, fill_value=0),
        }
    ).sort_index()


def window_agrees(got: pd.DataFrame, first: list[dict[str, Any]]) -> bool:
    """A peer's ranks, running sums and previous values equal the columns' row for row."""
    return all(
        np.array_equal(np.array([r[c] for r in first]), got[c].to_numpy(dtype=np.int64))
        for c in ("rk", "run", "prev")
    )


def rolling_pandas(frame: pd.DataFrame) -> pd.Series:
    """pandas' 7-day rolling mean of ``size`` per city, in the frame's row order."""
    ordered = frame.sort_values(["city", "when"], kind="stable")
    means = ordered.groupby("city", sort=True).rolling("7D", on="when")["size"].mean()
    return pd.Series(means.to_numpy(), index=ordered.index).sort_index()


def rolling_agrees(got: pd.Series, first: list[dict[str, Any]], frame: pd.DataFrame, peers: bool) -> bool:
    """A peer's rolling means equal the columns' row for row (``peers``: also at rows sharing
    their instant with another row of their city, where pandas' window stops at the row itself)."""
    ours = np.array([r["avg7"] for r in first])
    theirs = got.to_numpy(dtype=float)
    keep = (
        np.ones(len(ours), dtype=bool)
        if peers
        else ~frame.duplicated(["city", "when"], keep=False).to_numpy()
    )
    return bool(np.allclose(ours[keep], theirs[keep], rtol=1e-9, atol=0))


def contenders(t: Any, q: Any, by: Any) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """The question answered by the columns (required to be theirs) and by the planner's SQL."""
    if by == "count":
        counting = {"$count": [q._expr()]}
        return (lambda: q.count()), (lambda: t.execute(counting, {}, columns=False))
    document = q.document
    assert t.explain(document, {}, columns=True).mode == "columnar", document
    return (lambda: t.execute(document, {}, columns=True)), (lambda: t.execute(document, {}, columns=False))


def run(store: Any, n: int, rounds: int, sql_rounds: int, only: list[str]) -> None:
    t = store["sales"]
    t0 = time.perf_counter()
    t.insert_many(generate(n))
    print(f"loaded {n:,} documents in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    frame = t.to_pandas()
    export = time.perf_counter() - t0
    table = pa.Table.from_pandas(frame, preserve_index=False)
    duck = duckdb.connect()
    duck.register("frame", frame.assign(pos=np.arange(len(frame))))
    print(f"exported to pandas in {export:.1f} s; pandas, DuckDB and pyarrow run on that export\n")
    print(
        f"| question ({n:,} documents, no index for it) | columns (warm) | SQL | pandas | DuckDB | pyarrow | vs pandas | vs DuckDB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, q, peers, by in questions(t, frame, table, duck):
        if only and not any(word in name for word in only):
            continue
        answer, answer_sql = contenders(t, q, by)
        first = answer()
        for peer, fn in peers.items():
            got = fn()
            if by == "count":
                assert int(got) == first, (peer, got, first)
            elif by == "rolling":
                assert rolling_agrees(got, first, frame, peer != "pandas"), (name, peer)
            elif by == "window":
                assert window_agrees(got, first), (name, peer)
            elif by:
                rows = frame_rows(got) if isinstance(got, pd.DataFrame) else got
                assert close(keyed(rows, by), keyed(first, by)), (name, peer)
            else:
                assert close(frame_rows(got.reset_index(drop=True)), first), (name, peer)
        times = {"columns": median_ms(answer, rounds)}
        times["sql"] = median_ms(answer_sql, sql_rounds)
        for peer, fn in peers.items():
            times[peer] = median_ms(fn, rounds)
        none = "(no such function)" if by in ("rolling", "window") else "(none exact)"
        arrow = f"{times['pyarrow']:,.1f} ms" if "pyarrow" in times else none
        print(
            f"| {name} | {times['columns']:,.1f} ms | {times['sql']:,.0f} ms | {times['pandas']:,.1f} ms | "
            f"{times['duckdb']:,.1f} ms | {arrow} | {times['columns'] / times['pandas']:.2f}x | "
            f"{times['columns'] / times['duckdb']:.2f}x |"
        )
        if by in ("rolling", "window"):
            exports(q, by, name, first, frame, times, rounds)
    q = t.group_by(cat=it["cat"]).select({"cat": key("cat"), "avg": agg.avg(it.price)})
    if not only or any(word in "cold" for word in only):
        cold_question(store, t, q)
    if not only or any(word in "commit" for word in only):
        commit_then_aggregate(store, t, q, rounds)
    if not only or any(word in "memory" for word in only):
        memory(store, frame)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


def exports(
    q: Any,
    by: str,
    name: str,
    first: list[dict[str, Any]],
    frame: pd.DataFrame,
    times: dict[str, float],
    rounds: int,
) -> None:
    """The window's results as an Arrow table and as a DataFrame: the computed members and the
    rows' members taken as arrays from the warm columns, no result maps (checked equal first)."""
    got = q.to_pandas()
    agrees = window_agrees(got, first) if by == "window" else rolling_agrees(got["avg7"], first, frame, True)
    assert agrees and q.to_arrow().num_rows == len(first), name
    for form, fn in (
        ("an Arrow table (`to_arrow()`)", q.to_arrow),
        ("a DataFrame (`to_pandas()`)", q.to_pandas),
    ):
        took = median_ms(fn, rounds)
        print(
            f"| {name}, as {form} | {took:,.1f} ms | | {times['pandas']:,.1f} ms | {times['duckdb']:,.1f} ms | "
            f"| {took / times['pandas']:.2f}x | {took / times['duckdb']:.2f}x |"
        )


def cold_question(store: Any, t: Any, q: Any) -> None:
    """The cold first question over two members, against exporting those two members."""
    colds, exports = [], []
    for _ in range(3):
        store.columns.drop()  # (first the export: once the columns are warm it reads them)
        t0 = time.perf_counter()
        t.select({"cat": it["cat"], "price": it.price}).to_pandas()
        exports.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        t.execute(q.document, {}, columns=True)
        colds.append(time.perf_counter() - t0)
    cold, exported = statistics.median(colds) * 1000, statistics.median(exports) * 1000
    print(
        f"\ncold first question (2 members): {cold:,.0f} ms; exporting those members with to_pandas(): "
        f"{exported:,.0f} ms ({cold / exported:.2f}x)"
    )


def commit_then_aggregate(store: Any, t: Any, q: Any, rounds: int) -> None:
    """A commit (one insert), then the same aggregate: the columns are patched, not rebuilt. The
    warm question and the one after a commit are timed in turns (warm, insert, after), so a load
    that drifts during the run weighs on both alike; medians of each."""
    t.execute(q.document, {}, columns=True)
    warms, after = [], []
    for i in range(max(rounds, 15)):
        t0 = time.perf_counter()
        t.execute(q.document, {}, columns=True)
        warms.append(time.perf_counter() - t0)
        t.insert(
            {
                "cat": "c01",
                "price": 1.0 + i,
                "size": 3,
                "value": 1.0,
                "city": "city01",
                "when": "2024-06-01T00:00:00Z",
            }
        )
        t0 = time.perf_counter()
        t.execute(q.document, {}, columns=True)
        after.append(time.perf_counter() - t0)
    warm, patched = statistics.median(warms) * 1000, statistics.median(after) * 1000
    print(
        f"a commit, then the same aggregate: {patched:,.1f} ms against {warm:,.1f} ms warm "
        f"({(patched / warm - 1) * 100:+.0f}%, timed in turns); patches {store.columns.stats()['patches']}, "
        f"rebuilds {store.columns.stats()['rebuilds']}"
    )


def memory(store: Any, frame: pd.DataFrame) -> None:
    """Three members' columns against the Arrow arrays' own bytes."""
    store.columns.drop()
    store.columns.warm("sales", ["price", "size", "cat"])
    held = store.columns.stats()["bytes"]
    own = sum(pa.array(frame[c]).nbytes for c in ("price", "size", "cat"))
    print(f"columns for 3 members: {held:,} bytes; the Arrow arrays' own: {own:,} ({held / own:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sql-rounds", type=int, default=1)
    parser.add_argument("--postgresql", action="store_true")
    parser.add_argument(
        "--only",
        nargs="*",
        default=[],
        help="questions whose names hold one of these words; 'cold', 'commit', 'memory' for the rest",
    )
    args = parser.parse_args()
    print_machine()
    np.random.seed(0)
    if args.postgresql:
        from jarenlab.backends.postgres.server import LocalServer

        server = LocalServer().start()
        try:
            with jl.open(server.url(), MODEL, schema="bench_columns") as store:
                run(store, args.rows, args.rounds, args.sql_rounds, args.only)
        finally:
            server.stop()
        return
    with tempfile.TemporaryDirectory() as folder, jl.open(f"{folder}/columns.db", MODEL) as store:
        run(store, args.rows, args.rounds, args.sql_rounds, args.only)


if __name__ == "__main__":
    main()
