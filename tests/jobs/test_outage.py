"""Job workers on PostgreSQL while the server goes away: they back off, reconnect and drain.

A real server of the fault tests' own (:func:`backend_fixtures.fault_server`) is halted for a
while, or restarted at once (``pg_ctl -m immediate``) while worker processes are mid-drain.
Settlement is counted by a trigger on the job table (as in ``test_processes.py``), so "settled
exactly once" does not rest on the worker code. Every wait has a deadline.
"""

from __future__ import annotations

import logging
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import jarenlab as jl
from tests.waiting import wait_for

from .conftest import MODEL
from .test_processes import COUNTERS
from .workers import lines, worker

pytestmark = pytest.mark.slow


@pytest.fixture
def target(fault_server: Any) -> Iterator[dict[str, Any]]:
    """A fresh store on the fault server with the settlement counter installed."""
    schema = f"jobs_{uuid.uuid4().hex[:12]}"
    with jl.open(fault_server.url(), MODEL, schema=schema) as store:
        conn = store.db.connection()
        for statement in COUNTERS["postgresql"]:
            conn.execute(statement)
    yield {"path": fault_server.url(), "schema": schema}
    with psycopg.connect(fault_server.url(), autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def admin_value(target: dict[str, Any], sql: str) -> Any:
    """One value read on a connection of its own (None while the server cannot be reached)."""
    try:
        with psycopg.connect(
            target["path"], connect_timeout=2, options=f"-c search_path={target['schema']}"
        ) as c:
            row = c.execute(sql).fetchone()
            return row[0] if row else None
    except psycopg.OperationalError:
        return None


def test_a_worker_backs_off_through_an_outage_logs_it_once_and_drains(
    target: dict[str, Any], fault_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jarenlab.jobs")
    done: list[int] = []
    with jl.open(**target) as store:
        jobs = store.jobs.configure(poll=0.05)

        @jobs.handler("add")
        def add(payload: Any, ctx: Any) -> int:
            done.append(payload["n"])
            return int(payload["n"])

        worker = jobs.start(concurrency=3)
        jobs.enqueue_many([{"kind": "add", "payload": {"n": n}} for n in range(20)])
        wait_for(lambda: len(done) == 20)
        fault_server.halt()
        try:
            time.sleep(1.5)  # ~30 polls per loop at the idle pace: each would have logged before
            assert worker.unreachable_since is not None and worker.stats["outages"] == 1
        finally:
            fault_server.resume()
        jobs.enqueue_many([{"kind": "add", "payload": {"n": n}} for n in range(20, 40)])
        wait_for(lambda: jobs.counts()["done"] == 40)
        stopped = worker.stop(grace=5)
        assert stopped.in_flight == ()
        stats = worker.stats
    assert sorted(done) == list(range(40))
    assert stats["outages"] == 1 and stats["unreachable_s"] >= 1.0 and stats["errors"] == 0
    messages = [r.getMessage() for r in caplog.records if r.name == "jarenlab.jobs"]
    assert sum("cannot be reached" in m for m in messages) == 1, messages
    assert sum("reconnected" in m for m in messages) == 1, messages
    assert len(messages) <= 4, messages  # no line per poll


def test_worker_processes_drain_through_an_immediate_restart_each_job_settled_once(
    target: dict[str, Any], fault_server: Any, tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    ids = [f"r{n:03}" for n in range(300)]
    with jl.open(**target) as store:
        store.jobs.enqueue_many(
            [{"kind": "record", "payload": {"log": str(log), "sleep": 0.01}, "id": i} for i in ids]
        )
    procs = [worker(target, "--concurrency", "2", "--poll", "0.05", "--lease", "5") for _ in range(2)]
    try:
        wait_for(lambda: len(lines(log)) >= 60, timeout=30)  # mid-drain
        fault_server.restart("immediate")
        wait_for(lambda: admin_value(target, "SELECT count(*) FROM _jl_jobs WHERE state = 'done'") == 300)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        errs = [proc.communicate(timeout=20)[1].decode() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], errs
    with jl.open(**target) as store:
        settled = Counter(row[0] for row in store.db.connection().execute("SELECT job_id FROM settles"))
        counts = store.jobs.counts()
    assert settled == Counter({i: 1 for i in ids})  # every job settled exactly once
    assert counts["done"] == 300 and counts["dead"] == 0
    assert {parts[1] for parts in lines(log)} == set(ids)
    for err in errs:  # at most one warning per outage per worker, and a reconnection for each
        assert err.count("cannot be reached") <= 1, err
        assert err.count("cannot be reached") == err.count("reconnected"), err
        assert "claiming failed" not in err, err
