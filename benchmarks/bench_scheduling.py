"""What periodic jobs and fan-out cost a queue: draining jobs of a fan-out batch against the same
jobs enqueued plainly (the floor), and a drain with schedules declared (not due) against one without,
on SQLite and PostgreSQL.

Run from the repository root::

    .venv/bin/python benchmarks/bench_scheduling.py
    .venv/bin/python benchmarks/bench_scheduling.py --jobs 1000 --runs 3 --engines sqlite

Each contender has its own store. Per run ``--jobs`` no-op jobs are enqueued (not timed) and
``jobs.run_until_idle(progress=False)`` is timed; the contenders take turns, so load that comes and
goes hits all of them. A batch's jobs each record their outcome and count it on the batch's row in
their settlement's transaction, and the last enqueues the combiner (run in the timed drain too).
A declared schedule costs a worker loop a comparison per iteration until its period comes.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure_rounds, print_machine, print_table

import jarenlab as jl

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}


def opened(target: dict[str, Any], schedules: int = 0) -> jl.Store:
    store = jl.open(model=MODEL, **target)
    store.jobs.handler("noop")(lambda payload, ctx: None)
    store.jobs.handler("combine")(lambda payload, ctx: len(payload["results"]))
    for n in range(schedules):  # yearly, at a minute that has not come: never due while timed
        store.jobs.periodic(f"s{n}", f"{n} 0 1 1 *", "noop")
    return store


def plain(store: jl.Store, jobs: int) -> tuple[Any, Any]:
    def setup() -> None:
        store.jobs.enqueue_many([{"kind": "noop", "payload": i} for i in range(jobs)])

    def drain(_: Any) -> None:
        assert store.jobs.run_until_idle(progress=False)["done"] == jobs

    return drain, setup


def batched(store: jl.Store, jobs: int) -> tuple[Any, Any]:
    ids = itertools.count()

    def setup() -> None:
        store.jobs.fan_out("noop", list(range(jobs)), then="combine", id=f"b{next(ids)}")

    def drain(_: Any) -> None:
        assert store.jobs.run_until_idle(progress=False)["done"] == jobs + 1

    return drain, setup


def compare(engine: str, targets: list[dict[str, Any]], args: argparse.Namespace) -> None:
    stores = [opened(targets[0]), opened(targets[1]), opened(targets[2], schedules=args.schedules)]
    try:
        times = measure_rounds(
            {
                "plain": plain(stores[0], args.jobs),
                "batch": batched(stores[1], args.jobs),
                "schedules": plain(stores[2], args.jobs),
            },
            runs=args.runs,
        )
    finally:
        for store in stores:
            store.close()
    rows = [
        Row(f"{engine}: drain, plain jobs", times["plain"], floor=True),
        Row(f"{engine}: drain, one fan-out batch + combiner", times["batch"]),
        Row(f"{engine}: drain, {args.schedules} schedules declared", times["schedules"]),
    ]
    for r in rows:
        r.note = f"{args.jobs / r.median:,.0f} jobs/s"
    print_table(f"{engine}: drain {args.jobs:,} no-op jobs", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--schedules", type=int, default=10)
    parser.add_argument("--engines", nargs="*", default=["sqlite", "postgresql"])
    args = parser.parse_args()
    print_machine()
    folder = Path(tempfile.mkdtemp(prefix="bench-scheduling-"))
    names = ("plain", "batch", "schedules")
    try:
        if "sqlite" in args.engines:
            compare("sqlite", [{"path": folder / f"{n}.db"} for n in names], args)
        if "postgresql" in args.engines:
            from jarenlab.backends.postgres.server import LocalServer

            with LocalServer() as server:
                compare("postgresql", [{"path": server.url(), "schema": n} for n in names], args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
