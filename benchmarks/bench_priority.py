"""Claims by priority behind many lower-priority jobs of the same kind: a worker claiming and
completing ``--jobs`` urgent jobs (priority 5) with ``--behind`` pending jobs of priority 0 due
before them, against the same claims without priorities (the same number of jobs queued, ours first
by due time) and with nothing else queued (the floor), on SQLite and PostgreSQL.

Run from the repository root::

    .venv/bin/python benchmarks/bench_priority.py                       # 100,000 jobs behind
    .venv/bin/python benchmarks/bench_priority.py --behind 1000000 --runs 3

Three stores per engine, made once (filling them is not timed). Each run enqueues ``--jobs`` no-op
jobs and times claiming and completing exactly that many, one at a time (``jobs.claim`` then the
settlement), checking each claim took one of them. "priority": the queued jobs are of the same kind
and due earlier, ours have priority 5, so a claim that read by due time would meet every queued job
first; the claim index is ``(kind, priority DESC, due_at, seq)``, so it meets none. "no priority":
the same queue, everything at priority 0, ours due before the rest. The bar: "priority" within 1.2x
of "no priority" (the same table and indexes, only the order differs).
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


#: When the queued jobs fall due (epoch seconds: long ago, all due) and when ours do without priorities.
QUEUED_DUE, OURS_FIRST = 1_000_000.0, 1.0


def lower(store: jl.Store, count: int) -> None:
    """``count`` pending jobs of kind ``noop`` at priority 0, due long ago, in batches (not timed)."""
    step = 50_000
    for start in range(0, count, step):
        values = [(f"low{i}", "noop", "{}", QUEUED_DUE + i, QUEUED_DUE + i, 5, None, None, 0.0, 0.0, None, None, 0)
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


def contender(store: jl.Store, jobs: int, *, priority: int) -> tuple[Any, Any]:
    queue = store.jobs
    # without a priority, ours are due before every queued job (the order the claim had before)
    when = {} if priority else {"run_at": OURS_FIRST}

    def setup() -> None:
        queue.enqueue_many(
            [
                {"kind": "noop", "payload": {"n": i}, "id": f"ours{i}", "priority": priority, **when}
                for i in range(jobs)
            ]
        )

    def claims(_: Any) -> None:
        for _ in range(jobs):
            lease = queue.claim(kinds=["noop"])
            assert lease is not None and lease.id.startswith("ours"), lease
            queue.queue.complete(lease, None, prune=False)
        queue.sweep(settled_before=2e9)  # every round starts from the same queue

    return claims, setup


def compare(engine: str, targets: list[dict[str, Any]], args: argparse.Namespace) -> None:
    alone = store_with(targets[0], 0)
    plain = store_with(targets[1], args.behind)
    behind = store_with(targets[2], args.behind)
    try:
        times = measure_rounds(
            {
                "none": contender(alone, args.jobs, priority=0),
                "plain": contender(plain, args.jobs, priority=0),
                "behind": contender(behind, args.jobs, priority=5),
            },
            runs=args.runs,
        )
    finally:
        alone.close()
        plain.close()
        behind.close()
    rows = [
        Row(f"{engine}: no priority, {args.behind:,} queued after ours", times["plain"], floor=True),
        Row(f"{engine}: priority 5, {args.behind:,} lower-priority due first", times["behind"], bar=1.2),
        Row(f"{engine}: nothing else queued", times["none"]),
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
            compare("sqlite", [{"path": folder / f"{name}.db"} for name in ("none", "plain", "behind")], args)
        if "postgresql" in args.engines:
            from jarenlab.backends.postgres.server import LocalServer

            with LocalServer() as server:
                url = server.url()
                compare(
                    "postgresql",
                    [{"path": url, "schema": name} for name in ("none", "plain", "behind")],
                    args,
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
