"""Seeded write streams: after every commit each live query equals a fresh run of its document,
and replaying its emitted patches onto the previous rows gives the new rows."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from jarenlab.patch import apply_patch
from jarenlab.query.build.builder import it, param

from .conftest import fresh

F = {"$for": {"r": "$[*]"}}
WHERE_N = {"$gt": ["$r.n", "$min"]}
DOCS: dict[str, tuple[Any, dict[str, Any], str]] = {
    "rows": ({**F, "$where": WHERE_N, "$return": {"id": "$r.id", "n": "$r.n"}}, {"min": 20}, "rows"),
    "rows-multi": ({**F, "$where": {"$exists": "$r.g"}, "$return": "$r.x"}, {}, "rows"),
    "rows-let": (
        {**F, "$let": {"d": {"$mul": ["$r.n", 2]}}, "$where": {"$eq": ["$r.g", "$g"]}, "$return": "$d"},
        {"g": "b"},
        "rows",
    ),
    "top5": (
        {
            "$subsequence": [
                {**F, "$orderby": {"$key": "$r.n", "$dir": "desc", "$empty": "greatest"}, "$return": "$r"},
                0,
                5,
            ]
        },
        {},
        "window",
    ),
    "page": (
        {
            "$subsequence": [
                {
                    **F,
                    "$where": {"$exists": "$r.s"},
                    "$orderby": [{"$key": "$r.s"}, {"$key": "$r.x", "$dir": "desc"}],
                    "$return": {"k": "$r.id", "s": "$r.s"},
                },
                2,
                4,
            ]
        },
        {},
        "window",
    ),
    "head": ({"$head": [{**F, "$orderby": {"$key": "$r.x"}, "$return": "$r.id"}]}, {}, "window"),
    "sorted-all": (
        {**F, "$where": {"$lt": ["$r.n", 60]}, "$orderby": {"$key": "$r.g"}, "$return": ["$r.g", "$r.n"]},
        {},
        "window",
    ),
    "count": ({"$count": "$[*]"}, {}, "accumulator"),
    "sum-n": ({"$sum": "$[*].n"}, {}, "accumulator"),
    "sum-x": ({"$sum": {**F, "$where": WHERE_N, "$return": "$r.x"}}, {"min": 10}, "accumulator"),
    "avg-x": ({"$avg": "$[*].x"}, {}, "accumulator"),
    "min-n": ({"$min": "$[*].n"}, {}, "accumulator"),
    "max-s": ({"$max": "$[*].s"}, {}, "accumulator"),
    "groups": (
        {
            **F,
            "$groupby": {"k": "$r.g"},
            "$return": {"g": {"$default": ["$k", None]}, "c": {"$count": "$r"}, "t": {"$sum": "$r.n"}},
        },
        {},
        "groups",
    ),
    "groups-where": (
        {**F, "$where": WHERE_N, "$groupby": {"k": "$r.s"}, "$return": {"$max": "$r.x"}},
        {"min": 30},
        "groups",
    ),
    "rerun": ({"$distinct": ["$[*].g"]}, {}, "rerun"),
}
KEYS = ["a", "b", "B", "é", "z", "aa", "😀", "ab", "A1", "a/b", "x~y", "m", "n", "Z", "é2", "q"]


def _doc(rng: random.Random) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if rng.random() < 0.9:
        d["g"] = rng.choice("abcd")
    if rng.random() < 0.85:
        d["n"] = rng.randrange(0, 100)
    if rng.random() < 0.8:
        d["x"] = rng.choice([rng.random() * 10, rng.randrange(-3, 3), 0.1, 2.5])
    if rng.random() < 0.7:
        d["s"] = rng.choice(["", "a", "b", "ab", "é", "Z", "😀"])
    return d


def _write(coll: Any, rng: random.Random, keyed: bool, known: list[Any]) -> None:
    roll = rng.random()
    if keyed:
        key = rng.choice(KEYS)
        if roll < 0.45:
            coll.put({"id": key, **_doc(rng)})
        elif roll < 0.7 and coll.get(key) is not None:
            coll.patch(key, {k: v for k, v in _doc(rng).items() if rng.random() < 0.5} or {"n": 1})
        else:
            coll.delete(key)
        return
    if roll < 0.4 or not known:
        known.append(coll.insert(_doc(rng)))
    elif roll < 0.7:
        coll.put(_doc(rng), rng.choice(known))
    else:
        key = rng.choice(known)
        coll.delete(key)
        known.remove(key)


def _check(lives: dict[str, Any], before: dict[str, list[Any]], patches: dict[str, list[Any]]) -> None:
    for name, (live, coll, doc, ext, strategy) in lives.items():
        expected = fresh(coll, doc, ext, windowed=strategy == "window")
        assert orjson.dumps(live.rows) == orjson.dumps(expected), name
        got = patches[name]
        assert len(got) <= 1, f"{name}: {len(got)} emissions for one commit"
        if got:
            assert orjson.dumps(live.rows) != orjson.dumps(before[name]), f"{name}: emitted without a change"
            replayed = apply_patch({"rows": before[name]}, got[0])["rows"]
            assert orjson.dumps(replayed) == orjson.dumps(live.rows), name
        else:
            assert orjson.dumps(live.rows) == orjson.dumps(before[name]), f"{name}: changed without emitting"
        before[name] = live.rows
        got.clear()


def _watch(
    coll: Any, specs: list[tuple[str, Any, dict[str, Any], str]]
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Open a live query per (name, document, externals, strategy), recording each one's patches."""
    lives: dict[str, Any] = {}
    patches: dict[str, list[Any]] = {}
    for name, doc, ext, strategy in specs:
        live = coll.live(doc, **ext)
        assert live.mode.strategy == strategy, (name, live.mode)
        patches[name] = []
        live.subscribe(lambda patch, seq, name=name: patches[name].append(patch))
        lives[name] = (live, coll, doc, ext, strategy)
    return lives, patches


