"""Real worker processes: many draining one store, SIGKILL mid-handler, a DAG killed mid-graph.

Each runs on both backends: the workers open the test's store (a file, or a schema on the test
server) as ``python -m jarenlab worker`` does. Settlement is counted by a trigger the test installs
on the job table (independent of the worker code): every leased -> done transition inserts a row,
so "settled exactly once" is a row count.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from tests.waiting import wait_for

from .conftest import MODEL
from .workers import ROOT, lines, worker

pytestmark = pytest.mark.slow


#: The settlement counter on each backend: a table and a trigger on leased -> done/dead.
COUNTERS = {
    "sqlite": (
        "CREATE TABLE settles(job_id TEXT, state TEXT)",
        "CREATE TRIGGER count_settles AFTER UPDATE OF state ON _jl_jobs"
        " WHEN OLD.state = 'leased' AND NEW.state IN ('done', 'dead')"
        " BEGIN INSERT INTO settles VALUES (NEW.id, NEW.state); END",
    ),
    "postgresql": (
        "CREATE TABLE settles(job_id text, state text)",
        "CREATE FUNCTION count_settles() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN INSERT INTO settles VALUES (NEW.id, NEW.state); RETURN NULL; END $$",
        "CREATE TRIGGER count_settles AFTER UPDATE OF state ON _jl_jobs FOR EACH ROW"
        " WHEN (OLD.state = 'leased' AND NEW.state IN ('done', 'dead')) EXECUTE FUNCTION count_settles()",
    ),
}


@pytest.fixture
def db(open_store: Any) -> dict[str, Any]:
    """The store's target (``jl.open(**db)`` opens it), with the settlement counter installed."""
    with open_store(MODEL, "procs") as store:
        conn = store.db.connection()
        for statement in COUNTERS[store.backend.name]:
            conn.execute(statement)
    return open_store.target("procs")


def settles(db: dict[str, Any]) -> Counter[str]:
    with jl.open(**db) as store:
        return Counter(row[0] for row in store.db.connection().execute("SELECT job_id FROM settles"))


