"""Periodic jobs: a cron schedule that enqueues one job per period, once across every worker.

``jobs.periodic(name, cron, kind)`` declares a schedule (stored in the database; declaring it again,
in another process or after a restart, keeps where it got to). Every worker loop and
``run_until_idle`` call :meth:`Schedules.tick`; a tick decides each period that has come since the
schedule's last decision, in one transaction with the schedule's row locked:

- the latest period comes **on time** when it is at most ``grace`` seconds old: it is enqueued;
- periods before it that no tick decided (the workers were down) are **missed**, recorded as one
  gap (first, last, how many); the latest one, when it is older than ``grace``, is missed too, and
  the ``missed`` policy decides: ``"latest"`` (the default) enqueues it once, late (``caught_up``);
  ``"skip"`` runs nothing until the next period.

Each decision is one row keyed by (schedule, period), inserted only if absent: two workers ticking
at once enqueue a period once. The job (id ``"<name>@<period epoch>"``) gets the payload
``{"schedule": name, "period": "<ISO UTC>", "payload": <the declared payload>}``.

>>> import jarenlab as jl
>>> from jarenlab.jobs import VirtualClock
>>> clock = VirtualClock(1_900_000_000.0)     # 2030-03-17 17:46:40 UTC
>>> model = {"$model": "0.1", "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}}}
>>> with jl.open(model=model, clock=clock) as store:
...     @store.jobs.handler("report")
...     def report(payload, ctx):
...         return payload["period"]
...     hourly = store.jobs.periodic("hourly-report", "0 * * * *", "report")
...     clock.advance(3 * 3600)                   # three periods pass with no worker
...     store.jobs.run_until_idle(progress=False)["done"], hourly.missed()[0]["count"]
(1, 2)
"""

from __future__ import annotations

import html
import threading
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.arguments import is_seconds
from jarenlab.errors import JobError
from jarenlab.jobs.cron import Cron, iso
from jarenlab.jobs.queue import dumps
from jarenlab.reprs import table

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.jobs.api import Jobs
    from jarenlab.store import Store

#: What a tick does with a latest period older than ``grace``: run it once, late, or skip it.
POLICIES = ("latest", "skip")
#: A gap's periods are counted up to this many (a longer gap says "at least").
COUNT_LIMIT = 10_000


