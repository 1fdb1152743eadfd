"""Events: emit validated events, run their handlers in the same transaction, stream what committed.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
...     "events": {"flight.delayed": {
...     "type": "object", "required": ["flight"], "properties": {"flight": {"type": "integer"}}}}}
>>> with jl.open(model=model) as store:
...     @store.events.on("flight.delayed")
...     def count(event, store):
...         return {"seen": event.seq}
...     first = store.events.emit("flight.delayed", {"flight": 1545}, dedupe_key="d1")
...     again = store.events.emit("flight.delayed", {"flight": 1545}, dedupe_key="d1")
...     first.outcome, again.seq == first.seq, again.deduplicated
({'seen': 1}, True, True)
"""

from __future__ import annotations

import datetime as dt
import html
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import orjson

from jarenlab.arguments import is_count, is_flag, is_progress, is_seconds
from jarenlab.causation import acting, current_event
from jarenlab.errors import EventError, JarenlabError, StoreError, unreachable
from jarenlab.events.event import Event, decode_cursor, encode_cursor, from_ms, from_row
from jarenlab.events.frame import events_frame
from jarenlab.events.modules import REPLAYING, Module
from jarenlab.events.rebuild import Installer, RebuildPlan
from jarenlab.events.signals import Signal, SignalHandler, Signals
from jarenlab.events.stream import EventStream
from jarenlab.frames import check_flags
from jarenlab.model import summarize, validation_errors
from jarenlab.reprs import table
from jarenlab.values import to_json

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.database import Database
    from jarenlab.model import Model
    from jarenlab.store import Store

#: ``handler(event, store) -> outcome or None``; runs inside the emit's transaction.
Handler = Callable[[Event, "Store"], Any]

_BATCH = 256
#: The longest the watcher blocks on its watch before it looks whether the store is closing (seconds).
_STOP_SLICE = 0.1
_ALL = 2**63 - 1  # a LIMIT that keeps every row


