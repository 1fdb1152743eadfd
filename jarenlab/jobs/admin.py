"""Reads and administration over the job table: what is due, cancel, requeue, sweep, checkpoints.

:class:`~jarenlab.jobs.queue.Queue` inherits these; they need only the store's database and the clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.arguments import is_number
from jarenlab.errors import JobError
from jarenlab.jobs.members import maybe_member, member_settled
from jarenlab.jobs.signalwork import maybe_work, work_settled

if TYPE_CHECKING:
    from jarenlab.database import Database
    from jarenlab.jobs.clock import Clock


def check_time(name: str, value: Any) -> float:
    """``value`` as float epoch seconds; JD2125 unless it is a finite number.

    >>> check_time("run_at", 5)
    5.0
    """
    if not is_number(value):
        raise JobError("JD2125", f"{name} must be a finite number of epoch seconds, not {value!r}")
    return float(value)


class Administration:
    """Reads and administrative transitions (mixed into the queue)."""

    db: Database
    clock: Clock

    def claimable(self, kinds: Iterable[str]) -> bool:
        """True when a claim for ``kinds`` would lease a job now."""
        names = tuple(kinds)
        if not names:
            return False
        now = self.clock()
        return self.db.one("jobs.claimable", {"now": now, "kinds": names}, kinds=len(names)) is not None

    def next_wait(self, kinds: Iterable[str], *, scheduled: bool) -> float | None:
        """When work of ``kinds`` that is under way (retrying, leased) next falls due; with
        ``scheduled``, also pending work scheduled later. None when there is none."""
        names = tuple(kinds)
        if not names:
            return None
        due = self.db.value("jobs.next_due", {"kinds": names, "scheduled": scheduled}, kinds=len(names))
        return None if due is None else float(due)

    def open_count(self, kinds: Iterable[str]) -> int:
        """How many jobs of ``kinds`` are not settled yet (pending, leased, failed)."""
        names = tuple(kinds)
        if not names:
            return 0
        return int(self.db.value("jobs.open_count", {"kinds": names}, kinds=len(names)))

    def checkpoints(self, job_id: str) -> dict[str, Any]:
        """The checkpoints saved for a job, by name, decoded."""
        return {node: orjson.loads(value) for node, value in self.db.all("jobs.checkpoints", {"id": job_id})}

    def state(self, job_id: str) -> str | None:
        """The job's state now (``pending`` ... ``cancelled``), or None when there is no such job."""
        row = self.db.one("jobs.state", {"id": job_id})
        return None if row is None else str(row[0])

    # -- administration --------------------------------------------------------------------------
    def cancel(self, job_id: str) -> bool:
        """Cancel a job (terminal). True when it was cancelled now, False when already settled.

        A leased job keeps its lease until its handler unwinds, so its partition stays blocked. The
        job's row is locked from the read to the change (a claim cannot lease it in between).
        """
        now = self.clock()
        db = self.db
        with db.transaction():
            row = db.one("jobs.lock_state", {"id": job_id})
            if row is None:
                raise JobError("JD2126", f"no job {job_id!r}", key=job_id)
            if row[0] in ("done", "dead", "cancelled"):
                return False
            keep = row[0] == "leased"
            db.run("jobs.cancel", {"now": now, "leased": keep, "id": job_id})
            if maybe_member(job_id):
                member_settled(self, job_id, "cancelled", None, "cancelled")  # type: ignore[arg-type]
            if maybe_work(job_id):
                work_settled(db, job_id)
        return True

    def requeue(self, job_id: str, *, budget: int, run_at: float | None) -> None:
        """Make a settled or waiting job due again with ``budget`` more attempts (history kept)."""
        now = self.clock()
        at = now if run_at is None else check_time("run_at", run_at)
        db = self.db
        with db.transaction():
            row = db.one("jobs.lock_state", {"id": job_id})
            if row is None:
                raise JobError("JD2126", f"no job {job_id!r}", key=job_id)
            if row[0] == "leased" or (row[0] == "cancelled" and row[1] is not None and row[1] > now):
                raise JobError("JD2125", f"job {job_id!r} is running; cancel it or wait", key=job_id)
            db.run("jobs.requeue", {"run_at": at, "due_at": at, "attempts": budget, "now": now, "id": job_id})
            db.notify("jobs")

    def sweep(self, settled_before: float, *, limit: int | None) -> int:
        """Delete settled jobs (done, dead, cancelled and unleased) settled before the horizon,
        oldest first, with their checkpoints; at most ``limit`` (None: all)."""
        horizon = check_time("settled_before", settled_before)
        now = self.clock()
        params = {"before": horizon, "now": now, "limit": limit}
        db = self.db
        with db.transaction():
            # Both statements pick the same jobs: the checkpoints go first, then the jobs.
            db.run("jobs.sweep_checkpoints", params)
            return db.run("jobs.sweep", params)
