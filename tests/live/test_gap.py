"""Commit-order appends on a server: writer processes with random rollbacks and random delays before
COMMIT, and one reader following the change log (and the event ledger) while they write.

Every committed record must arrive exactly once, in seq order, with no hole and no re-seed: a
record appended with a seq that another transaction commits before it, or a rolled-back seq, would
show up here as a hole (a re-seed) or as a record the reader never sees.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import threading
import time
import traceback
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.live.capture import Record

from .conftest import MODEL

WRITERS = 8
COMMITS = 120  # attempts per writer; about a fifth roll back
EVENTS_MODEL: dict[str, Any] = {**MODEL, "events": {"wrote": {"type": "object", "required": ["id"]}}}


class Rollback(Exception):
    """Raised just before COMMIT, after the change log's record was appended."""


def _writer(target: dict[str, Any], worker: int, barrier: Any, results: Any) -> None:
    try:
        results.put(_write(target, worker, barrier))
    except BaseException:
        results.put(traceback.format_exc())
        raise


def _write(target: dict[str, Any], worker: int, barrier: Any) -> list[tuple[str, bool]]:
    rng = random.Random(worker)
    committed: list[tuple[str, bool]] = []
    with jl.open(target["path"], schema=target.get("schema")) as store:
        store.changes.log.retention = 1_000_000  # never prune: a re-seed could only mean a hole
        doomed = threading.local()

        def before_commit(changes: Any) -> None:
            time.sleep(rng.random() * 0.003)  # holding the change log's lock (and the ledger's)
            if doomed.value:
                raise Rollback

        store.db.on_commit(before=before_commit)  # after the change log's hook: runs after the append
        barrier.wait(60)
        for i in range(COMMITS):
            key, emits = f"w{worker}-{i}", rng.random() < 0.5
            doomed.value = rng.random() < 0.2
            try:
                with store.transaction():
                    store["items"].insert({"id": key, "n": i})
                    time.sleep(rng.random() * 0.002)
                    if emits:
                        store.events.emit("wrote", {"id": key})
            except Rollback:
                continue
            committed.append((key, emits))
    return committed


@pytest.mark.slow
@pytest.mark.needs("concurrent_writers", "concurrent writers in commit order: the server's advisory locks")
def test_followers_see_every_committed_record_once_in_order(open_store: Any) -> None:
    store = open_store(EVENTS_MODEL)
    hub = store.changes
    delivered: list[Record] = []
    reseeds: list[int] = []
    deliver, reseed_all = hub._deliver, hub._reseed_all

    def spy_deliver(rec: Record) -> None:
        delivered.append(rec)
        deliver(rec)

    def spy_reseed_all(high: int) -> None:
        reseeds.append(len(delivered))
        reseed_all(high)

    hub._deliver, hub._reseed_all = spy_deliver, spy_reseed_all  # type: ignore[method-assign]
    live = store["items"].live({"$for": {"r": "$[*]"}, "$return": "$r.id"})
    stream = store.events.resume(follow=True, poll=0.2, timeout=300)
    followed: list[Any] = []
    follower = threading.Thread(target=lambda: followed.extend(stream))
    follower.start()

    ctx = mp.get_context("forkserver")  # a fresh interpreter, jarenlab imported once for all writers
    ctx.set_forkserver_preload(["jarenlab", "jarenlab.store"])
    barrier, results = ctx.Barrier(WRITERS), ctx.Queue()
    target = open_store.target()
    procs = [ctx.Process(target=_writer, args=(target, w, barrier, results)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    answers = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(30)
    assert [a for a in answers if isinstance(a, str)] == []  # no writer failed
    committed = [pair for answer in answers for pair in answer]
    assert [p.exitcode for p in procs] == [0] * WRITERS
    keys = {key for key, _ in committed}
    emitted = {key for key, emits in committed if emits}
    assert 0 < len(keys) < WRITERS * COMMITS  # some rolled back

    head = hub.high_watermark()
    deadline = time.monotonic() + 30
    while (
        not delivered or delivered[-1].seq < head or len(followed) < len(emitted)
    ) and time.monotonic() < deadline:
        time.sleep(0.02)
    stream.stop()
    follower.join(10)

    assert reseeds == []
    seqs = [rec.seq for rec in delivered]
    assert seqs == list(range(1, head + 1))  # every record once, in seq order, no hole
    assert head == len(keys)  # one record per committed transaction: no rolled-back seq kept
    seen = [key for rec in delivered for key in (rec.changes or {}).get("items", {})]
    assert sorted(seen) == sorted(keys)  # each committed write exactly once, nothing rolled back
    assert sorted(live.rows) == sorted(keys)

    assert [ev.seq for ev in followed] == list(range(1, len(emitted) + 1))
    assert sorted(ev.payload["id"] for ev in followed) == sorted(emitted)
