"""A demanding first user's journeys: bad inputs get coded errors, results keep their columns,
failures leave nothing behind, and notebook reprs render."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from typing import Any

import pytest

import jarenlab as jl
from jarenlab import agg, it, key, param

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "notes": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "string"}, "tag": {"type": "string"}, "n": {"type": "integer"}},
            },
            "key": "/id",
            "indexes": [{"name": "by_tag", "path": "$.tag"}],
        }
    },
    "events": {"ping": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}},
}


@pytest.fixture
def store(tmp_path: Any) -> Any:
    s = jl.open(tmp_path / "lab.db", MODEL)
    s["notes"].insert_many([{"id": "a", "n": 1}, {"id": "b", "tag": "x", "n": 2}, {"id": "c", "tag": "y"}])
    yield s
    s.close()


def coded(code: str, fn: Any, *args: Any, **kwargs: Any) -> jl.JarenlabError:
    with pytest.raises(jl.JarenlabError) as info:
        fn(*args, **kwargs)
    assert info.value.code == code, info.value
    return info.value


# -- opening -----------------------------------------------------------------------------------------
def test_open_refuses_bad_paths_and_options_with_a_code(tmp_path: Any) -> None:
    coded("JD0006", jl.open, 42, MODEL)
    coded("JD0006", jl.open, model=MODEL, busy_timeout="x")
    coded("JD0006", jl.open, model=MODEL, busy_timeout=-1)
    coded("JD0006", jl.open, model=MODEL, queue_timeout="a")
    coded("JD0006", jl.open, model=MODEL, read_only="yes")
    coded("JD0006", jl.open, model=MODEL, operators=[1])
    coded("JD0006", jl.open, model=MODEL, operators={"x": 1})
    coded("JD0006", jl.open, model=MODEL, statement_cache=-1)
    coded("JD0006", jl.open, model=MODEL, profile="strict")
    err = coded("JD0006", jl.open, model=MODEL, nonsense=1)
    assert "nonsense" in str(err)
    assert os.listdir(tmp_path) == []


def test_a_mistyped_path_without_a_model_leaves_no_file(tmp_path: Any) -> None:
    path = tmp_path / "typo.db"
    coded("JD0005", jl.open, path)
    assert not path.exists() and os.listdir(tmp_path) == []


def test_a_sqlite_file_of_something_else_is_refused_and_left_alone(tmp_path: Any) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE people(name TEXT)")
    conn.commit()
    conn.close()
    err = coded("JD0002", jl.open, path, MODEL)
    assert "people" in str(err)
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["people"]
    conn.close()
    # an empty file is still a fine place for a new store
    empty = tmp_path / "empty.db"
    empty.touch()
    with jl.open(empty, MODEL) as s:
        assert s["notes"].count() == 0


def test_garbage_and_directories_are_coded(tmp_path: Any) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database" * 100)
    coded("JD2005", jl.open, garbage, MODEL)
    coded("JD2005", jl.open, tmp_path, MODEL)


def test_closed_store_reprs_render_and_calls_are_coded(tmp_path: Any) -> None:
    s = jl.open(tmp_path / "lab.db", MODEL)
    notes = s["notes"]
    s.close()
    assert "closed" in repr(s) and "closed" in s._repr_html_()
    assert "closed" in notes._repr_html_()
    coded("JD2063", notes.count)
    coded("JD2063", s.collection, "notes")
    s.close()  # a second close does nothing


def test_a_collection_name_of_the_wrong_type_is_unknown(store: Any) -> None:
    coded("JD2004", store.collection, ["notes"])
    coded("JD2004", store.collection, 1)


def test_transaction_takes_a_function(store: Any) -> None:
    coded("JD2010", store.transaction, 5)
    coded("JD2010", store.transaction, "notes")
    assert not store.in_transaction
    store["notes"].insert({"id": "d"})  # the store is not left inside a transaction


# -- writes ------------------------------------------------------------------------------------------
def test_integers_beyond_64_bits_and_absurd_nesting_are_refused_cleanly(store: Any) -> None:
    notes = store["notes"]
    err = coded("JD2008", notes.insert, {"id": "big", "n": 2**70})
    assert err.collection == "notes"
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    coded("JD2008", notes.insert, {"id": "deep", "d": deep})
    err = coded("JD2008", notes.insert_many, [{"id": "ok"}, {"id": "big", "n": 2**64}])
    assert err.position == 1
    assert notes.get("ok") is None and notes.get("big") is None and notes.count() == 3


def test_astral_and_huge_documents_round_trip(store: Any) -> None:
    notes = store["notes"]
    notes.insert({"id": "😀𝔘", "tag": "e\u0301", "blob": "x" * 2_000_000})
    doc = notes.get("😀𝔘")
    assert doc["tag"] == "e\u0301" and len(doc["blob"]) == 2_000_000
    assert notes.where(it.id == "😀𝔘").count() == 1


# -- exports keep every column ---------------------------------------------------------------------
def test_query_to_arrow_keeps_members_the_first_row_lacks(store: Any) -> None:
    q = store["notes"].where(it.id != "zz")
    table = q.to_arrow()
    assert set(table.column_names) == {"id", "n", "tag"}
    assert table.column("tag").to_pylist() == [None, "x", "y"]
    assert set(q.to_arrow(flatten=True).column_names) == {"id", "n", "tag"}


def test_collection_export_with_mixed_kinds_keeps_every_member(store: Any) -> None:
    notes = store["notes"]
    notes.insert_many([{"id": "m1", "o": {"x": 1}}, {"id": "m2", "o": 5}])
    frame = notes.to_pandas()
    assert {"id", "n", "tag", "o"} <= set(frame.columns)
    assert frame.loc["b", "tag"] == "x"


def test_select_columns_keep_their_order_and_survive_an_empty_result(store: Any) -> None:
    notes = store["notes"]
    grouped = notes.group_by(tag=it.tag).select({"tag": key("tag"), "c": agg.count(), "s": agg.sum(it.n)})
    frame = grouped.to_pandas()
    assert list(frame.columns) == ["tag", "c", "s"]
    assert frame["c"].tolist() == [1, 1, 1] and frame["s"].tolist() == [1, 2, 0]
    assert frame["tag"].tolist()[1:] == ["x", "y"] and frame["tag"].isna().tolist()[0]
    empty = notes.where(it.n > 100).select({"who": it.id, "n": it.n})
    assert list(empty.to_pandas().columns) == ["who", "n"] and len(empty.to_pandas()) == 0
    assert empty.to_arrow().column_names == ["who", "n"] and empty.to_arrow().num_rows == 0
    assert notes.where(it.n > 100).to_list() == []


# -- the builder refuses what would silently be a constant -------------------------------------------
def test_where_order_by_group_by_refuse_plain_python_values(store: Any) -> None:
    notes = store["notes"]
    coded("JQ2010", notes.where, "n > 1")
    coded("JQ2010", notes.where, {"$gt": ["$it.n", 1]})
    coded("JQ2010", notes.where, None)
    coded("JQ2010", notes.where, 1)
    coded("JQ2010", notes.order_by, "n")
    coded("JQ2010", notes.where(it.n > 0).order_by, it.n, "tag")
    coded("JQ2010", notes.group_by, "tag")
    coded("JQ2010", notes.group_by, tag=1)
    coded("JQ0006", notes.group_by, tag=it.tag.desc())
    assert notes.where(True).count() == 3 and notes.where(False).count() == 0
    assert [d["id"] for d in notes.order_by(it.n.desc(), it.id)] == ["b", "a", "c"]


def test_python_logic_operators_are_refused(store: Any) -> None:
    notes = store["notes"]
    coded("JQ0008", lambda: notes.where(it.n > 1 and it.tag == "x"))
    coded("JQ0008", lambda: notes.where(not it.n))
    coded("JQ0008", lambda: 1 in it.n)
    assert notes.where((it.n > 1) | (it.tag == "y")).count() == 2


def test_builder_arguments_of_the_wrong_kind_are_coded(store: Any) -> None:
    notes = store["notes"]
    coded("JQ2010", it.tag.isin, "xy")  # a string is not a list of values
    coded("JQ2010", it.tag.isin, 5)
    assert notes.where(it.tag.isin(["x", "y"])).count() == 2
    coded("JQ0004", param, 1)
    coded("JQ0010", notes.select, {1: it.id})
    coded("JQ2010", notes.take, "3")
    coded("JQ2010", notes.skip, -1)


# -- raw documents --------------------------------------------------------------------------------
def test_execute_and_explain_code_bad_externals_and_profiles(store: Any) -> None:
    notes = store["notes"]
    doc = {"$for": {"d": "$[*]"}, "$where": {"$gt": ["$d.n", "$lo"]}, "$return": "$d.id"}
    assert notes.execute(doc, {"lo": 1}) == "b"
    coded("JQ2011", notes.execute, doc, [1])
    coded("JQ2011", notes.execute, doc, "lo")
    coded("JQ2011", notes.explain, doc, [1])
    coded("JD0006", notes.execute, doc, {"lo": 1}, profile="tenant")
    coded("JQ2006", notes.execute, doc, {})
    coded("JQ0002", notes.execute, {"$frob": [1]})
    deep: Any = True
    for _ in range(3000):
        deep = {"$not": deep}
    coded("JQ0011", notes.execute, deep)


# -- live queries -----------------------------------------------------------------------------------
def test_live_subscribe_checks_callables_and_renders(store: Any) -> None:
    live = store["notes"].where(it.n > param("lo")).live(lo=0)
    coded("JD2010", live.subscribe, 5)
    coded("JD2010", live.subscribe, lambda p, s: None, on_error="print")
    shown = live._repr_html_()
    assert "<b>live query</b> on <code>notes</code>" in shown and "<tr data-key='0'><td" in shown
    seen: list[Any] = []
    live.subscribe(lambda patch, seq: seen.append(patch))
    store["notes"].insert({"id": "d", "n": 5})
    assert seen == [[{"op": "add", "path": "/rows/2", "value": {"id": "d", "n": 5}}]]
    live.close()
    live.close()
    assert "closed" in live._repr_html_()
    coded("JD2127", live.subscribe, lambda p, s: None)


def test_an_empty_live_result_is_an_empty_frame_like_a_query(store: Any) -> None:
    live = store["notes"].where(it.n > 100).live()
    assert live.to_pandas().shape == (0, 0)
    assert store["notes"].where(it.n > 100).to_pandas().shape == (0, 0)
    live.close()


# -- events -------------------------------------------------------------------------------------------
def test_event_handlers_and_stream_options_are_checked_up_front(store: Any) -> None:
    events = store.events
    coded("JD2010", events.on("ping"), 5)
    assert events.emit("ping", {"n": 1}).seq == 1  # the refused handler was never registered
    coded("JD2010", events.resume, None, timeout="x")
    coded("JD2010", events.resume, None, poll=-1)
    coded("JD2010", events.resume, None, until=5)
    coded("JD2010", events.tail, 5, timeout="soon")
    coded("JD2080", events.resume, None, type=5)
    coded("JD2080", events.frame, type=5)
    assert [e.seq for e in events.resume(None, type=["ping"])] == [1]


# -- jobs ---------------------------------------------------------------------------------------------
def test_job_calls_with_wrong_types_are_coded_and_write_nothing(store: Any) -> None:
    jobs = store.jobs
    coded("JD2125", jobs.enqueue_many, 5)
    coded("JD2125", jobs.enqueue_many, {"kind": "k"})
    coded("JD2125", jobs.enqueue_many, [{"kind": "k"}, {"kind": "k", "run_at": 1.0, "nope": 1}])
    assert jobs.counts()["pending"] == 0
    coded("JD2125", jobs.run_until_idle, progress=False, concurrency="2")
    coded("JD2125", jobs.run_until_idle, progress=False, concurrency=0)
    coded("JD2125", jobs.run_until_idle, progress=False, timeout="x")
    coded("JD2125", jobs.wait_for_idle, timeout="x")
    worker = jobs.start(concurrency=1)
    coded("JD2125", worker.stop, grace="x")
    worker.stop(grace=1)


def test_enqueue_in_a_rolled_back_transaction_leaves_no_job(store: Any) -> None:
    jobs = store.jobs
    with pytest.raises(RuntimeError), store.transaction():
        jobs.enqueue("k", {"a": 1}, id="rolled")
        store["notes"].insert({"id": "rolled"})
        raise RuntimeError("boom")
    assert jobs.get("rolled") is None and store["notes"].get("rolled") is None
    assert jobs.run_until_idle(progress=False)["open"] == 0  # no handlers: nothing to do


def run_worker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jarenlab", "worker", *args], capture_output=True, text=True, timeout=60
    )


def test_the_worker_cli_reports_bad_arguments_in_one_line(tmp_path: Any) -> None:
    path = tmp_path / "lab.db"
    jl.open(path, MODEL).close()
    missing = run_worker(str(tmp_path / "nope.db"), "--handlers", "x:y", "--until-idle")
    assert missing.returncode == 1 and "JD2010" in missing.stderr and "Traceback" not in missing.stderr
    assert not (tmp_path / "nope.db").exists()
    for spec, code in (("nomodule:h", "JD2125"), ("json", "JD2125"), ("json:dumps", "JD2125")):
        bad = run_worker(str(path), "--handlers", spec, "--until-idle")
        assert bad.returncode == 1 and code in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    for option in (["--concurrency", "0"], ["--lease", "-1"], ["--poll", "0"]):
        bad = run_worker(str(path), "--handlers", "json:dumps", "--until-idle", *option)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr
