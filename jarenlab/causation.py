"""Who acts now: the event whose handlers run, and the job attempt whose handler runs.

The event ledger and the job queue stamp what each causes in the other through these context
variables, so neither imports the other:

- :data:`current_event`: the seq of the event whose handlers run in this context; a job they
  enqueue records it as its ``source_event``.
- :data:`current_job`: ``(job_id, attempt)`` of the job handler running here, for code it calls to
  read (logging, say). Setting it stamps nothing.
- :func:`acting`: the running attempt as the worker set it (:func:`act`): its job, attempt and
  :class:`Fence`. An event emitted here records them as ``caused_by_job`` and ``caused_by_attempt``,
  and commits only while the attempt still holds its lease (the fence is checked in the event's own
  transaction), so the provenance an event carries comes from the worker's fenced attempt, never
  from a variable a cell can set.

>>> current_event.get(), current_job.get(), acting()
(None, None, None)
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class Acting:
    """A job attempt acting in this context: its job id, attempt number and fence (None while its
    settlement applies what it staged: the settlement's own fenced write proved the lease)."""

    job: str
    attempt: int
    fence: Fence | None


_acting: contextvars.ContextVar[Acting | None] = contextvars.ContextVar("jarenlab_acting", default=None)


def acting() -> Acting | None:
    """The job attempt acting in this context (as its worker set it), else None."""
    return _acting.get()


def act(attempt: Acting | None) -> contextvars.Token[Acting | None]:
    """The worker's own call: ``attempt`` acts in this context until :func:`done` with the token."""
    return _acting.set(attempt)


def done(token: contextvars.Token[Acting | None]) -> None:
    """End what :func:`act` began."""
    _acting.reset(token)


__all__ = ["Acting", "Fence", "act", "acting", "current_event", "current_job", "done"]
