"""Fixtures for the job queue: a store (on each backend), a virtual clock, and the store's queue on it."""

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
def clock() -> VirtualClock:
    return VirtualClock(1_900_000_000.0)


@pytest.fixture
def store(open_store: Any, request: pytest.FixtureRequest) -> jl.Store:
    """A fresh store on the test's backend (closed, and on PostgreSQL dropped, after the test).

    For a test that uses ``jobs`` it runs on the ``clock`` fixture, with the jitter fixed at its
    midpoint (``random`` = 0.5 gives x0.75): ``store.jobs`` itself runs in virtual time."""
    if "jobs" in request.fixturenames:
        return open_store(MODEL, clock=request.getfixturevalue("clock"), random=lambda: 0.5)
    return open_store(MODEL)


@pytest.fixture
def jobs(store: jl.Store) -> Jobs:
    """The store's queue, in the store's virtual time, with 10 s leases."""
    return store.jobs.configure(lease=10.0)


def run_one(jobs: Jobs) -> str | None:
    """Claim and run one due job; its outcome, or None when nothing was due."""
    lease = jobs.claim()
    return None if lease is None else jobs.executor.execute(lease)
