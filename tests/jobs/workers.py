"""Worker processes for the process tests: ``python -m jarenlab worker`` on a test's store, started
and stopped the way an operator would, with every wait bounded."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

#: What a long-running worker prints once its SIGINT/SIGTERM handlers are in place.
RUNNING = b": running "


def worker(
    db: dict[str, Any], *extra: str, handlers: str = "tests.jobs.handlers_module:jobs", **env: str
) -> subprocess.Popen[bytes]:
    """Start a worker on the store ``db`` names (``jl.open(**db)`` opens it), with ``extra`` arguments.

    A long-running worker is returned once it has said it is running: a SIGTERM before its handler
    is installed (a loaded machine takes seconds to import) ends it with -15 instead of a clean stop.
    ``--until-idle`` workers are returned at once. ``env`` adds environment variables.
    """
    command = [sys.executable, "-m", "jarenlab", "worker", str(db["path"])]
    if "schema" in db:
        command += ["--schema", db["schema"]]
    command += ["--handlers", handlers, *extra]
    environment = {**os.environ, "PYTHONFAULTHANDLER": "1", **env}  # SIGABRT prints every thread's stack
    proc = subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    if "--until-idle" not in extra:
        _await_running(proc)
    return proc


def _await_running(proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    """Read the worker's stderr a byte at a time up to its running line (what follows stays unread,
    for the test's own ``communicate``); fail with what it printed if it exits or stalls first."""
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    said = b""
    deadline = time.monotonic() + timeout
    while not (RUNNING in said and said.endswith(b"\n")):
        left = deadline - time.monotonic()
        if left <= 0:
            proc.kill()
            raise AssertionError(f"the worker did not start within {timeout} s:\n{said.decode()}")
        if select.select([fd], [], [], left)[0]:
            byte = os.read(fd, 1)
            if not byte:
                raise AssertionError(f"the worker exited ({proc.wait()}) before running:\n{said.decode()}")
            said += byte


def stop(procs: list[subprocess.Popen[bytes]], timeout: float = 60.0) -> None:
    """SIGTERM every worker, then wait for each to exit cleanly (code 0)."""
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        _, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, err.decode()


def lines(log: Path) -> list[list[str]]:
    """The lines handlers appended to ``log``, split on spaces (none before the first)."""
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []
