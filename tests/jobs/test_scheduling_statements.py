"""The ``periodic`` and ``batches`` catalogues: every statement runs on every backend through the
public API (a statement nothing runs fails here), and each backend has the same names."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab.jobs import Jobs, VirtualClock

CATALOGUES = ("periodic", "batches")


def test_every_statement_runs_through_the_api(jobs: Jobs, clock: VirtualClock) -> None:
    ran: set[str] = set()
    jobs.store.db.record_statements(ran)
    try:

        @jobs.handler("part")
        def part(n: Any, ctx: Any) -> Any:
            return n

        @jobs.handler("join")
        def join(payload: Any, ctx: Any) -> Any:
            return payload["results"]

        schedule = jobs.periodic("hourly", "0 * * * *", "part", payload=1)
        clock.advance(7200)
        jobs.tick()
        schedule.periods()
        jobs.schedules.frame()
        batch = jobs.fan_out("part", [1, 2], then="join", id="b")
        jobs.run_until_idle(progress=False)
        batch.progress()
        jobs.batches()
        jobs.schedules.remove("hourly")
    finally:
        jobs.store.db.record_statements(None)
    for name in CATALOGUES:
        catalogue = jobs.store.backend.catalogue(name)
        missing = [
            f"{name}.{s}"
            for s in catalogue.names()
            if not s.startswith("create_") and f"{name}.{s}" not in ran
        ]
        assert missing == []


@pytest.mark.parametrize("name", CATALOGUES)
def test_both_backends_name_the_same_statements(name: str) -> None:
    from jarenlab.backends.postgres.backend import catalogue as postgres
    from jarenlab.backends.sqlite.backend import catalogue as sqlite

    assert sqlite(name).names() == postgres(name).names()
