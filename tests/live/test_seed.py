"""Live queries seeded from the columns: the first rows are the columns' answer at one change-log
record, the maintainer is built from the table as of that record, and every update after it equals
a fresh run of the engine (seeded write streams, re-seeds, and commits from another process landing
while queries seed)."""

from __future__ import annotations

import multiprocessing as mp
import random
import time
import traceback
from typing import Any

import orjson
import pytest

import jarenlab as jl
from jarenlab.query.build.builder import it

from .conftest import MODEL, fresh
from .test_oracle import _check, _write

F = {"$for": {"r": "$[*]"}}
#: Documents the columns answer (typed members only), with the strategy each is kept by.
SEEDED: dict[str, tuple[Any, dict[str, Any], str]] = {
    "rows": (
        {**F, "$where": {"$gt": ["$r.n", "$min"]}, "$return": {"g": "$r.g", "n": "$r.n"}},
        {"min": 20},
        "rows",
    ),
    "rows-member": ({**F, "$where": {"$exists": "$r.g"}, "$return": "$r.x"}, {}, "rows"),
    "top10": (
        {
            "$subsequence": [
                {
                    **F,
                    "$where": {"$ge": ["$r.n", 10]},
                    "$orderby": {"$key": "$r.x", "$dir": "desc"},
                    "$return": {"n": "$r.n", "x": "$r.x", "s": "$r.s"},
                },
                0,
                10,
            ]
        },
        {},
        "window",
    ),
    "sorted": (
        {
            **F,
            "$where": {"$lt": ["$r.n", 60]},
            "$orderby": [{"$key": "$r.g"}, {"$key": "$r.n"}],
            "$return": "$r.n",
        },
        {},
        "window",
    ),
    "count": ({"$count": {**F, "$where": {"$ge": ["$r.n", 0]}, "$return": "$r.n"}}, {}, "accumulator"),
    "sum-x": (
        {"$sum": {**F, "$where": {"$gt": ["$r.n", "$min"]}, "$return": "$r.x"}},
        {"min": 10},
        "accumulator",
    ),
    "groups": (
        {
            **F,
            "$groupby": {"k": "$r.g"},
            "$return": {
                "g": "$k",
                "c": {"$count": "$r"},
                "t": {"$sum": "$r.n"},
                "a": {"$avg": "$r.x"},
                "lo": {"$min": "$r.g"},
                "hi": {"$max": "$r.n"},
            },
        },
        {},
        "groups",
    ),
    "groups-where": (
        {
            **F,
            "$where": {"$gt": ["$r.n", "$min"]},
            "$groupby": {"k": "$r.s"},
            "$return": {"s": "$k", "c": {"$count": "$r"}, "x": {"$sum": "$r.x"}},
        },
        {"min": 30},
        "groups",
    ),
}
#: The maintainers built in bulk from the columns (:mod:`jarenlab.live.bulk`, :mod:`jarenlab.live.stored`);
#: the others row by row.
BUILT = dict.fromkeys(
    ["rows", "rows-member", "top10", "count", "sum-x", "groups", "groups-where"], "columnar"
)
#: The documents a text-keyed (insertion-ordered) collection seeds from the columns: every one but
#: the windows, whose ties the live order breaks by key and the columns by storage order.
UNORDERED = [name for name, (_, _, strategy) in SEEDED.items() if strategy != "window"]


def _open(
    coll: Any, names: list[str], columns: bool | None = True
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    lives: dict[str, Any] = {}
    patches: dict[str, list[Any]] = {}
    for name in names:
        doc, ext, strategy = SEEDED[name]
        live = coll.live(doc, columns=columns, **ext)
        assert live.mode.strategy == strategy, (name, live.mode)
        patches[name] = []
        live.subscribe(lambda patch, seq, name=name: patches[name].append(patch))
        lives[name] = (live, coll, doc, ext, strategy)
    return lives, patches


@pytest.mark.parametrize("collection", ["nums", "items"])
def test_seeds_from_the_columns_and_follows_a_write_stream(store: Any, collection: str) -> None:
    """Seeded from the columns (``seeded`` says so, at the record the rows reflect), then 600
    random writes (puts, patches, deletes, several in one commit, a change of externals that
    re-seeds from the columns): after every commit each query equals a fresh run of the engine."""
    rng = random.Random(f"seed-{collection}")
    coll = store[collection]
    keyed = collection == "items"
    known: list[Any] = []
    for _ in range(200):
        _write(coll, rng, keyed, known)
    names = list(SEEDED) if collection == "nums" else UNORDERED
    lives, patches = _open(coll, names)
    high = store.changes.bounds()[1]
    for name, (live, *_rest) in lives.items():
        assert live.seeded["source"] == "columns", (name, live.seeded)
        assert live.seeded["seq"] == live.seq == high, name
    before = {name: v[0].rows for name, v in lives.items()}
    _check(lives, before, patches)
    for name, (live, *_rest) in lives.items():  # the maintainers, built from the columns, agree with the seed
        assert live.wait_seeded().seeded["maintainer"] == "ready"
        assert live.seeded["build"] == BUILT.get(name, "rows"), (name, live.seeded)
    for step in range(600):
        if step % 40 == 39:
            with store.transaction():
                for _ in range(rng.randrange(2, 6)):
                    _write(coll, rng, keyed, known)
        else:
            _write(coll, rng, keyed, known)
        if step == 300:  # a re-seed, from the columns again, emitting the difference
            live = lives["rows"][0]
            live.set_externals(min=50)
            lives["rows"] = (live, coll, lives["rows"][2], {"min": 50}, "rows")
            assert live.seeded["source"] == "columns"
            got, patches["rows"] = patches["rows"], []
            replayed = before["rows"]
            for patch in got:
                from jarenlab.patch import apply_patch

                replayed = apply_patch({"rows": replayed}, patch)["rows"]
            assert orjson.dumps(replayed) == orjson.dumps(live.rows)
            before["rows"] = live.rows
        _check(lives, before, patches)


def test_the_same_rule_as_a_run(store: Any) -> None:
    """``columns=None`` seeds from the columns where a run would answer from them (warm, or a large
    collection), ``columns=False`` never; an index serving the query keeps SQL; a window over text
    keys says why it does not."""
    nums, items = store["nums"], store["items"]
    rng = random.Random(3)
    for _ in range(50):
        _write(nums, rng, False, [])
        _write(items, rng, True, [])
    doc, ext, _ = SEEDED["groups"]
    cold = nums.live(doc, **ext)
    assert cold.seeded["source"] == "sql"
    assert "fewer than 50,000 rows" in cold.seeded["reason"]
    nums.execute(doc, columns=True)  # the columns are warm now: a run would take them
    warm = nums.live(doc, **ext)
    assert warm.seeded["source"] == "columns" and warm.seeded["warm"] is True
    off = nums.live(doc, columns=False, **ext)
    assert off.seeded == {
        **off.seeded,
        "source": "sql",
        "reason": "columns: the columnar path is off (columns=False)",
    }
    window = items.live(SEEDED["top10"][0], columns=True)
    assert window.seeded["source"] == "sql" and window.seeded["reason"].startswith("order:")
    builder = nums.where(it.n > 5).order_by(it.n.desc()).take(3).select({"n": it.n}).live(columns=True)
    assert builder.seeded["source"] == "columns"
    expected = fresh(nums, {"$subsequence": [{**F, "$where": {"$gt": ["$r.n", 5]}, "$orderby": {"$key": "$r.n", "$dir": "desc"}, "$return": {"n": "$r.n"}}, 0, 3]}, {}, windowed=True)  # fmt: skip
    assert builder.rows == expected
    for live in (cold, warm, off, builder):
        assert orjson.dumps(live.rows) == orjson.dumps(live.wait_seeded().rows)


def test_stats_count_seeds_by_source(store: Any) -> None:
    nums = store["nums"]
    for i in range(5):
        nums.insert({"n": i, "g": "a"})
    a = nums.live(SEEDED["count"][0], columns=True)
    b = nums.live(SEEDED["count"][0], columns=False)
    live = store.stats()["live"]
    assert live["seeds"] == {"columns": 1, "sql": 1}
    assert a.rows == b.rows == [5]


# -- commits from another process while queries seed ---------------------------------------------
COMMITS = 300


def _insert_loop(target: dict[str, Any], started: Any, results: Any) -> None:
    try:
        with jl.open(target["path"], schema=target.get("schema")) as store:
            nums = store["nums"]
            started.set()
            for i in range(COMMITS):
                nums.insert({"n": i % 97, "g": "abc"[i % 3], "x": i / 7})
                time.sleep(0.002)
        results.put("ok")
    except BaseException:
        results.put(traceback.format_exc())
        raise


def test_commits_from_another_process_while_seeding(open_store: Any) -> None:
    """A writer process inserts one document per commit while this process opens live queries seeded
    from the columns, one after another. Every query's count is the count at its seed's record, each
    emission carries exactly the commits after it (count = count at the seed + commits since: none
    lost, none applied twice), and once the writer is done every query equals a fresh run."""
    store = open_store(MODEL)
    nums = store["nums"]
    nums.insert_many([{"n": i % 97, "g": "abc"[i % 3], "x": i / 3} for i in range(2_000)])
    base_seq, base_count = store.changes.bounds()[1], nums.count()
    names = ["count", "top10", "groups", "rows"]
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["jarenlab", "jarenlab.store"])
    started, results = ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=_insert_loop, args=(open_store.target(), started, results))
    proc.start()
    assert started.wait(60)
    opened: list[tuple[Any, list[tuple[int, list[Any]]]]] = []
    while proc.is_alive() and len(opened) < 40:
        doc, ext, _ = SEEDED[names[len(opened) % len(names)]]
        live = nums.live(doc, columns=True, **ext)
        seen: list[tuple[int, list[Any]]] = []
        live.subscribe(lambda patch, seq, live=live, seen=seen: seen.append((seq, live.rows)))
        assert live.seeded["source"] == "columns" and live.seeded["seq"] == live.seq
        if names[len(opened) % len(names)] == "count":  # the count as of the seed's record
            assert live.rows == [base_count + live.seq - base_seq]
        opened.append((live, seen))
        time.sleep(0.01)
    assert results.get(timeout=120) == "ok"
    proc.join(30)
    assert proc.exitcode == 0
    high = store.changes.bounds()[1]
    assert high == base_seq + COMMITS
    deadline = time.monotonic() + 30
    while any(live.seq < high for live, _ in opened) and time.monotonic() < deadline:
        time.sleep(0.02)
    seeds = [live.seeded["seq"] for live, _ in opened]
    assert any(base_seq < s < high for s in seeds)  # queries seeded while the writer committed
    for i, (live, seen) in enumerate(opened):
        name = names[i % len(names)]
        doc, ext, strategy = SEEDED[name]
        assert live.seq == high
        assert orjson.dumps(live.rows) == orjson.dumps(
            fresh(nums, doc, ext, windowed=strategy == "window")
        ), name
        seqs = [seq for seq, _ in seen]
        assert seqs == sorted(set(seqs)) and all(s > live.seeded["seq"] for s in seqs), name
        if name == "count":
            assert seqs == list(range(live.seeded["seq"] + 1, high + 1))  # one emission per commit after it
            assert all(rows == [base_count + seq - base_seq] for seq, rows in seen)