@pytest.mark.parametrize("collection", ["items", "nums"])
def test_seeded_stream_matches_fresh_runs(store: Any, collection: str) -> None:
    rng = random.Random(f"live-{collection}")
    coll = store[collection]
    keyed = collection == "items"
    known: list[Any] = []
    for _ in range(20):
        _write(coll, rng, keyed, known)
    lives, patches = _watch(coll, [(name, doc, ext, strategy) for name, (doc, ext, strategy) in DOCS.items()])
    before = {name: v[0].rows for name, v in lives.items()}
    _check(lives, before, patches)
    for step in range(1_100):
        if step % 50 == 49:
            with store.transaction():  # several writes in one commit: one emission at most
                for _ in range(rng.randrange(2, 6)):
                    _write(coll, rng, keyed, known)
        else:
            _write(coll, rng, keyed, known)
        _check(lives, before, patches)
    assert all(v[0].mode.incremental == (v[4] != "rerun") for v in lives.values())


def test_builder_query_live(store: Any) -> None:
    from jarenlab.query.build.builder import Query

    coll = store["items"]
    rng = random.Random(7)
    for key in KEYS:
        coll.put({"id": key, **_doc(rng)})
    q = Query(coll).where(it.n > param("m")).order_by(it.n.desc()).take(3).select({"id": it.id, "n": it.n})
    live = q.live(m=10)
    assert live.mode.strategy == "window"
    doc = {
        "$subsequence": [
            {
                **F,
                "$where": {"$gt": ["$r.n", 10]},
                "$orderby": {"$key": "$r.n", "$dir": "desc"},
                "$return": {"id": "$r.id", "n": "$r.n"},
            },
            0,
            3,
        ]
    }
    for _ in range(200):
        _write(coll, rng, True, [])
        assert live.rows == fresh(coll, doc, {}, windowed=True)


def test_windows_follow_single_row_commits_at_every_edge(store: Any) -> None:
    """Windows of several sizes and offsets (one beyond the rows, one larger than them) follow 600
    single-row commits: rows entering, leaving and moving before, inside and after each window."""
    rng = random.Random("live-windows")
    coll = store["nums"]
    known: list[Any] = []
    for _ in range(150):
        known.append(coll.insert(_doc(rng)))

    def window(skip: int, take: int) -> dict[str, Any]:
        ordered = {**F, "$orderby": [{"$key": "$r.n", "$dir": "desc", "$empty": "greatest"}], "$return": "$r"}
        return {"$subsequence": [ordered, skip, take]}

    sizes = [(0, 1), (0, 10), (5, 20), (60, 50), (140, 30), (0, 400)]
    lives, patches = _watch(coll, [(f"{s}+{t}", window(s, t), {}, "window") for s, t in sizes])
    before = {name: v[0].rows for name, v in lives.items()}
    for _ in range(600):
        _write(coll, rng, False, known)
        _check(lives, before, patches)


