"""Opening, verifying, closing, capabilities and transactions."""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

import pytest

import jarenlab as jl


def test_fresh_temp_store_is_removed_on_close(model: dict[str, Any]) -> None:
    store = jl.open(model=model)
    path = store.path
    store["notes"].insert({"id": "a"})
    assert sqlite3.connect(path).execute("SELECT count(*) FROM notes").fetchone()[0] == 1
    store.close()
    import os

    assert not os.path.exists(path)


def test_close_is_idempotent_and_later_calls_are_coded(store: Any) -> None:
    notes = store["notes"]
    store.close()
    store.close()
    for call in (
        lambda: notes.get("a"),
        lambda: notes.insert({"id": "a"}),
        lambda: store["notes"],
        store.transaction().__enter__,
    ):
        with pytest.raises(jl.JarenlabError) as info:
            call()
        assert info.value.code == "JD2063"


def test_context_manager_closes(tmp_path: Any, model: dict[str, Any]) -> None:
    with jl.open(tmp_path / "a.db", model) as store:
        store["notes"].insert({"id": "x"})
    assert store.closed
    with jl.open(tmp_path / "a.db") as again:
        assert again["notes"].get("x") == {"id": "x"}


def test_close_checkpoints_the_wal(tmp_path: Any, model: dict[str, Any]) -> None:
    store = jl.open(tmp_path / "a.db", model)
    store["notes"].insert_many([{"id": str(i)} for i in range(500)])
    store.close()
    wal = tmp_path / "a.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    assert sqlite3.connect(tmp_path / "a.db").execute("SELECT count(*) FROM notes").fetchone()[0] == 500


def test_physical_shape(store: Any) -> None:
    conn = sqlite3.connect(store.path)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name='notes'").fetchone()[0]
    assert sql.endswith("STRICT")
    assert "gx_tag TEXT GENERATED ALWAYS AS (json_extract(doc, '$.\"tag\"')) VIRTUAL" in sql
    indexes = {
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='notes' AND sql IS NOT NULL"
        )
    }
    assert indexes == {"notes_by_tag", "notes_by_tag_score", "notes_by_ox"}
    plan = conn.execute("EXPLAIN QUERY PLAN SELECT doc FROM notes WHERE gx_tag = 'a'").fetchall()
    assert "USING INDEX notes_by_tag" in str(plan)


def test_reopen_with_a_different_model_is_refused_and_alters_nothing(
    tmp_path: Any, model: dict[str, Any]
) -> None:
    path = tmp_path / "a.db"
    jl.open(path, model).close()
    before = sqlite3.connect(path).execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
    model["collections"]["notes"]["indexes"][0]["path"] = "$.score"
    with pytest.raises(jl.JarenlabError) as info:
        jl.open(path, model)
    assert info.value.code == "JD0002"
    assert info.value.doc_path == "/collections/notes/indexes/0/path"
    assert "/collections/notes/indexes/0/path" in str(info.value)
    after = sqlite3.connect(path).execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
    assert before == after


def test_reopen_refuses_a_tampered_shape(tmp_path: Any, model: dict[str, Any]) -> None:
    path = tmp_path / "a.db"
    jl.open(path, model).close()
    conn = sqlite3.connect(path)
    conn.execute("CREATE INDEX sneaky ON notes(gx_score)")
    conn.commit()
    with pytest.raises(jl.JarenlabError, match="sneaky") as info:
        jl.open(path, model)
    assert info.value.code == "JD0002"
    conn.execute("DROP INDEX sneaky")
    conn.execute("DROP INDEX notes_by_ox")
    conn.commit()
    with pytest.raises(jl.JarenlabError, match="notes_by_ox"):
        jl.open(path, model)


def test_opening_a_foreign_file_without_a_model(tmp_path: Any) -> None:
    path = tmp_path / "other.db"
    sqlite3.connect(path).execute("CREATE TABLE t(x)")
    with pytest.raises(jl.JarenlabError) as info:
        jl.open(path)
    assert info.value.code == "JD0005"


def test_capabilities(store: Any) -> None:
    caps = store.capabilities
    assert caps["json1"] and caps["strict_tables"] and caps["generated_columns"]
    assert caps["sqlite_version"] == sqlite3.sqlite_version
    assert caps["jsonb"] == (sqlite3.sqlite_version_info >= (3, 45, 0))
    assert caps["journal_mode"] == "wal" and caps["validated"] is True and caps["read_only"] is False
    assert caps["busy_timeout"] == 5.0


def test_read_only_store_reads_and_refuses_writes(tmp_path: Any, model: dict[str, Any]) -> None:
    path = tmp_path / "a.db"
    with jl.open(path, model) as store:
        store["notes"].insert({"id": "a"})
    with jl.open(path, model, read_only=True) as ro:
        assert ro.capabilities["read_only"] is True
        assert ro["notes"].get("a") == {"id": "a"}
        with pytest.raises(jl.JarenlabError) as info:
            ro["notes"].insert({"id": "b"})
        assert info.value.code == "JD2005"


