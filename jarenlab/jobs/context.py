"""What a running handler sees: ``ctx`` (the job, its attempt, cancellation, checkpoints, deferral).

While a handler runs, :data:`current_job` holds ``(job_id, attempt)`` so code it calls (the event
ledger, logging) can tell which job it runs for.

>>> current_job.get()
"""

from __future__ import annotations

import contextvars
import threading
from typing import TYPE_CHECKING, Any

from jarenlab.arguments import is_number
from jarenlab.errors import JobError

if TYPE_CHECKING:
    from jarenlab.jobs.queue import Lease, Queue
    from jarenlab.store import Store

#: ``(job_id, attempt)`` of the job whose handler runs in this context, else None.
current_job: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar(
    "current_job", default=None
)


class Context:
    """The second argument of every handler.

    Attributes:
        job: the job as a dict (id, kind, payload, attempt, max_attempts, generation, run_at, ...).
        attempt: this attempt's number (1 on the first claim; counted at claim, so a crash counts).
        cancelled: a :class:`threading.Event` set when the job is cancelled, its lease is lost,
            or the worker is stopping; a long handler should check it and return or raise.
        store: the store the job lives in.

    Example::

        @jobs.handler("fetch")
        def fetch(payload, ctx):
            if "page" not in ctx.checkpoints:
                ctx.checkpoint("page", download(payload["url"]))
            return len(ctx.checkpoints["page"])
    """

    __slots__ = ("_checkpoints", "_deferred", "_queue", "cancelled", "lease", "store")

    def __init__(self, queue: Queue, lease: Lease) -> None:
        self._queue = queue
        self.lease = lease
        self.store: Store = queue.store
        self.cancelled = threading.Event()
        self._checkpoints: dict[str, Any] | None = None
        self._deferred: float | None = None

    @property
    def job(self) -> dict[str, Any]:
        """The job as a dict: id, kind, payload, attempt, max_attempts, generation, run_at, last_error, ..."""
        return self.lease.job

    @property
    def attempt(self) -> int:
        """This attempt's number (1 on the first claim; a crashed attempt counts)."""
        return self.lease.attempt

    @property
    def checkpoints(self) -> dict[str, Any]:
        """Values saved by this or an earlier attempt of the job (a copy), by name."""
        if self._checkpoints is None:
            self._checkpoints = self._queue.checkpoints(self.lease.id) if self.lease.checkpointed else {}
        return dict(self._checkpoints)

    def checkpoint(self, name: str, value: Any) -> None:
        """Save ``value`` under ``name`` now, in its own transaction, fenced by this attempt's lease.

        Raises:
            JobError: JD2067/JD2066/JD2065 when the lease is no longer this attempt's (nothing is saved);
                JD2125 when the value is not JSON.
        """
        from jarenlab.jobs.queue import dumps

        if type(name) is not str or not name:
            raise JobError("JD2125", f"a checkpoint name must be a non-empty string, not {name!r}")
        try:
            text = dumps(value)
        except TypeError as exc:
            raise JobError("JD2125", f"checkpoint {name!r} is not JSON: {exc}") from exc
        self._queue.checkpoint(self.lease, name, text)
        if self._checkpoints is None:
            self._checkpoints = self._queue.checkpoints(self.lease.id)
        else:
            self._checkpoints[name] = value

    def defer_until(self, at: float) -> None:
        """When the handler returns, put the job back as a fresh generation due at ``at`` (epoch seconds).

        Its attempts start again from zero; if a coalesced twin is pending, the twin runs instead, at
        the earlier of the two times. A handler that raises after deferring fails as usual.
        """
        if not is_number(at):
            raise JobError("JD2125", f"defer_until takes finite epoch seconds, not {at!r}")
        self._deferred = float(at)

    @property
    def deferred(self) -> float | None:
        """The time passed to :meth:`defer_until`, if any."""
        return self._deferred

    def __repr__(self) -> str:
        return f"<job context {self.lease.kind}:{self.lease.id} attempt {self.lease.attempt}>"
