"""The job state machine: enqueue, claim, settle, renew, checkpoint, cancel, requeue.

Every transition is one guarded statement (or one short transaction) run through the store's
:class:`~jarenlab.database.Database`; the statements are the backend's ``jobs`` catalogue. A
claim is a single ``UPDATE ... WHERE seq = (SELECT ... LIMIT 1) RETURNING``: it counts the
attempt, bumps the generation and mints a fencing token (on a server backend the pick skips rows
other claims hold, and a unique index refuses a second lease in one partition: that claim is
retried, :data:`CLAIM_RETRIES`). Everything a lease holder does
afterwards (settle, renew, checkpoint) is guarded by that token, the state and the expiry; a
guard that matches nothing changes nothing and raises a coded :class:`JobError`:

- JD2067 ``lease_lost``: the lease expired (another claim may take the job at any moment);
- JD2066 ``lease_superseded``: another claim took the job (the token is not the current one);
- JD2065 ``job_not_leased``: the job is settled or cancelled;
- JD2126 ``unknown_job``: no such job.

Reads and administration (cancel, requeue, sweep) live in :mod:`jarenlab.jobs.admin`.
"""

from __future__ import annotations

import itertools
import random
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.arguments import is_count, is_seconds
from jarenlab.causation import current_event
from jarenlab.errors import JobError, StoreError, ValidationError
from jarenlab.jobs.admin import Administration, check_time
from jarenlab.jobs.limits import OPEN, Gate, Limit, Limits
from jarenlab.jobs.members import maybe_member, member_settled
from jarenlab.jobs.signalwork import maybe_work, work_settled
from jarenlab.jobs.views import job_record
from jarenlab.values import to_json

if TYPE_CHECKING:
    from collections.abc import Callable

    from jarenlab.jobs.clock import Clock
    from jarenlab.store import Store

DEFAULT_MAX_ATTEMPTS = 5

#: Rows per statement of ``jobs.enqueue_sixteen`` (``enqueue_many`` inserts in steps of this many).
SIXTEEN = 16
#: The parameters of ``jobs.enqueue``, in the order of a prepared row (``enqueue_many``'s rows).
ENQUEUE = ("id", "kind", "payload", "run_at", "due_at", "max_attempts", "partition_key", "coalescing_key",
           "created_at", "updated_at", "source_event", "timeout", "priority")  # fmt: skip
#: Those of ``jobs.enqueue_sixteen``: each of them once per row, ``id_0`` ... ``priority_15``.
_ENQUEUE_SIXTEEN = tuple(f"{name}_{i}" for i in range(SIXTEEN) for name in ENQUEUE)

#: Claims again after a claim met a partition another claim had just leased (the database refused
#: the second lease as a duplicate; only a backend whose claims run concurrently can): at most this
#: many times, after a short random pause.
CLAIM_RETRIES = 3

#: Looks again after a coalescing enqueue's insert changed nothing (a concurrent transaction took the
#: id or the key first): at most this many looks.
COALESCE_LOOKS = 5


class _ClaimCollided(Exception):
    """The claim chained to a settlement met a partition another claim had just leased."""


@dataclass(slots=True)
class Lease:
    """A claim: the capability to settle, renew or checkpoint one job until ``until``.

    ``token`` is the fencing token minted by the claim; ``generation`` counts claims of the job.
    """

    seq: int
    id: str
    kind: str
    token: str
    generation: int
    attempt: int
    max_attempts: int
    seconds: float
    until: float
    owner: str
    checkpointed: bool
    job: dict[str, Any]


def dumps(value: Any) -> str:
    """JSON text for a payload or result, with the store's value rules (:mod:`jarenlab.values`).

    Raises TypeError for what JSON cannot hold (NaN, bytes, ...): never a silent ``null``.
    """
    try:
        value = to_json(value)
    except ValidationError as exc:
        raise TypeError(exc.reason) from exc
    return orjson.dumps(value).decode()


def _check_key(name: str, value: Any) -> str | None:
    if value is not None and (type(value) is not str or not value):
        raise JobError("JD2125", f"{name} must be a non-empty string, not {value!r}")
    return value


#: The priorities a job may have (the database's 32-bit integer): higher runs first.
PRIORITY_RANGE = (-(2**31), 2**31 - 1)


