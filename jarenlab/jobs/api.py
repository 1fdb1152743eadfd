"""``store.jobs``: the durable job queue as a notebook user drives it.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"notes": {"schema": {"type": "object", "required": ["id"],
...     "properties": {"id": {"type": "string"}}}, "key": "/id"}}}
>>> with jl.open(model=model) as store:
...     jobs = store.jobs
...     @jobs.handler("square")
...     def square(payload, ctx):
...         return payload * payload
...     jobs.enqueue("square", 7, id="seven")
...     jobs.run_until_idle(progress=False)["done"], jobs.get("seven")["result"]
'seven'
(1, 49)
"""

from __future__ import annotations

import builtins
import os
import random
import socket
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from jarenlab.arguments import is_count, is_seconds
from jarenlab.errors import JobError
from jarenlab.jobs import views
from jarenlab.jobs.clock import Clock, Rand, is_virtual
from jarenlab.jobs.queue import DEFAULT_MAX_ATTEMPTS, Queue, dumps
from jarenlab.jobs.registry import Handlers
from jarenlab.jobs.worker import Executor, Wakeups, Worker

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import pandas as pd

    from jarenlab.jobs.dag import Dag
    from jarenlab.jobs.registry import HandlerFn
    from jarenlab.store import Store
    from jarenlab.widgets.jobs import JobsDashboard


class Jobs:
    """The job queue of one store (``store.jobs``).

    Args:
        store: the open store.
        clock: epoch seconds; default the database's clock (``store.backend.clock``: this machine's
            on SQLite, the server's on PostgreSQL, so that every worker machine judges leases in one
            time). Pass a :class:`~jarenlab.jobs.clock.VirtualClock` to test in virtual time.
        rand: floats in [0, 1) for backoff jitter. lease: default lease seconds (renewed while a
            handler runs; the recovery delay after a crash). backoff_base, backoff_cap: retry delays.
        max_attempts: default attempt budget. poll: seconds an idle worker waits before looking again
            (an enqueue in this process wakes it at once; one in another process too where the
            database sends wake-ups, PostgreSQL's NOTIFY; otherwise it is seen by polling).
        close_grace: seconds ``store.close()`` gives running workers.
    """

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock | None = None,
        rand: Rand | None = None,
        lease: float = 30.0,
        backoff_base: float = 1.0,
        backoff_cap: float = 60.0,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        poll: float = 0.5,
        close_grace: float = 5.0,
    ) -> None:
        self.store = store
        self.clock: Clock = clock if clock is not None else store.backend.clock
        self.rand = rand if rand is not None else random.Random().random
        self.lease = float(lease)
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_attempts = max_attempts
        self.poll = poll
        self.close_grace = close_grace
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.handlers = Handlers()
        self.queue = Queue(store, self.clock)
        self.executor = Executor(self)
        self._workers: list[Worker] = []
        self._wakeups: Wakeups | None = None
        self._cond = threading.Condition()
        self._generation = 0
        store.on_close(self._close)
        store.db.on_commit(after=self._after_commit)

    # -- handlers --------------------------------------------------------------------------------
    def handler(
        self,
        kind: str,
        *,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        lease: float | None = None,
    ) -> Callable[[HandlerFn], HandlerFn]:
        """Decorator registering ``fn(payload, ctx)`` for ``kind`` (see :meth:`Handlers.handler`)."""
        return self.handlers.handler(kind, concurrency=concurrency, max_attempts=max_attempts, lease=lease)

    def dag(
        self,
        kind: str,
        *,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        lease: float | None = None,
    ) -> Dag:
        """A DAG job kind (see :mod:`jarenlab.jobs.dag`)."""
        return self.handlers.dag(kind, concurrency=concurrency, max_attempts=max_attempts, lease=lease)

    def include(self, handlers: Handlers) -> None:
        """Run the kinds registered in ``handlers`` (a module's registry) here too."""
        self.handlers.include(handlers)

    def _budget(self, kind: str, given: int | None) -> int:
        if given is not None:
            return given
        spec = self.handlers.get(kind)
        return spec.max_attempts if spec is not None and spec.max_attempts else self.max_attempts

    def _kinds(self) -> dict[str, float]:
        return {spec.kind: spec.lease or self.lease for spec in self.handlers}

    # -- enqueue ---------------------------------------------------------------------------------
    def enqueue(
        self,
        kind: str,
        payload: Any = None,
        *,
        id: str | None = None,
        run_at: float | None = None,
        delay: float | None = None,
        max_attempts: int | None = None,
        partition_key: str | None = None,
        coalescing_key: str | None = None,
    ) -> str:
        """Add a job; returns its id. Inside ``store.transaction()`` it commits or rolls back with it.

        Args:
            kind: the handler kind (need not be registered in this process).
            payload: any JSON value. id: a caller id makes the call idempotent (an existing id
                changes nothing and answers the id). run_at: epoch seconds; delay: seconds more.
            max_attempts: attempt budget (default: the handler's, else the queue's).
            partition_key: jobs of a kind with the same key run one at a time, in enqueue order.
            coalescing_key: at most one not-yet-attempted job per kind and key; a repeat returns that
                job's id and moves it earlier if asked (a different payload is refused).

        Raises:
            JobError: JD2068 for a bad argument, a payload JSON cannot hold, or a coalescing mismatch.

        >>> jobs.enqueue("fetch-weather", {"day": "2013-01-01"}, id="w-2013-01-01")  # doctest: +SKIP
        'w-2013-01-01'
        """
        job_id = self.queue.enqueue(
            kind, payload, id=id, run_at=run_at, delay=delay, max_attempts=self._budget(kind, max_attempts),
            partition_key=partition_key, coalescing_key=coalescing_key,
        )  # fmt: skip
        if self._workers:
            self.wake()
        return job_id

    def enqueue_many(self, jobs: Iterable[dict[str, Any]]) -> list[str]:
        """Add many jobs in one transaction; each item is a dict of :meth:`enqueue`'s arguments
        (``kind``, ``payload`` and any options). Returns the ids in order."""
        now = self.clock()
        ids: list[str] = []
        rows: list[tuple[Any, ...]] = []
        slow: list[tuple[int, dict[str, Any]]] = []
        prefix, counter = self.queue.id_source()
        budgets: dict[str, int] = {}
        fast = {"kind", "payload", "id", "max_attempts", "partition_key"}
        if isinstance(jobs, dict | str | bytes) or not hasattr(jobs, "__iter__"):
            raise JobError("JD2068", f"enqueue_many takes a list of dicts, not {type(jobs).__name__}")
        for position, item in enumerate(jobs):
            if type(item) is not dict or "kind" not in item:
                raise JobError("JD2068", f"item {position} is not a dict with a 'kind'")
            unknown = sorted(set(item) - _ENQUEUE_MEMBERS)
            if unknown:
                raise JobError(
                    "JD2068", f"item {position} has unknown members {unknown} (enqueue's arguments only)"
                )
            if not fast.issuperset(item):
                slow.append((position, item))
                ids.append("")
                continue
            kind = item["kind"]
            job_id = item.get("id") or f"{prefix}{next(counter):010x}"
            budget = item.get("max_attempts")
            if budget is None:
                budget = budgets.get(kind)
                if budget is None:
                    budget = budgets[kind] = self._budget(kind, None)
            partition = item.get("partition_key")
            if (
                type(kind) is not str or not kind or type(job_id) is not str or type(budget) is not int
                or budget < 1 or (partition is not None and (type(partition) is not str or not partition))
            ):  # fmt: skip
                raise JobError("JD2068", f"item {position} has a bad kind, id, max_attempts or partition_key")
            try:
                text = dumps(item.get("payload"))
            except TypeError as exc:
                raise JobError("JD2068", f"item {position}'s payload is not JSON: {exc}") from exc
            rows.append((job_id, kind, text, now, now, budget, partition, None, now, now))
            ids.append(job_id)
        with self.store.transaction():
            if rows:
                self.queue.enqueue_many(rows)
            for position, item in slow:
                options = dict(item)
                ids[position] = self.enqueue(options.pop("kind"), options.pop("payload", None), **options)
        if self._workers:
            self.wake()
        return ids

    # -- running ---------------------------------------------------------------------------------
    def run_until_idle(
        self,
        progress: bool = True,
        *,
        concurrency: int = 1,
        timeout: float | None = None,
        wait_for_scheduled: bool = False,
    ) -> dict[str, int]:
        """Run due jobs of the registered kinds from this cell until nothing is left to do.

        Waits for retries and for jobs leased elsewhere; jobs scheduled for later wait only with
        ``wait_for_scheduled``. With ``concurrency > 1`` handlers run in worker threads. Interrupting
        the cell gives every running job's lease back (it is due again at once) and re-raises.

        Returns:
            how many attempts ended each way (``done``, ``failed``, ``dead``, ``deferred``, ...) and
            ``open``, the jobs of these kinds still not settled.
        """
        from jarenlab.jobs.drain import drain

        if not is_count(concurrency, least=1):
            raise JobError("JD2068", f"concurrency must be a positive integer, not {concurrency!r}")
        _check_seconds("timeout", timeout)
        return drain(self, progress=progress, concurrency=concurrency, timeout=timeout,
                     wait_for_scheduled=wait_for_scheduled)  # fmt: skip

    def start(self, concurrency: int = 4, *, poll: float | None = None) -> Worker:
        """Run jobs in background threads while you keep working; ``worker.stop(grace=5)`` ends it."""
        worker = Worker(
            self, concurrency=concurrency, poll=self.poll if poll is None else poll, owner=self.owner
        )
        with self._cond:
            self._workers.append(worker)
            if self._wakeups is None:
                self._wakeups = Wakeups(self).start()
        return worker.start()

    def wait_for_idle(self, timeout: float | None = None) -> bool:
        """Block until no job of a registered kind is pending, leased or awaiting retry and nothing
        runs here; True when idle, False when ``timeout`` (seconds) passed first."""
        _check_seconds("timeout", timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        kinds = self.handlers.kinds
        while True:
            with self._cond:
                seen = self._generation
            if not self.executor.running and self.queue.open_count(kinds) == 0:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            with self._cond:
                if self._generation == seen:
                    self._cond.wait(min(self.poll, left) if left is not None else self.poll)

    def renew_leases(self) -> int:
        """Renew the leases of jobs running in this process that are a third through (normally a thread does)."""
        return self.executor.renew_leases()

    def claim(self, *, kinds: Iterable[str] | None = None, owner: str | None = None) -> Any:
        """Lease the next due job by hand (a :class:`~jarenlab.jobs.queue.Lease`, or None): for tools and tests."""
        wanted = self._kinds() if kinds is None else {k: self._kinds().get(k, self.lease) for k in kinds}
        return self.queue.claim(wanted, owner or self.owner)

    # -- wake-ups (internal) ---------------------------------------------------------------------
    def wake(self) -> None:
        """Wake idle worker loops in this process (new work, or a settlement someone waits for)."""
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    notify_settled = wake

    @property
    def generation(self) -> int:
        """A counter bumped by every :meth:`wake` (loops compare it to avoid missing one)."""
        return self._generation

    def wait_for_work(self, timeout: float, stopping: threading.Event, seen: int) -> None:
        """Sleep up to ``timeout`` seconds unless a wake-up happened since ``seen`` or ``stopping`` is set."""
        with self._cond:
            if self._generation == seen and not stopping.is_set():
                self._cond.wait(timeout)

    def _after_commit(self, changes: Any) -> None:
        if self._workers:
            self.wake()

    def forget(self, worker: Worker) -> None:
        """Drop a stopped worker from this queue's list (the last one also ends the wake-ups)."""
        with self._cond:
            if worker in self._workers:
                self._workers.remove(worker)
            if not self._workers and self._wakeups is not None:
                self._wakeups.stop()
                self._wakeups = None

    def _close(self) -> None:
        wakeups = self._wakeups
        for worker in list(self._workers):
            worker.stop(grace=self.close_grace)
        if wakeups is not None:
            wakeups.join(1.0)

    # -- administration --------------------------------------------------------------------------
    def cancel(self, id: str) -> bool:
        """Cancel a job for good; a running handler sees ``ctx.cancelled`` (here at once, elsewhere at
        its next renewal) and its outcome is discarded. True if cancelled now, False if already settled.

        Raises:
            JobError: JD2070 when there is no such job.
        """
        cancelled = self.queue.cancel(id)
        if cancelled:
            self.executor.cancel_local(id)
        return cancelled

    def requeue(self, id: str, *, max_attempts: int | None = None, run_at: float | None = None) -> None:
        """Run a dead, cancelled, done or waiting job again (at ``run_at``, default now), with
        ``max_attempts`` more attempts (default: the kind's budget); its attempt count is kept.

        Raises:
            JobError: JD2070 for an unknown id, JD2068 while it runs.
        """
        row = self.get(id)
        if row is None:
            raise JobError("JD2070", f"no job {id!r}", key=id)
        self.queue.requeue(id, budget=self._budget(row["kind"], max_attempts), run_at=run_at)
        if self._workers:
            self.wake()

    def sweep(self, *, settled_before: float, limit: int | None = None) -> int:
        """Delete settled jobs (done, dead, cancelled) settled before ``settled_before`` (epoch seconds),
        with their checkpoints; returns how many were removed."""
        return self.queue.sweep(settled_before, limit=limit)

    # -- inspection ------------------------------------------------------------------------------
    def get(self, id: str) -> dict[str, Any] | None:
        """The job as a dict (payload and result decoded, no lease token), or None."""
        row = self.store.db.one("jobs.get", (id,))
        return None if row is None else views.job_record(row)

    def list(
        self, *, state: str | None = None, kind: str | None = None, after: str | None = None, limit: int = 100
    ) -> builtins.list[dict[str, Any]]:
        """Jobs in enqueue order, filtered by ``state`` and ``kind`` before the ``limit``; ``after``
        (a job id) continues a previous page."""
        if not is_count(limit):
            raise JobError("JD2068", f"limit must be an integer >= 0, not {limit!r}")
        where, params = self._filters(state, kind)
        if after is not None:
            if self.get(after) is None:
                raise JobError("JD2070", f"no job {after!r} to continue after")
            where.append("where_after")
            params.append(after)
        rows = self.store.db.all("jobs.list", (*params, limit), where=tuple(where))
        return [views.job_record(r) for r in rows]

    def _filters(self, state: str | None, kind: str | None) -> tuple[builtins.list[str], builtins.list[Any]]:
        """The ``where_*`` fragments of the ``jobs`` statements and their parameters."""
        where: builtins.list[str] = []
        params: builtins.list[Any] = []
        if state is not None:
            if state not in views.STATES:
                raise JobError("JD2068", f"unknown state {state!r} (states: {', '.join(views.STATES)})")
            where.append("where_state")
            params.append(state)
        if kind is not None:
            if type(kind) is not str:
                raise JobError("JD2068", f"kind must be a string, not {kind!r}")
            where.append("where_kind")
            params.append(kind)
        return where, params

    def counts(self, *, kind: str | None = None) -> dict[str, int]:
        """How many jobs are in each state (every state present, zeros included)."""
        where, params = self._filters(None, kind)
        return views.counts_by_state(self.store.db.all("jobs.counts", params, where=tuple(where)))

    def frame(
        self, *, state: str | None = None, kind: str | None = None, limit: int | None = None
    ) -> pd.DataFrame:
        """Jobs as a DataFrame indexed by id (times as UTC datetimes), e.g. ``jobs.frame(state="dead")``."""
        where, params = self._filters(state, kind)
        rows = self.store.db.all("jobs.list", (*params, limit), where=tuple(where))
        return views.records_frame([views.job_record(r) for r in rows])

    def recent_failures(self, limit: int = 5) -> builtins.list[dict[str, Any]]:
        """The latest failed or dead jobs (most recently updated first), with their last error."""
        rows = self.store.db.all("jobs.failures", (limit,))
        return [views.job_record(r) for r in rows]

    def checkpoints(self, id: str) -> dict[str, Any]:
        """The checkpoints saved for a job (kept for dead jobs, pruned when a job completes)."""
        return self.queue.checkpoints(id)

    def widget(self, *, refresh: float | None = 2.0) -> JobsDashboard:
        """A dashboard (counts by state, throughput, recent failures) refreshing every ``refresh`` s."""
        from jarenlab.widgets import require_anywidget

        require_anywidget()
        from jarenlab.widgets.jobs import JobsDashboard

        return JobsDashboard(self, refresh=refresh)

    @property
    def virtual_time(self) -> bool:
        """True when the queue's clock is virtual (waiting advances it)."""
        return is_virtual(self.clock)

    def __repr__(self) -> str:
        return f"<jarenlab jobs {self.handlers.kinds} workers={len(self._workers)}>"

    def _repr_html_(self) -> str:
        return views.counts_html(self.counts(), None)


__all__ = ["Jobs"]


_ENQUEUE_MEMBERS = frozenset(
    ("kind", "payload", "id", "run_at", "delay", "max_attempts", "partition_key", "coalescing_key")
)


def _check_seconds(name: str, value: Any) -> None:
    """JD2068 unless ``value`` is None or a finite number of seconds >= 0."""
    if value is not None and not is_seconds(value):
        raise JobError("JD2068", f"{name} must be a finite number of seconds >= 0, not {value!r}")
