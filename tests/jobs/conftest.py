"""Fixtures for the job queue: a store (on each backend), a virtual clock, and a queue on that clock."""

from __future__ import annotations

from typing import Any

import pytest

import jarenlab as jl
from jarenlab.jobs import Jobs, VirtualClock

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "notes": {
            "schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
            "key": "/id",
        }
    },
}


@pytest.fixture
def store(open_store: Any) -> jl.Store:
    """A fresh store on the test's backend (closed, and on PostgreSQL dropped, after the test)."""
    return open_store(MODEL)


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(1_900_000_000.0)


@pytest.fixture
def jobs(store: jl.Store, clock: VirtualClock) -> Jobs:
    """A queue in virtual time; jitter fixed at its midpoint (``rand`` = 0.5 gives x0.75)."""
    return Jobs(store, clock=clock, rand=lambda: 0.5, lease=10.0)


def run_one(jobs: Jobs) -> str | None:
    """Claim and run one due job; its outcome, or None when nothing was due."""
    lease = jobs.claim()
    return None if lease is None else jobs.executor.execute(lease)