class Schedule:
    """A periodic job: a name, its cron in a zone, the job it enqueues and its missed policy.

    Get one from ``jobs.periodic(...)`` (declares it) or ``jobs.schedules[name]`` (any stored).
    """

    def __init__(
        self, jobs: Jobs, name: str, cron: Cron, kind: str, payload: Any, missed: str, grace: float
    ) -> None:
        self.jobs = jobs
        self.name = name
        self.cron = cron
        self.kind = kind
        self.payload = payload
        self.policy = missed
        self.grace = grace
        #: The next period this process expects (ticks before it read nothing).
        self.next_due: float | None = None

    def next_run(self, after: float | None = None) -> float | None:
        """The first period after ``after`` (default: the schedule's latest decision)."""
        return self.cron.next_after(self._last() if after is None else after)

    def _last(self) -> float:
        for stored in self.jobs.schedules.rows():
            if stored["name"] == self.name:
                return float(stored["last_period"])
        raise JobError("JD2182", f"no schedule {self.name!r} is stored", key=self.name)

    def periods(self, limit: int = 20) -> list[dict[str, Any]]:
        """The schedule's decisions, latest first: each ``period`` (ISO), ``outcome`` (``enqueued``,
        ``caught_up`` or ``missed``), ``job`` and its ``state`` now; a missed gap has ``through``
        (its last period) and ``count``."""
        rows = self.jobs.store.db.all("periodic.periods", {"name": self.name, "limit": int(limit)})
        return [
            {
                "period": iso(p),
                "outcome": o,
                "job": j,
                "state": s,
                "through": iso(t),
                "count": c,
                "decided": iso(a),
            }
            for p, o, j, t, c, a, s in rows
        ]

    def frame(self, limit: int = 20) -> pd.DataFrame:
        """The decisions of :meth:`periods` as a DataFrame, times as UTC datetimes."""
        import pandas as pd

        columns = ["period", "outcome", "job", "state", "through", "count", "decided"]
        frame = pd.DataFrame.from_records(self.periods(limit), columns=columns)
        for name in ("period", "through", "decided"):
            frame[name] = pd.to_datetime(frame[name], utc=True)
        return frame

    def missed(self) -> list[dict[str, Any]]:
        """The gaps of missed periods, latest first (``period``: the first, ``through``: the last,
        ``count``; :data:`COUNT_LIMIT` at most)."""
        return [p for p in self.periods(limit=1000) if p["outcome"] == "missed"]

    def __repr__(self) -> str:
        return f"<Schedule {self.name!r}: {self.cron.expression!r} {self.cron.tz} -> {self.kind!r}>"

    def _repr_html_(self) -> str:
        head = f"<b>{html.escape(self.name)}</b> <code>{html.escape(self.cron.expression)}</code> " + (
            f"({html.escape(self.cron.tz)}) &rarr; <code>{html.escape(self.kind)}</code>, missed: {self.policy}"
        )
        cells = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(v if v is not None else ''))}</td>" for v in (
                p["period"], p["outcome"], p["job"], p["state"], p["through"] if p["outcome"] == "missed" else "",
                p["count"] if p["outcome"] == "missed" else "",
            )) + "</tr>"
            for p in self.periods(limit=10)
        )  # fmt: skip
        return head + table(["period", "outcome", "job", "state", "missed through", "missed"], cells)


