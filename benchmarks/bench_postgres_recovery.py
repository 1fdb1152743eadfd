"""PostgreSQL: how long a store takes to carry on after its sessions end or its server restarts.

Run from the repository root::

    .venv/bin/python benchmarks/bench_postgres_recovery.py            # about half a minute
    .venv/bin/python benchmarks/bench_postgres_recovery.py --rounds 10

A throwaway server with durability ON (fsync, synchronous_commit) is started from the machine's
PostgreSQL binaries. Each measure is the median (and the largest) of ``--rounds`` rounds:

1. **Terminate**: every session of the store ended with ``pg_terminate_backend`` (waited until they
   are gone); the time the next call (a ``count()``) takes, which opens a new connection, against
   the same call on a connection that is alive. And what checking a connection before each
   statement costs (:meth:`PostgresBackend.lost`: one ``select`` with no wait).
2. **Restart**: ``pg_ctl restart -m immediate``; the time the restart command takes, then from its
   return to the first call that succeeds (calls retried every 10 ms), to a worker's first job
   done (a job enqueued right after the restart), and to a live query showing a commit made right
   after the restart (the hub's poller backs off while the server is away).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
from common import print_machine

import jarenlab as jl
from jarenlab import it
from jarenlab.backends.postgres.server import LocalServer

DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
MODEL = {
    "$model": "0.1",
    "collections": {"t": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}


def terminate(server: LocalServer, schema: str) -> None:
    with psycopg.connect(server.url(), autocommit=True) as admin:
        pids = [r[0] for r in admin.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                                            (f"jarenlab:{schema}",))]  # fmt: skip
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)).fetchone()[
            0
        ]:
            time.sleep(0.001)


def until(predicate: Callable[[], bool], timeout: float = 30.0) -> float:
    """Seconds until ``predicate()`` holds (checked every 10 ms; a call that raises counts as no)."""
    started = time.perf_counter()
    while True:
        try:
            if predicate():
                return time.perf_counter() - started
        except jl.JarenlabError:
            pass
        if time.perf_counter() - started > timeout:
            raise TimeoutError("did not recover")
        time.sleep(0.01)


def line(name: str, seconds: list[float]) -> None:
    print(
        f"{name:<58} median {statistics.median(seconds) * 1000:9.2f} ms   max {max(seconds) * 1000:9.2f} ms"
    )


def bench_terminate(server: LocalServer, rounds: int) -> None:
    print("\n== after pg_terminate_backend of every session of the store")
    with jl.open(server.url(), MODEL, schema="bench_terminate") as store:
        t = store["t"]
        t.insert({"n": 1})
        alive, healed = [], []
        for _ in range(rounds):
            started = time.perf_counter()
            t.count()
            alive.append(time.perf_counter() - started)
            terminate(server, "bench_terminate")
            started = time.perf_counter()
            t.count()  # no error: the lost connection is noticed before the statement is sent
            healed.append(time.perf_counter() - started)
        line("count() on a live connection", alive)
        line("count() right after the terminate (a new connection)", healed)
        conn = store.db.connection()
        lost = store.backend.lost
        n = 100_000
        started = time.perf_counter()
        for _ in range(n):
            lost(conn)
        print(
            f"{'checking a connection before a statement (lost())':<58} {(time.perf_counter() - started) / n * 1e6:9.2f} µs"
        )


def bench_restart(server: LocalServer, rounds: int) -> None:
    print("\n== after pg_ctl restart -m immediate (from the restart command's return)")
    restart, first_call, first_job, live_seen = [], [], [], []
    with (
        jl.open(server.url(), MODEL, schema="bench_restart") as store,
        jl.open(server.url(), MODEL, schema="bench_restart") as writer,
    ):
        t = store["t"]
        t.insert({"n": 0})
        jobs = store.jobs.configure(poll=0.05)
        done: list[Any] = []
        jobs.handler("note")(lambda payload, ctx: done.append(payload))
        worker = jobs.start(concurrency=2)
        live = t.where(it.n >= 0).order_by(it.n.desc()).take(1).live()
        for r in range(1, rounds + 1):
            started = time.perf_counter()
            server.restart("immediate")
            restart.append(time.perf_counter() - started)
            back = time.perf_counter()
            first_call.append(until(lambda: t.count() >= 0))
            writer["t"].insert({"n": r})
            committed = time.perf_counter()
            live_seen.append(
                until(lambda r=r: live.state == "live" and live.rows == [{"n": r}]) + (committed - back)
            )
            before = len(done)
            enqueued = time.perf_counter()
            writer.jobs.enqueue("note", {"r": r})
            first_job.append(until(lambda before=before: len(done) > before) + (enqueued - back))
        worker.stop(grace=5)
        stats = worker.stats
    line("pg_ctl restart -m immediate itself", restart)
    line("first call that succeeds (retried every 10 ms)", first_call)
    line("a commit made after the restart shown by a live query", live_seen)
    line("a job enqueued after the restart done by a running worker", first_job)
    print(f"worker stats: outages {stats['outages']}, unreachable {stats['unreachable_s']:.2f} s in all")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    # The outage warnings (one per restart from the worker and from the live hub) are expected here.
    warnings.filterwarnings("ignore", "jarenlab live queries are stale")
    logging.getLogger("jarenlab.jobs").setLevel(logging.ERROR)
    print_machine()
    with LocalServer(settings=DURABLE) as server:
        with psycopg.connect(server.url()) as c:
            version = c.execute("SHOW server_version").fetchone()
            print(f"PostgreSQL {version[0] if version else '?'}, fsync on, synchronous_commit on")
        bench_terminate(server, args.rounds)
        bench_restart(server, args.rounds)


if __name__ == "__main__":
    main()
