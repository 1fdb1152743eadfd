"""Honest shutdown and waiting: store.close() reports handlers still running after the grace period
and a busy WAL checkpoint; wait_for_idle carries worker-loop failures. On each backend."""

from __future__ import annotations

import sqlite3
import threading
import time
import warnings
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import JarenlabError, JobError

from .conftest import MODEL


def running(store: jl.Store, release: threading.Event, started: threading.Event) -> None:
    """Start a worker whose handler for ``hold`` waits for ``release``; one ``hold`` job, running."""

    @store.jobs.handler("hold")
    def hold(payload: Any, ctx: Any) -> None:
        started.set()
        release.wait(10)

    store.jobs.configure(close_grace=0.2, poll=0.01)
    store.jobs.enqueue("hold", id="stuck")
    store.jobs.start(concurrency=1)
    assert started.wait(10)


@pytest.mark.parametrize("strict", [False, True])
def test_close_names_the_handlers_still_running_after_the_grace_period(open_store: Any, strict: bool) -> None:
    store = open_store(MODEL)
    release, started = threading.Event(), threading.Event()
    running(store, release, started)
    try:
        if strict:
            with pytest.raises(JobError) as err:
                store.close(strict=True)
            assert err.value.code == "JD2062" and "'stuck'" in err.value.reason
        else:
            with pytest.warns(RuntimeWarning, match=r"JD2062 .*'stuck'"):
                store.close()
        assert store.closed  # closed all the same
    finally:
        release.set()


def test_close_is_quiet_when_everything_finished(open_store: Any) -> None:
    store = open_store(MODEL)
    store.jobs.handler("quick")(lambda p, c: p)
    store.jobs.enqueue("quick", 1)
    store.jobs.start(concurrency=1)
    assert store.jobs.wait_for_idle(timeout=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store.close(strict=True)


def test_close_reports_a_busy_checkpoint(tmp_path: Any) -> None:
    path = tmp_path / "busy.db"
    store = jl.open(path, MODEL, busy_timeout=0.05)
    reader = sqlite3.connect(path)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM _jl_jobs").fetchone()  # a snapshot the checkpoint must not pass
        store.jobs.enqueue_many([{"kind": "k", "payload": n} for n in range(50)])
        with pytest.warns(RuntimeWarning, match=r"JD2120 checkpoint_busy"):
            store.close()
        again = jl.open(path, busy_timeout=0.05)
        reader.execute("SELECT 1").fetchone()
        with pytest.raises(JarenlabError) as err:
            again.close(strict=True)
        assert err.value.code == "JD2120" and err.value.condition == "busy"
    finally:
        reader.close()
    with jl.open(path) as store:  # nothing was lost
        assert store.jobs.counts()["pending"] == 50


#: A trigger that makes every claim fail (the database refuses the update), and how to drop it.
REFUSE_CLAIMS = {
    "sqlite": (
        "CREATE TRIGGER refuse_claims BEFORE UPDATE OF state ON _jl_jobs WHEN NEW.state = 'leased'"
        " BEGIN SELECT RAISE(ABORT, 'claims refused'); END",
    ),
    "postgresql": (
        "CREATE FUNCTION refuse_claims() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN RAISE EXCEPTION 'claims refused'; END $$",
        "CREATE TRIGGER refuse_claims BEFORE UPDATE OF state ON _jl_jobs FOR EACH ROW"
        " WHEN (NEW.state = 'leased') EXECUTE FUNCTION refuse_claims()",
    ),
}
ALLOW_CLAIMS = {
    "sqlite": ("DROP TRIGGER refuse_claims",),
    "postgresql": ("DROP TRIGGER refuse_claims ON _jl_jobs",),
}


def _run(store: jl.Store, statements: dict[str, tuple[str, ...]]) -> None:
    for statement in statements[store.backend.name]:
        store.db.connection().execute(statement)


def test_wait_for_idle_carries_the_failures_of_a_worker_that_keeps_failing(open_store: Any) -> None:
    store = open_store(MODEL)
    jobs = store.jobs.configure(poll=0.01)
    jobs.handler("quick")(lambda p, c: p)
    jobs.enqueue("quick", 1, id="q")
    _run(store, REFUSE_CLAIMS)  # every claim fails now
    worker = jobs.start(concurrency=1)
    try:
        result = jobs.wait_for_idle(timeout=0.3)
        assert not result and result.failures
        assert {f.code for f in result.failures} == {"JD2121"}
        assert "could not claim" in result.failures[0].reason
        assert isinstance(result.failures[0].__cause__, JarenlabError)
        time.sleep(0.05)
        with pytest.raises(JobError) as err:
            jobs.wait_for_idle(timeout=5, raise_failures=True)
        assert err.value.code == "JD2121"
        _run(store, ALLOW_CLAIMS)
        result = jobs.wait_for_idle(timeout=10)  # may still report claims refused before the drop
        assert result.idle and jobs.get("q")["state"] == "done" and "jobs idle" in result._repr_html_()
        assert jobs.wait_for_idle(timeout=1).failures == ()  # each failure is reported once
    finally:
        worker.stop(grace=1)
