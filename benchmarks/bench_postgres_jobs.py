"""Job queue on PostgreSQL: jarenlab against procrastinate, 1, 2, 4 and 8 worker processes.

Run from the repository root::

    .venv/bin/python benchmarks/bench_postgres_jobs.py                 # 20,000 jobs per run
    .venv/bin/python benchmarks/bench_postgres_jobs.py --jobs 2000 --processes 1 4

One throwaway server with durability ON (fsync, synchronous_commit) from the machine's PostgreSQL
binaries. For each number of worker processes, in turns: enqueue ``--jobs`` no-op jobs in one
batch, start the workers (each imports, connects, then waits at a barrier), and time from the
barrier until every job is settled. Each worker runs one job at a time (``concurrency=1``) and
leaves when the queue is empty. After each jarenlab run the settle count is checked: every job
``done`` once with ``attempts == 1`` (no double settlement). procrastinate runs with its defaults
(LISTEN/NOTIFY, a worker per process); after its runs every job is ``succeeded``.

Also measured, one process: single ``enqueue`` and batched ``enqueue_many`` per second, against
procrastinate's ``defer`` and ``batch_defer``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_machine

import jarenlab as jl
from jarenlab.backends.postgres.server import LocalServer
from jarenlab.jobs import Handlers

DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on", "max_connections": "100"}
MODEL = {
    "$model": "0.1",
    "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}
HANDLERS = Handlers()


@HANDLERS.handler("noop")
def noop_handler(payload: Any, ctx: Any) -> None:
    return None


def procrastinate_app(url: str) -> Any:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name="noop", queue="bench")
    def noop() -> None:
        return None

    return app


def _jarenlab_worker(url: str, barrier: Any) -> None:
    with jl.open(url, schema="jobs") as store:
        jobs = store.jobs
        jobs.include(HANDLERS)
        barrier.wait()
        jobs.run_until_idle(progress=False)


def _procrastinate_worker(url: str, barrier: Any) -> None:
    app = procrastinate_app(url)
    with app.open():
        barrier.wait()
        app.run_worker(queues=["bench"], wait=False, concurrency=1, install_signal_handlers=False)


def drain(url: str, which: str, processes: int, n: int) -> float:
    ctx = mp.get_context("spawn")
    if which == "jarenlab":
        with jl.open(url, schema="jobs") as store:
            for start in range(0, n, 5000):
                store.jobs.enqueue_many(
                    [{"kind": "noop", "payload": {}} for _ in range(min(5000, n - start))]
                )
        target = _jarenlab_worker
    else:
        app = procrastinate_app(url)
        with app.open():
            for start in range(0, n, 5000):
                app.tasks["noop"].batch_defer(*[{} for _ in range(min(5000, n - start))])
        target = _procrastinate_worker
    barrier = ctx.Barrier(processes + 1)
    procs = [ctx.Process(target=target, args=(url, barrier)) for _ in range(processes)]
    for p in procs:
        p.start()
    barrier.wait()
    started = time.perf_counter()
    for p in procs:
        p.join(600)
    return time.perf_counter() - started


def check_jarenlab(url: str, n: int) -> str:
    with jl.open(url, schema="jobs") as store:
        done = store.jobs.counts()["done"]
        rows = store.jobs.frame(limit=n + 10)
        attempts_ok = bool((rows["attempts"] == 1).all())
        store.jobs.sweep(settled_before=time.time() + 3600)
    return f"done {done}/{n}, every attempts == 1: {attempts_ok}"


def check_procrastinate(url: str, n: int) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        ok = conn.execute("SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'").fetchone()[0]
        conn.execute("DELETE FROM procrastinate_jobs")
    return f"succeeded {ok}/{n}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--processes", type=int, nargs="*", default=[1, 2, 4, 8])
    args = parser.parse_args()
    print_machine()
    with LocalServer(settings=DURABLE) as server:
        url = server.url()
        jl.open(url, MODEL, schema="jobs").close()
        app = procrastinate_app(url)
        with app.open():
            app.schema_manager.apply_schema()
        print(f"\n== drain {args.jobs:,} no-op jobs (fsync on); jobs per second")
        print(f"{'processes':>10} {'jarenlab':>12} {'procrastinate':>14} {'ratio':>8}   checks")
        for processes in args.processes:
            ours = args.jobs / drain(url, "jarenlab", processes, args.jobs)
            ours_check = check_jarenlab(url, args.jobs)
            theirs = args.jobs / drain(url, "procrastinate", processes, args.jobs)
            theirs_check = check_procrastinate(url, args.jobs)
            print(
                f"{processes:>10} {ours:>12,.0f} {theirs:>14,.0f} {ours / theirs:>7.2f}x   "
                f"jarenlab: {ours_check}; procrastinate: {theirs_check}"
            )
        n = 2000
        with jl.open(url, schema="jobs") as store:
            t = time.perf_counter()
            for _ in range(n):
                store.jobs.enqueue("noop", {})
            single = n / (time.perf_counter() - t)
            t = time.perf_counter()
            store.jobs.enqueue_many([{"kind": "noop", "payload": {}} for _ in range(10 * n)])
            batch = 10 * n / (time.perf_counter() - t)
        with app.open():
            task = app.tasks["noop"]
            t = time.perf_counter()
            for _ in range(n):
                task.defer()
            p_single = n / (time.perf_counter() - t)
            t = time.perf_counter()
            task.batch_defer(*[{} for _ in range(10 * n)])
            p_batch = 10 * n / (time.perf_counter() - t)
        print(f"\n== enqueue, one process (jobs per second)\n{'':10} {'jarenlab':>12} {'procrastinate':>14}")
        print(
            f"{'single':10} {single:>12,.0f} {p_single:>14,.0f}\n{'batched':10} {batch:>12,.0f} {p_batch:>14,.0f}"
        )


if __name__ == "__main__":
    main()
