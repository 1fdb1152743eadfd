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


def test_close_refuses_a_strict_that_is_not_a_bool(store: Any) -> None:
    """``close(strict="no")`` closed strictly (any non-empty text is true): strict other than True
    or False is JD0006, and the store stays open."""
    for given in ("no", 1, None):
        with pytest.raises(jl.JarenlabError) as info:
            store.close(strict=given)
        assert info.value.code == "JD0006" and "strict must be True or False" in info.value.reason
    assert not store.closed
    store.close(strict=False)
    assert store.closed


def test_context_manager_closes(open_store: Any, model: dict[str, Any]) -> None:
    where = open_store.target("a")
    with jl.open(where.pop("path"), model, **where) as store:
        store["notes"].insert({"id": "x"})
    assert store.closed
    with open_store.reopen(store) as again:
        assert again["notes"].get("x") == {"id": "x"}


@pytest.mark.needs("file", "the WAL file of a SQLite store")
def test_close_checkpoints_the_wal(tmp_path: Any, model: dict[str, Any]) -> None:
    store = jl.open(tmp_path / "a.db", model)
    store["notes"].insert_many([{"id": str(i)} for i in range(500)])
    store.close()
    wal = tmp_path / "a.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    assert sqlite3.connect(tmp_path / "a.db").execute("SELECT count(*) FROM notes").fetchone()[0] == 500


@pytest.mark.needs("file", "SQLite's own catalogue and plan text")
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


def _shape(store: Any) -> dict[str, str]:
    return dict(store.backend.shape(store.db.connection()))


def test_reopen_with_a_different_model_is_refused_and_alters_nothing(
    open_store: Any, model: dict[str, Any]
) -> None:
    store = open_store(model)
    before = _shape(store)
    store.close()
    model["collections"]["notes"]["indexes"][0]["path"] = "$.score"
    with pytest.raises(jl.JarenlabError) as info:
        open_store.reopen(store, model)
    assert info.value.code == "JD0002"
    assert info.value.doc_path == "/collections/notes/indexes/0/path"
    assert "/collections/notes/indexes/0/path" in str(info.value)
    assert _shape(open_store.reopen(store)) == before


#: (create an undeclared index, drop the sneaky one, drop a declared one), per backend.
TAMPER = {
    "sqlite": ("CREATE INDEX sneaky ON notes(gx_score)", "DROP INDEX sneaky", "DROP INDEX notes_by_ox"),
    "postgresql": ("CREATE INDEX sneaky ON notes(key)", "DROP INDEX sneaky", "DROP INDEX notes_by_ox"),
}


def test_reopen_refuses_a_tampered_shape(open_store: Any, model: dict[str, Any], backend: str) -> None:
    store = open_store(model)
    create, drop, drop_declared = TAMPER[backend]
    conn = store.db.connection()
    store.backend.execute(conn, create)
    with pytest.raises(jl.JarenlabError, match="sneaky") as info:
        open_store.reopen(store, model)
    assert info.value.code == "JD0002"
    store.backend.execute(conn, drop)
    store.backend.execute(conn, drop_declared)
    with pytest.raises(jl.JarenlabError, match="notes_by_ox"):
        open_store.reopen(store, model)


