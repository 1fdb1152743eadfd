"""Per-kind limits counted in the database: at most N starts per period, at most M running at once.

A kind declares them with its handler (``@jobs.handler("fetch", rate="10/s", max_running=3)``).
They hold across every worker and process, because what they count lives in the store:

- **running**: the kind's leased jobs whose lease has not expired (``jobs.running``, through the
  small index ``_jl_jobs_leased`` on leased jobs only);
- **starts**: one row per claim of a rate-limited kind in ``_jl_job_starts`` (``jobs.record_start``),
  pruned as it leaves the window; a rate of N per P seconds admits a claim when fewer than N
  starts happened in the last P seconds (a sliding window, not a fixed one).

A claim that runs a limited kind first takes the kinds' rows of ``_jl_job_limits`` in its write
transaction (``jobs.lock_limits``: on SQLite the transaction is already the only writer; on
PostgreSQL the rows are locked, in kind order, until the claim commits), reads the counts, leaves
out the kinds at their limit and claims among the others; the start is recorded in the same
transaction. Two claims of one limited kind therefore take turns, and neither sees the other's
counts stale.

>>> parse_rate("10/s"), parse_rate("100/min"), parse_rate("3/5s")
(Rate(count=10, per=1.0), Rate(count=100, per=60.0), Rate(count=3, per=5.0))
>>> Limit(parse_rate("2/h"), 4)
Limit(rate='2/3600s', max_running=4)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jarenlab.arguments import is_count
from jarenlab.errors import JobError

if TYPE_CHECKING:
    from jarenlab.database import Database

_UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0, "h": 3600.0, "hour": 3600.0}
_RATE = re.compile(r"\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)?\s*([a-z]+?)s?\s*")


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``count`` starts in any ``per`` seconds."""

    count: int
    per: float


def parse_rate(spec: Any) -> Rate:
    """``"N/s"``, ``"N/min"``, ``"N/h"`` or ``"N/<k><unit>"`` (``"3/5s"``, ``"100/10min"``) as a
    :class:`Rate`; JD2171 naming the spec otherwise.

    >>> parse_rate(" 5 / 2 hours ")
    Rate(count=5, per=7200.0)
    """
    match = _RATE.fullmatch(spec) if type(spec) is str else None
    unit = None if match is None else _UNITS.get(match[3])
    count = 0 if match is None else int(match[1])
    per = 0.0 if match is None or unit is None else float(match[2] or 1) * unit
    if count < 1 or not 0 < per < 1e9 or count > 2**31 - 1:
        raise JobError(
            "JD2171",
            f"rate must read like '10/s', '100/min', '5/h' or '3/5s' (a positive count per a positive "
            f"span), not {spec!r}",
        )
    return Rate(count, per)


@dataclass(frozen=True, slots=True)
class Limit:
    """A kind's limits: its :class:`Rate` (or None) and how many may run at once (or None)."""

    rate: Rate | None
    max_running: int | None

    def __repr__(self) -> str:
        rate = None if self.rate is None else f"{self.rate.count}/{self.rate.per:g}s"
        return f"Limit(rate={rate!r}, max_running={self.max_running!r})"


def limit(rate: Any, max_running: Any) -> Limit | None:
    """The checked limits of a kind (None when it has none); JD2171 for a bad ``rate`` or ``max_running``.

    >>> limit(None, None) is None, limit("1/s", None).rate
    (True, Rate(count=1, per=1.0))
    """
    if max_running is not None and not (is_count(max_running, least=1) and max_running <= 2**31 - 1):
        raise JobError("JD2171", f"max_running must be a positive integer, not {max_running!r}")
    if rate is None and max_running is None:
        return None
    return Limit(None if rate is None else parse_rate(rate), max_running)


@dataclass(frozen=True, slots=True)
class Gate:
    """What the limits allow now: the kinds at their limit, and the earliest time one of them may
    be free again (epoch seconds, later than now; None when none is at its limit): a place leaving
    a rate window, or a running job's lease ending (a job that finishes sooner frees it sooner)."""

    blocked: frozenset[str]
    free_at: float | None


OPEN = Gate(frozenset(), None)


class Limits:
    """The limits' statements over one store's database (the queue owns one)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._rows: set[str] = set()  # kinds whose _jl_job_limits row is known to exist

    def gate(self, limits: dict[str, Limit], now: float, *, lock: bool) -> Gate:
        """Which of the ``limits``' kinds are at their limit at ``now``. With ``lock`` (inside the
        claim's write transaction) the kinds' rows are taken first, so the counts stay true until
        the claim commits; without, a look that locks nothing (is anything claimable, when to wake)."""
        if not limits:
            return OPEN
        db = self.db
        if lock:
            db.all("jobs.lock_limits", {"kinds": tuple(sorted(limits))}, kinds=len(limits))
        blocked: set[str] = set()
        frees: list[float] = []
        for kind, spec in limits.items():
            if spec.max_running is not None:
                running, first_end = db.one(
                    "jobs.running", {"kind": kind, "now": now, "cap": spec.max_running}
                ) or (0, None)
                if running >= spec.max_running:
                    blocked.add(kind)
                    frees.append(float(first_end))
            if spec.rate is not None:
                # The rate is full when its count-th latest start is still inside the window; that
                # start leaving the window frees a place.
                oldest = db.value(
                    "jobs.window_start",
                    {"kind": kind, "since": now - spec.rate.per, "skip": spec.rate.count - 1},
                )
                if oldest is not None:
                    blocked.add(kind)
                    frees.append(float(oldest) + spec.rate.per)
        return Gate(frozenset(blocked), min(frees) if frees else None)

    def started(self, kind: str, spec: Limit, now: float) -> None:
        """Record a claim of ``kind`` at ``now`` (in the claim's transaction) and drop the starts
        that left its window."""
        if spec.rate is None:
            return
        self.db.run("jobs.record_start", {"kind": kind, "at": now})
        self.db.run("jobs.prune_starts", {"kind": kind, "before": now - spec.rate.per})

    def ensure(self, limits: dict[str, Limit]) -> None:
        """Make the kinds' ``_jl_job_limits`` rows (once per kind and queue; before the claim's
        transaction, so that a claim only ever locks rows that exist)."""
        missing = [kind for kind in sorted(limits) if kind not in self._rows]
        if missing:
            self.db.many("jobs.add_limit", [{"kind": kind} for kind in missing])
            if not self.db.in_transaction:  # inside a caller's transaction it may yet roll back
                self._rows.update(missing)