#: Group-by live queries kept by per-group tallies (``jarenlab.live.folds``), and one that is not
#: (its ``$return`` reads the rows outside an aggregate, so each touched group goes through the engine).
GROUPED: dict[str, tuple[Any, dict[str, Any], bool]] = {
    "all-five": (
        {
            **F,
            "$groupby": {"k": "$r.g"},
            "$return": {
                "g": {"$default": ["$k", None]},
                "n": {"$count": "$r"},
                "xs": {"$count": "$r.x"},
                "sum": {"$sum": "$r.x"},
                "avg": {"$avg": "$r.x"},
                "min": {"$min": "$r.x"},
                "max": {"$max": "$r.x"},
            },
        },
        {},
        True,
    ),
    "strings-let-where": (
        {
            **F,
            "$let": {"d": {"$mul": ["$r.n", 2]}},
            "$where": {"$gt": ["$r.n", "$min"]},
            "$groupby": {"k": "$r.s"},
            "$return": [
                "$k",
                {"$min": "$r.s"},
                {"$max": "$r.g"},
                {"$sum": "$d"},
                {"$add": [{"$avg": "$d"}, {"$count": "$r.g"}]},
            ],
        },
        {"min": 20},
        True,
    ),
    "engine": (
        {**F, "$groupby": {"k": "$r.g"}, "$return": {"k": "$k", "ns": ["$r.n"], "t": {"$sum": "$r.x"}}},
        {},
        False,
    ),
}
#: Floats whose sums round (0.1, 1e16 and 1.0), tie (1 and 1.0, 0 and -0.0) and cancel.
TRICKY = [0.1, 0.2, 0.3, 1, 1.0, -1.0, 0, -0.0, 0.0, 1e16, -1e16, 2.5, 5e-324, 1e300, -7, 2**53 + 1]


def _tricky(rng: random.Random) -> dict[str, Any]:
    d = _doc(rng)
    if "x" in d and rng.random() < 0.7:
        d["x"] = rng.choice(TRICKY)
    return d


@pytest.mark.parametrize("collection", ["items", "nums"])
def test_grouped_aggregates_are_kept_exactly_as_fresh_runs_give_them(store: Any, collection: str) -> None:
    """Random writes (puts, patches, deletes, several writes in one commit) under live group-bys whose
    count/sum/avg/min/max are kept per group: after every commit the rows are a fresh run's, byte for
    byte (an int stays an int, 1 and 1.0 differ, a float sum is the engine's correctly rounded one,
    also after the rows that made it leave)."""
    from jarenlab.live.analyze import plan_live
    from jarenlab.live.strategies import Groups, make_maintainer

    for doc, ext, folded in GROUPED.values():
        m = make_maintainer(plan_live(doc), ext, {}, "key")
        assert isinstance(m, Groups) and bool(m.folds) == folded
    rng = random.Random(f"groups-{collection}")
    coll = store[collection]
    keyed = collection == "items"
    known: list[Any] = []

    def write() -> None:
        roll = rng.random()
        if keyed:
            key = rng.choice(KEYS)
            if roll < 0.5:
                coll.put({"id": key, **_tricky(rng)})
            elif roll < 0.7 and coll.get(key) is not None:
                coll.patch(key, {"x": rng.choice(TRICKY)})
            else:
                coll.delete(key)
        elif roll < 0.45 or not known:
            known.append(coll.insert(_tricky(rng)))
        elif roll < 0.7:
            coll.put(_tricky(rng), rng.choice(known))
        else:
            known.remove(key := rng.choice(known))
            coll.delete(key)

    for _ in range(20):
        write()
    specs = [(name, doc, ext, "groups") for name, (doc, ext, _) in GROUPED.items()]
    lives, patches = _watch(coll, specs)
    before = {name: v[0].rows for name, v in lives.items()}
    seen: set[str] = set()
    for step in range(800):
        if step % 40 == 39:
            with store.transaction():  # (a text key deleted and put again goes last)
                for _ in range(rng.randrange(2, 6)):
                    write()
        else:
            write()
        _check(lives, before, patches)
        seen.update(type(row["sum"]).__name__ for row in lives["all-five"][0].rows)
    assert seen == {"int", "float"}  # the stream made both integer and float sums
