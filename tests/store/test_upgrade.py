"""A store made by an earlier version opens and is upgraded in place: its job queue gains the columns
later versions added (the source event, the per-job timeout) and the change records that version wrote
(whole documents, not minimal patches) become compact, so a feed reader behind them resets instead of
reading them as minimal. Each test builds the earlier store itself: a store of this version whose
internal tables are put back into the earlier shape with the driver's own statements. On each backend."""

from __future__ import annotations

from typing import Any

import pytest

import jarenlab as jl
from jarenlab import it
from tests.events.conftest import raw_connection

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {"t": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
    "events": {"ping": {"type": "object"}},
}

#: What the earlier version's queue lacked; and a change record in its shape: an update written as
#: the whole document under `add`, the way it recorded every insert, put and patch.
EARLIER = [
    "DROP INDEX _jl_jobs_source",
    "ALTER TABLE _jl_jobs DROP COLUMN source_event",
    "ALTER TABLE _jl_jobs DROP COLUMN timeout",
    "ALTER TABLE _jl_jobs DROP COLUMN last_traceback",
    "DROP INDEX _jl_jobs_claim",
    "ALTER TABLE _jl_jobs DROP COLUMN priority",
    "CREATE INDEX _jl_jobs_claim ON _jl_jobs(kind, due_at, seq) WHERE due_at IS NOT NULL",
]
WHOLE_DOCUMENT = '[{"op": "add", "path": "/t/1", "value": {"n": 2}}]'


def _columns(backend: str, store: jl.Store) -> set[str]:
    conn = raw_connection(backend, store)
    try:
        if backend == "sqlite":
            return {r[1] for r in conn.execute("PRAGMA table_info(_jl_jobs)")}
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = '_jl_jobs'",
            (store.backend.schema,),
        ).fetchall()
        return {r[0] for r in rows}
    finally:
        conn.close()


def _claim_index(backend: str, store: jl.Store) -> str:
    """The definition of the claim's index, as the database keeps it."""
    conn = raw_connection(backend, store)
    try:
        if backend == "sqlite":
            return str(
                conn.execute("SELECT sql FROM sqlite_master WHERE name = '_jl_jobs_claim'").fetchone()[0]
            )
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = '_jl_jobs_claim'",
            (store.backend.schema,),
        ).fetchone()
        return str(row[0])
    finally:
        conn.close()


@pytest.fixture
def earlier(open_store: Any, backend: str) -> tuple[jl.Store, str]:
    """A closed store in the earlier shape, with a pending job, a document and a feed cursor from
    before its last (whole-document) change record."""
    store = open_store(MODEL)
    store.jobs.enqueue("work", {"n": 1}, id="old-job", allow_unknown=True)
    store["t"].insert({"n": 1})
    before = store.changes.cursor()
    store["t"].put({"n": 2}, 1)
    store.close()
    conn = raw_connection(backend, store)
    try:
        for statement in EARLIER:
            conn.execute(statement)
        marker = "?" if backend == "sqlite" else "%s"
        conn.execute(f"UPDATE _jl_changes SET patch = {marker} WHERE seq = (SELECT max(seq) FROM _jl_changes)",
                     (WHOLE_DOCUMENT,))  # fmt: skip
        conn.commit()
    finally:
        conn.close()
    assert not {"source_event", "timeout", "last_traceback", "priority"} & _columns(backend, store)
    assert "priority" not in _claim_index(backend, store)
    return store, before


def test_an_earlier_store_opens_upgraded_and_its_queue_works(
    earlier: tuple[jl.Store, str], open_store: Any, backend: str
) -> None:
    old, _ = earlier
    store = open_store.reopen(old)  # no model: the stored one
    assert {"source_event", "timeout", "last_traceback", "priority"} <= _columns(backend, store)
    # the claim's index is made again with the priority, so claims by priority stay index-served
    assert "priority" in _claim_index(backend, store)
    assert store.jobs.get("old-job")["priority"] == 0
    assert store.jobs.get("old-job")["source_event"] is None and store.jobs.get("old-job")["timeout"] is None
    assert store.jobs.get("old-job")["last_traceback"] is None

    @store.events.on("ping")
    def ping(event: Any, st: jl.Store) -> None:
        st.jobs.enqueue("work", {"n": 2}, id="from-event", timeout=5)

    @store.jobs.handler("work")
    def work(payload: Any, ctx: Any) -> int:
        return int(payload["n"]) * 10

    event = store.events.emit("ping", {})
    assert [j["id"] for j in store.jobs.list(source_event=event)] == ["from-event"]
    assert store.jobs.get("from-event")["timeout"] == 5
    store.jobs.enqueue("work", {"n": 3}, id="urgent", priority=5)
    assert store.jobs.claim().id == "urgent"  # ahead of the earlier store's job and the event's
    store.jobs.cancel("urgent")
    assert store.jobs.run_until_idle(progress=False)["done"] == 2
    assert sorted(j["result"] for j in store.jobs.list(state=["done"])) == [10, 20]


def test_the_earlier_change_records_ask_a_feed_reader_to_reset(
    earlier: tuple[jl.Store, str], open_store: Any
) -> None:
    old, before = earlier
    store = open_store.reopen(old)
    with pytest.raises(jl.JarenlabError) as err:
        store.changes(after=before)
    assert err.value.code == "JD2128" and "earlier version" in str(err.value)
    live = store["t"].where(it.n >= 0).live()
    data, cursor = store.changes.snapshot()
    assert data == {"t": {"1": {"n": 2}}} and live.rows == [{"n": 2}]  # keyed as the pointers are
    store["t"].patch(1, {"n": 3})
    page = store.changes(after=cursor)
    assert page.patch == [{"op": "replace", "path": "/t/1/n", "value": 3}]
    store.close()
    again = open_store.reopen(store)  # upgraded once: this version's records stay as they are
    assert again.changes(after=cursor).patch == page.patch


@pytest.mark.needs("file", "read_only is a SQLite option")
def test_a_read_only_open_of_an_earlier_store_alters_nothing_and_says_why(
    earlier: tuple[jl.Store, str], backend: str
) -> None:
    old, _ = earlier
    with pytest.raises(jl.JarenlabError) as err:
        jl.open(old.path, read_only=True)
    assert err.value.code == "JD0002" and "earlier version" in str(err.value)
    assert not {"source_event", "timeout", "last_traceback", "priority"} & _columns(backend, old)
