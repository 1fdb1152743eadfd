"""Closing a store while a handler that outlived the grace period settles its job: the settlement
races the closing of the connections. It must end in a coded error for the late write (JD2063), never
in a statement running on a connection closed under it (on SQLite that crashes the process). Real
processes, many rounds, each with the handlers finishing at a different moment of the close (before
the fix two of these seeds crashed with a segmentation fault within 80 rounds)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = r"""
import random, sys, threading, time, warnings
warnings.simplefilter("ignore")
import jarenlab as jl
from tests.jobs.conftest import MODEL

rng = random.Random(int(sys.argv[2]))
for round in range(60):
    store = jl.open(f"{sys.argv[1]}/r{round}.db", MODEL)
    started = threading.Event()
    delay = rng.uniform(0.0, 0.02)

    @store.jobs.handler("late")
    def late(payload, ctx, delay=delay, started=started):
        started.set()
        time.sleep(delay)
        return {"slept": delay}

    store.jobs.configure(close_grace=rng.uniform(0.0, 0.04), poll=0.005)
    for i in range(8):
        store.jobs.enqueue("late", {"i": i})
    store.jobs.start(concurrency=4)
    started.wait(10)
    store.close()
    time.sleep(0.08)  # the late handlers settle (or fail to) against the closed store
print("ok")
"""


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
def test_a_close_racing_late_settlements_never_crashes(tmp_path: Path, seed: int) -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path), str(seed)],
        capture_output=True, text=True, timeout=300, cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert done.stdout.strip() == "ok"
