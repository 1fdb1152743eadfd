"""Draining a queue behind other kinds' jobs: a worker's drain with many pending jobs of a kind it
does not run, against the same drain with none (the floor), on SQLite and PostgreSQL.

Run from the repository root::

    .venv/bin/python benchmarks/bench_claims.py                          # 1,000,000 foreign jobs
    .venv/bin/python benchmarks/bench_claims.py --foreign 100000 --jobs 1000 --runs 3

Two stores per engine, made once (filling them is not timed): one with ``--foreign`` pending jobs
of kind ``other``, all due before any job of ours (the worst place for them: a claim that reads by
due time alone meets every one first), and one without. Each run enqueues ``--jobs`` no-op jobs of
kind ``noop`` and times ``jobs.run_until_idle(progress=False)`` by a worker that runs ``noop``
only; the stores take turns, so load that comes and goes hits both. Before the claim index the
drain fell from 17k/s to 6/s behind 1M foreign jobs. The bar: within 1.2x of the drain with none.
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


def foreign(store: jl.Store, count: int) -> None:
    """``count`` pending jobs of kind ``other``, due long ago, in batches (not timed)."""
    step = 50_000
    for start in range(0, count, step):
        rows = [
            dict(
                zip(
                    ENQUEUE,
                    (f"f{i}", "other", "{}", i, i, 5, None, None, 0.0, 0.0, None, None, 0),
                    strict=True,
                )
            )
            for i in range(start, min(count, start + step))
        ]
        with store.db.transaction():
            store.db.many("jobs.enqueue", rows)


def store_with(target: dict[str, Any], count: int) -> jl.Store:
    store = jl.open(model=MODEL, **target)
    store.jobs.handler("noop")(lambda payload, ctx: None)
    foreign(store, count)
    return store


def contender(store: jl.Store, jobs: int) -> tuple[Any, Any]:
    def setup() -> None:
        store.jobs.enqueue_many([{"kind": "noop", "payload": {"n": i}} for i in range(jobs)])

    def drain(_: Any) -> None:
        stats = store.jobs.run_until_idle(progress=False)
        assert stats["done"] == jobs, stats

    return drain, setup


def compare(engine: str, targets: tuple[dict[str, Any], dict[str, Any]], args: argparse.Namespace) -> None:
    alone = store_with(targets[0], 0)
    behind = store_with(targets[1], args.foreign)
    try:
        times = measure_rounds(
            {"none": contender(alone, args.jobs), "behind": contender(behind, args.jobs)}, runs=args.runs
        )
    finally:
        alone.close()
        behind.close()
    rows = [
        Row(f"{engine}: drain, no foreign jobs", times["none"], floor=True),
        Row(f"{engine}: drain behind {args.foreign:,} foreign", times["behind"], bar=1.2),
    ]
    for r in rows:
        r.note = f"{args.jobs / r.median:,.0f} jobs/s"
    print_table(f"{engine}: drain {args.jobs:,} no-op jobs", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--foreign", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engines", nargs="*", default=["sqlite", "postgresql"])
    args = parser.parse_args()
    print_machine()
    folder = Path(tempfile.mkdtemp(prefix="bench-claims-"))
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
