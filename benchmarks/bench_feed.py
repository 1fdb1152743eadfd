"""The change feed's read rate: ``store.changes(after=cursor)`` against reading the raw log table.

A store takes ``--commits`` single-write commits (half inserts of flights-like documents, half
one-member patches of them, so most records are minimal diffs) with retention above that. Then,
each timed in turns (medians of ``--runs``):

- **raw rows**: ``SELECT seq, at_ms, source, collections, patch FROM _jl_changes`` paged by 1,000
  seqs on a plain driver connection (sqlite3 / psycopg), rows fetched, nothing parsed: the floor;
- **raw + parse**: the same with each record's JSON parsed (``orjson.loads``);
- **feed**: ``store.changes(after=cursor)`` page by page: cursors, document changes with their
  minimal patches (pointers rebased onto the document), the page objects.

Prints document changes ("patches") per second and the ratios to the floor.

    .venv/bin/python benchmarks/bench_feed.py [--commits 20000] [--runs 7] [--backend sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_live import MODEL
from common import print_machine

import jarenlab as jl

PAGE = 1000
READ = "SELECT seq, at_ms, source, collections, patch FROM _jl_changes WHERE seq > {p} ORDER BY seq LIMIT {p}"


def fill(store: Any, commits: int) -> None:
    rng = random.Random(7)
    flights = store["flights"]
    store.changes.log.retention = commits + 10
    inserts = commits // 2
    for i in range(inserts):
        flights.insert(
            {
                "id": i,
                "origin": rng.choice(["JFK", "LGA", "EWR"]),
                "dep_delay": rng.randrange(-20, 300),
                "carrier": rng.choice(["UA", "AA", "B6", "DL"]),
                "tailnum": f"N{rng.randrange(10_000)}",
                "air_time": rng.randrange(30, 600),
            }
        )
    for _ in range(commits - inserts):
        flights.patch(rng.randrange(inserts), {"dep_delay": rng.randrange(-20, 300)})


def raw_reader(
    execute: Callable[[str, tuple[int, int]], list[Any]], mark: str, parse: bool
) -> Callable[[Any], int]:
    sql = READ.format(p=mark)

    def read(_: Any) -> int:
        after, n = 0, 0
        while True:
            rows = execute(sql, (after, PAGE))
            if not rows:
                return n
            for row in rows:
                if parse:
                    n += len(orjson.loads(row[4]))
                else:
                    n += 1
            after = rows[-1][0]

    return read


def feed_reader(store: Any) -> Callable[[Any], int]:
    def read(_: Any) -> int:
        page = store.changes(after=None, limit=PAGE)
        n = len(page)
        while page.has_more:
            page = store.changes(after=page.cursor, limit=PAGE)
            n += len(page)
        return n

    return read


def run(store: Any, execute: Callable[[str, tuple[int, int]], list[Any]], mark: str, runs: int) -> None:
    contenders = {
        "raw rows (floor)": raw_reader(execute, mark, parse=False),
        "raw + JSON parse": raw_reader(execute, mark, parse=True),
        "store.changes(after=...)": feed_reader(store),
    }
    counts = {name: fn(None) for name, fn in contenders.items()}
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, fn in contenders.items():
            started = time.perf_counter()
            fn(None)
            times[name].append(time.perf_counter() - started)
    changes = counts["store.changes(after=...)"]
    floor = statistics.median(times["raw rows (floor)"])
    print(f"{counts['raw rows (floor)']:,} records, {changes:,} document changes")
    print(f"{'contender':28} {'median s':>10} {'patches/s':>12} {'vs floor':>9}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:28} {med:10.4f} {changes / med:12,.0f} {med / floor:8.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    args = parser.parse_args()
    print_machine()
    if args.backend == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            path = str(Path(tmp) / "feed.db")
            with jl.open(path, MODEL) as store:
                fill(store, args.commits)
                raw = sqlite3.connect(path)
                run(store, lambda sql, params: raw.execute(sql, params).fetchall(), "?", args.runs)
                raw.close()
        return
    import psycopg

    from jarenlab.backends.postgres.server import LocalServer

    with LocalServer() as server:
        url = server.url()
        with jl.open(url, MODEL, schema="feed") as store:
            fill(store, args.commits)
            raw = psycopg.connect(url, autocommit=True)
            raw.execute('SET search_path TO "feed"')
            run(store, lambda sql, params: raw.execute(sql, params).fetchall(), "%s", args.runs)
            raw.close()


if __name__ == "__main__":
    main()
