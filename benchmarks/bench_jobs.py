"""Job queue benchmark: enqueue (single and batched) and draining no-op jobs, side by side with
Huey's ``SqliteHuey`` and a raw SQLite lease loop (the floor), in one run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_jobs.py                      # defaults below, 5 runs each
    .venv/bin/python benchmarks/bench_jobs.py --jobs 2000 --runs 3  # a quick look

What is timed (each run on a fresh file; filling the queue before a drain is not timed):

- **single enqueue**: ``jobs.enqueue("noop", {"n": i})`` one call (one commit) per job, generated
  ids. Floor: raw ``sqlite3`` doing one ``INSERT`` of the same row into a table of the same shape
  and indexes, one autocommit statement each. Huey: calling a ``SqliteHuey`` task (one INSERT).
- **batched enqueue**: ``jobs.enqueue_many([...])`` (one transaction, 16 rows per INSERT
  statement). Floors: ``executemany`` of single-row INSERTs, and the same 16-row INSERTs by hand.
  The raw floors use random ``uuid4`` ids; jarenlab's generated ids ascend (an index append).
- **drain**: ``jobs.run_until_idle(progress=False)`` over no-op jobs in one process: per job one
  claim (``UPDATE ... RETURNING``, attempt, generation and fencing token), the handler call with a
  context, and a fenced settle (``UPDATE`` guarded by token, state and expiry): two commits per job.
  Huey is driven the way its consumer's worker drives it, minus the consumer's polling sleeps:
  ``while (task := huey.dequeue()) is not None: huey.execute(task)`` (dequeue is a
  ``BEGIN EXCLUSIVE`` select+delete, execute runs the task with its signals and result handling).
  The floor is a bare lease loop in raw ``sqlite3``: claim one row with ``UPDATE ... RETURNING``,
  settle it with an ``UPDATE``, no handler, no tokens, no JSON.

Both stores use WAL; jarenlab runs with ``synchronous=NORMAL``, Huey with its default
``synchronous=OFF`` (``fsync=False``), which favours Huey.

- **enqueue -> start latency**: one job at a time (``--latency`` jobs, 100 by default), each
  enqueued after the previous one started plus a pause drawn from 0-50 ms (seeded, the same for
  every contender), timed from just before the enqueue call to the handler's first line
  (``time.monotonic()``, one clock for every process on the machine). jarenlab with a worker started
  in the same process (``jobs.start(concurrency=1)``, woken by the enqueue), and in another process
  (woken when it sees the commit); Huey's consumer in another process (one thread worker, its
  default polling: 0.1 s after an empty look, growing 1.15x). p50, p90 and the largest.
  ``--latency-only`` runs this section alone.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure, print_machine, print_table

import jarenlab as jl
from jarenlab.backends.sqlite.backend import catalogue

#: The queue's tables and indexes, as the SQLite backend creates them.
DDL = catalogue("jobs").schema()

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "notes": {
            "schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
            "key": "/id",
        }
    },
}
_INSERT = (
    "INSERT INTO _jl_jobs(id, kind, payload, state, run_at, due_at, max_attempts, created_at, updated_at)"
    " VALUES (?, 'noop', ?, 'pending', 0, 0, 5, 0, 0)"
)


class Dirs:
    """Fresh temporary directories, removed at exit."""

    def __init__(self) -> None:
        self.made: list[str] = []

    def new(self) -> Path:
        self.made.append(tempfile.mkdtemp(prefix="bench-jobs-"))
        return Path(self.made[-1])

    def clean(self) -> None:
        for d in self.made:
            shutil.rmtree(d, ignore_errors=True)


def jarenlab_store(dirs: Dirs, n_pending: int = 0) -> Any:
    store = jl.open(dirs.new() / "jobs.db", MODEL)
    store.jobs.handler("noop")(lambda payload, ctx: None)
    if n_pending:
        store.jobs.enqueue_many([{"kind": "noop", "payload": {"n": i}} for i in range(n_pending)])
    return store


def raw_conn(dirs: Dirs, n_pending: int = 0) -> sqlite3.Connection:
    conn = sqlite3.connect(dirs.new() / "raw.db", isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    for statement in DDL:
        conn.execute(statement)
    if n_pending:
        conn.execute("BEGIN")
        conn.executemany(
            _INSERT, ((uuid.uuid4().hex, orjson.dumps({"n": i}).decode()) for i in range(n_pending))
        )
        conn.execute("COMMIT")
    return conn


def huey_queue(dirs: Dirs, n_pending: int = 0) -> tuple[Any, Any]:
    from huey import SqliteHuey

    huey = SqliteHuey(filename=str(dirs.new() / "huey.db"))

    @huey.task()
    def noop(n: int) -> None:
        return None

    for i in range(n_pending):
        noop(i)
    return huey, noop


def raw_drain(conn: sqlite3.Connection) -> int:
    done = 0
    while True:
        row = conn.execute(
            "UPDATE _jl_jobs SET state = 'leased', attempts = attempts + 1, lease_until = 30, due_at = 30"
            " WHERE seq = (SELECT seq FROM _jl_jobs WHERE due_at <= 1 ORDER BY due_at, seq LIMIT 1)"
            " RETURNING seq, payload"
        ).fetchone()
        if row is None:
            return done
        conn.execute(
            "UPDATE _jl_jobs SET state = 'done', due_at = NULL, lease_until = NULL WHERE seq = ?", (row[0],)
        )
        done += 1


def huey_drain(huey: Any) -> int:
    done = 0
    while (task := huey.dequeue()) is not None:
        huey.execute(task)
        done += 1
    return done


def _stamp_worker(path: str, starts: Any, ready: Any, stop: Any) -> None:
    """A worker process: jarenlab's worker on the store at ``path``, its handler reporting when it starts."""
    store = jl.open(path)
    store.jobs.handler("stamp")(lambda payload, ctx: starts.put((payload["n"], time.monotonic())))
    worker = store.jobs.start(concurrency=1)
    ready.set()
    stop.wait()
    worker.stop(grace=1)
    store.close()