def test_unknown_collection(store: Any) -> None:
    with pytest.raises(jl.JarenlabError) as info:
        store["nope"]
    assert info.value.code == "JD2004" and info.value.collection == "nope"


def test_nested_transactions_roll_back_only_their_level(store: Any) -> None:
    notes = store["notes"]
    with store.transaction():
        notes.insert({"id": "outer"})
        with pytest.raises(RuntimeError), store.transaction():
            notes.insert({"id": "inner"})
            raise RuntimeError("boom")
        with store.transaction():
            notes.insert({"id": "inner2"})
    assert notes.get("outer") and notes.get("inner2") and notes.get("inner") is None
    with pytest.raises(RuntimeError), store.transaction():
        notes.insert({"id": "gone"})
        raise RuntimeError
    assert notes.get("gone") is None and not store.in_transaction


def test_transaction_with_a_function_returns_its_result(store: Any) -> None:
    assert store.transaction(lambda s: s["notes"].insert({"id": "f"})) == "f"


def test_another_thread_waits_instead_of_joining(store: Any) -> None:
    notes = store["notes"]
    seen: dict[str, Any] = {}
    started = threading.Event()

    def other() -> None:
        started.set()
        seen["during"] = notes.get("t")  # a read sees only committed data
        t0 = time.monotonic()
        notes.insert({"id": "from-thread"})
        seen["waited"] = time.monotonic() - t0

    with pytest.raises(RuntimeError), store.transaction():
        notes.insert({"id": "t"})
        worker = threading.Thread(target=other)
        worker.start()
        started.wait()
        time.sleep(0.3)
        assert worker.is_alive()  # blocked on the write gate, not joined
        raise RuntimeError("roll back the outer transaction")
    worker.join(5)
    assert seen["during"] is None
    assert seen["waited"] >= 0.2
    assert notes.get("from-thread") == {"id": "from-thread"}  # its write was not rolled back with ours
    assert notes.get("t") is None


def _write_many(path: str, worker: int, n: int) -> None:
    with jl.open(path) as store:
        notes = store["notes"]
        for i in range(n):
            notes.insert({"id": f"w{worker}-{i}", "score": i})


@pytest.mark.slow
def test_four_processes_write_2000_documents_each(tmp_path: Any, model: dict[str, Any]) -> None:
    import multiprocessing as mp

    path = str(tmp_path / "race.db")
    jl.open(path, model).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(path, w, 2000)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with jl.open(path) as store:
        assert len(store["notes"]) == 8000
        keys = {d["id"] for d in store["notes"].to_list()}
        assert keys == {f"w{w}-{i}" for w in range(4) for i in range(2000)}


def test_store_renders_in_a_notebook(store: Any) -> None:
    store["notes"].insert({"id": "a", "tag": "t"})
    html = store._repr_html_()
    assert "notes" in html and "by_tag" in html and ">1<" in html
    assert "closed" in (store.close() or store._repr_html_())


def test_stats_report_live_queries_and_jobs(store: Any) -> None:
    from jarenlab import it

    notes = store["notes"]
    live = notes.where(it.score > 1).order_by(it.score).live()
    notes.insert({"id": "a", "score": 3})
    notes.insert({"id": "b", "score": 0})
    store.jobs.enqueue("k", {"x": 1})
    data = store.stats().to_frame().set_index(["section", "metric"])["value"]
    assert data[("live", "queries")] == 1 and data[("live", "updates")] == 1 and data[("live", "window")] == 1
    assert data[("jobs", "pending")] == 1
    live.close()
    assert store.stats().to_frame().set_index(["section", "metric"])["value"][("live", "queries")] == 0


def test_stats_widget_refreshes_from_its_store(store: Any) -> None:
    view = store.stats().widget(interval=60)
    assert view is not None
    store.close()


def test_explain_analyze_counts_the_rows_of_a_builder_query(store: Any) -> None:
    from jarenlab import it

    store["notes"].insert_many([{"id": str(i), "score": i} for i in range(10)])
    ex = store["notes"].where(it.score >= 7).explain(analyze=True)
    assert ex.rows_returned == 3


def test_a_failing_after_commit_listener_does_not_undo_or_fail_the_write(store: Any) -> None:
    def broken(changes: Any) -> None:
        raise RuntimeError("listener bug")

    store.db.on_commit(after=broken)
    with pytest.warns(RuntimeWarning, match="listener bug"):
        assert store["notes"].insert({"id": "kept"}) == "kept"
    store.db.off_commit(broken)
    assert store["notes"].get("kept") == {"id": "kept"}


def test_query_switches_must_be_booleans(store: Any) -> None:
    from jarenlab import it

    notes = store["notes"]
    for call in (
        lambda: notes.where(it.score > 1).explain(analyze="yes"),
        lambda: notes.execute({"$count": "$[*]"}, pushdown="no"),
        lambda: notes.execute({"$count": "$[*]"}, strict=1),
    ):
        with pytest.raises(jl.JarenlabError) as info:
            call()
        assert info.value.code == "JD0006"
    assert notes.execute({"$count": "$[*]"}, pushdown=False) == 0