class Events:
    """The event ledger of a store (``store.events``).

    ``clock`` (epoch seconds; default the store's, ``jl.open(..., clock=...)``) stamps ``at``.
    """

    def __init__(self, store: Store, *, clock: Callable[[], float] | None = None) -> None:
        self.store = store
        self.clock = clock if clock is not None else store.clock
        self._declare(store.model)
        store.on_model(lambda old, new: self._declare(new))
        self._handlers: dict[str, list[Handler]] = {}
        self._changed = threading.Condition()
        self._version = 0
        self._closed = False
        self._watcher: threading.Thread | None = None
        #: The handler modules this object installed, and the store's record of them.
        self.graph = Installer(self)
        self._signals = Signals(self)
        store.db.on_commit(after=self._on_commit)
        store.on_close(self._close)

    def _declare(self, model: Model) -> None:
        """Take the event types, payload and outcome schemas a model declares (at open, after a
        migration)."""
        schemas: dict[str, dict[str, Any]] = {}
        outcomes: dict[str, dict[str, Any] | None] = {}
        for name, declared in model.events.items():
            payload, outcome, plain = split_declaration(declared)
            schemas[name] = payload
            if not plain:  # the {"payload", "outcome"} form: the outcome is declared (None: none)
                outcomes[name] = outcome
        self._schemas = schemas
        self._outcomes = outcomes
        self._validators = {name: jsonschema_rs.validator_for(s) for name, s in schemas.items()}
        self._outcome_validators = {
            name: jsonschema_rs.validator_for(s) for name, s in outcomes.items() if s is not None
        }

    # -- handlers --------------------------------------------------------------------------------
    def on(self, type: str) -> Callable[[Handler], Handler]:
        """Register a handler for ``type`` (a decorator); handlers run in registration order.

        The handler is called as ``handler(event, store)`` inside the emit's transaction; it may
        write collections, enqueue jobs (each records this event as its ``source_event``) and emit
        further events, and may return an outcome (JSON), which is stored with the event. Where the
        model declares ``{"payload": ..., "outcome": ...}`` for the type, exactly one handler must
        return the outcome and the schema must accept it; where it declares ``{"payload": ...}``
        alone, no handler may return one. Re-registering a top-level function with the same module
        and name (re-running a notebook cell) replaces the earlier one in place instead of adding
        a second copy; lambdas and nested functions are always added.
        """
        self._check_type(type)

        def register(fn: Handler) -> Handler:
            if not callable(fn):
                raise StoreError("JD2010", f"an event handler is a function(event, store), not {fn!r}")
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

    def off(self, type: str, handler: Handler | None = None) -> int:
        """Remove one handler of ``type`` (or all of them); return how many were removed."""
        handlers = self._handlers.get(type, [])
        keep = [] if handler is None else [h for h in handlers if h is not handler]
        removed = len(handlers) - len(keep)
        self._handlers[type] = keep
        return removed

    def handlers(self, type: str) -> list[Handler]:
        """The handlers registered for ``type``, in the order they run."""
        return list(self._handlers.get(type, []))

    # -- signals (jarenlab.events.signals) -------------------------------------------------------
    def on_signal(self, type: str) -> Callable[[SignalHandler], SignalHandler]:
        """Register ``handler(signal, work)`` for signals of ``type`` (a declared event type): it runs
        in the signal's transaction and may enqueue its work with ``work.enqueue(kind, payload, ...)``."""
        return self._signals.on(type)

    def off_signal(self, type: str, handler: SignalHandler | None = None) -> int:
        """Remove one signal handler of ``type`` (or all of them); return how many were removed."""
        return self._signals.off(type, handler)

    def signal_handlers(self, type: str) -> list[SignalHandler]:
        """The signal handlers registered for ``type``, in the order they run."""
        return self._signals.handlers(type)

    def signal(self, type: str, payload: Any = None) -> Signal | None:
        """Send a signal from a running queue handler (what ``ctx.signal`` calls): committed at once,
        only while the attempt holds its lease (else None, nothing written). JD2216 outside one."""
        return self._signals.send(type, payload)

    def signals(self) -> pd.DataFrame:
        """The live signals and their pending work, a DataFrame indexed by signal id."""
        return self._signals.frame()

    # -- emit ------------------------------------------------------------------------------------
    def check(self, type: str, payload: Any, *, dedupe_key: str | None = None) -> Any:
        """Check what :meth:`emit` would be given without emitting; returns the payload as stored
        JSON values. Raises JD2080 (undeclared type, invalid payload) or JD2010 (a bad dedupe key)."""
        validator = self._check_type(type)
        if dedupe_key is not None and (not isinstance(dedupe_key, str) or not dedupe_key):
            raise StoreError("JD2010", f"a dedupe key is a non-empty string, not {dedupe_key!r}")
        try:
            payload = to_json(payload)
        except JarenlabError as err:
            raise EventError("JD2080", f"payload of {type!r}: {err.reason}", errors=[err.reason]) from err
        if not validator.is_valid(payload):
            errors = validation_errors(validator, payload)
            raise EventError("JD2080", f"payload of {type!r} is invalid: {summarize(errors)}", errors=errors)
        return payload

    def emit(self, type: str, payload: Any, *, dedupe_key: str | None = None) -> Event:
        """Append an event and run its handlers in one transaction; return the event.

        The payload is validated against the schema the model declares for ``type`` (JD2080 with
        the validator's messages in ``err.errors``; an undeclared type is JD2080 too). A repeated
        ``dedupe_key`` returns the original event and outcome (``deduplicated=True``) and runs
        nothing; the same key on another type is JD2080. If a handler raises, the event, every
        write and every job it enqueued roll back and its exception propagates unchanged (with a
        note naming the handler). Inside an enclosing ``store.transaction()`` the event commits
        when that transaction does. A declared outcome is checked (JD2122).

        Called from a job handler, the event names the job and attempt, and it commits only while
        that attempt holds its lease: JD2067 (expired), JD2066 (claimed again) or JD2065 (settled,
        cancelled, or the attempt abandoned) otherwise, and nothing is appended. ``ctx.emit``
        instead stages the event to commit with the attempt's settlement.
        """
        replaying = REPLAYING.get()
        if replaying is not None:
            raise EventError(
                "JD2215", f"a handler emitted {type!r} while replaying events into {replaying}: a "
                "materialization's handlers only write its collection",
            )  # fmt: skip
        payload = self.check(type, payload, dedupe_key=dedupe_key)
        text = orjson.dumps(payload).decode()
        # Provenance only from the attempt the worker runs here (never from a variable a cell can set).
        running = acting()
        job, attempt = (None, None) if running is None else (running.job, running.attempt)
        db = self.store.db
        with db.transaction():
            # Emits are serialised from here to COMMIT (the ledger's lock, taken before the change
            # log's at commit: the two are always taken in this order). So seqs land in commit order,
            # and the dedupe lookup below sees any racing emit of the same key that committed first.
            db.serialize("events")
            if running is not None and running.fence is not None:
                running.fence.fence()  # a job handler's emit: only while its attempt holds the lease
            self.graph.check()
            if dedupe_key is not None:
                row = db.one("events.by_dedupe_key", {"dedupe_key": dedupe_key})
                if row is not None:
                    if row[1] != type:
                        raise EventError(
                            "JD2080",
                            f"dedupe key {dedupe_key!r} already belongs to a {row[1]!r} event (#{row[0]})",
                        )
                    return from_row(row, deduplicated=True)
            at_ms = int(self.clock() * 1000)
            seq = db.value(
                "events.append",
                {
                    "type": type,
                    "payload": text,
                    "at_ms": at_ms,
                    "dedupe_key": dedupe_key,
                    "caused_by_job": job,
                    "caused_by_attempt": attempt,
                },
            )
            db.notify("events")  # other processes' following streams wake at the commit
            event = Event(seq, type, payload, from_ms(at_ms), dedupe_key, None, job, attempt)
            outcome = self._run_handlers(event)
            if outcome is not None:
                db.run("events.set_outcome", {"outcome": orjson.dumps(outcome).decode(), "seq": seq})
                event = Event(seq, type, payload, event.at, dedupe_key, outcome, job, attempt)
        return event

    # -- modules ---------------------------------------------------------------------------------
    def install(
        self,
        *modules: Module,
        dry_run: bool = False,
        progress: bool | None = None,
        retire: Sequence[str] = (),
    ) -> RebuildPlan:
        """Install handler modules, in order; rebuild their new or raised materializations.

        The modules are checked against those the store records: a recorded module left out is
        JD2211 (``retire=[name]`` drops it from the record on purpose), modules in another order
        JD2212 (new ones go after the recorded ones), a materialization declared below its
        recorded version JD2213. Then, in one transaction that holds the ledger's lock, every
        materialization whose version is new or raised is emptied and rebuilt by replaying every
        event of its types from the start (expired ones too); readers keep seeing the old
        collection until it commits, and a failure leaves it as it was. ``progress`` shows a bar
        (default: for replays of 10,000 events or more). The handlers are then registered: module
        handlers after those registered with :meth:`on`, in module order.

        ``dry_run=True`` checks and returns the :class:`RebuildPlan` without writing or registering.
        Once a store records modules, an emit through a store object that has not installed them
        as recorded is JD2214.

        >>> # plan = store.events.install(flights, dry_run=True); plan   # what it would rebuild
        """
        if not is_flag(dry_run) or not is_progress(progress):
            raise StoreError(
                "JD0006", f"install() takes dry_run=True or False and progress=True, False or None, not "
                f"dry_run={dry_run!r}, progress={progress!r}",
            )  # fmt: skip
        if isinstance(retire, str) or not all(isinstance(name, str) for name in retire):
            raise StoreError("JD0006", f"install(retire=...) takes a list of module names, not {retire!r}")
        return self.graph.install(modules, dry_run=dry_run, progress=progress, retire=retire)

    def modules(self) -> tuple[str, ...]:
        """The module names the store records, in their order (empty: none installed yet)."""
        return self.graph.recorded()

    def materializations(self) -> pd.DataFrame:
        """The store's materializations as recorded: collection, version, when last rebuilt
        (``rebuilt_at``, UTC) and how many events that replayed, indexed by name."""
        return self.graph.frame()

    def _run_handlers(self, event: Event) -> Any:
        outcome, owner = None, None
        token = current_event.set(event.seq)  # jobs they enqueue record the event as their source
        try:
            for handler in self.handlers(event.type):
                try:
                    result = handler(event, self.store)
                except BaseException as exc:
                    exc.add_note(f"while handling event #{event.seq} {event.type!r} in {_name(handler)}")
                    raise
                if result is None:
                    continue
                if owner is not None:
                    raise EventError(
                        "JD2082",
                        f"both {_name(owner)} and {_name(handler)} returned an outcome for {event.type!r}",
                    )
                try:
                    outcome, owner = to_json(result), handler
                except JarenlabError as err:
                    raise EventError(
                        "JD2082", f"{_name(handler)} returned an outcome that is not JSON: {err.reason}"
                    ) from err
        finally:
            current_event.reset(token)
        self._check_outcome(event.type, outcome, owner)
        return outcome

    def _check_outcome(self, type: str, outcome: Any, owner: Any) -> None:
        """JD2122 unless the outcome matches the type's declaration (plain types take any)."""
        if type not in self._outcomes:
            return
        validator = self._outcome_validators.get(type)
        if validator is None:
            if outcome is not None:
                raise EventError(
                    "JD2122", f"{_name(owner)} returned an outcome for {type!r}, which declares none"
                )
            return
        if outcome is None:
            handlers = ", ".join(_name(h) for h in self.handlers(type)) or "none registered"
            raise EventError(
                "JD2122", f"{type!r} declares an outcome and no handler returned one (handlers: {handlers})"
            )
        if not validator.is_valid(outcome):
            errors = validation_errors(validator, outcome)
            raise EventError(
                "JD2122", f"the outcome {_name(owner)} returned for {type!r} is invalid: {summarize(errors)}",
                errors=errors,
            )  # fmt: skip

    def outcome_schema(self, type: str) -> dict[str, Any] | None:
        """The outcome schema the model declares for ``type`` (None: none declared)."""
        self._check_type(type)
        return self._outcomes.get(type)

    def _check_type(self, type: str) -> jsonschema_rs.Validator:
        try:
            return self._validators[type]
        except (KeyError, TypeError):
            declared = ", ".join(map(repr, self._validators)) or "none"
            raise EventError(
                "JD2080", f"event type {type!r} is not declared in the model (declared: {declared})"
            ) from None

    # -- streams -----------------------------------------------------------------------------------
    def tail(
        self,
        last: int = 10,
        *,
        follow: bool = True,
        poll: float = 0.5,
        timeout: float | None = None,
        until: Callable[[Event], bool] | None = None,
        type: str | Sequence[str] | None = None,
    ) -> EventStream:
        """The last ``last`` committed events, then (``follow=True``) new ones as they commit.

        Like ``tail -f -n last``. Expired events are skipped. In a notebook, bound it with
        ``timeout=`` seconds or ``until=predicate``, or call ``.show()`` and stop the cell.

        >>> # for ev in store.events.tail(last=5, timeout=30): print(ev)
        """
        if not is_count(last):
            raise StoreError("JD2010", f"last must be a non-negative integer, not {last!r}")
        _check_stream(poll, timeout, until)
        types = self._types(type)
        db = self.store.db
        with db.snapshot(own_writes=False):
            boundary = self._boundary()
            head = self._head()
            rows = _latest(db, boundary, types, (), last)
        return EventStream(
            self, after=head, backlog=[from_row(r) for r in reversed(rows)], follow=follow, poll=poll,
            timeout=timeout, until=until, types=types, strict=False,
        )  # fmt: skip

    def resume(
        self,
        cursor: str | None = None,
        *,
        follow: bool = False,
        poll: float = 0.5,
        timeout: float | None = None,
        until: Callable[[Event], bool] | None = None,
        type: str | Sequence[str] | None = None,
    ) -> EventStream:
        """The committed events after ``cursor`` (None: from the expired boundary on).

        By default it stops once caught up; ``follow=True`` keeps following like ``tail``.
        JD2081 (raised here, not on first ``next``) when the cursor is malformed, lies before the
        expired boundary, or is ahead of the ledger; a boundary that a peer moves past the stream
        while it runs raises JD2081 from ``next``.
        """
        _check_stream(poll, timeout, until)
        types = self._types(type)
        with self.store.db.snapshot(own_writes=False):
            boundary = self._boundary()
            head = self._head()
        seq = boundary if cursor is None else decode_cursor(cursor)
        if seq < boundary:
            raise EventError(
                "JD2081", f"cursor {cursor!r} (after #{seq}) lies before the expired boundary #{boundary}"
            )
        if seq > head:
            raise EventError(
                "JD2081", f"cursor {cursor!r} (after #{seq}) is ahead of the latest event #{head}"
            )
        return EventStream(
            self, after=seq, backlog=[], follow=follow, poll=poll, timeout=timeout, until=until,
            types=types, strict=True,
        )  # fmt: skip

    @property
    def version(self) -> int:
        """How many times this ledger has been woken (a stream waits for it to move)."""
        return self._version

    @property
    def closed(self) -> bool:
        """True once the store closed the ledger."""
        return self._closed

    def read_after(self, seq: int, *, types: tuple[str, ...], strict: bool) -> tuple[list[Event], int]:
        """One batch of committed events after ``seq``, and how far it scanned (streams read with it)."""
        db = self.store.db
        with db.snapshot(own_writes=False):
            boundary = self._boundary()
            if boundary > seq:
                if strict:
                    raise EventError(
                        "JD2081", f"history was expired through #{boundary} past this stream (#{seq})"
                    )
                seq = boundary
            head = self._head()
            if types:
                rows = db.all(
                    "events.after_of_types", {"after": seq, "types": types, "limit": _BATCH}, types=len(types)
                )
            else:
                rows = db.all("events.after", {"after": seq, "limit": _BATCH})
        events = [from_row(r) for r in rows]
        return events, (events[-1].seq if len(events) == _BATCH else max(seq, head))

    # -- history ---------------------------------------------------------------------------------
    def expire_history(self, *, through: str | Event) -> str:
        """Move the expired boundary forward to ``through`` (a cursor or an Event); return the boundary.

        Deletes nothing: expired events stay stored (dedupe still sees them) but tail, resume and
        frame no longer serve them, and resuming from a cursor before the boundary is JD2081. A
        ``through`` at or before the current boundary is a no-op (the boundary never moves back);
        one ahead of the latest event is JD2081.
        """
        seq = through.seq if isinstance(through, Event) else decode_cursor(through)
        db = self.store.db
        with db.transaction():
            head = self._head()
            if seq > head:
                raise EventError("JD2081", f"cannot expire through #{seq}: the latest event is #{head}")
            db.run("events.expire_through", {"seq": seq})
            boundary = self._boundary()
        return encode_cursor(boundary)

    def expired_through(self) -> str:
        """The cursor of the expired boundary (``resume`` accepts it and anything after it)."""
        with self.store.db.snapshot(own_writes=False):
            return encode_cursor(self._boundary())

    def head(self) -> str:
        """The cursor after the latest committed event: ``resume(events.head(), follow=True)`` sees only new ones."""
        with self.store.db.snapshot(own_writes=False):
            return encode_cursor(self._head())

    # -- notebook views --------------------------------------------------------------------------
    def frame(
        self,
        type: str | Sequence[str] | None = None,
        since: str | dt.datetime | None = None,
        limit: int | None = None,
        *,
        flatten: bool = False,
    ) -> pd.DataFrame:
        """Committed, unexpired events as a DataFrame indexed by ``seq``, oldest first.

        ``type`` filters by type (one or several); ``since`` is a cursor (events after it) or a
        datetime (events at or after it; naive means UTC); ``limit`` keeps the latest N.
        ``flatten=True`` spreads payload members into ``payload.<member>`` columns.
        """
        check_flags("frame", flatten=flatten)
        types = self._types(type)
        at_ms: tuple[int, ...] = ()
        after = 0
        if isinstance(since, dt.datetime):
            aware = since if since.tzinfo is not None else since.replace(tzinfo=dt.UTC)
            at_ms = (int(aware.timestamp() * 1000),)
        elif since is not None:
            after = decode_cursor(since)
        if limit is not None and not is_count(limit):
            raise StoreError("JD2010", f"limit must be a non-negative integer, not {limit!r}")
        db = self.store.db
        with db.snapshot(own_writes=False):
            boundary = self._boundary()
            rows = _latest(db, max(boundary, after), types, at_ms, _ALL if limit is None else limit)
        return events_frame([from_row(r) for r in reversed(rows)], flatten=flatten)

    def __repr__(self) -> str:
        counts = {t: len(h) for t, h in self._handlers.items() if h}
        return f"<jarenlab.Events {len(self._schemas)} types, handlers {counts}>"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(t)}</code></td><td>"
            f"{html.escape(', '.join(_name(h) for h in self._handlers.get(t, []))) or '&mdash;'}</td></tr>"
            for t in self._schemas
        )
        return f"<div><b>event ledger</b>{table(['type', 'handlers'], rows)}</div>"

    # -- plumbing ----------------------------------------------------------------------------------
    def _types(self, type: str | Sequence[str] | None) -> tuple[str, ...]:
        many = isinstance(type, list | tuple | set | frozenset)
        types: tuple[Any, ...] = () if type is None else tuple(type) if many else (type,)
        for t in types:
            self._check_type(t)
        return types

    def _boundary(self) -> int:
        return int(self.store.db.value("events.boundary") or 0)

    def _head(self) -> int:
        return int(self.store.db.value("events.head"))

    def _on_commit(self, changes: object) -> None:
        self.wake()

    def wake(self) -> None:
        """Wake every stream waiting for events (a commit landed, or a stream is stopping)."""
        with self._changed:
            self._version += 1
            self._changed.notify_all()

    def wait_for_commit(self, seen: int, seconds: float, poll: float) -> None:
        """Wait up to ``seconds`` for a commit after :attr:`version` ``seen`` (this store's, or,
        through the watcher, another process's). Streams that follow the ledger call this."""
        if self._watcher is None:
            self._watch_commits(poll)
        with self._changed:
            if self._version == seen and not self._closed:
                self._changed.wait(seconds)

    def _watch_commits(self, interval: float) -> None:
        """Start the thread that wakes following streams when another process commits events."""
        with self._changed:
            if self._watcher is not None or self._closed:
                return
            self._watcher = threading.Thread(
                target=self._watching, args=(interval,), name="jarenlab-events-watch", daemon=True
            )
        self._watcher.start()

    def _watching(self, interval: float) -> None:
        watch = None
        try:
            # Block on the watch (PostgreSQL: LISTEN, woken by the emit's NOTIFY at its commit; else
            # polling every ``interval``) in slices short enough to notice the store closing.
            while not self._closed:
                try:
                    if watch is None:
                        watch = self.store.db.watch(interval, "events")
                    if watch.wait(min(max(interval, 0.01), _STOP_SLICE)) and not self._closed:
                        self.wake()
                except StoreError as err:
                    if not unreachable(err) or self.store.db.closed:
                        raise
                    # The server is away: look again soon (the watch listens again once it is
                    # back); wake the streams, whose own reads meet the outage and say so.
                    self.wake()
                    time.sleep(_STOP_SLICE * 5)
        except StoreError:
            return  # the store closed under us
        except Exception as exc:  # a watcher must not die silently
            warnings.warn(f"jarenlab events watcher stopped: {exc!r}", RuntimeWarning, stacklevel=1)
        finally:
            if watch is not None:
                watch.close()

    def _close(self) -> None:
        self._closed = True
        self.wake()
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=5)