def check_priority(value: Any) -> int:
    """``value`` as a job priority; JD2170 unless it is an integer in :data:`PRIORITY_RANGE`.

    >>> check_priority(10)
    10
    """
    low, high = PRIORITY_RANGE
    if type(value) is not int or not low <= value <= high:
        raise JobError(
            "JD2170", f"priority must be an integer from {low} to {high} (higher runs first), not {value!r}"
        )
    return value


def check_timeout(value: Any) -> float | None:
    """``value`` as seconds a handler may run; JD2125 unless None or a finite number > 0."""
    if value is not None and (not is_seconds(value) or value <= 0):
        raise JobError("JD2125", f"timeout must be a positive number of seconds, not {value!r}")
    return None if value is None else float(value)


class Queue(Administration):
    """The queue's statements over one store. ``Jobs`` (the public face) owns one.

    Args:
        store: the open store. clock: epoch seconds (see :mod:`jarenlab.jobs.clock`).
        limit_of: a kind's limits, or None (:meth:`jarenlab.jobs.registry.Handlers.limit`): claims
            keep them (:mod:`jarenlab.jobs.limits`).
    """

    def __init__(
        self, store: Store, clock: Clock, limit_of: Callable[[str], Limit | None] | None = None
    ) -> None:
        self.store = store
        self.db = store.db
        self.clock = clock
        self.limit_of = limit_of
        self.limits = Limits(store.db)
        # Per set of kinds and their leases: the claim statement and its lease parameter.
        self._claims: dict[tuple[tuple[str, float], ...], tuple[str, Any]] = {}
        # Generated ids: creation millisecond and 24 random bits (unique across processes), then a
        # counter, so one process's ids ascend and land at the end of the id index.
        self._id_prefix = f"{int(time.time() * 1000):011x}{secrets.token_hex(3)}"
        self._id_counter = itertools.count()

    def id_source(self) -> tuple[str, Iterator[int]]:
        """The generated-id prefix and counter (for batch paths that format ids inline)."""
        return self._id_prefix, self._id_counter

    def new_id(self) -> str:
        """A fresh job id (27 hex digits, ascending within this queue)."""
        return f"{self._id_prefix}{next(self._id_counter):010x}"

    # -- fenced writes ---------------------------------------------------------------------------
    def _fenced(self, name: str, params: dict[str, Any], lease: Lease, now: float) -> None:
        """Run a guarded write (its own transaction, or the caller's) with the fence's parameters
        (the lease's seq and token, ``now``); when it matched nothing, raise the reason as a coded
        refusal."""
        if self.db.write(name, {**params, "seq": lease.seq, "token": lease.token, "now": now})[1] != 1:
            raise self.refusal(lease, now)

    def refusal(self, lease: Lease, now: float) -> JobError:
        """Why a guarded write on ``lease`` matched nothing (JD2067/JD2066/JD2065/JD2126)."""
        row = self.db.one("jobs.lease_state", {"seq": lease.seq})
        if row is None:
            return JobError("JD2126", f"job {lease.id!r} no longer exists", key=lease.id)
        state, token, generation, until = row
        if state != "leased":
            return JobError("JD2065", f"job {lease.id!r} is {state}, not leased", key=lease.id)
        if token != lease.token or generation != lease.generation:
            return JobError(
                "JD2066",
                f"job {lease.id!r} was claimed again (generation {generation}, yours {lease.generation})",
                key=lease.id,
            )
        return JobError("JD2067", f"the lease on job {lease.id!r} expired at {until}", key=lease.id)

    # -- enqueue ---------------------------------------------------------------------------------
    def check(
        self,
        kind: str,
        payload: Any,
        *,
        id: str | None = None,
        run_at: float | None = None,
        delay: float | None = None,
        max_attempts: int | None = None,
        partition_key: str | None = None,
        coalescing_key: str | None = None,
        timeout: float | None = None,
        priority: int = 0,
    ) -> str:
        """Check :meth:`enqueue`'s arguments (``max_attempts`` None: the default); returns the
        payload's JSON text. Raises JD2125 naming what is wrong (JD2170 for the priority)."""
        if type(kind) is not str or not kind:
            raise JobError("JD2125", f"a job kind must be a non-empty string, not {kind!r}")
        if id is not None and (type(id) is not str or not id):
            raise JobError("JD2125", f"a job id must be a non-empty string, not {id!r}")
        if max_attempts is not None and not is_count(max_attempts, least=1):
            raise JobError("JD2125", f"max_attempts must be a positive integer, not {max_attempts!r}")
        _check_key("partition_key", partition_key)
        _check_key("coalescing_key", coalescing_key)
        check_timeout(timeout)
        check_priority(priority)
        if run_at is not None:
            check_time("run_at", run_at)
        if delay is not None:
            check_time("delay", delay)
        try:
            return dumps(payload)
        except TypeError as exc:
            raise JobError("JD2125", f"the payload is not JSON: {exc}", key=id) from exc

    def enqueue(
        self,
        kind: str,
        payload: Any,
        *,
        id: str | None,
        run_at: float | None,
        delay: float | None,
        max_attempts: int,
        partition_key: str | None,
        coalescing_key: str | None,
        timeout: float | None = None,
        if_exists: str = "error",
        priority: int = 0,
    ) -> str:
        """Insert one job (idempotent by id; coalesced by key); returns the job's id. Inside an
        event's handlers the job records that event as its ``source_event``.

        An id already stored with another kind or payload is JD2125 (``if_exists="error"``) or
        keeps the stored job (``if_exists="keep"``); the same kind and payload is the same job.
        """
        text = self.check(
            kind, payload, id=id, run_at=run_at, delay=delay, max_attempts=max_attempts,
            partition_key=partition_key, coalescing_key=coalescing_key, timeout=timeout, priority=priority,
        )  # fmt: skip
        now = self.clock()
        at = now if run_at is None else float(run_at)
        if delay is not None:
            at += float(delay)
        job_id = id if id is not None else self.new_id()
        params = (job_id, kind, text, at, at, max_attempts, partition_key, coalescing_key, now, now,
                  current_event.get(), None if timeout is None else float(timeout), priority)  # fmt: skip
        db = self.db
        if coalescing_key is None:
            if (
                db.write("jobs.enqueue", dict(zip(ENQUEUE, params, strict=True)))[1] == 0
                and id is not None
                and if_exists == "error"
            ):
                self._same_job(job_id, kind, payload)
            db.notify("jobs")
            return job_id
        with db.transaction():
            job_id = self._coalesce(params, payload)
            db.notify("jobs")
            return job_id

    def _same_job(self, job_id: str, kind: str, payload: Any) -> None:
        """Refuse an enqueue whose id holds another job (a different kind or payload): JD2125."""
        row = self.db.one("jobs.get", {"id": job_id})
        if row is None:
            return
        record = job_record(row)
        stored_kind, stored = record["kind"], record["payload"]
        if stored_kind != kind or stored != orjson.loads(dumps(payload)):
            what = f"kind {stored_kind!r}" if stored_kind != kind else "a different payload"
            raise JobError(
                "JD2125",
                f"job id {job_id!r} already holds {what}; enqueue under another id, or pass "
                "if_exists='keep' to keep the stored job",
                key=job_id,
            )

    def _coalesce(self, params: tuple[Any, ...], payload: Any) -> str:
        job_id, kind, key = params[0], params[1], params[7]
        db = self.db
        with db.translating(key=job_id):
            for _ in range(COALESCE_LOOKS):
                if db.one("jobs.exists", {"id": job_id}):
                    return str(job_id)
                row = db.one(
                    "jobs.coalesced", {"kind": kind, "coalescing_key": key}
                )  # locked until the transaction ends
                if row is not None:
                    return self._merge(row, params, payload)
                if db.run("jobs.enqueue", dict(zip(ENQUEUE, params, strict=True))):
                    return str(job_id)
                # Nothing inserted: a transaction that committed meanwhile took the id or the key.
        raise StoreError(
            "JD2005", f"coalescing key {key!r} kept changing hands; enqueue again", retryable=True,
            condition="busy", key=job_id,
        )  # fmt: skip

    def _merge(self, row: Any, params: tuple[Any, ...], payload: Any) -> str:
        """A coalescing repeat of the job holding the key (``row``): check it asks for the same
        work, move the holder earlier if asked; returns the holder's id."""
        _, _, _, at, _, _, partition_key, key, now, *_ = params
        seq, existing, text, run_at, partition = row
        if orjson.loads(text) != payload:
            raise JobError(
                "JD2125",
                f"coalescing key {key!r} already holds job {existing!r} with a different payload",
                key=existing,
            )
        if partition != partition_key:
            raise JobError(
                "JD2125",
                f"coalescing key {key!r} holds job {existing!r} in partition {partition!r}, "
                f"not {partition_key!r}",
                key=existing,
            )
        if at < run_at:
            self.db.run("jobs.move_earlier", {"run_at": at, "due_at": at, "now": now, "seq": seq})
        return str(existing)

    def enqueue_many(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert prepared rows (``jobs.enqueue`` parameter tuples), :data:`SIXTEEN` rows per statement."""
        db = self.db
        full = len(rows) - len(rows) % SIXTEEN
        with db.transaction():
            if full:
                flat = [value for row in rows[:full] for value in row]
                width = len(ENQUEUE) * SIXTEEN
                db.many(
                    "jobs.enqueue_sixteen",
                    [
                        dict(zip(_ENQUEUE_SIXTEEN, flat[i : i + width], strict=True))
                        for i in range(0, len(flat), width)
                    ],
                )
            if full < len(rows):
                db.many("jobs.enqueue", [dict(zip(ENQUEUE, row, strict=True)) for row in rows[full:]])
            db.notify("jobs")

    # -- claiming --------------------------------------------------------------------------------
    def limited(self, kinds: Iterable[str]) -> dict[str, Limit]:
        """The limits of those of ``kinds`` that declare any (:mod:`jarenlab.jobs.limits`)."""
        limit_of = self.limit_of
        if limit_of is None:
            return {}
        found = {}
        for kind in kinds:
            limit = limit_of(kind)
            if limit is not None:
                found[kind] = limit
        return found

    def gate(self, kinds: Iterable[str]) -> Gate:
        """Which of ``kinds`` are at their limit now and when the first rate window frees (a look
        that locks nothing)."""
        limited = self.limited(kinds)
        return self.limits.gate(limited, self.clock(), lock=False) if limited else OPEN

    def claim(self, kinds: dict[str, float], owner: str) -> Lease | None:
        """Lease the next due job of one of ``kinds`` (kind -> lease seconds); None when none is due.

        Kinds at their limit (:mod:`jarenlab.jobs.limits`) are left out: the claim then runs in a
        write transaction that takes the limited kinds' rows, counts, claims among the others and
        records the start."""
        if not kinds:
            return None
        db = self.db
        limited = self.limited(kinds)
        if limited:
            self.limits.ensure(limited)
        retries = 0
        while True:
            try:
                if limited:
                    return self._claim_limited(kinds, limited, owner)
                name, params, now, token = self._claim_statement(kinds, owner)
                rows = db.write(name, params, kinds=len(kinds))[0]
            except StoreError as err:
                # A partition another claim leased meanwhile: claim again (not inside a caller's
                # transaction, which the refusal ended on a server backend).
                if err.condition != "duplicate" or retries == CLAIM_RETRIES or db.in_transaction:
                    raise
                retries += 1
                time.sleep(random.uniform(0.001, 0.005) * retries)
                continue
            return self._lease(rows, now, token, owner)

    def _claim_limited(self, kinds: dict[str, float], limited: dict[str, Limit], owner: str) -> Lease | None:
        db = self.db
        with db.transaction():
            gate = self.limits.gate(limited, self.clock(), lock=True)
            allowed = {kind: lease for kind, lease in kinds.items() if kind not in gate.blocked}
            if not allowed:
                return None
            name, params, now, token = self._claim_statement(allowed, owner)
            lease = self._lease(db.all(name, params, kinds=len(allowed)), now, token, owner)
            if lease is not None and lease.kind in limited:
                self.limits.started(lease.kind, limited[lease.kind], now)
            return lease

    def next_wait(self, kinds: Iterable[str], *, scheduled: bool) -> float | None:
        """When work of ``kinds`` under way next falls due (see the base); a kind at its limit
        with open jobs counts when its limit may lift instead (always later than now)."""
        names = tuple(kinds)
        gate = self.gate(names)
        due = super().next_wait([kind for kind in names if kind not in gate.blocked], scheduled=scheduled)
        if gate.free_at is None or not self.open_count(gate.blocked):
            return due
        return gate.free_at if due is None else min(due, gate.free_at)

    def claimable(self, kinds: Iterable[str]) -> bool:
        """True when a claim for ``kinds`` would lease a job now (kinds at their limit left out)."""
        names = tuple(kinds)
        blocked = self.gate(names).blocked
        return super().claimable(kind for kind in names if kind not in blocked)

    def _claim_statement(self, kinds: dict[str, float], owner: str) -> tuple[str, dict[str, Any], float, str]:
        key = tuple(kinds.items())
        cached = self._claims.get(key)
        if cached is None:
            leases = set(kinds.values())
            if len(leases) == 1:
                cached = ("jobs.claim", leases.pop())
            else:
                cached = ("jobs.claim_leases", orjson.dumps(kinds).decode())
            self._claims[key] = cached
        name, lease = cached
        now = self.clock()
        token = secrets.token_hex(8)
        params = {"owner": owner, "token": token, "now": now, "kinds": tuple(kinds)}
        params["seconds" if name == "jobs.claim" else "leases"] = lease
        return name, params, now, token

    def _lease(self, rows: list[Any], now: float, token: str, owner: str) -> Lease | None:
        if not rows:
            return None
        (seq, job_id, kind, payload, attempts, max_attempts, generation, until, checkpointed,
         run_at, created_at, partition_key, coalescing_key, last_error, source_event, timeout,
         priority) = rows[0]  # fmt: skip
        job = {
            "id": job_id,
            "kind": kind,
            "payload": orjson.loads(payload) if payload is not None else None,
            "attempt": attempts,
            "max_attempts": max_attempts,
            "generation": generation,
            "run_at": run_at,
            "created_at": created_at,
            "partition_key": partition_key,
            "coalescing_key": coalescing_key,
            "last_error": last_error,
            "lease_until": until,
            "source_event": source_event,
            "timeout": timeout,
            "priority": priority,
        }
        return Lease(seq, job_id, kind, token, generation, attempts, max_attempts,
                     until - now, until, owner, bool(checkpointed), job)  # fmt: skip

    def complete_and_claim(
        self,
        lease: Lease,
        result_text: str | None,
        kinds: dict[str, float],
        owner: str,
        staged: Callable[[], None] | None = None,
    ) -> Lease | None:
        """Complete ``lease`` (with its ``staged`` actions) and claim the next job in one
        transaction (one commit instead of two).

        The claim is still one statement; it only shares the settle's commit. Raises the settle's
        refusal (nothing claimed, nothing staged committed) when the lease is no longer this attempt's.
        """
        db = self.db
        if self.limited(kinds):
            # A limited kind's claim takes its limit rows in a transaction of its own: settle first.
            self.complete(lease, result_text, prune=False, staged=staged)
            return self.claim(kinds, owner)
        now = self.clock()
        claimed = None
        try:
            with db.transaction():
                settled = db.run(
                    "jobs.complete",
                    {"result": result_text, "now": now, "seq": lease.seq, "token": lease.token},
                )
                if settled == 1:
                    if staged is not None:
                        staged()
                    if maybe_member(lease.id):
                        member_settled(self, lease.id, "done", result_text, None)
                    if maybe_work(lease.id):
                        work_settled(db, lease.id)
                    if kinds:
                        try:
                            name, params, at, token = self._claim_statement(kinds, owner)
                            claimed = self._lease(db.all(name, params, kinds=len(kinds)), at, token, owner)
                        except StoreError as err:
                            if err.condition == "duplicate":
                                raise _ClaimCollided from err
                            raise
        except _ClaimCollided:
            # The claim met a partition another claim had just leased, and the settle rolled back
            # with it: settle alone, then claim (with its retries).
            self.complete(lease, result_text, prune=False, staged=staged)
            return self.claim(kinds, owner)
        if settled != 1:
            raise self.refusal(lease, now)
        return claimed

    # -- settling --------------------------------------------------------------------------------
    # Every settlement takes the attempt's ``staged`` actions (events, jobs): they run in the same
    # transaction, after the fenced write, so a refused settlement commits none of them.
    def complete(
        self, lease: Lease, result_text: str | None, *, prune: bool, staged: Callable[[], None] | None = None
    ) -> None:
        """Mark the job done with its result; with ``prune``, delete its checkpoints in the same transaction."""
        now = self.clock()
        params = {"result": result_text}
        member, work = maybe_member(lease.id), maybe_work(lease.id)
        if not prune and staged is None and not member and not work:
            self._fenced("jobs.complete", params, lease, now)
            return
        with self.db.transaction():
            self._fenced("jobs.complete", params, lease, now)
            if prune:
                self.db.run("jobs.prune_checkpoints", {"id": lease.id, "generation": lease.generation})
            if staged is not None:
                staged()
            if member:  # a fan-out batch's job: its outcome, and the combiner after the last
                member_settled(self, lease.id, "done", result_text, None)
            if work:  # a signal's job: the signal goes with its last
                work_settled(self.db, lease.id)

    def fail(
        self,
        lease: Lease,
        error: str,
        *,
        retry_at: float | None,
        staged: Callable[[], None] | None = None,
        traceback: str | None = None,
    ) -> str:
        """Record a failed attempt: ``failed`` and due again at ``retry_at``, or ``dead`` when None;
        ``traceback`` is the attempt's formatted traceback (None: the failure raised nothing)."""
        now = self.clock()
        if retry_at is None:
            state, run_at, due_at, settled_at = "dead", now, None, now
        else:
            state, run_at, due_at, settled_at = "failed", retry_at, retry_at, None
        params = {
            "state": state,
            "run_at": run_at,
            "due_at": due_at,
            "error": error,
            "traceback": traceback,
            "settled_at": settled_at,
        }
        member = state == "dead" and maybe_member(lease.id)
        work = state == "dead" and maybe_work(lease.id)
        if staged is None and not member and not work:
            self._fenced("jobs.fail", params, lease, now)
        else:
            with self.db.transaction():
                self._fenced("jobs.fail", params, lease, now)
                if staged is not None:
                    staged()
                if member:
                    member_settled(self, lease.id, "dead", None, error)
                if work:
                    work_settled(self.db, lease.id)
        return state

    def hold(self, lease: Lease) -> None:
        """Inside the caller's write transaction: raise the refusal unless ``lease`` is still held
        (on a server backend the job's row stays locked until that transaction ends)."""
        now = self.clock()
        if self.db.one("jobs.hold", {"seq": lease.seq, "token": lease.token, "now": now}) is None:
            raise self.refusal(lease, now)

    def release(self, lease: Lease) -> None:
        """Give a claim back unsettled (shutdown, interrupt): due now, the attempt stays counted."""
        now = self.clock()
        self._fenced("jobs.release", {"run_at": now, "due_at": now}, lease, now)

    def renew(self, lease: Lease) -> None:
        """Extend the lease by its length from now (fenced)."""
        now = self.clock()
        until = now + lease.seconds
        self._fenced("jobs.renew", {"lease_until": until, "due_at": until}, lease, now)
        lease.until = until

    def unwind(self, lease: Lease) -> None:
        """Drop the lease of a job cancelled while it ran (its partition is blocked until then)."""
        self.db.write("jobs.unwind", {"seq": lease.seq, "token": lease.token})

    def defer(self, lease: Lease, until: float, *, staged: Callable[[], None] | None = None) -> str:
        """Settle as a clean new generation due at ``until`` (attempts reset); merges into a pending
        coalesced successor when one exists. Returns the id of the job that will run."""
        now = self.clock()
        key = lease.job["coalescing_key"]
        db = self.db
        with db.transaction():
            successor = (
                None if key is None else db.one("jobs.coalesced", {"kind": lease.kind, "coalescing_key": key})
            )
            if successor is None:
                self._fenced("jobs.restart", {"run_at": until, "due_at": until}, lease, now)
                into = lease.id
            else:
                seq, into, _, run_at, _ = successor
                self._fenced("jobs.complete", {"result": dumps({"deferred_into": into})}, lease, now)
                db.run(
                    "jobs.move_earlier",
                    {"run_at": min(run_at, until), "due_at": min(run_at, until), "now": now, "seq": seq},
                )
            if staged is not None:
                staged()
            return str(into)

    def checkpoint(self, lease: Lease, node: str, value_text: str) -> None:
        """Save one named value for the job, fenced by the lease, in its own transaction."""
        now = self.clock()
        with self.db.transaction():
            self._fenced("jobs.mark_checkpointed", {}, lease, now)
            self.db.run(
                "jobs.save_checkpoint",
                {"id": lease.id, "node": node, "value": value_text, "generation": lease.generation},
            )
        lease.checkpointed = True
