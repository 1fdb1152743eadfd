"""Who acts now: the event whose handlers run, and the job attempt whose handler runs.

The event ledger and the job queue stamp what each causes in the other through these context
variables, so neither imports the other:

- :data:`current_event`: the seq of the event whose handlers run in this context; a job they
  enqueue records it as its ``source_event``.
- :data:`current_job`: ``(job_id, attempt)`` of the job handler running here; an event it emits
  records them as ``caused_by_job`` and ``caused_by_attempt``.
- :data:`current_attempt`: the running attempt's :class:`Fence`; an event emitted directly from a
  handler commits only while the attempt still holds its lease.

>>> current_event.get(), current_job.get(), current_attempt.get()
(None, None, None)
"""

from __future__ import annotations

import contextvars
from typing import Protocol


class Fence(Protocol):
    """A running job attempt, as a write beside it sees it."""

    def fence(self) -> None:
        """Inside the caller's write transaction: raise the coded refusal (JD2065/JD2066/JD2067)
        unless the attempt still holds its lease (and keep it from being claimed until commit)."""
        ...


#: The seq of the event whose handlers run in this context, else None.
current_event: contextvars.ContextVar[int | None] = contextvars.ContextVar("current_event", default=None)

#: ``(job_id, attempt)`` of the job whose handler runs in this context, else None.
current_job: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar(
    "current_job", default=None
)

#: The fence of the job attempt whose handler runs in this context, else None.
current_attempt: contextvars.ContextVar[Fence | None] = contextvars.ContextVar(
    "current_attempt", default=None
)

__all__ = ["Fence", "current_attempt", "current_event", "current_job"]