@pytest.mark.needs("schemas", "a schema holding another application's tables")
def test_a_schema_of_something_else_is_refused_and_left_alone(open_store: Any, model: dict[str, Any]) -> None:
    import psycopg

    where = open_store.target("foreign")
    with psycopg.connect(where["path"], autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{where["schema"]}"')
        conn.execute(f'CREATE TABLE "{where["schema"]}".t (x int)')
    with pytest.raises(jl.JarenlabError) as info:
        jl.open(where["path"], schema=where["schema"])
    assert info.value.code == "JD0005"
    with pytest.raises(jl.JarenlabError) as info:
        jl.open(where["path"], model, schema=where["schema"])
    assert info.value.code == "JD0002" and "'t'" in str(info.value)


def test_opening_a_foreign_file_without_a_model(tmp_path: Any) -> None:
    path = tmp_path / "other.db"
    sqlite3.connect(path).execute("CREATE TABLE t(x)")
    with pytest.raises(jl.JarenlabError) as info:
        jl.open(path)
    assert info.value.code == "JD0005"


@pytest.mark.needs("schemas", "the server's capabilities")
def test_capabilities_on_a_server(store: Any) -> None:
    caps = store.capabilities
    assert caps["backend"] == "postgresql" and caps["jsonb"] is True and caps["udf_hatch"] is False
    assert caps["isolation"] == "read committed" and caps["schema"] == store.backend.schema
    assert caps["validated"] is True and caps["read_only"] is False and caps["busy_timeout"] == 5.0
    assert int(caps["server_version"].split(".")[0]) >= 13


@pytest.mark.needs("file", "the SQLite library's capabilities")
def test_capabilities(store: Any) -> None:
    caps = store.capabilities
    assert caps["json1"] and caps["strict_tables"] and caps["generated_columns"]
    assert caps["sqlite_version"] == sqlite3.sqlite_version
    assert caps["jsonb"] == (sqlite3.sqlite_version_info >= (3, 45, 0))
    assert caps["journal_mode"] == "wal" and caps["validated"] is True and caps["read_only"] is False
    assert caps["busy_timeout"] == 5.0


def test_read_only_store_reads_and_refuses_writes(open_store: Any, model: dict[str, Any]) -> None:
    with open_store(model) as store:
        store["notes"].insert({"id": "a"})
    with open_store.reopen(store, model, read_only=True) as ro:
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


@pytest.mark.needs("concurrent_writers", "a server runs writers side by side")
def test_another_thread_writes_beside_an_open_transaction(store: Any) -> None:
    notes = store["notes"]
    seen: dict[str, Any] = {}

    def other() -> None:
        seen["during"] = notes.get("t")  # a read sees only committed data
        notes.insert({"id": "from-thread"})

    with pytest.raises(RuntimeError), store.transaction():
        notes.insert({"id": "t"})
        worker = threading.Thread(target=other)
        worker.start()
        worker.join(5)
        assert not worker.is_alive()  # it did not wait for us, and did not join our transaction
        raise RuntimeError("roll back the outer transaction")
    assert seen["during"] is None
    assert notes.get("from-thread") == {"id": "from-thread"}
    assert notes.get("t") is None


@pytest.mark.needs("single_writer", "SQLite allows one writer: other threads queue behind the write gate")
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


def _write_many(where: dict[str, Any], worker: int, n: int) -> None:
    import faulthandler

    faulthandler.dump_traceback_later(240)  # a writer still running by then shows where it waits
    where = dict(where)
    with jl.open(str(where.pop("path")), **where) as store:
        notes = store["notes"]
        for i in range(n):
            notes.insert({"id": f"w{worker}-{i}", "score": i})
    faulthandler.cancel_dump_traceback_later()


@pytest.mark.slow
def test_four_processes_write_2000_documents_each(open_store: Any, model: dict[str, Any]) -> None:
    import multiprocessing as mp

    store = open_store(model, name="race")
    where = open_store.target("race")
    store.close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(where, w, 2000)) for w in range(4)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 300  # about 35 s at load 4; a loaded 2-core machine needs far longer
    for p in procs:
        p.join(max(deadline - time.monotonic(), 0))
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with open_store.reopen(store) as store:
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


def test_closing_from_several_threads_at_once_closes_once(store: Any) -> None:
    store["notes"].insert({"id": "a"})
    calls: list[int] = []
    store.on_close(lambda: calls.append(1))
    threads = [threading.Thread(target=store.close) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert store.closed and calls == [1]


def test_a_server_that_is_down_is_a_coded_error_naming_it(model: dict[str, Any]) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(jl.JarenlabError) as info:
        jl.open(f"postgresql://someone:secret@127.0.0.1:{port}/lab", model, schema="lab")
    err = info.value
    assert err.code == "JD2005" and err.retryable and err.condition == "connection"
    assert f"127.0.0.1:{port}" in str(err) and "secret" not in str(err)


def test_schema_is_for_a_server(tmp_path: Any, model: dict[str, Any]) -> None:
    with pytest.raises(jl.JarenlabError) as info:
        jl.open(tmp_path / "a.db", model, schema="lab")
    assert info.value.code == "JD0006"
    with pytest.raises(jl.JarenlabError) as info:
        jl.open("postgresql://127.0.0.1/lab", model, schema="no spaces")
    assert info.value.code == "JD0006"


@pytest.mark.parametrize(
    ("operators", "said"),
    [
        ({"add": abs}, "one of the language's own operators ($add)"),
        ({"$twice": abs}, "without the $: 'twice'"),
        ({"two words": abs}, "is not a name"),
        ({"twice": 2}, "is not callable (int)"),
    ],
)
def test_host_operators_no_query_could_call_are_refused_as_the_store_opens(
    tmp_path: Any, model: dict[str, Any], operators: dict[str, Any], said: str
) -> None:
    """An operator named like a built-in one or with its ``$`` opened fine and failed at the first query."""
    with pytest.raises(jl.JarenlabError) as info:
        jl.open(tmp_path / "a.db", model, operators=operators)
    assert info.value.code == "JD0006" and said in info.value.reason
    assert not (tmp_path / "a.db").exists()


def test_an_unknown_option_is_refused_naming_the_known_ones(tmp_path: Any, model: dict[str, Any]) -> None:
    with pytest.raises(jl.JarenlabError) as info:
        jl.open(tmp_path / "a.db", model, operator={"twice": abs})
    assert info.value.code == "JD0006" and "'operator'" in info.value.reason
    assert "operators" in info.value.reason and "read_only" in info.value.reason
