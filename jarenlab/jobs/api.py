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
import socket
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from jarenlab.arguments import is_count, is_seconds
from jarenlab.backoff import Rand
from jarenlab.causation import current_event
from jarenlab.errors import JarenlabError, JobError
from jarenlab.jobs import views
from jarenlab.jobs.clock import Clock, is_virtual
from jarenlab.jobs.fanout import FanOut
from jarenlab.jobs.periodic import Periodic
from jarenlab.jobs.queue import DEFAULT_MAX_ATTEMPTS, Queue, check_priority, dumps
from jarenlab.jobs.registry import Handlers
from jarenlab.jobs.worker import Executor, Idle, Wakeups, Worker

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    import pandas as pd

    from jarenlab.jobs.dag import Dag
    from jarenlab.jobs.registry import HandlerFn
    from jarenlab.store import Store
    from jarenlab.widgets.jobs import JobsDashboard


class Jobs(Periodic, FanOut):
    """The job queue of one store (``store.jobs``).

    Args:
        store: the open store.
        clock: epoch seconds; default the store's (``store.clock``: ``jl.open(..., clock=...)``,
            else the database's clock, this machine's on SQLite and the server's on PostgreSQL, so
            that every worker machine judges leases in one time). ``store.jobs`` runs on the
            store's: open the store with ``clock=VirtualClock()`` to test it in virtual time.
        rand: floats in [0, 1) for backoff jitter (default ``store.random``: ``jl.open(...,
            random=seed)`` makes it repeatable). lease: default lease seconds (renewed while a
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
        self.clock: Clock = clock if clock is not None else store.clock
        self.rand = rand if rand is not None else store.random
        self.lease = float(lease)
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_attempts = max_attempts
        self.poll = poll
        self.close_grace = close_grace
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.handlers = Handlers()
        #: Kinds workers elsewhere run (:meth:`declare`): enqueue takes them without a handler here.
        self._declared: set[str] = set()
        #: Refuse every kind not registered or declared here (default: only near misses of known kinds).
        self.strict_kinds = False
        self.queue = Queue(store, self.clock, self.handlers.limit)
        self.executor = Executor(self)
        self._workers: list[Worker] = []
        self._wakeups: Wakeups | None = None
        self._failures: list[JobError] = []
        self._cond = threading.Condition()
        self._generation = 0
        store.on_close(self._close)
        store.db.on_commit(after=self._after_commit)

    def configure(
        self,
        *,
        lease: float | None = None,
        backoff_base: float | None = None,
        backoff_cap: float | None = None,
        max_attempts: int | None = None,
        poll: float | None = None,
        close_grace: float | None = None,
    ) -> Jobs:
        """Change the queue's defaults (the options :class:`Jobs` takes); returns the queue.

        The clock and the jitter source are the store's (``jl.open(..., clock=..., random=...)``).

        >>> store.jobs.configure(lease=10, poll=0.01)  # doctest: +SKIP
        """
        for name, value in (("lease", lease), ("backoff_base", backoff_base), ("backoff_cap", backoff_cap),
                            ("poll", poll), ("close_grace", close_grace)):  # fmt: skip
            if value is not None and not is_seconds(value):
                raise JobError("JD2125", f"{name} must be a finite number of seconds >= 0, not {value!r}")
        if max_attempts is not None and not is_count(max_attempts, least=1):
            raise JobError("JD2125", f"max_attempts must be a positive integer, not {max_attempts!r}")
        if lease is not None:
            if lease <= 0:
                raise JobError("JD2125", f"lease must be a positive number of seconds, not {lease!r}")
            self.lease = float(lease)
        if backoff_base is not None:
            self.backoff_base = backoff_base
        if backoff_cap is not None:
            self.backoff_cap = backoff_cap
        if max_attempts is not None:
            self.max_attempts = max_attempts
        if poll is not None:
            self.poll = poll
        if close_grace is not None:
            self.close_grace = close_grace
        return self

    # -- handlers --------------------------------------------------------------------------------
    def handler(
        self,
        kind: str,
        *,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        lease: float | None = None,
        timeout: float | None = None,
        rate: str | None = None,
        max_running: int | None = None,
    ) -> Callable[[HandlerFn], HandlerFn]:
        """Decorator registering ``fn(payload, ctx)`` for ``kind`` (see :meth:`Handlers.handler`);
        ``rate="10/s"`` and ``max_running=3`` limit the kind across every worker and process."""
        return self.handlers.handler(
            kind, concurrency=concurrency, max_attempts=max_attempts, lease=lease, timeout=timeout,
            rate=rate, max_running=max_running,
        )  # fmt: skip

    def dag(
        self,
        kind: str,
        *,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        lease: float | None = None,
        rate: str | None = None,
        max_running: int | None = None,
    ) -> Dag:
        """A DAG job kind (see :mod:`jarenlab.jobs.dag`)."""
        return self.handlers.dag(
            kind, concurrency=concurrency, max_attempts=max_attempts, lease=lease, rate=rate,
            max_running=max_running,
        )  # fmt: skip

    def include(self, handlers: Handlers) -> None:
        """Run the kinds registered in ``handlers`` (a module's registry) here too."""
        self.handlers.include(handlers)

    def declare(self, *kinds: str) -> None:
        """Declare kinds that workers elsewhere run (``python -m jarenlab worker``), so enqueue takes them."""
        for kind in kinds:
            if type(kind) is not str or not kind:
                raise JobError("JD2125", f"a job kind must be a non-empty string, not {kind!r}")
        self._declared.update(kinds)

    def _known(self, kind: Any) -> None:
        """Refuse a kind nothing here runs or declares (JD2125) when it is a near miss of a known one,
        or any such kind with ``strict_kinds``; a kind far from every known one may be run by workers
        elsewhere."""
        if type(kind) is not str or kind in self._declared or self.handlers.get(kind) is not None:
            return
        import difflib

        known = sorted({*self._declared, *(spec.kind for spec in self.handlers)})
        near = difflib.get_close_matches(kind, known, n=1, cutoff=0.75)
        if not near and not self.strict_kinds:
            return
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise JobError(
            "JD2125",
            f"unknown job kind {kind!r}: {hint}register a handler (@jobs.handler), declare kinds run "
            "elsewhere (jobs.declare(...)), or pass allow_unknown=True",
        )

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
        timeout: float | None = None,
        priority: int = 0,
        if_exists: str = "error",
        allow_unknown: bool = False,
    ) -> str:
        """Add a job; returns its id. Inside ``store.transaction()`` it commits or rolls back with it.

        Enqueued by an event's handler, the job records that event (``source_event``, its seq):
        ``jobs.list(source_event=ev)`` finds it.

        Args:
            kind: the handler kind. A kind neither registered here (``@jobs.handler``) nor declared
                for workers elsewhere (``jobs.declare(kind)``) is JD2125 when it is a near miss of a
                known kind (a misspelling would wait forever), and always with
                ``jobs.strict_kinds = True``; ``allow_unknown=True`` takes it anyway.
            payload: any JSON value. id: a caller id makes the call idempotent (the same kind and
                payload under an existing id changes nothing and answers the id; another payload is
                JD2125, or kept as stored with ``if_exists="keep"``). run_at: epoch seconds; delay: seconds more.
            max_attempts: attempt budget (default: the handler's, else the queue's).
            partition_key: jobs of a kind with the same key run one at a time, in enqueue order.
            coalescing_key: at most one not-yet-attempted job per kind and key; a repeat returns that
                job's id and moves it earlier if asked (a different payload is refused).
            timeout: seconds its handler may run (default: the kind's); past it the attempt fails
                and the handler's thread is abandoned (see :meth:`abandoned`).
            priority: an integer, higher runs first (default 0): a claim takes the highest-priority
                due job of the kinds it runs, then the earliest due, then the first enqueued.
                Within a partition jobs still run in enqueue order.

        Raises:
            JobError: JD2125 for a bad argument, a payload JSON cannot hold, or a coalescing mismatch;
            JD2170 for a priority that is not an integer in the database's 32-bit range.

        >>> jobs.enqueue("fetch-weather", {"day": "2013-01-01"}, id="w-2013-01-01")  # doctest: +SKIP
        'w-2013-01-01'
        """
        if if_exists not in ("error", "keep"):
            raise JobError("JD2125", f"if_exists is 'error' or 'keep', not {if_exists!r}")
        if not allow_unknown:
            self._known(kind)
        job_id = self.queue.enqueue(
            kind, payload, id=id, run_at=run_at, delay=delay, max_attempts=self._budget(kind, max_attempts),
            partition_key=partition_key, coalescing_key=coalescing_key, timeout=timeout, if_exists=if_exists,
            priority=priority,
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
        source = current_event.get()
        fast = {"kind", "payload", "id", "max_attempts", "partition_key", "priority", "allow_unknown"}
        if isinstance(jobs, dict | str | bytes) or not hasattr(jobs, "__iter__"):
            raise JobError("JD2125", f"enqueue_many takes a list of dicts, not {type(jobs).__name__}")
        for position, item in enumerate(jobs):
            if type(item) is not dict or "kind" not in item:
                raise JobError("JD2125", f"item {position} is not a dict with a 'kind'")
            unknown = sorted(set(item) - _ENQUEUE_MEMBERS)
            if unknown:
                raise JobError(
                    "JD2125", f"item {position} has unknown members {unknown} (enqueue's arguments only)"
                )
            if not fast.issuperset(item):
                slow.append((position, item))
                ids.append("")
                continue
            kind = item["kind"]
            if not item.get("allow_unknown"):
                self._known(kind)
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
                raise JobError("JD2125", f"item {position} has a bad kind, id, max_attempts or partition_key")
            try:
                priority = check_priority(item.get("priority", 0))
            except JobError as exc:
                raise JobError("JD2170", f"item {position}: {exc.reason}") from None
            try:
                text = dumps(item.get("payload"))
            except TypeError as exc:
                raise JobError("JD2125", f"item {position}'s payload is not JSON: {exc}") from exc
            rows.append(
                (job_id, kind, text, now, now, budget, partition, None, now, now, source, None, priority)
            )
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
            raise JobError("JD2125", f"concurrency must be a positive integer, not {concurrency!r}")
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

    def wait_for_idle(self, timeout: float | None = None, *, raise_failures: bool = False) -> Idle:
        """Block until no job of a registered kind is pending, leased or awaiting retry and nothing
        runs here, or until ``timeout`` seconds passed.

        Returns an :class:`~jarenlab.jobs.worker.Idle`, true when the queue went idle. It carries
        the failures of this queue's worker loops (claims or settlements the database refused,
        JD2121 each, the original error as its cause) not reported by an earlier call, and the
        handler threads abandoned after their timeout that still run. With ``raise_failures=True``
        the first failure is raised as soon as it happens.
        """
        _check_seconds("timeout", timeout)
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        kinds = self.handlers.kinds
        while True:
            with self._cond:
                seen = self._generation
            if raise_failures:
                self._result(False, started).raise_failures()
            if not self.executor.running and self.queue.open_count(kinds) == 0:
                return self._result(True, started)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return self._result(False, started)
            with self._cond:
                if self._generation == seen:
                    self._cond.wait(min(self.poll, left) if left is not None else self.poll)

    def _result(self, idle: bool, started: float) -> Idle:
        with self._cond:
            failures, self._failures = tuple(self._failures), []
        return Idle(idle, time.monotonic() - started, failures, self.abandoned())

    def report_failure(self, failure: JobError) -> None:
        """Keep a worker loop's failure for the next :meth:`wait_for_idle` (the last 100) and wake waiters."""
        with self._cond:
            self._failures = [*self._failures[-99:], failure]
        self.wake()

    def abandoned(self) -> tuple[str, ...]:
        """``"job-id#attempt"`` of handler threads abandoned after their timeout that still run
        (their attempts were settled as failed; what they write now is refused)."""
        return self.executor.abandoned()

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

    def _close(self) -> list[JarenlabError]:
        wakeups = self._wakeups
        running: list[str] = []
        for worker in list(self._workers):
            running += worker.stop(grace=self.close_grace).in_flight
        if wakeups is not None:
            wakeups.join(1.0)
        problems: list[JarenlabError] = []
        if running:
            problems.append(JobError(
                "JD2062",
                f"job handlers still ran {self.close_grace:g} s after the store began to close: "
                f"{', '.join(map(repr, running))} (their leases are not renewed; another worker takes "
                "them up once they expire)",
            ))  # fmt: skip
        abandoned = self.abandoned()
        if abandoned:
            problems.append(JobError(
                "JD2062",
                f"handler threads abandoned after their timeout still run: {', '.join(abandoned)} "
                "(their attempts were settled as failed; what they write is refused)",
            ))  # fmt: skip
        return problems

    # -- administration --------------------------------------------------------------------------
    def cancel(self, id: str) -> bool:
        """Cancel a job for good; a running handler sees ``ctx.cancelled`` (here at once, elsewhere at
        its next renewal) and its outcome is discarded. True if cancelled now, False if already settled.

        Raises:
            JobError: JD2126 when there is no such job.
        """
        cancelled = self.queue.cancel(id)
        if cancelled:
            self.executor.cancel_local(id)
        return cancelled

    def requeue(self, id: str, *, max_attempts: int | None = None, run_at: float | None = None) -> None:
        """Run a dead, cancelled, done or waiting job again (at ``run_at``, default now), with
        ``max_attempts`` more attempts (default: the kind's budget); its attempt count is kept.

        Raises:
            JobError: JD2126 for an unknown id, JD2125 while it runs.
        """
        row = self.get(id)
        if row is None:
            raise JobError("JD2126", f"no job {id!r}", key=id)
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
        row = self.store.db.one("jobs.get", {"id": id})
        return None if row is None else views.job_record(row)

    def list(
        self,
        *,
        state: str | Iterable[str] | None = None,
        kind: str | None = None,
        source_event: Any = None,
        after: str | None = None,
        limit: int = 100,
    ) -> builtins.list[dict[str, Any]]:
        """Jobs in enqueue order, filtered before the ``limit``; ``after`` (a job id) continues a
        previous page.

        Args:
            state: one state or several (``["failed", "dead"]``). kind: one kind.
            source_event: the jobs an event's handlers enqueued (an Event or its seq).
        """
        if not is_count(limit):
            raise JobError("JD2125", f"limit must be an integer >= 0, not {limit!r}")
        where, params = self._filters(state, kind, source_event)
        if after is not None:
            if self.get(after) is None:
                raise JobError("JD2126", f"no job {after!r} to continue after")
            where.append("where_after")
            params["after"] = after
        rows = self.store.db.all("jobs.list", {**params, "limit": limit}, where=tuple(where))
        return [views.job_record(r) for r in rows]

    def _filters(
        self, state: str | Iterable[str] | None, kind: str | None, source_event: Any = None
    ) -> tuple[builtins.list[str], dict[str, Any]]:
        """The ``where_*`` fragments of the ``jobs`` statements and their parameters."""
        where: builtins.list[str] = []
        params: dict[str, Any] = {}
        if state is not None:
            states = (
                [state] if isinstance(state, str) else builtins.list(state) if _iterable(state) else [state]
            )
            for one in states:
                if not isinstance(one, str) or one not in views.STATES:
                    raise JobError("JD2125", f"unknown state {one!r} (states: {', '.join(views.STATES)})")
            if not states:
                raise JobError("JD2125", "state=[] matches no job; give at least one state")
            if len(states) == 1:
                where.append("where_state")
                params["state"] = states[0]
            else:
                where.append("where_states")  # six places: the states, the first repeated
                padded = [*states, *[states[0]] * (len(views.STATES) - len(states))]
                params.update((f"state{i}", one) for i, one in enumerate(padded, 1))
        if source_event is not None:
            seq = getattr(source_event, "seq", source_event)
            if not is_count(seq, least=1):
                raise JobError("JD2125", f"source_event is an Event or its seq, not {source_event!r}")
            where.append("where_source_event")
            params["source_event"] = seq
        if kind is not None:
            if type(kind) is not str:
                raise JobError("JD2125", f"kind must be a string, not {kind!r}")
            where.append("where_kind")
            params["kind"] = kind
        return where, params

    def counts(self, *, kind: str | None = None) -> dict[str, int]:
        """How many jobs are in each state (every state present, zeros included)."""
        where, params = self._filters(None, kind)
        return views.counts_by_state(self.store.db.all("jobs.counts", params, where=tuple(where)))

    def frame(
        self,
        *,
        state: str | Iterable[str] | None = None,
        kind: str | None = None,
        source_event: Any = None,
        limit: int | None = None,
    ) -> pd.DataFrame:
        """Jobs as a DataFrame indexed by id (times as UTC datetimes), e.g. ``jobs.frame(state="dead")``;
        the filters are :meth:`list`'s. ``source_event`` names the event whose handler enqueued each."""
        where, params = self._filters(state, kind, source_event)
        rows = self.store.db.all("jobs.list", {**params, "limit": limit}, where=tuple(where))
        return views.records_frame([views.job_record(r) for r in rows])

    def recent_failures(self, limit: int = 5) -> builtins.list[dict[str, Any]]:
        """The latest failed or dead jobs (most recently updated first), with their last error."""
        rows = self.store.db.all("jobs.failures", {"limit": limit})
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
    (
        *("kind", "payload", "id", "run_at", "delay", "max_attempts", "partition_key", "coalescing_key"),
        *("timeout", "priority", "if_exists", "allow_unknown"),
    )
)


def _iterable(value: Any) -> bool:
    return isinstance(value, list | tuple | set | frozenset)


def _check_seconds(name: str, value: Any) -> None:
    """JD2125 unless ``value`` is None or a finite number of seconds >= 0."""
    if value is not None and not is_seconds(value):
        raise JobError("JD2125", f"{name} must be a finite number of seconds >= 0, not {value!r}")
