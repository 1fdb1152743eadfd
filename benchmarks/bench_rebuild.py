"""Materialization rebuild benchmark: replaying the ledger into a collection vs writing the same documents.

Run from the repository root::

    .venv/bin/python benchmarks/bench_rebuild.py                      # 20,000 events, 5 runs, SQLite
    .venv/bin/python benchmarks/bench_rebuild.py --events 5000 --runs 3 --backends postgresql

The ledger holds ``--events`` ``flight.delayed`` events. A **rebuild** is ``store.events.install``
of the ``flight`` module at the next version: one transaction that empties ``delays`` and runs the
materialization's handler (one ``insert`` of a schema-validated document) on every event read back
from the ledger in batches of 256. The **floor** is the handlers' own work without the ledger: in one
transaction, empty ``delays`` and ``insert`` the same documents one by one through the same
collection API. The ratio is what reading, decoding and dispatching the events adds. Bar: at most 1.5x.
Taken in turns (one run of each per round); medians.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure_rounds, print_machine, print_table

import jarenlab as jl
from jarenlab.events import Module

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "delays": {
            "schema": {
                "type": "object",
                "required": ["flight", "minutes"],
                "properties": {"flight": {"type": "integer"}, "minutes": {"type": "integer"}},
            },
            "key": None,
            "identity": "integer",
        }
    },
    "events": {
        "flight.delayed": {
            "type": "object",
            "required": ["flight", "minutes"],
            "properties": {"flight": {"type": "integer"}, "minutes": {"type": "integer", "minimum": 0}},
        }
    },
}


def module(version: int) -> Module:
    flight = Module("flight")
    delays = flight.materialization("delays", version=version)

    @delays.on("delayed")
    def project(event: Any, store: Any) -> None:
        store["delays"].insert({"flight": event.payload["flight"], "minutes": event.payload["minutes"]})

    return flight


def bench(store: jl.Store, title: str, args: argparse.Namespace) -> None:
    store.events.install(module(1))
    payloads = [{"flight": i, "minutes": i % 90} for i in range(args.events)]
    for start in range(0, args.events, 1000):
        with store.transaction():
            for p in payloads[start : start + 1000]:
                store.events.emit("flight.delayed", p)
    version = [1]

    def rebuild(_: Any) -> None:
        version[0] += 1
        plan = store.events.install(module(version[0]), progress=False)
        assert plan.events == args.events

    def floor(_: Any) -> None:
        delays = store["delays"]
        with store.transaction():
            delays.rewrite([], delays.keys())
            for p in payloads:
                delays.insert({"flight": p["flight"], "minutes": p["minutes"]})

    times = measure_rounds({"rebuild": (rebuild, None), "floor": (floor, None)}, runs=args.runs)
    rows = [
        Row("insert the same documents (empty + insert, one txn)", times["floor"], floor=True),
        Row(f"rebuild: replay {args.events:,} events (install v+1)", times["rebuild"], bar=1.5),
    ]
    print_table(f"{title}: rebuild of {args.events:,} events", rows)
    per = rows[1].median / args.events
    print(f"  rebuild: {per * 1e6:.1f} µs/event, {1 / per:,.0f} events/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--backends",
        default="sqlite",
        help="sqlite, postgresql (a throwaway server) or both, comma-separated",
    )
    args = parser.parse_args()
    backends = args.backends.split(",")
    print_machine()
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as root, jl.open(f"{root}/rebuild.db", MODEL) as store:
            bench(store, "SQLite", args)
    if "postgresql" in backends:
        from jarenlab.backends.postgres.server import LocalServer

        with LocalServer() as server, jl.open(server.url(), MODEL, schema="bench_rebuild") as store:
            bench(store, "PostgreSQL", args)


if __name__ == "__main__":
    main()