class Schedules:
    """The schedules of one queue (``jobs.schedules``): ``tick()``, ``frame()``, ``[name]``."""

    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs
        self.declared: dict[str, Schedule] = {}
        self._ticking = threading.Lock()

    def declare(
        self, name: str, cron: str, kind: str, *, payload: Any = None, tz: str = "UTC",
        missed: str = "latest", grace: float = 600.0,
    ) -> Schedule:  # fmt: skip
        """Store (or update) a schedule and tick it from this process; see ``Jobs.periodic``."""
        if type(name) is not str or not name or "@" in name:
            raise JobError("JD2181", f"a schedule name is a non-empty string without '@', not {name!r}")
        if type(kind) is not str or not kind:
            raise JobError("JD2181", f"a job kind must be a non-empty string, not {kind!r}", key=name)
        if missed not in POLICIES:
            raise JobError("JD2181", f"missed is 'latest' or 'skip', not {missed!r}", key=name)
        if not is_seconds(grace):
            raise JobError(
                "JD2181", f"grace must be a finite number of seconds >= 0, not {grace!r}", key=name
            )
        parsed = Cron(cron, tz)
        try:
            text = dumps(payload)
        except TypeError as exc:
            raise JobError("JD2181", f"the payload is not JSON: {exc}", key=name) from exc
        schedule = Schedule(self.jobs, name, parsed, kind, orjson.loads(text), missed, float(grace))
        known = self.declared.get(name)
        if known is not None and (known.cron, known.kind, known.payload, known.policy, known.grace) != (
            parsed,
            kind,
            schedule.payload,
            missed,
            schedule.grace,
        ):
            raise JobError("JD2181", f"schedule {name!r} is already declared here differently", key=name)
        self.jobs.store.db.write("periodic.declare", {
            "name": name, "kind": kind, "cron": cron, "tz": tz, "payload": text, "missed": missed,
            "grace": float(grace), "now": self.jobs.clock(),
        })  # fmt: skip
        self.declared[name] = schedule
        return schedule

    def tick(self) -> list[str]:
        """Decide every period that has come for the schedules declared here; returns the ids of the
        jobs this call enqueued (a period another worker decided first enqueues nothing here)."""
        if not self.declared or not self._ticking.acquire(blocking=False):
            return []
        try:
            now = self.jobs.clock()
            enqueued = []
            for schedule in list(self.declared.values()):
                if schedule.next_due is None or now >= schedule.next_due:
                    job = self._tick(schedule, now)
                    if job is not None:
                        enqueued.append(job)
            return enqueued
        finally:
            self._ticking.release()

    def _tick(self, schedule: Schedule, now: float) -> str | None:
        """One schedule's decisions in one transaction (its row locked on a server backend)."""
        db = self.jobs.store.db
        cron = schedule.cron
        job_id = None
        with db.transaction():
            last = db.value("periodic.lock", {"name": schedule.name})
            if last is None:  # removed meanwhile: nothing to decide
                schedule.next_due = None
                self.declared.pop(schedule.name, None)
                return None
            latest = cron.last_at_or_before(now)
            if latest is not None and latest > last:
                on_time = now - latest <= schedule.grace
                runs = on_time or schedule.policy == "latest"
                before = cron.last_at_or_before(latest - 1)
                gap_end = latest if not runs else before
                if gap_end is not None and gap_end > last:
                    count, first = cron.between(last, gap_end, limit=COUNT_LIMIT)
                    self._record(schedule, first or gap_end, "missed", None, gap_end, count, now)
                if runs:
                    job_id = f"{schedule.name}@{latest:.0f}"
                    if self._record(
                        schedule, latest, "enqueued" if on_time else "caught_up", job_id, latest, 1, now
                    ):
                        self.jobs.enqueue(
                            schedule.kind,
                            {"schedule": schedule.name, "period": iso(latest), "payload": schedule.payload},
                            id=job_id, if_exists="keep", allow_unknown=True,
                        )  # fmt: skip
                    else:
                        job_id = None
                db.run("periodic.advance", {"name": schedule.name, "period": latest, "now": now})
                last = latest
        schedule.next_due = cron.next_after(max(last, now))
        return job_id

    def _record(
        self,
        schedule: Schedule,
        period: float,
        outcome: str,
        job: str | None,
        through: float,
        count: int,
        now: float,
    ) -> bool:
        params = {"schedule": schedule.name, "period": period, "outcome": outcome, "job_id": job,
                  "through": through, "count": count, "at": now}  # fmt: skip
        return self.jobs.store.db.run("periodic.record", params) == 1

    def remove(self, name: str) -> None:
        """Forget a schedule: stop ticking it here and delete it and its recorded periods (its jobs stay).

        Raises:
            JobError: JD2182 when no such schedule is stored.
        """
        db = self.jobs.store.db
        with db.transaction():
            db.run("periodic.remove_periods", {"name": name})
            if db.run("periodic.remove", {"name": name}) == 0:
                raise JobError("JD2182", f"no schedule {name!r} is stored", key=name)
        self.declared.pop(name, None)

    def rows(self) -> list[dict[str, Any]]:
        """Every stored schedule as a dict (times in epoch seconds)."""
        names = ("name", "kind", "cron", "tz", "payload", "missed", "grace", "last_period", "last_tick",
                 "created_at", "last_run", "missed_periods")  # fmt: skip
        return [dict(zip(names, row, strict=True)) for row in self.jobs.store.db.all("periodic.list")]

    def __getitem__(self, name: str) -> Schedule:
        if name in self.declared:
            return self.declared[name]
        for row in self.rows():
            if row["name"] == name:
                payload = None if row["payload"] is None else orjson.loads(row["payload"])
                return Schedule(self.jobs, name, Cron(row["cron"], row["tz"]), row["kind"], payload,
                                row["missed"], row["grace"])  # fmt: skip
        raise JobError("JD2182", f"no schedule {name!r} is stored", key=name)

    def __contains__(self, name: object) -> bool:
        return any(row["name"] == name for row in self.rows())

    def records(self) -> list[dict[str, Any]]:
        """One dict per stored schedule: its cron, kind, policy, ``next_run``, ``last_run`` (the latest
        period enqueued), ``missed`` (periods missed in all) and whether this process ticks it."""
        out = []
        for row in self.rows():
            cron = Cron(row["cron"], row["tz"])
            out.append({
                "name": row["name"], "cron": row["cron"], "tz": row["tz"], "kind": row["kind"],
                "policy": row["missed"], "next_run": cron.next_after(max(row["last_period"], self.jobs.clock())),
                "last_run": row["last_run"], "missed": int(row["missed_periods"]),
                "declared_here": row["name"] in self.declared,
            })  # fmt: skip
        return out

    def frame(self) -> pd.DataFrame:
        """The stored schedules as a DataFrame indexed by name (times as UTC datetimes)."""
        import pandas as pd

        columns = ["name", "cron", "tz", "kind", "policy", "next_run", "last_run", "missed", "declared_here"]
        frame = pd.DataFrame.from_records(self.records(), columns=columns)
        for name in ("next_run", "last_run"):
            frame[name] = pd.to_datetime(frame[name], unit="s", utc=True)
        return frame.set_index("name")

    def __repr__(self) -> str:
        return f"<Schedules {sorted(self.declared)} declared here>"

    def _repr_html_(self) -> str:
        cells = "".join(
            "<tr>" + "".join(f"<td>{html.escape('' if v is None else str(v))}</td>" for v in (
                r["name"], r["cron"], r["tz"], r["kind"], r["policy"], iso(r["next_run"]), iso(r["last_run"]),
                r["missed"],
            )) + "</tr>"
            for r in self.records()
        )  # fmt: skip
        return table(
            ["schedule", "cron", "zone", "kind", "missed policy", "next run", "last run", "missed"], cells
        )


