"""Signals: transient messages a queue handler sends, which live only while the work they caused runs.

A job handler calls ``ctx.signal(type, payload)``. The signal commits at once, in a transaction of
its own that first checks the attempt still holds its lease (when it does not, nothing is written
and the call returns None). The handlers registered with ``store.events.on_signal(type)`` run in
that transaction as ``handler(signal, work)`` and may enqueue jobs with ``work.enqueue(...)``. A
signal whose handlers enqueue nothing is not kept; otherwise its row lives until the last of those
jobs settles (done, dead or cancelled) and is deleted in that settlement's transaction. Signals
are not events: no stream, ``frame()``, cursor or change feed ever shows them.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"pages": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
...     "events": {"page.seen": {"type": "object"}}}
>>> with jl.open(model=model) as store:
...     @store.events.on_signal("page.seen")
...     def index(signal, work):
...         work.enqueue("index", signal.payload)
...     @store.jobs.handler("index")
...     def index_page(payload, ctx):
...         return len(ctx.store.events.signals())    # its signal is live while it runs
...     @store.jobs.handler("crawl")
...     def crawl(payload, ctx):
...         return len(ctx.signal("page.seen", {"url": payload}).jobs)
...     _ = store.jobs.enqueue("crawl", "a.html", id="c1")
...     _ = store.jobs.run_until_idle(progress=False)
...     [j["result"] for j in store.jobs.list(state="done")], len(store.events.signals())
([1, 1], 0)
"""

from __future__ import annotations

import datetime as dt
import html
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from jarenlab.causation import acting
from jarenlab.errors import EventError, JobError
from jarenlab.events.event import from_ms
from jarenlab.reprs import table

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.store import Store

#: Separates a signal's id from a job's position in the ids of the jobs its handlers enqueue (the
#: job queue's settlement hook looks up only ids holding it: ``jarenlab.jobs.signalwork.MARK``).
MARK = "^"
#: ``jobs.enqueue``'s options that signal work takes (no ``id``: it is minted; no coalescing).
_WORK_OPTIONS = frozenset(("run_at", "delay", "max_attempts", "partition_key", "timeout", "priority"))
#: The refusals of a fence whose attempt no longer holds its lease.
_LOST = frozenset(("JD2065", "JD2066", "JD2067"))
_COLUMNS = ["type", "at", "payload", "job", "attempt", "pending", "work"]


@dataclass(frozen=True, slots=True)
class Signal:
    """One signal: ``id``, ``type``, ``payload``, ``at`` (aware UTC), the ``job`` and ``attempt``
    that sent it, and ``jobs`` (the ids of the work its handlers enqueued; empty: it was not kept)."""

    id: str
    type: str
    payload: Any
    at: dt.datetime
    job: str
    attempt: int
    jobs: tuple[str, ...] = field(default=())

    def _repr_html_(self) -> str:
        cells = [
            self.id, self.type, orjson.dumps(self.payload).decode(), self.at.isoformat(),
            f"{self.job} #{self.attempt}", ", ".join(self.jobs) or "none (not kept)",
        ]  # fmt: skip
        row = "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
        return f"<div><b>signal</b>{table(['id', 'type', 'payload', 'at', 'sent by', 'work'], f'<tr>{row}</tr>')}</div>"


class Work:
    """A signal handler's second argument: the ``store`` and the signal's ``enqueue``."""

    __slots__ = ("_signal", "jobs", "store")

    def __init__(self, store: Store, signal: str) -> None:
        self.store = store
        self._signal = signal
        #: The ids of the jobs enqueued so far, in order.
        self.jobs: list[str] = []

    def enqueue(self, kind: str, payload: Any = None, **options: Any) -> str:
        """Enqueue a job as this signal's work (``jobs.enqueue``'s ``run_at``, ``delay``,
        ``max_attempts``, ``partition_key``, ``timeout`` and ``priority``); returns its id
        (``<signal id>^<position>``). The signal lives until the last of its work settles.

        Raises:
            EventError: JD2217 for any other option (``id`` is minted; work is never coalesced).
        """
        unknown = sorted(set(options) - _WORK_OPTIONS)
        if unknown:
            raise EventError(
                "JD2217",
                f"signal work takes no option {unknown[0]!r} (only {', '.join(sorted(_WORK_OPTIONS))})",
            )
        job = self.store.jobs.enqueue(kind, payload, id=f"{self._signal}{MARK}{len(self.jobs)}", **options)
        self.store.db.run("signals.insert_work", {"job_id": job, "signal_id": self._signal})
        self.jobs.append(job)
        return job


#: ``handler(signal, work)``; runs inside the signal's transaction.
SignalHandler = Callable[[Signal, Work], None]