def _stamp_consumer(filename: str, starts: Any, ready: Any, stop: Any) -> None:
    """A Huey consumer process (one thread worker, default polling) whose task reports when it starts."""
    from huey import SqliteHuey

    huey = SqliteHuey(filename=filename)

    def stamp(n: int) -> None:
        starts.put((n, time.monotonic()))

    stamp.__module__ = "bench_jobs"  # Huey names a task by its module: the same in both processes
    huey.task(name="stamp")(stamp)
    consumer = huey.create_consumer(workers=1, worker_type="thread", periodic=False)
    consumer.start()
    ready.set()
    stop.wait()
    consumer.stop(graceful=True)


def _latencies(enqueue: Any, started: Any, count: int) -> list[float]:
    """Seconds from just before each ``enqueue(n)`` to its handler's start (``started(n)``)."""
    pauses = random.Random(13)
    out = []
    for n in range(count):
        before = time.monotonic()
        enqueue(n)
        out.append(started(n) - before)
        time.sleep(pauses.uniform(0, 0.05))
    return out


def _from_queue(starts: Any) -> Any:
    def started(n: int) -> float:
        got, at = starts.get(timeout=30)
        assert got == n, (got, n)
        return float(at)

    return started


def _end(child: Any, stop: Any) -> None:
    """Stop a child process, killing it when it does not end in time."""
    stop.set()
    child.join(15)
    if child.is_alive():
        child.kill()
        child.join()


