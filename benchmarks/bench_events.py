"""Event ledger benchmark: emit throughput against raw sqlite3 doing the same three inserts.

Run from the repository root::

    .venv/bin/python benchmarks/bench_events.py               # 2,000 emits per run, 7 runs
    .venv/bin/python benchmarks/bench_events.py --emits 500 --runs 3   # a quick look

Each jarenlab emit validates a payload against the event's schema, appends the event, and runs
one handler that inserts a schema-validated document into a collection and enqueues a job, all
in one ``BEGIN IMMEDIATE`` transaction (one commit per emit). The floor is raw ``sqlite3`` doing
the same three inserts in one ``BEGIN IMMEDIATE ... COMMIT`` per emit, into tables of **the same
physical shape** (the collection's ``CREATE TABLE``, the ledger's and the queue's internal
tables with their indexes) with the same pragmas (WAL, ``synchronous=NORMAL``), encoding with
``json.dumps`` (and, second floor, ``orjson.dumps``), without validation. Bar: at most 2.0x.

A second jarenlab row uses a dedupe key on every emit (one more indexed lookup and index entry).
Timings are medians over ``--runs`` runs, interleaved (each round runs every contender once, in a\nrotating order, so a busy machine slows all of them alike); creating the empty store or file is\nnot timed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure, print_machine, print_table

import jarenlab as jl
from jarenlab.backends.sqlite import SQLiteBackend
from jarenlab.model import load_model

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
            "additionalProperties": False,
        }
    },
}

_EVENT = (
    "INSERT INTO _jl_events(type, payload, at_ms, dedupe_key, caused_by_job, caused_by_attempt) "
    "VALUES (?, ?, ?, NULL, NULL, NULL)"
)
_DOC = 'INSERT INTO "delays"(doc) VALUES (?)'
_JOB = (
    "INSERT INTO _jl_jobs(id, kind, payload, state, run_at, due_at, max_attempts, created_at, updated_at) "
    "VALUES (?, 'rebook', ?, 'pending', ?, ?, 5, ?, ?)"
)


def payloads(n: int) -> list[dict[str, int]]:
    return [{"flight": 1000 + i, "minutes": i % 240} for i in range(n)]


def jarenlab_setup(tmp: str, *, dedupe: bool) -> tuple[jl.Store, list[dict[str, int]], bool]:
    path = Path(tmp) / f"jl-{uuid.uuid4().hex}.db"
    store = jl.open(path, MODEL)

    @store.events.on("flight.delayed")
    def materialize(event: Any, st: jl.Store) -> None:
        st["delays"].insert(event.payload)
        st.jobs.enqueue("rebook", {"flight": event.payload["flight"]})

    return store, payloads(ARGS.emits), dedupe


def jarenlab_run(arg: tuple[jl.Store, list[dict[str, int]], bool]) -> None:
    store, items, dedupe = arg
    emit = store.events.emit
    if dedupe:
        for i, p in enumerate(items):
            emit("flight.delayed", p, dedupe_key=f"d-{i}")
    else:
        for p in items:
            emit("flight.delayed", p)
    assert store["delays"].count() == len(items)
    store.close()


def raw_setup(tmp: str) -> tuple[sqlite3.Connection, list[dict[str, int]]]:
    path = Path(tmp) / f"raw-{uuid.uuid4().hex}.db"
    backend = SQLiteBackend(str(path))
    conn = backend.connect()  # the store's pragmas
    tables = ["store", *(s.name for s in jl.SUBSYSTEMS)]  # what jl.open creates
    for statement in backend.model_ddl(load_model(MODEL)) + backend.internal_ddl(tables):
        conn.execute(statement)
    return conn, payloads(ARGS.emits)


def raw_run(arg: tuple[sqlite3.Connection, list[dict[str, int]]], dumps: Any) -> None:
    conn, items = arg
    execute = conn.execute
    for p in items:
        now = time.time()
        execute("BEGIN IMMEDIATE")
        execute(_EVENT, ("flight.delayed", dumps(p), int(now * 1000)))
        execute(_DOC, (dumps(p),))
        execute(_JOB, (uuid.uuid4().hex, dumps({"flight": p["flight"]}), now, now, now, now))
        execute("COMMIT")
    conn.close()


def interleaved(contenders: dict[str, tuple[Any, Any]], runs: int) -> dict[str, list[float]]:
    """Time each contender once per round, rotating the order, so load changes hit all alike."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(runs):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn, setup = contenders[name]
            times[name] += measure(fn, runs=1, setup=setup)
    return times


def main() -> None:
    print_machine()
    print(f"{ARGS.emits:,} emits per run, {ARGS.runs} runs (interleaved); one commit per emit")
    tmp = tempfile.mkdtemp(prefix="bench-events-")
    try:
        floor_json, floor_orjson = (
            "raw sqlite3 + json: 3 inserts / txn",
            "raw sqlite3 + orjson: 3 inserts / txn",
        )
        emit, dedupe = "jarenlab emit (+ handler: insert, enqueue)", "jarenlab emit with a dedupe key"
        times = interleaved(
            {
                floor_json: (lambda a: raw_run(a, json.dumps), lambda: raw_setup(tmp)),
                floor_orjson: (
                    lambda a: raw_run(a, lambda v: orjson.dumps(v).decode()),
                    lambda: raw_setup(tmp),
                ),
                emit: (jarenlab_run, lambda: jarenlab_setup(tmp, dedupe=False)),
                dedupe: (jarenlab_run, lambda: jarenlab_setup(tmp, dedupe=True)),
            },
            ARGS.runs,
        )
        rows = [
            Row(floor_json, times[floor_json], floor=True),
            Row(floor_orjson, times[floor_orjson], floor=True),
            Row(emit, times[emit], bar=2.0),
            Row(dedupe, times[dedupe]),
        ]
        print_table(f"emit x {ARGS.emits:,}", rows)
        for r in rows:
            print(
                f"  {r.name:46} {r.median / ARGS.emits * 1e6:8.1f} µs/emit  {ARGS.emits / r.median:10,.0f} emits/s"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--emits", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=7)
    ARGS = parser.parse_args()
    main()
