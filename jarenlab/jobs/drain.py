"""``jobs.run_until_idle()``: drive the queue from a notebook cell until nothing is left to do.

With one lane the handlers run in the calling thread, so interrupting the cell lands in the
handler: its lease is given back (due again at once, the attempt counted) and the interrupt is
re-raised. With more lanes a :class:`~jarenlab.jobs.worker.Worker` runs them and the cell waits.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from jarenlab.jobs.clock import is_virtual

if TYPE_CHECKING:
    from jarenlab.jobs.api import Jobs


#: The ways an attempt ends (``retried``: the handler chose ``ctx.retry``; counted when it happened).
_SETTLED = ("done", "failed", "retried", "dead", "deferred", "lost", "cancelled")


def _bar(show: bool, total: int) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="jobs", unit="job")


def _pause(jobs: Jobs, until: float, deadline: float | None) -> None:
    """Wait until ``until`` on the jobs' clock (instantly on a virtual one), at most one poll."""
    now = jobs.clock()
    if is_virtual(jobs.clock):
        jobs.clock.sleep(max(until - now, 0.0))  # type: ignore[attr-defined]
        return
    span = min(max(until - now, 0.001), jobs.poll)
    if deadline is not None:
        span = min(span, max(deadline - time.monotonic(), 0.0))
    time.sleep(span)


def drain(
    jobs: Jobs, *, progress: bool, concurrency: int, timeout: float | None, wait_for_scheduled: bool
) -> dict[str, int]:
    """Run due jobs until idle; see :meth:`jarenlab.jobs.api.Jobs.run_until_idle`."""
    kinds = {spec.kind: spec.lease or jobs.lease for spec in jobs.handlers}
    outcomes: Counter[str] = Counter()
    deadline = None if timeout is None else time.monotonic() + timeout
    bar = _bar(progress, jobs.queue.open_count(kinds))
    try:
        if concurrency > 1:
            _drain_threads(jobs, kinds, outcomes, bar, concurrency, deadline, wait_for_scheduled)
        else:
            _drain_inline(jobs, kinds, outcomes, bar, deadline, wait_for_scheduled)
    finally:
        if bar is not None:
            bar.close()
    result = {
        name: outcomes.get(name, 0) for name in ("done", "failed", "dead", "deferred", "lost", "cancelled")
    }
    result.update((k, v) for k, v in outcomes.items() if k not in result)
    result["open"] = jobs.queue.open_count(kinds)
    return result


def _tick(bar: Any, jobs: Jobs, kinds: dict[str, float]) -> None:
    if bar is None:
        return
    bar.update(1)
    if bar.n >= bar.total:
        bar.total = bar.n + jobs.queue.open_count(kinds)
        bar.refresh()


def _drain_inline(
    jobs: Jobs,
    kinds: dict[str, float],
    outcomes: Counter[str],
    bar: Any,
    deadline: float | None,
    scheduled: bool,
) -> None:
    queue, executor = jobs.queue, jobs.executor
    with executor.renewing():
        lease = None
        while True:
            if lease is None:
                jobs.tick()  # periodic jobs' due periods
                lease = queue.claim(kinds, jobs.owner)
            if lease is not None:
                outcome, lease = executor.execute_then_claim(lease, kinds)
                outcomes[outcome] += 1
                _tick(bar, jobs, kinds)
                continue
            if deadline is not None and time.monotonic() >= deadline:
                return
            wake_at = queue.next_wait(kinds, scheduled=scheduled)
            if wake_at is None:
                return
            _pause(jobs, wake_at, deadline)


def _drain_threads(
    jobs: Jobs,
    kinds: dict[str, float],
    outcomes: Counter[str],
    bar: Any,
    concurrency: int,
    deadline: float | None,
    scheduled: bool,
) -> None:
    jobs.tick()  # due periods first: the loop below ends when nothing is due
    worker = jobs.start(concurrency)
    seen = 0
    never = threading.Event()
    try:
        while True:
            settled = sum(worker.stats[k] for k in _SETTLED)
            for _ in range(settled - seen):
                _tick(bar, jobs, kinds)
            seen = settled
            if deadline is not None and time.monotonic() >= deadline:
                return
            if not worker.busy and not queue_busy(jobs, kinds):
                wake_at = jobs.queue.next_wait(kinds, scheduled=scheduled)
                if wake_at is None:
                    return
                _pause(jobs, wake_at, deadline)
                continue
            jobs.wait_for_work(0.05, never, jobs.generation)
    finally:
        worker.stop(grace=jobs.close_grace)
        outcomes.update({k: v for k, v in worker.stats.items() if k != "claimed" and v})


def queue_busy(jobs: Jobs, kinds: dict[str, float]) -> bool:
    """True when a job of ``kinds`` could be claimed right now."""
    return jobs.queue.claimable(kinds)
