"""The columnar path on every backend: answers equal to SQL's and the engine's, fresh after every
commit (this store's, another store's, another process's), read-your-writes inside a transaction,
the budget, warming and dropping, and what explain() and stats() show."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import pytest

from jarenlab.errors import JarenlabError, StoreError
from jarenlab.query import agg, evaluate, it, key
from jarenlab.query.planner.run import run_query
from tests.query.corpus import same

MODEL = {
    "$model": "0.1",
    "collections": {
        "t": {
            "key": None,
            "identity": "integer",
            "schema": {
                "type": "object",
                "properties": {
                    "s": {"type": "string"},
                    "i": {"type": "integer"},
                    "x": {"type": "number"},
                    "when": {"type": "string", "format": "date-time"},
                    "loose": {},
                },
            },
        },
        "u": {
            "key": "/id",
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "string"}, "v": {"type": "integer"}},
            },
        },
    },
}
WORDS = ["a", "b", "B", "é", "ab", "", "zz"]


def doc(rng: random.Random) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if rng.random() < 0.9:
        d["s"] = rng.choice(WORDS)
    if rng.random() < 0.9:
        d["i"] = rng.randint(-6, 6)
    if rng.random() < 0.9:
        d["x"] = rng.choice([rng.uniform(-10, 10), rng.randint(-3, 3), 0.1, 9e15, -9e15])
    if rng.random() < 0.8:
        d["when"] = f"2013-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z"
    d["loose"] = rng.choice([1, "one", None, [1]])
    return d


def queries(t: Any) -> list[Any]:
    """Questions the columnar path answers (every one reads typed members only)."""
    return [
        t.where(it.i > 2).select({"s": it.s, "x": it.x}),
        t.group_by(s=it.s).select(
            {"s": key("s"), "n": agg.count(), "sx": agg.sum(it.x), "ax": agg.avg(it.x), "mi": agg.min(it.i)}
        ),
        t.where(it.x >= 0.5).order_by(it.x.desc()).take(10).select({"x": it.x, "s": it.s}),
        t.group_by(s=it.s, i=it.i).select(
            {"s": key("s"), "i": key("i"), "n": agg.count(), "si": agg.sum(it.i)}
        ),
        t.group_by(m=it.when.dt.month).select({"m": key("m"), "n": agg.count(), "x": agg.sum(it.x)}),
        t.where((it.s == "a") | (it.i <= -3)).select({"i": it.i}),
        t.group_by(s=it.s).order_by(agg.count().desc()).select({"s": key("s"), "n": agg.count()}).take(3),
        # A top few by several keys, with many rows tied on the first: the later keys and then the
        # storage order decide among them.
        t.where(it.i.exists()).order_by(it.i.desc(), it.s).take(5).select({"i": it.i, "s": it.s, "x": it.x}),
        t.order_by(it.i, it.s.desc()).take(4).select({"i": it.i, "s": it.s, "x": it.x}),
        # Compares a missing member's slot would pass (its storage holds 0): missing is never kept.
        t.where((it.i != 3) & (it.x < 0.5)).group_by(s=it.s).select({"s": key("s"), "n": agg.count()}),
        t.where((it.i == 0) | (it.x >= 0)).group_by(s=it.s).select({"s": key("s"), "n": agg.count()}),
    ]


def answers(t: Any, q: Any) -> tuple[Any, Any, Any, str]:
    """(columns, SQL, engine) answers of a builder query, and the mode the columns' run took."""
    document = q.document
    got, trace, _ = run_query(t, document, {}, columns=True)
    sql = run_query(t, document, {}, columns=False)[0]
    _, texts = t.texts()
    engine = evaluate(document, [json.loads(x) for x in texts], {})
    return got, sql, engine, trace.mode


