"""PostgreSQL: the price of commit-order appends, and live-query latency across processes.

Run from the repository root::

    .venv/bin/python benchmarks/bench_postgres_commits.py            # about 2 minutes
    .venv/bin/python benchmarks/bench_postgres_commits.py --seconds 3 --commits 300

A throwaway server with durability ON (fsync, synchronous_commit) is started from the machine's
PostgreSQL binaries.

1. **Commit order**: 1, 2, 4 and 8 writer processes, each committing one small document per
   transaction for ``--seconds``; commits per second, all writers together, for
   - raw psycopg: the document insert alone (no change log);
   - raw psycopg: the document plus a change-log row numbered by a sequence (no ordering: a reader
     can miss a row that commits late);
   - raw psycopg: the document plus a change-log row numbered ``max + 1`` under a transaction-scoped
     advisory lock (commit order: what jarenlab does);
   - jarenlab ``insert`` (validation, the change log under its lock, NOTIFY).
   The price of commit order is the ratio of the third to the second.
2. **Live latency**: a writer process commits ``--commits`` documents at 100 per second, each
   stamped with the wall clock; this process holds 10 live queries on the collection and records,
   for one of them, the time from the stamp to its subscriber's callback. p50 and p99, with NOTIFY
   and with ``notify=False`` (polling).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_machine

import jarenlab as jl
from jarenlab import it
from jarenlab.backends.postgres.server import LocalServer

DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
MODEL = {
    "$model": "0.1",
    "collections": {
        "notes": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "string"}, "n": {"type": "integer"}, "at": {"type": "number"}},
            },
            "key": "/id",
            "indexes": [{"name": "by_n", "path": "$.n"}],
        }
    },
}
RAW_DDL = """
CREATE SCHEMA IF NOT EXISTS raw;
SET search_path TO raw;
CREATE TABLE IF NOT EXISTS raw_notes (key text PRIMARY KEY, doc json NOT NULL);
CREATE TABLE IF NOT EXISTS raw_log (seq bigint PRIMARY KEY, doc_key text NOT NULL);
CREATE TABLE IF NOT EXISTS raw_log_ordered (seq bigint PRIMARY KEY, doc_key text NOT NULL);
CREATE SEQUENCE IF NOT EXISTS raw_log_seq;
"""
VARIANTS = ("raw: document only", "raw: + log by sequence", "raw: + log in commit order", "jarenlab insert")


def _writer(url: str, variant: str, worker: int, seconds: float, counts: Any) -> None:
    import orjson
    import psycopg

    n = 0
    deadline = time.monotonic() + seconds
    if variant == "jarenlab insert":
        with jl.open(url, schema="bench") as store:
            notes = store["notes"]
            while time.monotonic() < deadline:
                notes.insert({"id": f"w{worker}-{n}-{time.monotonic_ns()}", "n": n})
                n += 1
    else:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET search_path TO raw")
            while time.monotonic() < deadline:
                key = f"{worker}-{n}-{time.monotonic_ns()}"
                with conn.transaction():
                    conn.execute(
                        "INSERT INTO raw_notes(key, doc) VALUES (%s, %s)",
                        (key, orjson.dumps({"n": n}).decode()),
                    )
                    if variant == "raw: + log by sequence":
                        conn.execute(
                            "INSERT INTO raw_log(seq, doc_key) VALUES (nextval('raw_log_seq'), %s)", (key,)
                        )
                    elif variant == "raw: + log in commit order":
                        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('bench/raw', 0))")
                        conn.execute(
                            "INSERT INTO raw_log_ordered(seq, doc_key) "
                            "SELECT coalesce(max(seq), 0) + 1, %s FROM raw_log_ordered",
                            (key,),
                        )
                n += 1
    counts[worker] = n


def commit_order(url: str, seconds: float) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(RAW_DDL)
    print(f"\n== commits per second, all writers together ({seconds:g} s each, fsync on)")
    print(f"{'writers':>8} " + " ".join(f"{v:>28}" for v in VARIANTS) + f" {'commit-order price':>20}")
    ctx = mp.get_context("spawn")
    for writers in (1, 2, 4, 8):
        rates = {}
        for variant in VARIANTS:
            counts = ctx.Array("l", writers)
            procs = [
                ctx.Process(target=_writer, args=(url, variant, w, seconds, counts)) for w in range(writers)
            ]
            for p in procs:
                p.start()
            for p in procs:
                p.join(seconds + 60)
            rates[variant] = sum(counts[:]) / seconds
        price = rates["raw: + log in commit order"] / rates["raw: + log by sequence"]
        print(f"{writers:>8} " + " ".join(f"{rates[v]:>28,.0f}" for v in VARIANTS) + f" {price:>19.2f}x")


def _stamped_writer(url: str, commits: int, rate: float) -> None:
    with jl.open(url, schema="bench") as store:
        notes = store["notes"]
        step = 1.0 / rate
        start = time.monotonic()
        for i in range(commits):
            pause = start + i * step - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            notes.insert({"id": f"lat-{time.time_ns()}", "n": i, "at": time.time()})


def live_latency(url: str, commits: int, notify: bool) -> None:
    with jl.open(url, schema="bench", notify=notify) as store:
        notes = store["notes"]
        # the newest stamped documents (the commit-order runs above wrote none with "at")
        queries = [notes.where(it.at > k).order_by(it.at.desc()).take(5).live() for k in range(10)]
        latencies: list[float] = []
        done = threading.Event()

        def seen(ops: list[dict[str, Any]], seq: int) -> None:
            now = time.time()
            for op in ops:
                value = op.get("value")
                if isinstance(value, dict) and "at" in value:
                    latencies.append(now - value["at"])
            if len(latencies) >= commits:
                done.set()

        queries[0].subscribe(seen)
        ctx = mp.get_context("spawn")
        writer = ctx.Process(target=_stamped_writer, args=(url, commits, 100.0))
        writer.start()
        writer.join(commits / 100 + 60)
        done.wait(10)
        for q in queries:
            q.close()
    if not latencies:
        print(f"live latency (notify={notify}): no updates seen")
        return
    ms = sorted(x * 1000 for x in latencies)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(
        f"live latency, notify={notify}: {len(ms)} updates, p50 {statistics.median(ms):.1f} ms, "
        f"p99 {p99:.1f} ms, max {ms[-1]:.1f} ms (10 live queries, 100 commits/s from another process)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--commits", type=int, default=500)
    args = parser.parse_args()
    print_machine()
    with LocalServer(settings=DURABLE) as server:
        url = server.url()
        jl.open(url, MODEL, schema="bench").close()
        commit_order(url, args.seconds)
        print()
        live_latency(url, args.commits, notify=True)
        live_latency(url, args.commits, notify=False)


if __name__ == "__main__":
    main()