class Periodic:
    """The queue's periodic jobs (mixed into :class:`~jarenlab.jobs.api.Jobs`)."""

    store: Store

    def periodic(
        self,
        name: str,
        cron: str,
        kind: str,
        *,
        payload: Any = None,
        tz: str = "UTC",
        missed: str = "latest",
        grace: float = 600.0,
    ) -> Schedule:
        """Declare a periodic job: enqueue ``kind`` once per period of ``cron``, across every worker.

        Args:
            name: the schedule's name (the unique key of its periods, with the period).
            cron: five fields ``minute hour day-of-month month day-of-week`` (``*``, lists, ranges,
                steps, ``mon``/``jan`` names, cron's either-day rule) or ``@hourly``, ``@daily`` ...
            kind: the job kind to enqueue; its payload is ``{"schedule", "period", "payload"}``.
            payload: a JSON value handed on as the job's ``payload`` member.
            tz: the zone the fields are read in (IANA name; default UTC).
            missed: for a latest period older than ``grace`` (the workers were down): ``"latest"``
                enqueues it once, late; ``"skip"`` waits for the next one. Earlier missed periods
                never run; ``jobs.schedules[name].missed()`` lists them.
            grace: seconds a period may be late and still count as on time.

        Raises:
            JobError: JD2180 for a bad cron expression or zone, JD2181 for another bad argument.

        >>> store.jobs.periodic("nightly", "30 2 * * *", "rebuild", tz="Europe/Paris")  # doctest: +SKIP
        """
        return self.schedules.declare(name, cron, kind, payload=payload, tz=tz, missed=missed, grace=grace)

    @property
    def schedules(self) -> Schedules:
        """The stored schedules: ``frame()``, ``[name]``, ``tick()``, ``remove(name)``."""
        schedules: Schedules = self.store.subsystem("periodic")
        return schedules

    def tick(self) -> list[str]:
        """Enqueue the due periods of the schedules declared here (workers and ``run_until_idle`` do
        this themselves); returns the ids of the jobs enqueued by this call."""
        return self.schedules.tick()


__all__ = ["POLICIES", "Periodic", "Schedule", "Schedules"]
