"""Streaming results: ``iter_batches`` yields Arrow record batches a chunk at a time, and ``to_arrow`` /
``to_pandas`` are built from them, on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from jarenlab.errors import JarenlabError, QueryError
from jarenlab.query import agg, it, key

MODEL = {
    "$model": "0.1",
    "collections": {
        "rows": {
            "schema": {
                "type": "object",
                "required": ["n"],
                "properties": {"n": {"type": "integer"}, "g": {"type": "string"}, "x": {"type": "number"}},
            },
            "key": None,
            "identity": "integer",
            "indexes": [{"name": "by_g", "path": "$.g"}],
        }
    },
}


@pytest.fixture
def rows(open_store: Any) -> Any:
    store = open_store(MODEL)
    docs = [
        {"n": i, "g": "abc"[i % 3], **({"x": i / 4} if i % 5 else {}), **({"t": [i]} if i > 900 else {})}
        for i in range(1000)
    ]
    store["rows"].insert_many(docs)
    return store["rows"]


def _read(store: Any) -> int:
    return int(store.stats().data["queries"]["rows_read"])


def test_whole_documents_stream_in_batches(rows: Any) -> None:
    before = _read(rows.store)
    batches = rows.where(it.n >= 100).iter_batches(256)
    first = next(batches)
    assert isinstance(first, pa.RecordBatch) and first.num_rows == 256
    assert first.schema.field("n").type == pa.int64()  # typed by the schema, decoded by Arrow
    assert _read(rows.store) - before == 256  # only the first chunk was fetched
    rest = list(batches)
    assert [b.num_rows for b in rest] == [256, 256, 132]
    assert "t" in rest[-1].schema.names and "t" not in first.schema.names  # each batch types its own rows


def test_to_arrow_and_to_pandas_are_built_from_the_batches(rows: Any) -> None:
    q = rows.where(it.g == "a").order_by(it.n.desc())
    table = q.to_arrow()
    assert table.num_rows == 334 and table.column("n").to_pylist()[:3] == [999, 996, 993]
    assert table.column("t").null_count == 301  # unified across batches: missing cells are nulls
    frame = q.to_pandas()
    assert list(frame["n"][:2]) == [999, 996] and str(frame["n"].dtype) == "int64"
    sel = rows.where(it.n < 10).select({"x": it.x, "n": it.n})
    assert sel.to_pandas().columns.tolist() == ["x", "n"]
    assert sel.to_arrow().to_pylist()[:2] == [{"x": None, "n": 0}, {"x": 0.25, "n": 1}]
    assert [b.num_rows for b in sel.iter_batches(4)] == [4, 4, 2]


def test_groups_and_the_residual_run_whole_then_chunk(rows: Any) -> None:
    groups = rows.group_by(g=it.g).select({"g": key("g"), "n": agg.count()})
    assert [b.to_pylist() for b in groups.iter_batches(2)] == [
        [{"g": "a", "n": 334}, {"g": "b", "n": 333}],
        [{"g": "c", "n": 333}],
    ]
    residual = rows.where(it.g.matches("a|b")).select(it.n)
    assert sum(b.num_rows for b in residual.iter_batches(100)) == 667
    assert residual.to_arrow().column("value").to_pylist()[:3] == [0, 1, 3]


def test_empty_results_and_bad_sizes(rows: Any) -> None:
    none = rows.where(it.n < 0).select({"a": it.n, "b": it.g})
    assert list(none.iter_batches()) == [] and none.to_pandas().columns.tolist() == ["a", "b"]
    with pytest.raises(QueryError):
        list(rows.query().iter_batches(0))


def _cursors(store: Any) -> list[tuple[Any, ...]]:
    """The server-side cursors open on this thread's connection (PostgreSQL's ``pg_cursors``)."""
    return list(store.db.connection().execute("SELECT name, is_holdable FROM pg_cursors").fetchall())


@pytest.mark.needs("server_cursors", "a server keeps the rows not yet read in a cursor of its own")
def test_a_stream_waits_on_the_server_and_fetches_a_batch_at_a_time(rows: Any) -> None:
    """The rows not yet read stay on the server (a held cursor, no transaction left open), the driver
    holds one batch, and the cursor is closed when the rows run out or the reader stops."""
    store = rows.store
    assert _cursors(store) == []
    batches = rows.where(it.n >= 100).iter_batches(100)
    first = next(batches)
    assert first.num_rows == 100
    (name, holdable), *more = _cursors(store)
    assert not more and holdable and name.startswith("jl_stream_")
    assert sum(b.num_rows for b in batches) == 800
    assert _cursors(store) == []  # read to the end: closed
    stopped = rows.iter_batches(10)
    next(stopped)
    assert len(_cursors(store)) == 1
    stopped.close()  # the reader stops early
    assert _cursors(store) == []
    assert store.db.connection().info.transaction_status.name == "IDLE"


def test_export_switches_take_only_true_or_false(rows: Any) -> None:
    """``flatten="x"`` flattened on the string's truth, ``keys=1`` keyed the frame: now JD2010 naming both."""
    q = rows.where(it.n < 3)
    calls = {
        "to_pandas(flatten='x')": lambda: rows.to_pandas(flatten="x"),
        "to_arrow(flatten=1)": lambda: rows.to_arrow(flatten=1),
        "query to_pandas(flatten='x')": lambda: q.to_pandas(flatten="x"),
        "query to_pandas(keys=1)": lambda: q.to_pandas(keys=1),
        "query to_arrow(flatten=None)": lambda: q.to_arrow(flatten=None),
        "page to_pandas(flatten='x')": lambda: q.order_by(it.n).page(2).to_pandas(flatten="x"),
        "load to_pandas(flatten='x')": lambda: rows.load({}).to_pandas(flatten="x"),
        "events frame(flatten='x')": lambda: rows.store.events.frame(flatten="x"),
    }
    for what, call in calls.items():
        with pytest.raises(JarenlabError) as info:
            call()
        assert info.value.code == "JD2010", what
        assert "=True or " in info.value.reason, what
    with pytest.raises(JarenlabError) as info:
        list(q.iter_batches(True))
    assert info.value.code == "JQ2010"
    assert q.to_pandas(flatten=False, keys=True).index.name == "key"
