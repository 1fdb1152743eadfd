"""Running handlers: one attempt at a time (:class:`Executor`), lease renewal, background workers.

The executor turns any handler outcome into a settlement: a return value becomes ``done`` (or the
disposition the handler chose: a deferral, a retry at a time, a dead letter), anything raised (even
an exception whose ``__str__`` raises), a result JSON cannot hold or a run past the handler's
timeout becomes an ordinary failed attempt, retried with capped exponential backoff and jitter or
dead-lettered with its last error. The actions the handler staged (``ctx.emit``, ``ctx.enqueue``)
commit in the settlement's transaction, behind its fence; if one of them fails, the settlement
rolls back with it and the attempt fails instead. A refused settlement (the lease was lost) is
reported, never raised into the loop. :class:`Worker` runs claim-execute loops in threads;
``stop(grace=...)`` is bounded by the grace period.

When the database cannot be reached (:func:`jarenlab.errors.unreachable`: a PostgreSQL server
restarting or gone), a worker's loops back off with jitter (up to :data:`OUTAGE_CAP` seconds), log
one warning when the outage starts and one line when they reach the store again, and count it in
``worker.stats`` (``outages``, ``unreachable_s``). A settlement the outage interrupted is tried
again until the job's lease ends (behind its fence: one that did commit is refused, never doubled).
"""

from __future__ import annotations

import contextlib
import contextvars
import html
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jarenlab.arguments import is_count
from jarenlab.backoff import backoff
from jarenlab.causation import Acting, act, current_job, done
from jarenlab.errors import JarenlabError, JobError, unreachable
from jarenlab.jobs.context import Context
from jarenlab.jobs.queue import Lease, dumps
from jarenlab.reprs import table

if TYPE_CHECKING:
    from jarenlab.jobs.api import Jobs

log = logging.getLogger("jarenlab.jobs")

_FENCE_CODES = ("JD2067", "JD2066", "JD2065", "JD2126")
#: The longest pause (seconds, before jitter) between a worker's attempts to reach a database it lost.
OUTAGE_CAP = 2.0
#: The first such pause (seconds, before jitter).
OUTAGE_BASE = 0.05


#: The most of a failed attempt's formatted traceback a job keeps: its last characters, where the
#: frame that raised and the error are.
TRACEBACK_CHARS = 16_000


def formatted(exc: BaseException, attempt: int, limit: int = TRACEBACK_CHARS) -> str:
    """The attempt's number and the exception's formatted traceback (chained causes too), its last
    ``limit`` characters when longer (a line says what was cut).

    >>> try:
    ...     {}["missing"]
    ... except KeyError as exc:
    ...     text = formatted(exc, 2)
    >>> text.splitlines()[0], text.splitlines()[-1]
    ('attempt 2:', "KeyError: 'missing'")
    """
    try:
        text = "".join(traceback.format_exception(exc))
    except Exception:  # an exception whose formatting raises: its description
        text = describe(exc) + "\n"
    text = text.rstrip("\n")
    if len(text) > limit:
        text = f"... ({len(text) - limit:,} characters cut)\n" + text[-limit:]
    return f"attempt {attempt}:\n{text}"


def describe(exc: BaseException) -> str:
    """``Type: message`` for any exception, even one whose ``__str__`` raises (bounded to 2,000 chars).

    >>> describe(ValueError("bad day"))
    'ValueError: bad day'
    """
    name = type(exc).__name__
    try:
        text = str(exc)
    except BaseException:  # the message itself may raise: the failure must still be recorded
        text = "<the exception's message could not be read>"
    return (f"{name}: {text}" if text else name)[:2000]


class HandlerTimeout(Exception):
    """A handler ran past its timeout (its thread is abandoned, the attempt fails)."""


@dataclass(frozen=True)
class Abandoned:
    """A handler thread left running after its timeout."""

    job_id: str
    attempt: int
    thread: threading.Thread

    def __str__(self) -> str:
        return f"{self.job_id}#{self.attempt}"


