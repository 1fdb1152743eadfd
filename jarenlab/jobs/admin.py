"""Reads and administration over the job table: what is due, cancel, requeue, sweep, checkpoints.

:class:`~jarenlab.jobs.queue.Queue` inherits these; they need only the store and the clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab import _sqlite
from jarenlab.arguments import is_number
from jarenlab.errors import JobError

if TYPE_CHECKING:
    from jarenlab.jobs.clock import Clock
    from jarenlab.store import Store

#: The next claimable job: due, not cancelled, a kind the worker runs, and the head of its partition
#: (no earlier job of the partition is waiting, running, retrying, or cancelled but still unwinding).
PICK = """SELECT j.seq FROM _jl_jobs j
  WHERE j.due_at <= ? AND j.state != 'cancelled' AND j.kind IN ({kinds})
    AND (j.partition_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM _jl_jobs p WHERE p.kind = j.kind AND p.partition_key = j.partition_key
        AND p.seq < j.seq AND (p.due_at IS NOT NULL OR (p.state = 'cancelled' AND p.lease_until > ?))))
  ORDER BY j.due_at, j.seq LIMIT 1"""


def check_time(name: str, value: Any) -> float:
    """``value`` as float epoch seconds; JD2068 unless it is a finite number.

    >>> check_time("run_at", 5)
    5.0
    """
    if not is_number(value):
        raise JobError("JD2068", f"{name} must be a finite number of epoch seconds, not {value!r}")
    return float(value)


class Administration:
    """Reads and administrative transitions (mixed into the queue)."""

    store: Store
    clock: Clock

    def claimable(self, kinds: Iterable[str]) -> bool:
        """True when a claim for ``kinds`` would lease a job now."""
        names = tuple(kinds)
        if not names:
            return False
        now = self.clock()
        sql = PICK.format(kinds=", ".join("?" for _ in names))
        with _sqlite.translating():
            return self.store._conn().execute(sql, (now, *names, now)).fetchone() is not None

    def next_wait(self, kinds: Iterable[str], *, scheduled: bool) -> float | None:
        """When work of ``kinds`` that is under way (retrying, leased) next falls due; with
        ``scheduled``, also pending work scheduled later. None when there is none."""
        names = tuple(kinds)
        if not names:
            return None
        marks = ", ".join("?" for _ in names)
        with _sqlite.translating():
            row = (
                self.store._conn()
                .execute(
                    f"SELECT min(due_at) FROM _jl_jobs WHERE due_at IS NOT NULL AND kind IN ({marks})"
                    " AND (state IN ('failed', 'leased') OR ?)",
                    (*names, scheduled),
                )
                .fetchone()
            )
        return None if row[0] is None else float(row[0])

    def open_count(self, kinds: Iterable[str]) -> int:
        """How many jobs of ``kinds`` are not settled yet (pending, leased, failed)."""
        names = tuple(kinds)
        if not names:
            return 0
        marks = ", ".join("?" for _ in names)
        with _sqlite.translating():
            return int(
                self.store._conn()
                .execute(
                    f"SELECT count(*) FROM _jl_jobs WHERE due_at IS NOT NULL AND kind IN ({marks})", names
                )
                .fetchone()[0]
            )

    def checkpoints(self, job_id: str) -> dict[str, Any]:
        """The checkpoints saved for a job, by name, decoded."""
        with _sqlite.translating():
            rows = self.store._conn().execute(
                "SELECT node, value FROM _jl_job_checkpoints WHERE job_id = ? ORDER BY node", (job_id,)
            )
            return {node: orjson.loads(value) for node, value in rows}

    # -- administration --------------------------------------------------------------------------
    def cancel(self, job_id: str) -> bool:
        """Cancel a job (terminal). True when it was cancelled now, False when already settled.

        A leased job keeps its lease until its handler unwinds, so its partition stays blocked.
        """
        now = self.clock()
        with self.store.transaction():
            conn = self.store._conn()
            with _sqlite.translating():
                row = conn.execute("SELECT state FROM _jl_jobs WHERE id = ?", (job_id,)).fetchone()
                if row is None:
                    raise JobError("JD2070", f"no job {job_id!r}", key=job_id)
                if row[0] in ("done", "dead", "cancelled"):
                    return False
                keep = row[0] == "leased"
                conn.execute(
                    "UPDATE _jl_jobs SET state = 'cancelled', due_at = NULL, settled_at = ?, updated_at = ?,"
                    " last_error = coalesce(last_error, 'cancelled'),"
                    " lease_until = CASE WHEN ? THEN lease_until END,"
                    " lease_token = CASE WHEN ? THEN lease_token END WHERE id = ?",
                    (now, now, keep, keep, job_id),
                )
        return True

    def requeue(self, job_id: str, *, budget: int, run_at: float | None) -> None:
        """Make a settled or waiting job due again with ``budget`` more attempts (history kept)."""
        now = self.clock()
        at = now if run_at is None else check_time("run_at", run_at)
        with self.store.transaction():
            conn = self.store._conn()
            with _sqlite.translating():
                row = conn.execute(
                    "SELECT state, lease_until FROM _jl_jobs WHERE id = ?", (job_id,)
                ).fetchone()
                if row is None:
                    raise JobError("JD2070", f"no job {job_id!r}", key=job_id)
                if row[0] == "leased" or (row[0] == "cancelled" and row[1] is not None and row[1] > now):
                    raise JobError("JD2068", f"job {job_id!r} is running; cancel it or wait", key=job_id)
                conn.execute(
                    "UPDATE _jl_jobs SET state = CASE WHEN attempts > 0 THEN 'failed' ELSE 'pending' END,"
                    " run_at = ?, due_at = ?, max_attempts = attempts + ?, settled_at = NULL, result = NULL,"
                    " lease_until = NULL, lease_token = NULL, updated_at = ? WHERE id = ?",
                    (at, at, budget, now, job_id),
                )

    def sweep(self, settled_before: float, *, limit: int | None) -> int:
        """Delete settled jobs (done, dead, cancelled and unleased) settled before the horizon."""
        horizon = check_time("settled_before", settled_before)
        now = self.clock()
        select = (
            "SELECT id FROM _jl_jobs WHERE settled_at < ? AND state IN ('done','dead','cancelled')"
            " AND (lease_until IS NULL OR lease_until <= ?) ORDER BY settled_at"
            + (" LIMIT ?" if limit is not None else "")
        )
        params: tuple[Any, ...] = (horizon, now) if limit is None else (horizon, now, limit)
        with self.store.transaction():
            conn = self.store._conn()
            with _sqlite.translating():
                conn.execute("CREATE TEMP TABLE IF NOT EXISTS _jl_sweep(id TEXT PRIMARY KEY)")
                conn.execute("DELETE FROM _jl_sweep")
                conn.execute(f"INSERT INTO _jl_sweep {select}", params)
                conn.execute("DELETE FROM _jl_job_checkpoints WHERE job_id IN (SELECT id FROM _jl_sweep)")
                removed = conn.execute("DELETE FROM _jl_jobs WHERE id IN (SELECT id FROM _jl_sweep)").rowcount
                conn.execute("DELETE FROM _jl_sweep")
        return int(removed)