def test_every_question_is_answered_by_the_columns_and_agrees(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(7)
    t.insert_many([doc(rng) for _ in range(400)])
    # Where the backend's JSON does not tell 2.0 from 2 in SQL (PostgreSQL's jsonb), the planner
    # projects numbers in the engine (row mode), and the columnar path takes native plans only.
    projecting = {0, 2, 5, 7, 8}
    for n, q in enumerate(queries(t)):
        got, sql, engine, mode = answers(t, q)
        if store.backend.dialect.keeps_integers_apart or n not in projecting:
            assert mode == "columnar", q.document
        assert same(got, engine) and same(sql, engine), (q.document, got, sql, engine)


def test_columns_follow_every_commit_and_rollback(open_store: Any) -> None:
    """A random stream of writes (inserts, puts, patches, deletes, rolled-back transactions),
    each followed by a question: the columns' answer equals SQL's and the engine's every time, and
    they were patched rather than rebuilt."""
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(11)
    t.insert_many([doc(rng) for _ in range(200)])
    qs = [q for n, q in enumerate(queries(t)) if n not in (0, 2, 5)]  # answered by columns everywhere
    checked = 0
    for step in range(60):
        keys = t.texts()[0]
        op = rng.choice(["insert", "put", "patch", "delete", "rollback", "many"])
        if op == "insert":
            t.insert(doc(rng))
        elif op == "many":
            t.insert_many([doc(rng) for _ in range(rng.randint(1, 5))])
        elif op == "put" and keys:
            t.put(doc(rng), rng.choice(keys))
        elif op == "patch" and keys:
            t.patch(rng.choice(keys), {"i": rng.randint(-6, 6), "s": rng.choice(WORDS)})
        elif op == "delete" and keys:
            t.delete(rng.choice(keys))
        elif op == "rollback":
            with pytest.raises(RuntimeError), store.transaction():
                t.insert(doc(rng))
                raise RuntimeError("rolled back")
        got, sql, engine, mode = answers(t, qs[step % len(qs)])
        assert mode == "columnar" and got == sql == engine, (step, op)
        checked += 1
    assert checked == 60
    stats = store.columns.stats()
    assert stats["patches"] > 30 and stats["rebuilds"] == 0, stats


def test_columns_see_another_store_and_another_process(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    rng = random.Random(3)
    t.insert_many([doc(rng) for _ in range(50)])
    q = t.group_by(s=it.s).select({"s": key("s"), "n": agg.count()})
    before = t.execute(q.document, {}, columns=True)
    other = open_store.reopen(store)
    other["t"].insert({"s": "from another store", "i": 1})
    assert {"s": "from another store", "n": 1} in t.execute(q.document, {}, columns=True)
    target = open_store.target("lab")
    path = str(target.pop("path"))
    script = (
        "import jarenlab as jl, sys, json; "
        "s = jl.open(sys.argv[1], **json.loads(sys.argv[2])); "
        "s['t'].insert_many([{'s': 'from another process', 'i': 2}] * 3); s.close()"
    )
    subprocess.run([sys.executable, "-c", script, path, json.dumps(target)], check=True, timeout=120)
    after = t.execute(q.document, {}, columns=True)
    assert {"s": "from another process", "n": 3} in after
    assert after == t.execute(q.document, {}, columns=False)
    assert len(after) == len(before) + 2


def test_inside_a_transaction_sql_answers_with_its_own_writes(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": 1}] * 3)
    q = t.group_by(s=it.s).select({"s": key("s"), "n": agg.count()})
    assert t.execute(q.document, {}, columns=True) == [{"s": "a", "n": 3}]
    with store.transaction():
        t.insert({"s": "a", "i": 2})
        items, trace, _ = run_query(t, q.document, {}, columns=True)
        assert trace.mode == "native" and "transaction" in trace.columns["reason"]
        assert items == [[{"s": "a", "n": 4}]]
    assert t.execute(q.document, {}, columns=True) == [{"s": "a", "n": 4}]


def test_a_bulk_load_is_a_rebuild_and_a_model_change_drops_the_columns(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": 1}] * 10)
    q = t.group_by(s=it.s).select({"s": key("s"), "n": agg.count()})
    assert t.execute(q.document, {}, columns=True) == [{"s": "a", "n": 10}]
    t.insert_many([{"s": "b", "i": 1}] * 12_000)  # more than the change log writes inline: compact
    assert t.execute(q.document, {}, columns=True) == [{"s": "a", "n": 10}, {"s": "b", "n": 12_000}]
    assert store.columns.stats()["rebuilds"] == 1


def test_explain_shows_the_columns_read_warm_or_cold(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": n} for n in range(20)])
    q = t.group_by(s=it.s).select({"s": key("s"), "total": agg.sum(it.i)})
    planned = t.explain(q.document, {}, columns=True)
    assert planned.mode == "columnar" and planned.columns == {
        "used": True,
        "read": ["/s", "/i"],
        "warm": False,
    }
    cold = t.explain(q.document, {}, analyze=True, columns=True)
    assert cold.columns["warm"] is False and cold.columns["rows"] == 20 and cold.residual is None
    warm = t.explain(q.document, {}, analyze=True, columns=True)
    assert warm.columns["warm"] is True and "columns" in warm.phases and "compute" in warm.phases
    assert ("columns", "/s, /i (warm), 20 rows scanned, as of change 1") in warm.rows()
    loose = t.explain(t.group_by(v=it.loose).select({"n": agg.count()}).document, {}, columns=True)
    assert loose.mode == "set" and "the columns answer only what they answer whole" in loose.columns["reason"]
    off = t.explain(q.document, {}, columns=False)
    assert off.mode == "native" and off.columns is None
    # Left to choose, a cold small collection stays in SQL and explain says why.
    store.columns.drop()
    chosen = t.explain(q.document, {})
    assert chosen.mode == "native" and "fewer than" in chosen.columns["reason"]


def test_an_index_that_serves_the_filter_keeps_sql(open_store: Any) -> None:
    model = json.loads(json.dumps(MODEL))
    model["collections"]["t"]["indexes"] = [{"name": "by_i", "path": "$.i"}]
    store = open_store(model)
    t = store["t"]
    t.insert_many([{"s": "a", "i": n} for n in range(20)])
    store.columns.warm("t")
    q = t.where(it.i == 3).select({"s": it.s})
    ex = t.explain(q.document, {}, analyze=True)
    assert ex.mode == "native" and "index" in ex.columns["reason"]
    assert t.explain(q.document, {}, analyze=True, columns=True).mode == "columnar"


def test_warm_drop_stats_and_reprs(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": 1, "x": 0.5}] * 5)
    store.columns.warm("t", ["s", "/i"])
    held = {r["member"]: r for r in store.columns.held()}
    assert set(held) == {"/s", "/i"} and held["/i"]["type"] == "int64" and held["/s"]["rows"] == 5
    store.columns.warm("t")  # every top-level typed member
    assert {r["member"] for r in store.columns.held()} == {"/s", "/i", "/x", "/when"}
    section = store.stats()["columns"]
    assert section["builds"] == 4 and section["bytes"] > 0 and len(section["held"]) == 4
    assert "<table>" in store.columns._repr_html_() and "/when" in repr(store.columns)
    assert list(store.columns.to_pandas()["member"]) == ["/s", "/i", "/x", "/when"]
    with pytest.raises(StoreError) as err:
        store.columns.warm("t", ["loose"])
    assert err.value.code == "JD2161" and "/loose" in str(err.value)
    store.columns.drop("t")
    assert store.columns.held() == []


def test_long_builds_show_their_progress(open_store: Any, capsys: pytest.CaptureFixture[str]) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": n, "x": 0.5} for n in range(2000)], progress=False)
    store.columns.warm("t", ["s"])  # 2,000 rows: below the threshold, no bar
    assert "columns of t" not in capsys.readouterr().err
    store.columns.progress = True  # every build (what a build of 500,000 rows or more does alone)
    store.columns.warm("t", ["i", "x"])  # the members added to the table: one bar, 2,000 rows
    err = capsys.readouterr().err
    assert "columns of t: /i, /x" in err and "2000/2000" in err
    store.columns.drop()
    store.columns.progress = False
    store.columns.warm("t", ["i"])
    assert "columns of t" not in capsys.readouterr().err


def test_a_budget_that_cannot_hold_the_columns_is_a_coded_error(open_store: Any) -> None:
    store = open_store(MODEL, columns="2KB")
    t = store["t"]
    t.insert_many([{"s": "a" * 50, "i": n} for n in range(200)])
    q = t.group_by(s=it.s).select({"s": key("s"), "n": agg.count()})
    with pytest.raises(StoreError) as err:
        t.execute(q.document, {}, columns=True)
    assert err.value.code == "JD2160" and "2,000" in str(err.value)
    assert store.columns.held() == []  # nothing half-built is kept
    assert t.execute(q.document, {}, columns=False) == [{"s": "a" * 50, "n": 200}]


def test_least_recently_used_columns_go_first(open_store: Any) -> None:
    store = open_store(MODEL, columns=12_000)
    t, u = store["t"], store["u"]
    t.insert_many([{"s": "a", "i": n} for n in range(300)])
    u.insert_many([{"id": f"k{n}", "v": n} for n in range(300)])
    store.columns.warm("t", ["i"])
    store.columns.warm("u", ["v"])
    store.columns.warm("t", ["s"])
    held = {(r["collection"], r["member"]) for r in store.columns.held()}
    assert ("t", "/s") in held and store.columns.stats()["evictions"] >= 1
    assert store.columns.stats()["bytes"] <= 12_000


def test_off_and_bad_budgets(open_store: Any) -> None:
    store = open_store(MODEL, columns=False)
    t = store["t"]
    t.insert({"s": "a", "i": 1})
    ex = t.explain(t.group_by(s=it.s).select({"n": agg.count()}).document, {}, columns=True)
    assert ex.mode == "native" and "off" in ex.columns["reason"]
    with pytest.raises(JarenlabError) as err:
        open_store(MODEL, name="other", columns="lots")
    assert err.value.code == "JD0006"
    with pytest.raises(JarenlabError) as err:
        t.execute(t.where(it.i > 0).document, {}, columns="yes")
    assert err.value.code == "JD0006"


def test_a_float_in_an_integer_member_leaves_the_answer_to_sql(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": 2.0}, {"s": "a", "i": 3}])
    q = t.group_by(s=it.s).select({"s": key("s"), "si": agg.sum(it.i)})
    items, trace, _ = run_query(t, q.document, {}, columns=True)
    assert trace.mode != "columnar" and "written as a float" in trace.columns["reason"]
    _, texts = t.texts()
    assert items == evaluate(q.document, [json.loads(x) for x in texts], {})


def test_whole_numbers_of_1e16_and_more_keep_their_kind(open_store: Any) -> None:
    """A float from 10^16 up is written with an exponent (``1e+16``), which PostgreSQL's ``jsonb``
    keeps as the digits of the integer it equals: the columns read such a number as the document
    writes it, so ``1e16`` stays a float and 10^16 an integer, as the engine reads them, both as
    patched after a commit and as built again from nothing; every answer is the engine's, kind
    included. A float in an integer member leaves the question to SQL, with the reason."""
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "x": 0.5, "i": 3}, {"s": "b", "x": 2, "i": 4}])
    of_x = [
        t.select({"x": it.x}),
        t.select({"sx": agg.sum(it.x), "ax": agg.avg(it.x), "n": agg.count(it.x)}),
        t.where(it.x > 1).order_by(it.x.desc()).select({"x": it.x}),
        t.group_by(s=it.s).select({"s": key("s"), "sx": agg.sum(it.x)}),
    ]
    of_i = [
        t.select({"i": it.i}),
        t.group_by(s=it.s).select({"s": key("s"), "si": agg.sum(it.i), "hi": agg.max(it.i)}),
    ]
    for q in of_x + of_i:  # warm, before any large number
        got, sql, engine, mode = answers(t, q)
        assert same(got, engine) and same(sql, engine), (got, engine)
        assert mode == "columnar", q.document
    t.insert_many(
        [
            {"s": "a", "x": 1e16, "i": 10**16},
            {"s": "a", "x": 1, "i": 2**60 + 1},
            {"s": "b", "x": -2.5e16, "i": 2**60},
            {"s": "b", "x": 3e17, "i": -(10**17)},
            {"s": "c", "x": 10**16 + 2, "i": 1},
            {"s": "c", "x": 2.0**60},
            {"s": "c+e+", "x": 2.5, "i": 7},  # (e+ in a string: the member read from the document)
        ]
    )
    for fresh in (False, True):  # patched after the commit, then built again from nothing
        if fresh:
            store.columns.drop()
        for q in of_x + of_i:
            got, sql, engine, mode = answers(t, q)
            assert same(got, engine) and same(sql, engine), (q.document, got, sql, engine)
            assert mode == "columnar", q.document
    want = "[1e+16, 1, -2.5e+16, 3e+17, 10000000000000002, 1.152921504606847e+18, 2.5]"
    assert repr(t.select(it.x).to_list()[2:]) == want
    t.insert({"s": "d", "i": 1e17})
    for q in of_i:
        got, trace, _ = run_query(t, q.document, {}, columns=True)
        assert trace.mode != "columnar" and "written as a float" in trace.columns["reason"]
        assert same(got, evaluate(q.document, [json.loads(x) for x in t.texts()[1]], {}))


def test_a_profile_reads_through_sql(open_store: Any) -> None:
    store = open_store(MODEL)
    t = store["t"]
    t.insert_many([{"s": "a", "i": 1}] * 3)
    q = t.group_by(s=it.s).select({"n": agg.count()})
    from jarenlab.query.planner.profile import Profile

    items, trace, _ = run_query(t, q.document, {}, columns=True, profile=Profile())
    assert trace.mode != "columnar" and "profile" in trace.columns["reason"]
    assert items == [[{"n": 3}]]


def test_string_keys_follow_puts_and_deletes(open_store: Any) -> None:
    """A collection keyed by a string member (keys are not storage positions): inserts of new keys
    (appended without looking for them among the held rows), puts of new and held keys, deletes,
    and a delete then a put of the same key in one transaction."""
    store = open_store(MODEL)
    u = store["u"]
    rng = random.Random(5)
    q = u.group_by(v=it.v).select({"v": key("v"), "n": agg.count()})
    for step in range(40):
        k = f"k{rng.randrange(30)}"
        op = rng.choice(["insert", "put", "put", "delete", "swap"])
        if op == "insert" and u.get(k) is None:
            u.insert({"id": k, "v": rng.randrange(4)})
        elif op == "put":
            u.put({"id": k, "v": rng.randrange(4)})
        elif op == "delete":
            u.delete(k)
        else:
            with store.transaction():
                u.delete(k)
                u.put({"id": k, "v": rng.randrange(4)})
        got, trace, _ = run_query(u, q.document, {}, columns=True)
        assert trace.mode == "columnar"
        assert got == run_query(u, q.document, {}, columns=False)[0], (step, op)