class Executor:
    """Runs one claimed job to a settlement; tracks running jobs for renewal and cancellation."""

    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs
        self.queue = jobs.queue
        self.running: dict[int, Context] = {}
        self._abandoned: list[Abandoned] = []
        self._lock = threading.Lock()
        self._renewers = 0
        self._renew_stop = threading.Event()

    def abandoned(self) -> tuple[str, ...]:
        """``"job-id#attempt"`` of handler threads abandoned after their timeout that still run."""
        with self._lock:
            self._abandoned = [a for a in self._abandoned if a.thread.is_alive()]
            return tuple(map(str, self._abandoned))

    def execute(self, lease: Lease, *, stopping: threading.Event | None = None) -> str:
        """Run the handler for ``lease`` and settle it; returns the outcome.

        Outcomes: ``done``, ``deferred``, ``failed`` (will retry), ``dead``, ``released`` (given
        back unsettled on stop), ``cancelled`` or ``lost`` (the settlement was refused).
        Raises only ``KeyboardInterrupt`` (after giving the lease back).
        """
        return self._execute(lease, stopping, None)[0]

    def execute_then_claim(
        self, lease: Lease, kinds: dict[str, float], *, stopping: threading.Event | None = None
    ) -> tuple[str, Lease | None]:
        """Like :meth:`execute`; a plain completion also claims the next job in the same commit."""
        return self._execute(lease, stopping, kinds)

    def _execute(
        self, lease: Lease, stopping: threading.Event | None, chain: dict[str, float] | None
    ) -> tuple[str, Lease | None]:
        spec = self.jobs.handlers.get(lease.kind)
        timeout = lease.job["timeout"]
        if timeout is None and spec is not None:
            timeout = spec.timeout
        ctx = Context(self.queue, lease, timeout=timeout)
        with self._lock:
            self.running[lease.seq] = ctx
        token = current_job.set((lease.id, lease.attempt))
        fence = act(Acting(lease.id, lease.attempt, ctx))
        try:
            if stopping is not None and stopping.is_set():
                # Claimed as the worker began to stop (after it cancelled what was running): unrun.
                return self._settle(lambda: self.queue.release(lease), "released", lease, ctx), None
            if spec is None or lease.attempt > lease.max_attempts:
                reason = (
                    f"no handler for kind {lease.kind!r}"
                    if spec is None
                    else f"attempt {lease.attempt} of {lease.max_attempts}: the previous attempt's lease "
                    f"expired (worker died or stalled); {lease.job['last_error'] or 'no error recorded'}"
                )
                return self._settle_failure(lease, ctx, reason, retry=spec is None), None
            try:
                value = self._call(spec.fn, lease, ctx)
                text = dumps(value) if ctx.disposition is None else None
            except KeyboardInterrupt:
                ctx.end()
                with contextlib.suppress(JarenlabError):
                    self.queue.release(lease)
                raise
            except BaseException as exc:  # any handler outcome is an ordinary failed attempt
                ctx.end()
                ctx.discard_staged()  # a retry stages it again
                if stopping is not None and stopping.is_set() and not isinstance(exc, HandlerTimeout):
                    return self._settle(lambda: self.queue.release(lease), "released", lease, ctx), None
                final = isinstance(exc, JobError) and exc.code == "JD2069"
                trace = formatted(exc, lease.attempt)
                return self._settle_failure(lease, ctx, describe(exc), retry=not final, trace=trace), None
            return self._dispose(lease, ctx, text, chain)
        finally:
            ctx.end()
            done(fence)
            current_job.reset(token)
            with self._lock:
                self.running.pop(lease.seq, None)

    def _call(self, fn: Callable[[Any, Context], Any], lease: Lease, ctx: Context) -> Any:
        """Run the handler; with a timeout, in a thread of its own that is abandoned (reported by
        ``jobs.abandoned()``, never killed) when it runs past it."""
        if ctx.timeout is None:
            return fn(lease.job["payload"], ctx)
        box: dict[str, Any] = {}
        finished = threading.Event()

        def run() -> None:
            try:
                box["value"] = fn(lease.job["payload"], ctx)
            except BaseException as exc:  # handed to the executor's thread below
                box["error"] = exc
            finally:
                finished.set()

        context = contextvars.copy_context()  # the handler sees current_job and its fence
        thread = threading.Thread(
            target=context.run, args=(run,), name=f"jarenlab-job-{lease.id}", daemon=True
        )
        thread.start()
        if not finished.wait(ctx.timeout):
            ctx.cancelled.set()
            ctx.end()  # nothing it writes from now on commits; its lease is no longer renewed
            with self._lock:
                self.running.pop(lease.seq, None)
                self._abandoned.append(Abandoned(lease.id, lease.attempt, thread))
            log.warning("job %s attempt %s ran past its timeout of %g s; its thread is abandoned",
                        lease.id, lease.attempt, ctx.timeout)  # fmt: skip
            raise HandlerTimeout(
                f"the handler ran past its timeout of {ctx.timeout:g} s; its thread was abandoned"
            )
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def _dispose(
        self, lease: Lease, ctx: Context, text: str | None, chain: dict[str, float] | None
    ) -> tuple[str, Lease | None]:
        """Settle a handler that returned: as it chose, else done; with its staged actions."""
        queue = self.queue
        staged = self._staged(ctx)
        chosen = ctx.disposition
        if chosen is not None and chosen[0] == "defer":
            at = chosen[1]
            return self._settle(lambda: queue.defer(lease, at, staged=staged), "deferred", lease, ctx), None
        if chosen is not None and chosen[0] == "dead":
            reason = chosen[1]
            return self._settle(
                lambda: queue.fail(lease, reason, retry_at=None, staged=staged), "dead", lease, ctx
            ), None
        if chosen is not None:
            _, at, reason = chosen
            if lease.attempt >= lease.max_attempts:
                reason = f"{reason} (attempt {lease.attempt} of {lease.max_attempts}: none left)"
                return self._settle(
                    lambda: queue.fail(lease, reason, retry_at=None, staged=staged), "dead", lease, ctx
                ), None
            if at is None:
                at = self.jobs.clock() + self._backoff(lease)
            return self._settle(
                lambda: queue.fail(lease, reason, retry_at=at, staged=staged), "retried", lease, ctx
            ), None
        if chain is not None and not lease.checkpointed:
            box: list[Lease | None] = [None]

            def settle_and_claim() -> None:
                box[0] = queue.complete_and_claim(lease, text, chain, lease.owner, staged)

            outcome = self._settle(settle_and_claim, "done", lease, ctx)
            return outcome, box[0] if outcome == "done" else None
        return self._settle(
            lambda: queue.complete(lease, text, prune=lease.checkpointed, staged=staged), "done", lease, ctx
        ), None

    def _staged(self, ctx: Context) -> Callable[[], None] | None:
        """The handler's staged actions as one step of the settlement's transaction (None: none).

        They run after the settlement's fenced write, which already proved the lease, so the
        events they emit skip the per-emit fence (and still name the job and attempt)."""
        actions = ctx.staged
        if not actions:
            return None
        store = self.jobs.store

        lease = ctx.lease

        def apply() -> None:
            token = act(Acting(lease.id, lease.attempt, None))
            try:
                for action in actions:
                    action.apply(store)
            finally:
                done(token)

        return apply

    def _backoff(self, lease: Lease) -> float:
        jobs = self.jobs
        return backoff(lease.attempt, base=jobs.backoff_base, cap=jobs.backoff_cap, rand=jobs.rand)

    def _settle_failure(
        self, lease: Lease, ctx: Context, error: str, *, retry: bool, trace: str | None = None
    ) -> str:
        fail = self.queue.fail
        if retry and lease.attempt < lease.max_attempts:
            at = self.jobs.clock() + self._backoff(lease)
            return self._settle(
                lambda: fail(lease, error, retry_at=at, traceback=trace), "failed", lease, ctx
            )
        return self._settle(lambda: fail(lease, error, retry_at=None, traceback=trace), "dead", lease, ctx)

    def _settle(self, action: Callable[[], object], outcome: str, lease: Lease, ctx: Context) -> str:
        try:
            self._until_lease_ends(action, lease)
            return outcome
        except JobError as refusal:
            if refusal.code in _FENCE_CODES:
                return self._refused(refusal, lease)
            if not ctx.staged:
                raise
            failure: Exception = refusal
        except Exception as exc:
            if not ctx.staged:
                raise
            failure = exc
        # A staged action failed: the settlement rolled back with it. The attempt fails instead.
        ctx.discard_staged()
        return self._settle_failure(lease, ctx, f"a staged action failed: {describe(failure)}", retry=True)

    def _until_lease_ends(self, action: Callable[[], object], lease: Lease) -> None:
        """Run a settlement; while the database cannot be reached, try again with a jittered
        backoff until the job's lease ends (then the error goes up: another claim recovers it).

        Trying again is safe: a settlement is one fenced transaction, so one whose COMMIT went
        through before the connection did is refused by its fence (``lost``), never applied twice.
        """
        failures = 0
        while True:
            try:
                action()
                return
            except JarenlabError as exc:
                if not unreachable(exc):
                    raise
                failures += 1
                left = lease.until - self.jobs.clock()
                if left <= 0:
                    raise
                pause = backoff(failures, base=OUTAGE_BASE, cap=OUTAGE_CAP, rand=self.jobs.rand)
                time.sleep(min(pause, left))

    def _refused(self, refusal: JobError, lease: Lease) -> str:
        # Not leased any more: cancelled (unwind the lease it kept) or settled by another claim.
        if refusal.code == "JD2065" and self.queue.state(lease.id) == "cancelled":
            self.queue.unwind(lease)
            return "cancelled"
        log.info("job %s attempt %s: settlement refused: %s", lease.id, lease.attempt, refusal)
        return "lost"

    # -- renewal and cancellation ----------------------------------------------------------------
    def renew_leases(self) -> int:
        """Renew every running job's lease once a third of it has passed; returns how many were renewed.

        A renewal refused by the fence (lost, superseded, cancelled) sets the job's ``ctx.cancelled``;
        a storage failure (say, the database is locked) is retried at the next tick.
        """
        now = self.jobs.clock()
        with self._lock:
            contexts = list(self.running.values())
        renewed = 0
        for ctx in contexts:
            lease = ctx.lease
            if ctx.ended or now < lease.until - lease.seconds * 2 / 3:
                continue
            try:
                self.queue.renew(lease)
                renewed += 1
            except JobError as refusal:
                if refusal.code in _FENCE_CODES:
                    ctx.cancelled.set()
            except JarenlabError as exc:
                # An unreachable database is the worker loop's to report (once per outage).
                (log.debug if unreachable(exc) else log.warning)(
                    "renewing the lease of job %s failed: %s", lease.id, exc
                )
        return renewed

    def cancel_local(self, job_id: str) -> None:
        """Set ``ctx.cancelled`` for a job running in this process."""
        with self._lock:
            contexts = [c for c in self.running.values() if c.lease.id == job_id]
        for ctx in contexts:
            ctx.cancelled.set()

    @contextlib.contextmanager
    def renewing(self) -> Iterator[None]:
        """Keep a renewal thread running while any caller is inside this block."""
        with self._lock:
            self._renewers += 1
            start = self._renewers == 1
            if start:
                self._renew_stop = threading.Event()
                stop = self._renew_stop
        if start:
            threading.Thread(
                target=self._renew_loop, args=(stop,), name="jarenlab-renew", daemon=True
            ).start()
        try:
            yield
        finally:
            with self._lock:
                self._renewers -= 1
                if self._renewers == 0:
                    self._renew_stop.set()

    def _renew_loop(self, stop: threading.Event) -> None:
        leases = [s.lease for s in self.jobs.handlers if s.lease] + [self.jobs.lease]
        tick = min(max(min(leases) / 6, 0.02), 5.0)
        while not stop.wait(tick):
            try:
                self.renew_leases()
            except Exception:  # the store closed under us: nothing left to renew
                log.debug("lease renewal stopped", exc_info=True)
                return