def latency(dirs: Dirs, count: int) -> None:
    """The enqueue -> start table (see the module docstring)."""
    rows: dict[str, list[float]] = {}
    # jarenlab, the worker in this process
    store = jl.open(dirs.new() / "jobs.db", MODEL)
    here: dict[int, float] = {}
    begun = threading.Condition()

    def stamp(payload: Any, ctx: Any) -> None:
        with begun:
            here[payload["n"]] = time.monotonic()
            begun.notify_all()

    def started_here(n: int) -> float:
        with begun:
            assert begun.wait_for(lambda: n in here, timeout=30)
            return here[n]

    store.jobs.handler("stamp")(stamp)
    worker = store.jobs.start(concurrency=1)
    rows["jarenlab, worker in the same process"] = _latencies(
        lambda n: store.jobs.enqueue("stamp", {"n": n}), started_here, count
    )
    worker.stop(grace=1)
    store.close()

    spawn = multiprocessing.get_context("spawn")
    # jarenlab, the worker in another process
    path = str(dirs.new() / "jobs.db")
    store = jl.open(path, MODEL)
    store.jobs.declare("stamp")  # (its handler is the other process's)
    starts, ready, stop = spawn.Queue(), spawn.Event(), spawn.Event()
    child = spawn.Process(target=_stamp_worker, args=(path, starts, ready, stop))
    child.start()
    assert ready.wait(60)
    time.sleep(0.5)  # (its first looks over)
    try:
        rows["jarenlab, worker in another process"] = _latencies(
            lambda n: store.jobs.enqueue("stamp", {"n": n}), _from_queue(starts), count
        )
    finally:
        _end(child, stop)
        store.close()

    # Huey, the consumer in another process
    from huey import SqliteHuey

    filename = str(dirs.new() / "huey.db")
    huey = SqliteHuey(filename=filename)

    def stamp(n: int) -> None:  # (runs in the consumer)
        return None

    stamp.__module__ = "bench_jobs"
    huey_stamp = huey.task(name="stamp")(stamp)

    starts, ready, stop = spawn.Queue(), spawn.Event(), spawn.Event()
    child = spawn.Process(target=_stamp_consumer, args=(filename, starts, ready, stop))
    child.start()
    assert ready.wait(60)
    time.sleep(0.5)
    try:
        rows["huey, consumer in another process"] = _latencies(huey_stamp, _from_queue(starts), count)
    finally:
        _end(child, stop)

    print(f"\n### enqueue -> start, {count} jobs one at a time\n")
    print("| contender | p50 | p90 | max |\n|---|---:|---:|---:|")
    for name, times in rows.items():
        ms = sorted(t * 1000 for t in times)
        p90 = ms[int(0.9 * (len(ms) - 1))]
        print(f"| {name} | {statistics.median(ms):.1f} ms | {p90:.1f} ms | {ms[-1]:.1f} ms |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000, help="jobs per single-enqueue and drain run")
    parser.add_argument("--batch", type=int, default=100_000, help="jobs per batched-enqueue run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency", type=int, default=100, help="jobs in the enqueue -> start section")
    parser.add_argument("--latency-only", action="store_true", help="run the enqueue -> start section alone")
    args = parser.parse_args()
    n, batch, runs = args.jobs, args.batch, args.runs
    dirs = Dirs()
    print_machine()
    if args.latency_only:
        try:
            latency(dirs, args.latency)
        finally:
            dirs.clean()
        return
    results: dict[str, dict[str, float]] = {}
    try:
        # -- single enqueue ------------------------------------------------------------------
        def raw_single(conn: sqlite3.Connection) -> None:
            for i in range(n):
                conn.execute(_INSERT, (uuid.uuid4().hex, orjson.dumps({"n": i}).decode()))

        def jl_single(store: Any) -> None:
            enqueue = store.jobs.enqueue
            for i in range(n):
                enqueue("noop", {"n": i})

        def huey_single(pair: Any) -> None:
            noop = pair[1]
            for i in range(n):
                noop(i)

        rows = [
            Row(
                "raw sqlite3: INSERT per job",
                measure(raw_single, runs=runs, setup=lambda: raw_conn(dirs)),
                floor=True,
            ),
            Row("jarenlab: jobs.enqueue", measure(jl_single, runs=runs, setup=lambda: jarenlab_store(dirs))),
            Row(
                "huey: SqliteHuey task call", measure(huey_single, runs=runs, setup=lambda: huey_queue(dirs))
            ),
        ]
        print_table(f"single enqueue, {n:,} jobs", rows)
        results["single"] = {r.name: n / r.median for r in rows}

        # -- batched enqueue -----------------------------------------------------------------
        def raw_batch(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                _INSERT, ((uuid.uuid4().hex, orjson.dumps({"n": i}).decode()) for i in range(batch))
            )
            conn.execute("COMMIT")

        chunk = 16
        many = _INSERT.replace(
            "VALUES (?, 'noop', ?, 'pending', 0, 0, 5, 0, 0)",
            "VALUES " + ", ".join(["(?, 'noop', ?, 'pending', 0, 0, 5, 0, 0)"] * chunk),
        )

        def raw_multirow(conn: sqlite3.Connection) -> None:
            flat = [v for i in range(batch) for v in (uuid.uuid4().hex, orjson.dumps({"n": i}).decode())]
            conn.execute("BEGIN IMMEDIATE")
            full = batch - batch % chunk
            conn.executemany(many, (flat[i : i + 2 * chunk] for i in range(0, 2 * full, 2 * chunk)))
            conn.executemany(_INSERT, (flat[i : i + 2] for i in range(2 * full, 2 * batch, 2)))
            conn.execute("COMMIT")

        def jl_batch(store: Any) -> None:
            store.jobs.enqueue_many([{"kind": "noop", "payload": {"n": i}} for i in range(batch)])

        rows = [
            Row(
                "raw executemany",
                measure(raw_batch, runs=runs, setup=lambda: raw_conn(dirs)),
                floor=True,
            ),
            Row(
                "raw 16-row INSERTs",
                measure(raw_multirow, runs=runs, setup=lambda: raw_conn(dirs)),
                floor=True,
            ),
            Row(
                "jarenlab: jobs.enqueue_many",
                measure(jl_batch, runs=runs, setup=lambda: jarenlab_store(dirs)),
            ),
        ]
        print_table(f"batched enqueue, {batch:,} jobs", rows)
        results["batch"] = {r.name: batch / r.median for r in rows}

        # -- drain ---------------------------------------------------------------------------
        def jl_drain(store: Any) -> None:
            summary = store.jobs.run_until_idle(progress=False)
            assert summary["done"] == n, summary

        def hz_drain(pair: Any) -> None:
            assert huey_drain(pair[0]) == n

        def floor_drain(conn: sqlite3.Connection) -> None:
            assert raw_drain(conn) == n

        rows = [
            Row(
                "raw sqlite3: lease loop",
                measure(floor_drain, runs=runs, setup=lambda: raw_conn(dirs, n)),
                floor=True,
            ),
            Row(
                "jarenlab: run_until_idle",
                measure(jl_drain, runs=runs, setup=lambda: jarenlab_store(dirs, n)),
            ),
            Row("huey: dequeue + execute", measure(hz_drain, runs=runs, setup=lambda: huey_queue(dirs, n))),
        ]
        print_table(f"drain no-op jobs in one process, {n:,} jobs", rows)
        results["drain"] = {r.name: n / r.median for r in rows}

        latency(dirs, args.latency)
    finally:
        dirs.clean()

    print("\n== throughput (jobs/s, medians) and bars")
    for section, rates in results.items():
        print(f"{section:8} " + "  ".join(f"{name}: {rate:,.0f}/s" for name, rate in rates.items()))
    single = results["single"]["jarenlab: jobs.enqueue"]
    batched = results["batch"]["jarenlab: jobs.enqueue_many"]
    drain = results["drain"]["jarenlab: run_until_idle"]
    huey = results["drain"]["huey: dequeue + execute"]
    for label, ok in (
        (f"single enqueue {single:,.0f}/s >= 10,000/s", single >= 10_000),
        (f"batched enqueue {batched:,.0f}/s >= 100,000/s", batched >= 100_000),
        (f"drain {drain:,.0f}/s >= 5,000/s", drain >= 5_000),
        (f"drain {drain / huey:.2f}x Huey >= 2.5x", drain / huey >= 2.5),
    ):
        print(f"  {'PASS' if ok else 'FAIL'}  {label}")


if __name__ == "__main__":
    main()
