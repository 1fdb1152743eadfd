"""Exporting a collection into pandas: time and peak memory of ``collection.to_pandas()`` against
the frame's own size and against raw ``sqlite3`` + ``json.loads`` + ``pandas.DataFrame`` (the floor).

Run from the repository root::

    .venv/bin/python benchmarks/bench_export.py                  # 300,000 documents
    .venv/bin/python benchmarks/bench_export.py --docs 100000 --runs 3

Each contender runs in a fresh process (so the peak is its own): the process reads the store file
and builds the frame, and reports its time and the growth of its peak resident memory
(``ru_maxrss`` after, less the resident size before). Documents are flight-like: three integers,
a float, two strings and a nested object. ``to_pandas()`` reads pages of 5,000 documents, each
made into its columns' arrays before the next is read; the cells are the stored values (integers
stay ``Int64``/``int64``, the nested object an ``object`` column of dicts). The floor reads every
row at once and lets pandas build the frame from the decoded dicts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_machine

import jarenlab as jl

MODEL = {
    "$model": "0.1",
    "collections": {
        "flights": {
            "schema": {
                "type": "object",
                "properties": {
                    "year": {"type": "integer"},
                    "dep_delay": {"type": "integer"},
                    "distance": {"type": "integer"},
                    "air_time": {"type": "number"},
                    "carrier": {"type": "string"},
                    "origin": {"type": "string"},
                },
            },
            "key": None,
            "identity": "integer",
        }
    },
}
PRELUDE = """
import json, resource, sys, time
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
import pandas, pyarrow, orjson
import jarenlab as jl
before = rss()
t0 = time.perf_counter()
"""
CODE = {
    "jarenlab: collection.to_pandas()": """
with jl.open(sys.argv[1]) as store:
    frame = store["flights"].to_pandas()
""",
    "raw sqlite3 + json.loads + DataFrame": """
import sqlite3
conn = sqlite3.connect(sys.argv[1])
rows = conn.execute('SELECT key, doc FROM "flights" ORDER BY rowid').fetchall()
frame = pandas.DataFrame([json.loads(d) for _, d in rows], index=[k for k, _ in rows])
del rows
""",
}
POSTLUDE = """
took = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
size = int(frame.memory_usage(deep=True).sum())
print(json.dumps({"s": took, "peak": peak, "frame": size, "rows": len(frame)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print_machine()
    path = Path(tempfile.mkdtemp(prefix="bench-export-")) / "x.db"
    with jl.open(path, MODEL) as store:
        step = 50_000
        for start in range(0, args.docs, step):
            store["flights"].insert_many(
                [
                    {
                        "year": 2013,
                        "dep_delay": (i * 37) % 300 - 20,
                        "distance": 100 + i % 2500,
                        "air_time": (i % 400) / 3,
                        "carrier": ["UA", "AA", "B6", "DL"][i % 4],
                        "origin": ["JFK", "LGA", "EWR"][i % 3],
                        "plane": {"tail": f"N{i % 4000}", "seats": 100 + i % 200},
                    }
                    for i in range(start, min(args.docs, start + step))
                ],
                progress=False,
            )
    results: dict[str, list[dict[str, float]]] = {name: [] for name in CODE}
    for _ in range(args.runs):
        for name, code in CODE.items():
            out = subprocess.run(
                [sys.executable, "-c", PRELUDE + code + POSTLUDE, str(path)],
                capture_output=True,
                text=True,
                check=True,
            )
            got = json.loads(out.stdout)
            assert got["rows"] == args.docs
            results[name].append(got)
    print(f"\n== {args.docs:,} documents into pandas, median of {args.runs} runs (each a fresh process)")
    print(f"{'':40} {'time':>9} {'peak growth':>12} {'frame':>10} {'peak/frame':>11}")
    for name, runs in results.items():
        took = statistics.median(r["s"] for r in runs)
        peak = statistics.median(r["peak"] for r in runs)
        frame = statistics.median(r["frame"] for r in runs)
        print(
            f"{name:40} {took:8.2f}s {peak / 2**20:9.0f} MiB {frame / 2**20:7.0f} MiB {peak / frame:10.2f}x"
        )


if __name__ == "__main__":
    main()
