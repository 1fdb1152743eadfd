"""What a running handler sees: ``ctx`` (the job, its attempt, cancellation, checkpoints, staged
actions and the disposition it chooses).

A handler's actions on the store are *staged*: ``ctx.emit(...)`` and ``ctx.enqueue(...)`` are
checked at once and committed in the same transaction as the attempt's settlement, which is
fenced by the attempt's lease. An attempt that lost its lease commits none of them; one that
raises commits none of them either (its retry stages them again). A handler chooses what happens
next with ``ctx.retry(...)``, ``ctx.dead_letter(...)`` or ``ctx.defer_until(...)`` (at most one),
else its return value completes the job.

While a handler runs, :data:`current_job` holds ``(job_id, attempt)`` so code it calls (the event
ledger, logging) can tell which job it runs for.

>>> current_job.get()
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jarenlab.arguments import is_number, is_seconds
from jarenlab.causation import current_job
from jarenlab.errors import JobError

if TYPE_CHECKING:
    from jarenlab.jobs.queue import Lease, Queue
    from jarenlab.store import Store

__all__ = ["Context", "Staged", "current_job"]

#: The options ``ctx.enqueue`` takes (those of ``jobs.enqueue``).
_ENQUEUE_OPTIONS = frozenset(
    ("id", "run_at", "delay", "max_attempts", "partition_key", "coalescing_key", "timeout", "priority")
)


@dataclass(frozen=True, slots=True)
class Staged:
    """One action a handler staged: an event to emit or a job to enqueue at settlement."""

    action: str  # "emit" or "enqueue"
    name: str  # the event type or the job kind
    payload: Any
    options: dict[str, Any] = field(default_factory=dict)

    def apply(self, store: Store) -> None:
        """Emit or enqueue it now (inside the settlement's transaction)."""
        if self.action == "emit":
            store.events.emit(self.name, self.payload, **self.options)
        else:
            store.jobs.enqueue(self.name, self.payload, **self.options)


class Context:
    """The second argument of every handler.

    Attributes:
        job: the job as a dict (id, kind, payload, attempt, max_attempts, generation, run_at, ...).
        attempt: this attempt's number (1 on the first claim; counted at claim, so a crash counts).
        cancelled: a :class:`threading.Event` set when the job is cancelled, its lease is lost, it
            ran past its timeout, or the worker is stopping; a long handler should check it and
            return or raise.
        store: the store the job lives in.
        timeout: seconds the handler may run before the attempt fails (None: no limit).

    Example::

        @jobs.handler("fetch")
        def fetch(payload, ctx):
            if "page" not in ctx.checkpoints:
                ctx.checkpoint("page", download(payload["url"]))
            ctx.emit("page.fetched", {"url": payload["url"]})   # commits with the settlement
            return len(ctx.checkpoints["page"])
    """

    __slots__ = (
        "_checkpoints", "_disposition", "_ended", "_queue", "_staged", "cancelled", "lease", "store",
        "timeout",
    )  # fmt: skip

    def __init__(self, queue: Queue, lease: Lease, *, timeout: float | None = None) -> None:
        self._queue = queue
        self.lease = lease
        self.store: Store = queue.store
        self.timeout = timeout
        self.cancelled = threading.Event()
        self._checkpoints: dict[str, Any] | None = None
        self._disposition: tuple[Any, ...] | None = None
        self._staged: list[Staged] = []
        self._ended = False

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

        self._check_open()
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

    # -- staged actions --------------------------------------------------------------------------
    def emit(self, type: str, payload: Any, *, dedupe_key: str | None = None) -> None:
        """Stage an event: it is appended (its handlers run) when the attempt settles, in the same
        transaction, and only if the attempt still holds its lease. Stamped with this job and attempt.

        Raises:
            EventError: JD2080 at once for an undeclared type or an invalid payload.
            JobError: JD2065 when the attempt has already ended.
        """
        self._check_open()
        checked = self.store.events.check(type, payload, dedupe_key=dedupe_key)
        options = {} if dedupe_key is None else {"dedupe_key": dedupe_key}
        self._staged.append(Staged("emit", type, checked, options))

    def enqueue(self, kind: str, payload: Any = None, **options: Any) -> str:
        """Stage a job (``jobs.enqueue``'s arguments); it is added when the attempt settles, in the
        same transaction, and only if the attempt still holds its lease. Returns its id (minted now
        unless ``id=`` is given).

        Raises:
            JobError: JD2125 at once for a bad argument; JD2065 when the attempt has already ended.
        """
        self._check_open()
        unknown = sorted(set(options) - _ENQUEUE_OPTIONS)
        if unknown:
            raise JobError(
                "JD2125", f"ctx.enqueue has no option {unknown[0]!r} (jobs.enqueue's options only)"
            )
        if options.get("id") is None:
            options["id"] = self._queue.new_id()
        self._queue.check(kind, payload, **options)
        self._staged.append(Staged("enqueue", kind, payload, options))
        return str(options["id"])

    def signal(self, type: str, payload: Any = None) -> Any:
        """Send a signal now (not staged): it commits at once in its own transaction, only while
        this attempt holds its lease, and its handlers (``store.events.on_signal``) may enqueue
        work in it. Returns the :class:`~jarenlab.events.Signal`, or None when the lease was lost
        (nothing is written). See ``docs/events.md``, "Signals".

        Raises:
            EventError: JD2080 for an undeclared type or an invalid payload.
            JobError: JD2065 when the attempt has already ended.
        """
        self._check_open()
        return self.store.events.signal(type, payload)

    @property
    def staged(self) -> tuple[Staged, ...]:
        """The actions staged so far, in order."""
        return tuple(self._staged)

    def discard_staged(self) -> None:
        """Drop what was staged (the attempt failed: its retry stages it again)."""
        self._staged.clear()

    # -- dispositions ----------------------------------------------------------------------------
    def retry(
        self, *, at: float | None = None, after: float | None = None, reason: str | None = None
    ) -> None:
        """When the handler returns, settle this attempt as failed and due again ``at`` (epoch
        seconds) or ``after`` seconds (neither: the usual backoff), recording ``reason`` as its last
        error. Staged actions commit with it. An attempt that was the job's last makes it dead.
        """
        if at is not None and after is not None:
            raise JobError("JD2125", "retry takes at= or after=, not both")
        if at is not None and not is_number(at):
            raise JobError("JD2125", f"retry(at=...) takes finite epoch seconds, not {at!r}")
        if after is not None and not is_seconds(after):
            raise JobError("JD2125", f"retry(after=...) takes a finite number of seconds >= 0, not {after!r}")
        if reason is not None and type(reason) is not str:
            raise JobError("JD2125", f"a retry reason is a string, not {reason!r}")
        when = float(at) if at is not None else None if after is None else self._queue.clock() + float(after)
        self._choose(("retry", when, reason or "the handler asked to retry"))

    def dead_letter(self, reason: str) -> None:
        """When the handler returns, make the job dead now with ``reason`` as its last error (no
        more attempts). Staged actions commit with it."""
        if type(reason) is not str or not reason:
            raise JobError("JD2125", f"dead_letter takes a non-empty reason, not {reason!r}")
        self._choose(("dead", reason))

    def defer_until(self, at: float) -> None:
        """When the handler returns, put the job back as a fresh generation due at ``at`` (epoch seconds).

        Its attempts start again from zero; if a coalesced twin is pending, the twin runs instead, at
        the earlier of the two times. Staged actions commit with it. A handler that raises after
        deferring fails as usual.
        """
        if not is_number(at):
            raise JobError("JD2125", f"defer_until takes finite epoch seconds, not {at!r}")
        self._choose(("defer", float(at)))

    def _choose(self, disposition: tuple[Any, ...]) -> None:
        self._check_open()
        if self._disposition is not None:
            raise JobError(
                "JD2125",
                f"this attempt already chose {self._disposition[0]!r}; a handler chooses at most once",
            )
        self._disposition = disposition

    @property
    def disposition(self) -> tuple[Any, ...] | None:
        """What the handler chose: ``("retry", at or None, reason)``, ``("dead", reason)``,
        ``("defer", at)``, or None (its return value completes the job)."""
        return self._disposition

    @property
    def deferred(self) -> float | None:
        """The time passed to :meth:`defer_until`, if any."""
        d = self._disposition
        return d[1] if d is not None and d[0] == "defer" else None

    # -- the attempt's end -----------------------------------------------------------------------
    def fence(self) -> None:
        """Inside a write transaction: refuse (JD2065/JD2066/JD2067) unless this attempt still
        holds its lease. ``store.events.emit`` called from the handler runs it."""
        self._check_open()
        self._queue.hold(self.lease)

    def end(self) -> None:
        """Mark the attempt over (settled, or abandoned after its timeout): what it stages or
        emits from now on is refused with JD2065."""
        self._ended = True

    @property
    def ended(self) -> bool:
        """True once the attempt was settled or abandoned."""
        return self._ended

    def _check_open(self) -> None:
        if self._ended:
            raise JobError(
                "JD2065",
                f"job {self.lease.id!r} attempt {self.lease.attempt} has ended (settled, or abandoned "
                "after its timeout); nothing more is written for it",
                key=self.lease.id,
            )

    def __repr__(self) -> str:
        return f"<job context {self.lease.kind}:{self.lease.id} attempt {self.lease.attempt}>"
