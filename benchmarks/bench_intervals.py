"""Benchmark the interval constraint at 1k, 10k and 100k records.

Measures (medians):

* the conflict check through its partial index, against the same query with the index dropped;
* an accepted insert (validation, check, commit) into a collection with a declared interval,
  against the same insert into the same collection without one;
* the floor: raw ``sqlite3`` (``BEGIN IMMEDIATE``, ``INSERT``, ``COMMIT``, same pragmas, same table)
  without the interval index, with it, and with it plus the lookup statement, no Python check.

Run: ``.venv/bin/python benchmarks/bench_intervals.py [--numbers] [sizes...]`` (``--numbers``:
integer epoch-millisecond bounds instead of date-times).
"""

from __future__ import annotations

import datetime
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

import jarenlab as jl
from jarenlab import intervals
from jarenlab.backends.sqlite import intervals as sqlite_intervals

ROOMS = 10
T0 = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
NUMBERS = False  # --numbers: bounds are integers (epoch ms) instead of date-time strings


def _iso(minutes: int) -> Any:
    if NUMBERS:
        return int(T0.timestamp()) * 1000 + minutes * 60_000
    return (T0 + datetime.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _model(with_intervals: bool) -> dict[str, Any]:
    time_type = {"type": "integer"} if NUMBERS else {"type": "string", "format": "date-time"}
    coll: dict[str, Any] = {
        "key": "/id",
        "schema": {
            "type": "object",
            "required": ["id", "room", "start", "end"],
            "properties": {
                "id": {"type": "string"},
                "room": {"type": "string"},
                "status": {"type": "string"},
                "start": time_type,
                "end": time_type,
            },
        },
    }
    if with_intervals:
        coll["intervals"] = [
            {"start": "/start", "end": "/end", "within": ["/room"], "when": {"status": "booked"}}
        ]
    return {"$model": "0.1", "collections": {"bookings": coll}}


def _doc(i: int) -> dict[str, Any]:
    """Record i: room i % ROOMS, one hour every two hours in its room (gaps between)."""
    slot = i // ROOMS
    return {
        "id": f"b{i}",
        "room": f"r{i % ROOMS}",
        "status": "booked",
        "start": _iso(slot * 120),
        "end": _iso(slot * 120 + 60),
    }


def _median_us(fn: Any, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1000


def _raw_copy(store: jl.Store, path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection to a copy of the store's file, with the store's pragmas."""
    store.db.connection().execute("VACUUM INTO ?", (str(path),))
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def bench(n: int, folder: Path) -> dict[str, float]:
    rng = random.Random(n)
    out: dict[str, float] = {}
    variants = {"with": True, "index_only": True, "without": False}
    stores = {name: jl.open(folder / f"{n}-{name}.db", _model(flag)) for name, flag in variants.items()}
    try:
        for store in stores.values():
            store["bookings"].insert_many((_doc(i) for i in range(n)), progress=False)
        # the same partial index, kept up to date, but no check: splits index upkeep from the lookup
        stores["index_only"]["bookings"].write_checks.clear()
        store = stores["with"]
        spec = store["bookings"].spec
        decl = spec.intervals[0]
        sql = store.backend.interval_statements(spec.name, decl).conflict
        conn = store.db.connection()
        slots = n // ROOMS

        probes = []
        for _ in range(2000):
            slot = rng.randrange(slots)
            lo, hi = (
                slot * 120 + rng.choice([30, 60, 90]),
                slot * 120 + 100,
            )  # overlaps, touches, falls in a gap
            probes.append(
                (
                    f"r{rng.randrange(ROOMS)}",
                    intervals.instant(_iso(hi), decl.kind),
                    "probe",
                    intervals.instant(_iso(lo), decl.kind),
                )
            )
        found = [conn.execute(sql, p).fetchone() for p in probes[:300]]
        assert any(found) and not all(found)  # both outcomes are measured
        it = iter(probes * 10)

        def probe() -> Any:
            return conn.execute(sql, next(it)).fetchone()

        out["check_indexed_us"] = _median_us(probe, 2000)

        # the floor: raw sqlite3 on copies of the same tables (same DDL, same pragmas), no Python check
        raw = {
            "raw_without": _raw_copy(stores["without"], folder / f"{n}-raw-without.db"),
            "raw_index": _raw_copy(stores["with"], folder / f"{n}-raw-index.db"),
            "raw_lookup": _raw_copy(stores["with"], folder / f"{n}-raw-lookup.db"),
        }

        # accepted inserts, appended after every stored slot, round-robin over the stores
        every = [*stores, *raw]
        times: dict[str, list[float]] = {name: [] for name in every}
        insert = 'INSERT INTO "bookings"(key, doc) VALUES (?, ?)'
        for k in range(1000):
            r = k % len(every)
            for name in every[r:] + every[:r]:
                doc = _doc(n + k)
                doc["id"] = f"new{k}"
                if name in raw:
                    c = raw[name]
                    text = orjson.dumps(doc).decode()  # as the store does
                    start, end = (
                        intervals.instant(doc["start"], decl.kind),
                        intervals.instant(doc["end"], decl.kind),
                    )
                    t = time.perf_counter_ns()
                    c.execute("BEGIN IMMEDIATE")
                    c.execute(insert, (doc["id"], text))
                    if name == "raw_lookup":
                        c.execute(sql, (doc["room"], end, doc["id"], start)).fetchone()
                    c.execute("COMMIT")
                else:
                    t = time.perf_counter_ns()
                    stores[name]["bookings"].insert(doc)
                times[name].append(time.perf_counter_ns() - t)
        for c in raw.values():
            c.close()
        for name, spent in times.items():
            out[f"insert_{name}_us"] = statistics.median(spent) / 1000

        conn.execute(f'DROP INDEX "{sqlite_intervals.index_name(spec, decl)}"')
        out["check_unindexed_us"] = _median_us(probe, max(5, min(200, 2_000_000 // n)))
    finally:
        for store in stores.values():
            store.close()
    return out


def main(sizes: list[int]) -> None:
    print(
        f"# {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, {datetime.date.today()}; "
        f"{'integer' if NUMBERS else 'date-time'} bounds; medians in µs"
    )
    print(
        f"{'records':>8} {'check':>7} {'no index':>9} {'speedup':>8} "
        f"{'insert with':>12} {'index only':>11} {'without':>8} {'ratio':>6} "
        f"{'raw':>6} {'raw+index':>10} {'raw+idx+lookup':>15}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            r = bench(n, Path(tmp))
            base = r["insert_raw_without_us"]
            print(
                f"{n:>8,} {r['check_indexed_us']:>7.1f} {r['check_unindexed_us']:>9.1f} "
                f"{r['check_unindexed_us'] / r['check_indexed_us']:>7.0f}x {r['insert_with_us']:>12.1f} "
                f"{r['insert_index_only_us']:>11.1f} {r['insert_without_us']:>8.1f} "
                f"{r['insert_with_us'] / r['insert_without_us']:>5.2f}x "
                f"{base:>6.1f} {r['insert_raw_index_us']:>4.1f} {r['insert_raw_index_us'] / base:>4.2f}x "
                f"{r['insert_raw_lookup_us']:>8.1f} {r['insert_raw_lookup_us'] / base:>5.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--numbers" in args:
        NUMBERS = True
        args.remove("--numbers")
    main([int(a) for a in args] or [1_000, 10_000, 100_000])
