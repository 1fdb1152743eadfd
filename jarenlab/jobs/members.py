"""Batch membership: what a fan-out job's settlement adds to its transaction.

The queue calls :func:`member_settled` when a job whose id may name a batch (it holds :data:`MARK`)
settles: done, dead or cancelled. It records the member's outcome once and counts it on the
batch's row; the settlement that completes the batch enqueues the combiner (:func:`combine`) in
the same transaction. The batches themselves (``jobs.fan_out``, ``Batch``) are
:mod:`jarenlab.jobs.fanout`; this module needs only the queue's database, clock and enqueue.

>>> member_id("squares", 2), combiner_id("squares"), maybe_member("squares~2"), maybe_member("a1")
('squares~2', 'squares~then', True, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import orjson

if TYPE_CHECKING:
    from collections.abc import Callable

    from jarenlab.database import Database


class Settling(Protocol):
    """What a settlement's hook uses of the queue: its database, its clock, and its enqueue."""

    db: Database
    clock: Callable[[], float]

    def enqueue(
        self,
        kind: str,
        payload: Any,
        *,
        id: str | None,
        run_at: float | None,
        delay: float | None,
        max_attempts: int,
        partition_key: str | None,
        coalescing_key: str | None,
        timeout: float | None = None,
        if_exists: str = "error",
    ) -> str: ...


#: Separates a batch id from a member's position (or ``then``) in its jobs' ids.
MARK = "~"


def member_id(batch: str, position: int) -> str:
    """The id of a batch's job at ``position``.

    >>> member_id("squares", 2), combiner_id("squares")
    ('squares~2', 'squares~then')
    """
    return f"{batch}{MARK}{position}"


def combiner_id(batch: str) -> str:
    """The id of a batch's combining job."""
    return f"{batch}{MARK}then"


def maybe_member(job_id: str) -> bool:
    """True when a job may belong to a batch (only such ids are looked up when they settle)."""
    return MARK in job_id


def member_settled(queue: Settling, job_id: str, outcome: str, result: str | None, error: str | None) -> None:
    """Inside the job's settlement transaction: record a batch member's outcome (once) and, when it
    is the batch's last, enqueue the combiner with every result in order."""
    db = queue.db
    batch = db.value(
        "batches.settle_member", {"job_id": job_id, "outcome": outcome, "result": result, "error": error}
    )
    if batch is None:  # not a member, or settled before (requeued since)
        return
    row = db.one("batches.count_settled", {"id": batch, "failed": int(outcome != "done")})
    assert row is not None  # the member's batch row is written with it
    settled, size, then_kind, then_payload, then_attempts = row
    if settled == size:
        combine(queue, batch, then_kind, then_payload, then_attempts)


def combine(queue: Settling, batch: str, kind: str, payload_text: str | None, attempts: int) -> None:
    """Enqueue the batch's combiner with every member's result in order (inside the transaction
    of the batch's last settlement, or of an empty batch's fan-out) and mark the batch complete."""
    db = queue.db
    results: list[Any] = []
    failures: list[dict[str, Any]] = []
    for position, job, outcome, result, error in db.all("batches.outcomes", {"id": batch}):
        results.append(orjson.loads(result) if outcome == "done" and result is not None else None)
        if outcome != "done":
            failures.append({"position": position, "job": job, "outcome": outcome, "error": error})
    payload = {
        "batch": batch, "results": results, "failures": failures,
        "payload": None if payload_text is None else orjson.loads(payload_text),
    }  # fmt: skip
    job = queue.enqueue(
        kind, payload, id=combiner_id(batch), run_at=None, delay=None, max_attempts=attempts,
        partition_key=None, coalescing_key=None, if_exists="keep",
    )  # fmt: skip
    db.run("batches.complete", {"id": batch, "combiner": job, "now": queue.clock()})


__all__ = ["MARK", "Settling", "combine", "combiner_id", "maybe_member", "member_id", "member_settled"]