class Ledger(Protocol):
    """What signals use of the event ledger: its store, its clock and its payload checks."""

    store: Store
    clock: Callable[[], float]

    def check(self, type: str, payload: Any, *, dedupe_key: str | None = None) -> Any: ...

    def outcome_schema(self, type: str) -> dict[str, Any] | None: ...


class Signals:
    """The signal handlers of a store's ledger, sending and listing (``store.events`` delegates)."""

    def __init__(self, events: Ledger) -> None:
        self.events = events
        self._handlers: dict[str, list[SignalHandler]] = {}

    def on(self, type: str) -> Callable[[SignalHandler], SignalHandler]:
        """A decorator registering ``handler(signal, work)`` for ``type`` (a declared event type).
        Re-registering a top-level function of the same name replaces it in place."""
        self.events.outcome_schema(type)  # JD2080 for an undeclared type

        def register(fn: SignalHandler) -> SignalHandler:
            if not callable(fn):
                raise EventError("JD2217", f"a signal handler is a function(signal, work), not {fn!r}")
            handlers = self._handlers.setdefault(type, [])
            name = (getattr(fn, "__module__", None), getattr(fn, "__qualname__", None))
            if name[1] and "<" not in name[1]:
                for i, old in enumerate(handlers):
                    if (getattr(old, "__module__", None), getattr(old, "__qualname__", None)) == name:
                        handlers[i] = fn
                        return fn
            handlers.append(fn)
            return fn

        return register

    def off(self, type: str, handler: SignalHandler | None = None) -> int:
        """Remove one handler of ``type`` (or all of them); return how many were removed."""
        handlers = self._handlers.get(type, [])
        keep = [] if handler is None else [h for h in handlers if h is not handler]
        self._handlers[type] = keep
        return len(handlers) - len(keep)

    def handlers(self, type: str) -> list[SignalHandler]:
        """The signal handlers registered for ``type``, in the order they run."""
        return list(self._handlers.get(type, []))

    def send(self, type: str, payload: Any) -> Signal | None:
        """Commit a signal now, only while the sending attempt holds its lease, running its handlers
        in the same transaction. Returns the signal, or None when the lease was lost (nothing written).

        Raises:
            EventError: JD2216 outside a running queue handler; JD2080 for an undeclared type or an
                invalid payload. A handler's exception propagates unchanged and writes nothing.
        """
        running = acting()
        if running is None or running.fence is None:
            raise EventError(
                "JD2216", f"signal {type!r}: only a running queue handler sends signals (ctx.signal)"
            )
        payload = self.events.check(type, payload)
        store = self.events.store
        db = store.db
        signal_id = "s" + secrets.token_hex(8)
        with db.transaction():
            try:
                running.fence.fence()  # on a server backend the job's row stays locked until COMMIT
            except JobError as err:
                if err.code in _LOST:
                    return None
                raise
            at_ms = int(self.events.clock() * 1000)
            signal = Signal(signal_id, type, payload, from_ms(at_ms), running.job, running.attempt)
            work = Work(store, signal_id)
            for handler in self.handlers(type):
                try:
                    handler(signal, work)
                except BaseException as exc:
                    exc.add_note(f"while handling signal {type!r} ({signal_id}) in {_name(handler)}")
                    raise
            if work.jobs:  # kept until its last job settles; with no work it is never stored
                db.run(
                    "signals.insert",
                    {
                        "id": signal_id, "type": type, "payload": orjson.dumps(payload).decode(),
                        "at_ms": at_ms, "job": running.job, "attempt": running.attempt,
                        "pending": len(work.jobs),
                    },
                )  # fmt: skip
        return Signal(signal_id, type, payload, signal.at, running.job, running.attempt, tuple(work.jobs))

    def frame(self) -> pd.DataFrame:
        """The live signals as a DataFrame indexed by ``id``, oldest first: ``type``, ``at``,
        ``payload``, the ``job`` and ``attempt`` that sent it, ``pending`` (its unsettled jobs) and
        ``work`` (their ids). Read from a committed snapshot."""
        import pandas as pd

        db = self.events.store.db
        with db.snapshot(own_writes=False):
            rows = db.all("signals.live", {})
        live: dict[str, dict[str, Any]] = {}
        for sid, type, payload, at_ms, job, attempt, pending, work in rows:
            entry = live.setdefault(
                sid,
                {"id": sid, "type": type, "at": from_ms(at_ms), "payload": orjson.loads(payload),
                 "job": job, "attempt": attempt, "pending": pending, "work": []},
            )  # fmt: skip
            if work is not None:
                entry["work"].append(work)
        frame = pd.DataFrame.from_records(list(live.values()), columns=["id", *_COLUMNS])
        frame["at"] = pd.to_datetime(frame["at"], utc=True)
        return frame.set_index("id")


def _name(fn: object) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


__all__ = ["MARK", "Ledger", "Signal", "SignalHandler", "Signals", "Work"]
