"""The store's change hub: writes the change log, delivers records to live queries, polls.

One :class:`ChangeHub` per store (``store.changes``). Its ``before_commit`` hook writes the
commit's record in the same transaction; its ``after_commit`` hook delivers the record to this
process's live queries at once, from the in-memory changes. A poller thread (started with the
first live query) blocks on the backend's watch (:meth:`jarenlab.database.Database.watch`:
SQLite polls ``PRAGMA data_version`` on a connection of its own; PostgreSQL LISTENs, woken by
the NOTIFY of each commit and at least every second anyway, or polls when opened with
``notify=False``; it looks every ``poll_interval`` seconds, or every 0.1 s if that is sooner, so
closing the store stops it promptly) and reads the log since the last delivered seq, so other
processes' commits arrive too. Delivery is serialised by one lock and strictly in seq order; a
record that is missing locally is read from the log, together with the high watermark in one
snapshot; a gap past retention (or a compact record) re-seeds the affected queries from a fresh
run. A subscriber that writes does not recurse: its
commit is queued and delivered after the current record reached everyone. Closing the store
stops the poller and closes its watch.

When the database cannot be reached (a PostgreSQL server restarting or gone, a dropped
connection: the retryable JD2005 with ``condition="connection"``), the poller does not stop: every
live query turns ``stale`` (its ``on_error`` subscribers get the error once, the query stays
open), the hub warns once, and the poller tries again with a growing, jittered pause (at most
:data:`OUTAGE_CAP` seconds). Once a read succeeds it listens again, reads what it missed from the
change log (re-seeding from a fresh run where the log cannot tell: a gap, or a log behind what was
delivered, as after a server restored to an earlier state), and only then calls the queries
``live`` again. Any other failure of the poller closes every live query with that error
(``on_error``), never silently.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"t": {"schema": {"type": "object"}, "key": None,
...          "identity": "integer"}}}
>>> with jl.open(model=model) as store:
...     _ = store["t"].insert({"n": 1})
...     store.changes.read(after=0)[0].changes
{'t': {1: {'n': 1}}}
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.arguments import is_count
from jarenlab.backoff import backoff
from jarenlab.database import Change, Moves, NetChanges, net_changes
from jarenlab.errors import JarenlabError, LiveError, StoreError, unreachable
from jarenlab.live.capture import ChangeLog, Record
from jarenlab.live.feed import ChangePage, DocumentChange, decode_cursor, document_changes, encode_cursor

if TYPE_CHECKING:
    from jarenlab.live.live import LiveQuery
    from jarenlab.model import Model
    from jarenlab.store import Store

#: The longest the poller blocks on its watch before it looks whether the store is closing (seconds).
STOP_SLICE = 0.1
#: The first and the longest pause (seconds, before jitter) between the poller's attempts to reach a
#: database it lost.
OUTAGE_BASE, OUTAGE_CAP = 0.05, 1.0


class ChangeHub:
    """Change capture and live-query delivery for one store.

    Settings (plain attributes, change them before registering queries): ``max_queries`` (64),
    ``max_maintained`` (entries one query may keep, 500,000), ``poll_interval`` (seconds, 0.05),
    and ``log.retention`` (records kept, 1000) / ``log.inline_limit`` (ops above which a record is
    written compact, 10,000).
    """

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        self.log = ChangeLog(
            {name: spec.composite or spec.key_type for name, spec in store.model.collections.items()},
            clock=clock,
        )
        self.max_queries = 64
        self.max_maintained = 500_000
        self.poll_interval = 0.05
        self.queries: list[LiveQuery] = []
        self.lock = threading.RLock()
        self._delivering = False
        self._pending: dict[int, tuple[NetChanges, Moves]] = {}
        self._last: int | None = None
        self._tx = threading.local()
        #: Seqs of this process's migrations: not delivered, the queries re-seed after the reload.
        self._skip: set[int] = set()
        #: Collections those migrations rewrote (re-seeded at the reload).
        self._touched: set[str] = set()
        #: The seq of the last change record this store committed.
        self._own_seq: int | None = None
        #: Told of each of this store's committed records (:meth:`on_own_commit`).
        self._own_listeners: list[Callable[[int, list[Change] | None], None]] = []
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        #: The error of the ongoing outage (None: the database is reachable), and how many outages.
        self.outage: StoreError | None = None
        self.outages = 0
        #: Jitter for the pauses between attempts to reach a lost database (the store's source).
        self.rand: Callable[[], float] = store.random
        if not store.read_only:
            store.db.on_commit(before=self._before_commit)
        store.db.on_commit(after=self._after_commit)
        store.on_close(self.close)
        store.on_model(self._migrated)

    # -- the log ---------------------------------------------------------------------------------
    def bounds(self) -> tuple[int, int]:
        """(earliest available seq, high watermark) of the change log."""
        return self.log.bounds(self.store.db)

    def high_watermark(self) -> int:
        """The newest committed seq of the change log (0 if nothing was ever recorded)."""
        return self.log.high_watermark(self.store.db)

    def read(self, *, after: int, limit: int = 1000) -> list[Record]:
        """Records with ``seq > after``; raises JD2128 when ``after + 1`` was pruned already."""
        db = self.store.db
        records = self.log.read(db, after=after, limit=limit)
        if (records and records[0].seq != after + 1) or (not records and self.log.pruned(db, after)):
            raise _reset(f"the change log no longer holds seq {after + 1}")
        return records

    def migrating(self, collections: set[str]) -> None:
        """Inside a migration's transaction: its commit is written compact, naming ``collections``
        (other processes' live queries re-seed), and this process's queries re-seed once the store
        adopted the new model (:meth:`jarenlab.store.Store.reload`), not from the commit's changes."""
        self._tx.migrating = set(collections)

    def on_own_commit(self, listener: Callable[[int, list[Change] | None], None]) -> None:
        """Call ``listener(seq, changes)`` after each commit of this store that wrote change record
        ``seq``, in the committing thread, with the commit's changes (None for a migration's,
        which names no keys). A rolled-back transaction is never told."""
        self._own_listeners.append(listener)

    def follows_own(self) -> bool:
        """Inside a commit, after the change hub's before-commit hook: True when this commit's
        change record directly follows the last record this store committed, so no other store or
        process committed documents (nor migrated the store) in between. False when unsure."""
        return bool(getattr(self._tx, "follows", False))

    # -- the public feed -------------------------------------------------------------------------
    def __call__(self, after: str | None = None, *, limit: int = 1000) -> ChangePage:
        """The committed changes after ``after`` (a cursor; None: from the first record), in commit
        order, as minimal RFC 6902 patches per document (:mod:`jarenlab.live.feed`).

        Reads at most ``limit`` commits; ``page.cursor`` resumes after them. Raises JD2128
        (reset required) when the log no longer holds the commit after ``after`` (retention) or
        holds it only in compact form (a bulk write of more than ``log.inline_limit`` documents):
        copy the data with :meth:`snapshot` and follow on from its cursor. JD2129 for a cursor that
        is malformed or ahead of the log.
        """
        if not is_count(limit) or limit < 1:
            raise StoreError("JD2010", f"limit is an integer >= 1, not {limit!r}")
        seq = 0 if after is None else decode_cursor(after)
        db = self.store.db
        with db.snapshot():
            high = self.log.high_watermark(db)
            records = self.log.read_ops(db, after=seq, limit=limit) if high > seq else []
        if seq > high:
            raise LiveError("JD2129", f"the cursor is after seq {seq}, ahead of the log (at {high})")
        if high > seq and (not records or records[0][0] != seq + 1):
            raise _reset(f"the change log no longer holds the commit after seq {seq} (retention)")
        items: list[DocumentChange] = []
        read = 0
        key_types = self.log.key_types
        for number, at_ms, ops in records:
            if ops is None:
                if not read:
                    raise _reset(
                        f"commit {number} was recorded compactly, without its patches (a migration, a "
                        f"write of more than {self.log.inline_limit} documents or of documents too large "
                        "to patch, or a commit of an earlier version of jarenlab)"
                    )
                break
            items.extend(document_changes(number, at_ms, ops, key_types))
            read += 1
        last = records[read - 1][0] if read else seq
        return ChangePage(items, encode_cursor(last), read, last < high)

    def cursor(self) -> str:
        """The change-feed cursor of the newest commit: ``store.changes(after=...)`` gives what follows."""
        return encode_cursor(self.log.high_watermark(self.store.db))

    def snapshot(self, collections: Iterable[str] | None = None) -> tuple[dict[str, dict[str, Any]], str]:
        """A copy of the documents (``{collection: {key: document}}``, every collection unless named)
        and the change-feed cursor of the same state, read in one snapshot: the starting point of a
        follower, and what a reset re-seeds from. Keys are written as the feed's JSON Pointers
        address them (``str(key)``: ``/flights/7/...``), so ``apply_patch(copy, page.patch)`` works."""
        store = self.store
        names = list(store.collections) if collections is None else list(collections)
        colls = [store.collection(name) for name in names]
        db = store.db
        loads = orjson.loads
        with db.snapshot():
            high = self.log.high_watermark(db)
            data = {}
            for coll in colls:
                keys, texts = coll.texts()
                data[coll.name] = {str(k): loads(t) for k, t in zip(keys, texts)}
        return data, encode_cursor(high)

    def _before_commit(self, changes: list[Change]) -> None:
        migrating = getattr(self._tx, "migrating", None)
        self._tx.migrating = None
        seq = self.log.write(self.store.db, changes, compact=migrating)
        # Seqs are max + 1 in commit order; only a committed record of ours counts (a rolled-back
        # one frees its seq for another process's commit).
        self._tx.follows = seq is not None and self._own_seq is not None and seq == self._own_seq + 1
        if migrating is not None and seq is not None:
            with self.lock:  # before COMMIT: the poller must not deliver it first
                self._skip.add(seq)
                self._touched |= migrating
        self._tx.pending = (changes, seq, migrating is None)

    def _after_commit(self, changes: list[Change]) -> None:
        stashed = getattr(self._tx, "pending", None)
        self._tx.pending = None
        if stashed is None or stashed[0] is not changes or stashed[1] is None:
            return
        self._own_seq = stashed[1]
        for listener in self._own_listeners:
            listener(stashed[1], changes if stashed[2] else None)
        if not stashed[2]:
            return  # a migration: its queries re-seed at the reload
        with self.lock:
            if not self.queries:
                return
            self._pending[stashed[1]] = net_changes(changes)
            if not self._delivering and self.outage is None:
                try:
                    self._drain(check_log=False)
                except StoreError as err:  # committed; the poller catches up once it can read
                    if not unreachable(err):
                        raise
                    self._went_stale(err)

    def _migrated(self, old: Model, new: Model) -> None:
        """The store adopted a migrated model: a query whose collection is gone (renamed or
        dropped) closes with JD2111; one whose collection changed or was rewritten re-seeds from
        what is committed (the adoption may happen inside a transaction that is about to roll
        back), closing with JD2111 when its query fails against the new model."""
        self.log.key_types = {name: spec.composite or spec.key_type for name, spec in new.collections.items()}
        with self.lock:
            touched, self._touched = self._touched, set()
            for q in list(self.queries):
                name = q.collection.name
                if name not in new.collections:
                    q.fail(
                        LiveError(
                            "JD2111",
                            f"a migration renamed or dropped collection {name!r}; open a new live query",
                            collection=name,
                        )
                    )
                elif name in touched or old.collections.get(name) != new.collections[name]:
                    committed = self.store.db.in_transaction  # read past it: it is rolling back
                    with self.store.db.snapshot(own_writes=False) if committed else contextlib.nullcontext():
                        q.reseed(migrated=True)

    # -- delivery --------------------------------------------------------------------------------
    def _drain(self, *, check_log: bool) -> None:
        """Deliver every record after the last one, in seq order (caller holds the lock)."""
        self._delivering = True
        try:
            while True:
                last = self._last or 0
                for seq in [s for s in self._pending if s <= last]:
                    del self._pending[seq]
                nxt = last + 1
                if nxt in self._pending:
                    net, moved = self._pending.pop(nxt)
                    self._deliver(
                        Record(nxt, int(self.clock() * 1000), self.log.source, (), net, moved=moved)
                    )
                    continue
                if not self._pending and not check_log:
                    return
                check_log = False
                records, high = self._read_after(last)
                if not records:
                    if high > last:  # committed records after ``last`` that the log no longer holds
                        self._reseed_all(high)
                    continue
                if records[0].seq != nxt:
                    self._reseed_all(high)
                    continue
                for rec in records:
                    if rec.seq in self._skip:
                        self._skip.discard(rec.seq)
                        self._last = rec.seq
                        continue
                    local = self._pending.pop(rec.seq, None)
                    self._deliver(
                        rec
                        if local is None
                        else Record(rec.seq, rec.at_ms, rec.source, rec.collections, local[0], moved=local[1])
                    )
                check_log = len(records) == 256
        finally:
            self._delivering = False

    def _read_after(self, last: int) -> tuple[list[Record], int]:
        """The next records after ``last`` and the high watermark, read in ONE snapshot.

        In one snapshot the log is one contiguous run of seqs, so a first record past ``last + 1``
        (or no record while the watermark is past ``last``) can only mean that ``last + 1`` was
        pruned: a real gap. Read apart, a commit landing between the two reads looked like one.
        """
        db = self.store.db
        with db.snapshot():  # the poller and after-commit delivery run outside any transaction
            return self.log.read(db, after=last, limit=256), self.log.high_watermark(db)

    def _deliver(self, rec: Record) -> None:
        for q in list(self.queries):
            q.receive(rec)
        self._last = rec.seq

    def _reseed_all(self, high: int) -> None:
        """A gap past retention: every query re-seeds from a fresh run (JD2128 is never guessed over).

        ``high`` is the watermark read with the gap; each re-seed reads its own snapshot, at or
        after it, and ignores the records it already holds.
        """
        for q in list(self.queries):
            q.reseed()
        self._last = high

    # -- registration ----------------------------------------------------------------------------
    def register(self, query: LiveQuery) -> None:
        """Add a live query (JD0052 beyond ``max_queries``); seeds it under the delivery lock."""
        with self.lock:
            if len(self.queries) >= self.max_queries:
                raise LiveError(
                    "JD0052", f"this store already has {self.max_queries} live queries (max_queries)"
                )
            query.reseed(emit=False)
            if self._last is None or not self.queries:
                self._last = query.seq
            self.queries.append(query)
        self._start_poller()

    def unregister(self, query: LiveQuery) -> None:
        """Forget a closed live query."""
        with self.lock:
            if query in self.queries:
                self.queries.remove(query)

    def _start_poller(self) -> None:
        if self._poller is not None and self._poller.is_alive():
            return
        self._stop.clear()
        self._poller = threading.Thread(target=self._poll, name="jarenlab-live-poller", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        db = self.store.db
        watch = None
        failures = 0
        try:
            while not self._stop.is_set():
                try:
                    if watch is None:
                        watch = db.watch(self.poll_interval)
                    # Block on the watch, so a notification (PostgreSQL's NOTIFY) wakes the poller at
                    # once, in slices short enough that close() still ends it promptly.
                    woke = watch.wait(min(self.poll_interval, STOP_SLICE))
                    if self._stop.is_set():
                        return
                    if not woke and self.outage is None:
                        continue
                    with self.lock:
                        if self.queries and not self._delivering:
                            if self.outage is not None:
                                self._recover()
                            else:
                                self._drain(check_log=True)
                        elif not self.queries:
                            self._recovered()
                    failures = 0
                except StoreError as err:
                    if db.closed or self._stop.is_set() or err.code == "JD2063":
                        return  # the store closed under us
                    if not err.retryable:
                        raise
                    if not unreachable(err):  # busy (SQLite's lock): look again at the next tick
                        self._stop.wait(STOP_SLICE)
                        continue
                    self._went_stale(err)
                    failures += 1
                    self._stop.wait(backoff(failures, base=OUTAGE_BASE, cap=OUTAGE_CAP, rand=self.rand))
        except Exception as exc:  # a poller must not die silently: its queries close with the error
            self._poller_failed(exc)
        finally:
            if watch is not None:
                watch.close()

    def _went_stale(self, err: StoreError) -> None:
        """The database cannot be reached: every live query is stale (once per outage)."""
        with self.lock:
            first = self.outage is None
            self.outage = err
            if first:
                self.outages += 1
            queries = list(self.queries)
        if first and queries:
            warnings.warn(
                f"jarenlab live queries are stale, the database cannot be reached: {err}; retrying",
                RuntimeWarning,
                stacklevel=2,
            )
        for q in queries:
            q.mark_stale(err)

    def _recover(self) -> None:
        """Catch up after an outage (caller holds the lock): read what was missed, then go live.

        A log whose watermark is behind what was delivered lost commits this hub had seen (a
        server restored to an earlier state, or one that lost its last commits): every query
        re-seeds from a fresh run, as for a gap.
        """
        high = self.high_watermark()
        if high < (self._last or 0):
            self._reseed_all(high)
        self._drain(check_log=True)
        self._recovered()

    def _recovered(self) -> None:
        if self.outage is None:
            return
        self.outage = None
        for q in list(self.queries):
            q.mark_live()

    def _poller_failed(self, exc: Exception) -> None:
        err = (
            exc
            if isinstance(exc, JarenlabError)
            else StoreError("JD2005", f"the live poller failed: {exc!r}", condition="other")
        )
        if err is not exc:
            err.__cause__ = exc
        warnings.warn(f"jarenlab live poller stopped: {exc!r}", RuntimeWarning, stacklevel=1)
        with self.lock:
            queries = list(self.queries)
        for q in queries:
            q.fail(err)

    def stats(self) -> dict[str, Any]:
        """Live queries for ``store.stats()``: how many, their updates, how many per strategy, and where
        their last seeds came from (``seeds``: ``columns``, ``sql``, or a rerun's mode)."""
        with self.lock:
            queries = list(self.queries)
        by_mode: dict[str, int] = {}
        seeds: dict[str, int] = {}
        for q in queries:
            by_mode[q.mode.strategy] = by_mode.get(q.mode.strategy, 0) + 1
            source = q.seeded.get("source", "sql")
            seeds[source] = seeds.get(source, 0) + 1
        return {
            "queries": len(queries),
            "updates": sum(q.updates for q in queries),
            "seeds": seeds,
            "stale": sum(q.stale is not None for q in queries),
            "outages": self.outages,
            **by_mode,
        }

    def close(self) -> None:
        """Close every live query and stop the poller (``store.close()`` calls this)."""
        self._stop.set()
        poller = self._poller
        if poller is not None and poller is not threading.current_thread():
            poller.join(timeout=5)
        with self.lock:
            for q in list(self.queries):
                q.close()
            self.queries.clear()


def _reset(why: str) -> LiveError:
    return LiveError(
        "JD2128",
        f"{why}: copy the data again (store.changes.snapshot()) and follow on from the cursor it gives",
    )
