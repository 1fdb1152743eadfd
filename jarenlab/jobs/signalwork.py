"""Signal work: what the settlement of a job a signal's handler enqueued adds to its transaction.

A signal (``ctx.signal``, :mod:`jarenlab.events.signals`) lives while jobs its handlers enqueued
are unsettled. Those jobs' ids hold :data:`MARK`; when one settles (done, dead or cancelled) the
queue calls :func:`work_settled`, which counts the signal down and deletes it with its last job,
in the settlement's transaction. This module needs only the queue's database.

>>> work_id("s1f0", 0), maybe_work("s1f0^0"), maybe_work("a1")
('s1f0^0', True, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarenlab.database import Database

#: Separates a signal's id from a job's position among the jobs its handlers enqueued.
MARK = "^"


def work_id(signal: str, position: int) -> str:
    """The id of the job at ``position`` among those a signal's handlers enqueued."""
    return f"{signal}{MARK}{position}"


def maybe_work(job_id: str) -> bool:
    """True when a job may be a signal's work (only such ids are looked up when they settle)."""
    return MARK in job_id


def work_settled(db: Database, job_id: str) -> None:
    """Inside the job's settlement transaction: the job is no longer its signal's pending work; the
    settlement of the signal's last job deletes the signal."""
    signal = db.value("signals.settle_work", {"job_id": job_id})
    if signal is None:  # not signal work, or settled before (requeued since)
        return
    if db.value("signals.count_settled", {"id": signal}) == 0:
        db.run("signals.delete", {"id": signal})


__all__ = ["MARK", "maybe_work", "work_id", "work_settled"]
