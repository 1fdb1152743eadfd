"""Claims by priority behind many lower-priority jobs of the same kind: a worker claiming and
completing ``--jobs`` urgent jobs (priority 5) with ``--behind`` pending jobs of priority 0 due
before them, against the same claims with nothing else queued (the floor), on SQLite and PostgreSQL.

Run from the repository root::

    .venv/bin/python benchmarks/bench_priority.py                       # 100,000 jobs behind
    .venv/bin/python benchmarks/bench_priority.py --behind 1000000 --runs 3

Two stores per engine, made once (filling them is not timed). Each run enqueues ``--jobs`` no-op
jobs and times claiming and completing exactly that many, one at a time (``jobs.claim`` then the
settlement), checking each claim took an urgent job. The lower-priority jobs are of the same kind
and due earlier, so a claim that read by due time would meet every one of them first; the claim
index is ``(kind, priority DESC, due_at, seq)``, so it meets none. The bar: within 1.2x of the floor.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure_rounds, print_machine, print_table

import jarenlab as jl
from jarenlab.jobs.queue import ENQUEUE

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}


def lower(store: jl.Store, count: int) -> None:
    """``count`` pending jobs of kind ``noop`` at priority 0, due long ago, in batches (not timed)."""
    step = 50_000
    for start in range(0, count, step):
        values = [(f"low{i}", "noop", "{}", i, i, 5, None, None, 0.0, 0.0, None, None, 0)
                  for i in range(start, min(count, start + step))]  # fmt: skip
        with store.db.transaction():
            store.db.many("jobs.enqueue", [dict(zip(ENQUEUE, row, strict=True)) for row in values])


def store_with(target: dict[str, Any], count: int) -> jl.Store:
    store = jl.open(model=MODEL, **target)
    store.jobs.handler("noop")(lambda payload, ctx: None)
    lower(store, count)
    if store.backend.name == "postgresql":
        store.db.connection().execute("ANALYZE _jl_jobs")
    return store


def contender(store: jl.Store, jobs: int) -> tuple[Any, Any]:
    queue = store.jobs

    def setup() -> None:
        queue.enqueue_many([{"kind": "noop", "payload": {"n": i}, "priority": 5} for i in range(jobs)])

    def claims(_: Any) -> None:
        for _ in range(jobs):
            lease = queue.claim(kinds=["noop"])
            assert lease is not None and lease.job["priority"] == 5, lease
            queue.queue.complete(lease, None, prune=False)

    return claims, setup


def compare(engine: str, targets: tuple[dict[str, Any], dict[str, Any]], args: argparse.Namespace) -> None:
    alone = store_with(targets[0], 0)
    behind = store_with(targets[1], args.behind)
    try:
        times = measure_rounds(
            {"none": contender(alone, args.jobs), "behind": contender(behind, args.jobs)}, runs=args.runs
        )
    finally:
        alone.close()
        behind.close()
    rows = [
        Row(f"{engine}: claims, nothing else queued", times["none"], floor=True),
        Row(f"{engine}: claims behind {args.behind:,} lower-priority", times["behind"], bar=1.2),
    ]
    for r in rows:
        r.note = f"{args.jobs / r.median:,.0f} claims/s"
    print_table(f"{engine}: claim and complete {args.jobs:,} priority-5 jobs", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--behind", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engines", nargs="*", default=["sqlite", "postgresql"])
    args = parser.parse_args()
    print_machine()
    folder = Path(tempfile.mkdtemp(prefix="bench-priority-"))
    try:
        if "sqlite" in args.engines:
            compare("sqlite", ({"path": folder / "none.db"}, {"path": folder / "behind.db"}), args)
        if "postgresql" in args.engines:
            from jarenlab.backends.postgres.server import LocalServer

            with LocalServer() as server:
                url = server.url()
                compare(
                    "postgresql", ({"path": url, "schema": "none"}, {"path": url, "schema": "behind"}), args
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