def test_four_processes_drain_two_thousand_jobs_each_settled_once(db: dict[str, Any], tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    with jl.open(**db) as store:
        store.jobs.enqueue_many(
            [
                {"kind": "record", "payload": {"log": str(log), "sleep": 0.004}, "id": f"r{n:04}"}
                for n in range(2000)
            ]
        )
    procs = [worker(db, "--until-idle", "--concurrency", "2") for _ in range(4)]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    runs = Counter(parts[1] for parts in lines(log))
    assert set(runs) == {f"r{n:04}" for n in range(2000)}  # every job ran at least once
    assert settles(db) == Counter({f"r{n:04}": 1 for n in range(2000)})  # and settled exactly once
    with jl.open(**db) as store:
        assert store.jobs.counts()["done"] == 2000
        pids = {job["result"]["pid"] for job in store.jobs.list(limit=2000)}
    assert pids <= {p.pid for p in procs} and len(pids) >= 2  # the work was shared


def test_twenty_sigkills_mid_handler_lose_nothing(db: dict[str, Any], tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    with jl.open(**db) as store:
        for n in range(20):
            store.jobs.enqueue("slow", {"log": str(log), "seconds": 0.5}, id=f"s{n:02}", max_attempts=20)
    killed: list[tuple[str, str, float]] = []
    for _ in range(20):
        proc = worker(db, "--concurrency", "1", "--lease", "1", "--poll", "0.05")
        wait_for(lambda proc=proc: any(p[0] == "start" and p[3] == str(proc.pid) for p in lines(log)))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        start = next(p for p in lines(log) if p[0] == "start" and p[3] == str(proc.pid))
        killed.append((start[1], start[2], float(start[4])))
    final = worker(db, "--until-idle", "--concurrency", "8", "--lease", "1", "--poll", "0.05")
    _, err = final.communicate(timeout=60)
    assert final.returncode == 0, err.decode()
    assert settles(db) == Counter({f"s{n:02}": 1 for n in range(20)})
    starts = [p for p in lines(log) if p[0] == "start"]
    for job_id, attempt, at in killed:
        later = [float(p[4]) for p in starts if p[1] == job_id and int(p[2]) == int(attempt) + 1]
        assert later, f"{job_id} attempt {attempt} was never retried"
        assert later[0] - at >= 0.9  # recovered only once the killed worker's lease ran out
    with jl.open(**db) as store:
        jobs = store.jobs.list()
        assert all(j["state"] == "done" for j in jobs) and len(jobs) == 20
        assert sum(j["attempts"] for j in jobs) >= 40  # 20 killed attempts + 20 finishing ones


def test_a_dag_killed_mid_graph_resumes_without_rerunning_finished_tasks(
    db: dict[str, Any], tmp_path: Path
) -> None:
    log = tmp_path / "dag.log"
    with jl.open(**db) as store:
        store.jobs.enqueue("pipeline", {"log": str(log), "seconds": 1.0}, id="p1")
    proc = worker(db, "--concurrency", "1", "--lease", "1", "--poll", "0.05")
    wait_for(lambda: any(p[:2] == ["task", "load-start"] for p in lines(log)))
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    with jl.open(**db) as store:
        saved = store.jobs.checkpoints("p1")
        assert set(saved) == {"$graph", "task:extract", "task:transform"}
    final = worker(db, "--until-idle", "--concurrency", "1", "--lease", "1", "--poll", "0.05")
    _, err = final.communicate(timeout=60)
    assert final.returncode == 0, err.decode()
    tasks = Counter(p[1] for p in lines(log) if p[0] == "task")
    assert tasks == Counter({"extract": 1, "transform": 1, "load-start": 2, "load": 1})
    with jl.open(**db) as store:
        job = store.jobs.get("p1")
        assert job["state"] == "done" and job["result"] == {"load": 60} and job["attempts"] == 2
        assert store.jobs.checkpoints("p1") == {}
    assert settles(db) == Counter({"p1": 1})


def test_the_worker_command_stops_whichever_thread_the_signal_reaches(
    db: dict[str, Any], tmp_path: Path
) -> None:
    """The kernel may hand a process's SIGTERM to any of its threads (on a busy machine often not the
    main one); the worker still stops and says so."""
    tgkill = getattr(ctypes.CDLL(None, use_errno=True), "tgkill", None)
    if tgkill is None:
        pytest.skip("this C library has no tgkill to signal one thread")
    log = tmp_path / "slow.log"
    with jl.open(**db) as store:
        store.jobs.enqueue("slow", {"log": str(log), "seconds": 0.2}, id="s1")
    proc = worker(db, "--concurrency", "2", "--lease", "1", "--poll", "0.05", "--grace", "1")
    try:
        wait_for(lambda: any(p[:2] == ["end", "s1"] for p in lines(log)))
        others = [int(t) for t in os.listdir(f"/proc/{proc.pid}/task") if int(t) != proc.pid]
        assert others, "the worker runs threads besides its main one"
        assert tgkill(proc.pid, others[0], signal.SIGTERM) == 0, os.strerror(ctypes.get_errno())
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0 and b"jarenlab worker: stopped" in err, err.decode()


def test_the_worker_command_reports_bad_handlers(db: dict[str, Any]) -> None:
    command = [sys.executable, "-m", "jarenlab", "worker", str(db["path"])]
    command += ["--schema", db["schema"]] if "schema" in db else []
    proc = subprocess.run(
        [*command, "--handlers", "tests.jobs.nothing_here:jobs"], cwd=ROOT, capture_output=True, timeout=60
    )
    assert proc.returncode != 0 and b"JD2125" in proc.stderr
    if "schema" not in db:
        assert os.path.exists(db["path"])
    with jl.open(**db) as store:  # the store is still there, untouched
        assert store.jobs.counts()["pending"] == 0


def test_the_worker_command_names_a_server_it_cannot_reach() -> None:
    url = "postgresql://nobody@127.0.0.1:1/lab"
    proc = subprocess.run(
        [sys.executable, "-m", "jarenlab", "worker", url, "--schema", "lab", "--handlers",
         "tests.jobs.handlers_module:jobs"], cwd=ROOT, capture_output=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1 and b"JD2005" in proc.stderr and b"127.0.0.1" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_the_worker_command_refuses_a_schema_for_a_file(tmp_path: Path) -> None:
    with jl.open(tmp_path / "file.db", MODEL):
        pass
    proc = subprocess.run(
        [sys.executable, "-m", "jarenlab", "worker", str(tmp_path / "file.db"), "--schema", "lab",
         "--handlers", "tests.jobs.handlers_module:jobs"], cwd=ROOT, capture_output=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1 and b"JD0006" in proc.stderr