def split_declaration(declared: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None, bool]:
    """A model's event declaration as (payload schema, outcome schema or None, plain).

    ``{type: schema}`` is plain (its outcome unchecked); ``{type: {"payload": schema, "outcome":
    schema}}`` declares both (``"outcome"`` left out: the event has none).

    >>> split_declaration({"type": "object"})
    ({'type': 'object'}, None, True)
    >>> split_declaration({"payload": {"type": "object"}, "outcome": {"type": "integer"}})
    ({'type': 'object'}, {'type': 'integer'}, False)
    """
    if "payload" in declared and "type" not in declared:
        return declared["payload"], declared.get("outcome"), False
    return declared, None, True


def _latest(
    db: Database, after: int, types: tuple[str, ...], at_ms: tuple[int, ...], limit: int
) -> list[tuple[Any, ...]]:
    """The newest ``limit`` events after ``after`` (of ``types``; stamped at or after ``at_ms``), newest first."""
    also = ("at_or_after",) if at_ms else ()
    params: dict[str, Any] = {"after": after, "limit": limit}
    if at_ms:
        params["at_ms"] = at_ms[0]
    if types:
        return db.all("events.latest_of_types", {**params, "types": types}, types=len(types), also=also)
    return db.all("events.latest", params, also=also)


def _name(fn: object) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _check_stream(poll: Any, timeout: Any, until: Any) -> None:
    """JD2010 for a stream option of the wrong kind (before any stream exists)."""
    for name, value, none_ok in (("poll", poll, False), ("timeout", timeout, True)):
        if value is None and none_ok:
            continue
        if not is_seconds(value):
            raise StoreError("JD2010", f"{name} must be a finite number of seconds >= 0, not {value!r}")
    if until is not None and not callable(until):
        raise StoreError("JD2010", f"until must be a function of the event, not {until!r}")