class Wakeups:
    """Wakes this process's idle workers when another process may have enqueued work.

    A thread waits on the store's ``jobs`` watch (:meth:`jarenlab.database.Database.watch`): on
    PostgreSQL an enqueue's ``NOTIFY`` arrives at once; on SQLite the watch reads the file's commit
    counter once a poll, as the workers' own polling would. The workers keep polling either way:
    a wake-up only makes them look sooner. One per queue while any worker runs.
    """

    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jarenlab-jobs-wakeups", daemon=True)

    def start(self) -> Wakeups:
        """Start the thread."""
        self._thread.start()
        return self

    def _run(self) -> None:
        jobs = self.jobs
        tick = min(jobs.poll, 0.25)  # how soon a stop is noticed
        watch = None
        failures = 0
        try:
            while not self._stop.is_set():
                try:
                    if watch is None:
                        watch = jobs.store.db.watch(jobs.poll, "jobs")
                    if watch.wait(tick) and not self._stop.is_set():
                        jobs.wake()
                    failures = 0
                except JarenlabError as exc:
                    if not unreachable(exc):
                        raise
                    # The server is away: the watch listens again once it is back (the workers'
                    # own polling carries on meanwhile and reports the outage).
                    failures += 1
                    self._stop.wait(backoff(failures, base=OUTAGE_BASE, cap=OUTAGE_CAP, rand=jobs.rand))
        except Exception:  # the store closed: the workers' polling carries on alone
            log.debug("job wake-ups stopped", exc_info=True)
        finally:
            if watch is not None:
                watch.close()

    def stop(self) -> None:
        """Ask the thread to end (it does within a poll)."""
        self._stop.set()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the stopped thread to end."""
        self._stop.set()
        self._thread.join(timeout)


@dataclass(frozen=True)
class Idle:
    """What ``jobs.wait_for_idle`` saw; true (``if jobs.wait_for_idle(): ...``) when the queue went idle.

    Attributes:
        idle: nothing of the registered kinds was left to do and nothing ran here.
        waited: seconds the call waited.
        failures: the worker loops' failures since the last report (JD2121, the original error as
            ``__cause__``): a worker that keeps failing shows here instead of only in a log.
        abandoned: ``"job-id#attempt"`` of handler threads abandoned after their timeout, still running.
    """

    idle: bool
    waited: float
    failures: tuple[JobError, ...] = ()
    abandoned: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.idle

    def raise_failures(self) -> Idle:
        """Raise the first failure (the others as notes) if there was one; else return self."""
        if self.failures:
            first = self.failures[0]
            for other in self.failures[1:]:
                first.add_note(str(other))
            raise first
        return self

    def _repr_html_(self) -> str:
        state = "idle" if self.idle else "not idle"
        rows = "".join(f"<tr><td>{html.escape(str(f))}</td></tr>" for f in self.failures)
        rows += "".join(
            f"<tr><td>abandoned handler thread {html.escape(a)}</td></tr>" for a in self.abandoned
        )
        return f"<div><b>jobs {state}</b> after {self.waited:.2f} s{table(['reported'], rows) if rows else ''}</div>"


@dataclass(frozen=True)
class Stopped:
    """What ``Worker.stop`` saw: jobs that finished during the grace period, and jobs still running."""

    drained: tuple[str, ...]
    in_flight: tuple[str, ...]


class Worker:
    """Claim-execute loops in background threads. Start one with ``jobs.start(concurrency=N)``."""

    def __init__(self, jobs: Jobs, *, concurrency: int, poll: float, owner: str) -> None:
        if not is_count(concurrency, least=1):
            raise JobError("JD2125", f"concurrency must be a positive integer, not {concurrency!r}")
        self.jobs = jobs
        self.concurrency = concurrency
        self.poll = poll
        self.owner = owner
        self.stats: dict[str, Any] = {
            "claimed": 0, "done": 0, "failed": 0, "retried": 0, "deferred": 0, "dead": 0, "lost": 0,
            "cancelled": 0, "errors": 0, "outages": 0, "unreachable_s": 0.0,
        }  # fmt: skip
        #: Since when (``time.monotonic()``) the database cannot be reached; None while it can.
        self.unreachable_since: float | None = None
        self._outage_failures = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._in_flight: dict[int, str] = {}
        self._kinds_running: dict[str, int] = {}
        self._drained: list[str] = []
        self._threads: list[threading.Thread] = []
        self._renewing = contextlib.ExitStack()

    def start(self) -> Worker:
        """Start the threads (once)."""
        if self._threads:
            raise JobError("JD2125", "this worker is already started")
        self._renewing.enter_context(self.jobs.executor.renewing())
        for n in range(self.concurrency):
            thread = threading.Thread(target=self._loop, name=f"jarenlab-worker-{n}", daemon=True)
            self._threads.append(thread)
            thread.start()
        return self

    @property
    def running(self) -> bool:
        """True between ``start()`` and ``stop()``."""
        return bool(self._threads) and not self._stopping.is_set()

    @property
    def busy(self) -> bool:
        """True while a job claimed by this worker is still running."""
        with self._lock:
            return bool(self._in_flight)

    def _kinds(self) -> dict[str, float]:
        jobs = self.jobs
        kinds = {}
        for spec in jobs.handlers:
            limit = spec.concurrency or self.concurrency
            if self._kinds_running.get(spec.kind, 0) < limit:
                kinds[spec.kind] = spec.lease or jobs.lease
        return kinds

    def _loop(self) -> None:
        jobs = self.jobs
        while not self._stopping.is_set():
            seen = jobs.generation
            try:
                jobs.tick()  # the due periods of periodic jobs (one enqueue each, across workers)
                with self._lock:
                    if self._stopping.is_set():  # stop() sets it before it reads what runs
                        return
                    kinds = self._kinds()
                    lease = jobs.queue.claim(kinds, self.owner)
                    if lease is not None:
                        self._in_flight[lease.seq] = lease.id
                        self._kinds_running[lease.kind] = self._kinds_running.get(lease.kind, 0) + 1
                        self.stats["claimed"] += 1
            except Exception as exc:  # a storage failure must not kill the loop: back off and retry
                if isinstance(exc, JarenlabError) and exc.code == "JD2063":
                    return
                if isinstance(exc, JarenlabError) and unreachable(exc):
                    self._stopping.wait(self._unreachable(exc))
                    continue
                self.stats["errors"] += 1
                log.warning("claiming failed: %s", exc)
                self._report(f"worker {self.owner} could not claim", exc)
                self._stopping.wait(self.poll)
                continue
            if self.unreachable_since is not None:
                self._reached()
            if lease is None:
                jobs.wait_for_work(self._idle(kinds), self._stopping, seen)
                continue
            try:
                outcome = jobs.executor.execute(lease, stopping=self._stopping)
            except BaseException as exc:
                outcome = "errors"
                log.warning("settling job %s failed: %s", lease.id, exc)
                self._report(f"worker {self.owner} could not settle job {lease.id!r}", exc)
            finally:
                with self._lock:
                    self._in_flight.pop(lease.seq, None)
                    self._kinds_running[lease.kind] -= 1
                    if self._stopping.is_set():
                        self._drained.append(lease.id)
            if outcome in self.stats:
                self.stats[outcome] += 1
            jobs.notify_settled()

    def _idle(self, kinds: dict[str, float]) -> float:
        """How long an idle loop waits: a poll, or less when a rate-limited kind's window frees sooner."""
        try:
            free_at = self.jobs.queue.gate(kinds).free_at
        except JarenlabError:  # the next claim meets the failure and reports it
            return self.poll
        if free_at is None:
            return self.poll
        return min(self.poll, max(free_at - self.jobs.clock(), 0.001))

    def _unreachable(self, exc: JarenlabError) -> float:
        """A claim found the database unreachable: the first of an outage logs one warning and
        reports it (``jobs.wait_for_idle`` carries it); returns the jittered pause before the next try."""
        with self._lock:
            first = self.unreachable_since is None
            if first:
                self.unreachable_since = time.monotonic()
                self.stats["outages"] += 1
                self._outage_failures = 0
            self._outage_failures += 1
            failures = self._outage_failures
        if first:
            log.warning("worker %s: the store cannot be reached (%s); retrying with backoff", self.owner, exc)
            self._report(f"worker {self.owner} could not reach the store", exc)
        return backoff(failures, base=OUTAGE_BASE, cap=OUTAGE_CAP, rand=self.jobs.rand)

    def _reached(self) -> None:
        """A claim reached the database after an outage: one line saying so, its length counted."""
        with self._lock:
            since, self.unreachable_since = self.unreachable_since, None
            if since is None:
                return  # another loop of this worker said it already
            lasted = time.monotonic() - since
            self.stats["unreachable_s"] = round(self.stats["unreachable_s"] + lasted, 3)
        log.warning("worker %s: reconnected to the store after %.1f s", self.owner, lasted)

    def _report(self, what: str, exc: BaseException) -> None:
        failure = JobError("JD2121", f"{what}: {describe(exc)}")
        failure.__cause__ = exc
        self.jobs.report_failure(failure)

    def stop(self, grace: float = 5.0) -> Stopped:
        """Stop claiming, cancel running handlers (``ctx.cancelled``) and wait up to ``grace`` seconds.

        Returns which jobs finished during the wait and which were still running; those keep their
        lease unrenewed, so another worker recovers them once it expires.
        """
        if isinstance(grace, bool) or not isinstance(grace, int | float) or grace != grace:
            raise JobError("JD2125", f"grace must be a number of seconds, not {grace!r}")
        self._stopping.set()
        with self._lock:
            running = set(self._in_flight)
        for seq in running:
            ctx = self.jobs.executor.running.get(seq)
            if ctx is not None:
                ctx.cancelled.set()
        self.jobs.wake()
        deadline = time.monotonic() + max(grace, 0.0)
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._renewing.close()
        self.jobs.forget(self)
        with self._lock:
            return Stopped(tuple(self._drained), tuple(self._in_flight.values()))

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<jarenlab job worker {self.owner} ×{self.concurrency} {state} {self.stats}>"
