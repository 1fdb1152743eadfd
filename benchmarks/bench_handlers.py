"""Handlers and staged actions: a handler that emits one event and enqueues one job per attempt, drained.

Contenders, taken in turns (medians), each draining N jobs with ``store.jobs.run_until_idle()`` on a
fresh store:

- **staged**: ``ctx.emit(...)`` and ``ctx.enqueue(...)``: both commit in the attempt's settlement
  transaction, behind its fence (what the handler should do);
- **unstaged**: ``store.events.emit(...)`` (fenced by the lease, its own commit) and
  ``store.jobs.enqueue(...)`` (its own commit), then the settlement (the bar: staged <= 1.3x this);
- **no actions**: the same drain with a handler that does nothing (what the queue alone costs);
- **raw floor**: the same work with the driver alone: per job, one transaction that claims the row,
  inserts the event row and the follow-up job row and marks the job done (``sqlite3`` or ``psycopg``).

Run: ``.venv/bin/python benchmarks/bench_handlers.py [--jobs 1000] [--runs 5] [--backend postgresql]``.
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

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
    "events": {"fact": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}},
}

#: The floor's statements (SQLite spelling; ``?`` becomes ``%s`` on PostgreSQL).
CLAIM = (
    "UPDATE _jl_jobs SET state = 'leased', attempts = attempts + 1, lease_until = 1e12, due_at = 1e12,"
    " lease_token = 't' WHERE seq = (SELECT seq FROM _jl_jobs WHERE due_at <= ? AND kind = 'work'"
    " ORDER BY due_at, seq LIMIT 1) RETURNING seq, id, payload"
)
EVENT = "INSERT INTO _jl_events(seq, type, payload, at_ms, caused_by_job, caused_by_attempt) VALUES (?, 'fact', ?, 0, ?, 1)"
FOLLOW = (
    "INSERT INTO _jl_jobs(id, kind, payload, state, run_at, due_at, max_attempts, created_at, updated_at)"
    " VALUES (?, 'follow', ?, 'pending', 0, 0, 5, 0, 0)"
)
DONE = (
    "UPDATE _jl_jobs SET state = 'done', due_at = NULL, lease_until = NULL, lease_token = NULL WHERE seq = ?"
)


class Target:
    """Fresh stores on one backend: files in a temporary folder, or schemas on a throwaway server."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.folder = tempfile.TemporaryDirectory(prefix="bench-handlers-")
        self.count = 0
        self.server: Any = None
        if backend == "postgresql":
            from jarenlab.backends.postgres.server import LocalServer

            self.server = LocalServer().start()

    def open(self) -> Any:
        self.count += 1
        if self.backend == "sqlite":
            return jl.open(Path(self.folder.name) / f"s{self.count}.db", MODEL)
        return jl.open(self.server.url(), MODEL, schema=f"bench_{self.count}")

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.folder.cleanup()


def prepared(target: Target, n: int, how: str) -> Any:
    store = target.open()
    jobs = store.jobs

    if how == "staged":

        def handler(payload: Any, ctx: Any) -> None:
            ctx.emit("fact", {"n": payload})
            ctx.enqueue("follow", payload)

    elif how == "unstaged":

        def handler(payload: Any, ctx: Any) -> None:
            store.events.emit("fact", {"n": payload})
            store.jobs.enqueue("follow", payload)

    else:

        def handler(payload: Any, ctx: Any) -> None:
            return None

    jobs.handler("work")(handler)
    jobs.enqueue_many([{"kind": "work", "payload": i} for i in range(n)])
    return store


def drain(store: Any) -> None:
    summary = store.jobs.run_until_idle(progress=False)
    assert summary["done"] > 0 and summary["open"] == 0, summary
    store.close()


def raw_drain(store: Any) -> None:
    """The floor: the driver alone on the store's own tables (its connection, no jarenlab code per job)."""
    conn = store.db.connection()
    mark = "%s" if store.backend.name == "postgresql" else "?"
    sql = [s.replace("?", mark) for s in (CLAIM, EVENT, FOLLOW, DONE)]
    seq = 0
    while True:
        conn.execute("BEGIN")
        row = conn.execute(sql[0], (1e12,)).fetchone()
        if row is None:
            conn.execute("COMMIT")
            break
        seq += 1
        conn.execute(sql[1], (seq, f'{{"n":{row[2]}}}', row[1]))
        conn.execute(sql[2], (f"f{seq}", row[2]))
        conn.execute(sql[3], (row[0],))
        conn.execute("COMMIT")
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args()
    print_machine()
    target = Target(args.backend)
    n = args.jobs
    try:
        times = measure_rounds(
            {
                "raw floor": (raw_drain, lambda: prepared(target, n, "none")),
                "no actions": (drain, lambda: prepared(target, n, "none")),
                "unstaged": (drain, lambda: prepared(target, n, "unstaged")),
                "staged": (drain, lambda: prepared(target, n, "staged")),
            },
            runs=args.runs,
        )
    finally:
        target.close()
    floor = Row(f"raw floor: {args.backend} driver, one transaction per job", times["raw floor"], floor=True)
    rows = [
        floor,
        Row("jarenlab: handler with no actions", times["no actions"]),
        Row("jarenlab: unstaged (events.emit + jobs.enqueue)", times["unstaged"]),
        Row("jarenlab: staged (ctx.emit + ctx.enqueue)", times["staged"]),
    ]
    print_table(f"draining {n:,} jobs that each emit one event and enqueue one job ({args.backend})", rows)
    staged, unstaged = rows[3].median, rows[2].median
    for row in rows:
        print(f"{row.name:52} {n / row.median:10,.0f} jobs/s")
    verdict = "PASS" if staged / unstaged <= 1.3 else "FAIL"
    print(f"staged vs unstaged: {staged / unstaged:.2f}x time (bar <= 1.3x: {verdict})")


if __name__ == "__main__":
    main()
