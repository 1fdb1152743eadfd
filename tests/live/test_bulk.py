"""Maintainers built in bulk from the columns (:mod:`jarenlab.live.bulk`) hold exactly what the
row-by-row build holds (every group's tallies and members, a window's whole order and rows), on
values whose sums, ties and extremes are tricky, and then follow random writes equal to a fresh run
of the engine after every commit, on both backends."""

from __future__ import annotations

import random
import threading
from typing import Any

import orjson
import pytest

from jarenlab.live.analyze import plan_live
from jarenlab.live.seed import matching_rows, seeded
from jarenlab.live.strategies import Accumulator, Groups, Sorted, make_maintainer
from jarenlab.query.planner.run import ColumnSeed, columnar_seed

from .conftest import fresh
from .test_oracle import _check

F = {"$for": {"r": "$[*]"}}
#: Kept in bulk: group-bys whose aggregates read members, windows over members returning one item.
DOCS: dict[str, Any] = {
    "groups-g": {
        **F,
        "$groupby": {"k": "$r.g"},
        "$return": {
            "g": "$k",
            "c": {"$count": "$r"},
            "cx": {"$count": "$r.x"},
            "t": {"$sum": "$r.n"},
            "sx": {"$sum": "$r.x"},
            "a": {"$avg": "$r.x"},
            "lo": {"$min": "$r.n"},
            "hi": {"$max": "$r.n"},
            "ls": {"$min": "$r.s"},
            "hs": {"$max": "$r.s"},
        },
    },
    "groups-n": {
        **F,
        "$where": {"$lt": ["$r.n", 90]},
        "$groupby": {"k": "$r.n"},
        "$return": {"k": "$k", "c": {"$count": "$r"}, "sx": {"$sum": "$r.x"}},
    },
    "groups-s": {
        **F,
        "$groupby": {"k": "$r.s"},
        "$return": {"s": "$k", "a": {"$avg": "$r.x"}, "hi": {"$max": "$r.n"}, "lo": {"$min": "$r.g"}},
    },
    "top-x": {
        "$subsequence": [
            {
                **F,
                "$where": {"$ge": ["$r.n", 5]},
                "$orderby": {"$key": "$r.x", "$dir": "desc"},
                "$return": {"n": "$r.n", "x": "$r.x"},
            },
            0,
            10,
        ]
    },
    "page-s": {
        "$subsequence": [
            {
                **F,
                "$orderby": [{"$key": "$r.s", "$dir": "desc", "$empty": "greatest"}, {"$key": "$r.x"}],
                "$return": ["$r.s", "$r.x"],
            },
            3,
            7,
        ]
    },
    "all-g": {
        **F,
        "$orderby": [{"$key": "$r.g"}, {"$key": "$r.n", "$dir": "desc"}],
        "$return": {"n": "$r.n"},
    },
}
#: Floats whose sums cancel and round, equal values of both kinds, extremes that tie.
XS: list[Any] = [0.1, 0.2, 0.3, 1, 1.0, -0.0, 0.0, 2.5, 1e16, -1e16, 5e-324, 3, -3, 7.25, 1e-300, 2.0**-60]
SS = ["", "a", "b", "ab", "é", "Z", "😀", "ab~"]


def _doc(rng: random.Random, *, huge: bool = True) -> dict[str, Any]:
    """A document; without ``huge`` none whose sums the columns decline (2^53 or more), so every
    seed of a random stream comes from them."""
    d: dict[str, Any] = {}
    if rng.random() < 0.9:
        d["g"] = rng.choice("abcd")
    if rng.random() < 0.9:
        d["n"] = rng.choice(
            [rng.randrange(0, 100), rng.randrange(0, 100), 2**50 + rng.randrange(3) if huge else 7]
        )
    if rng.random() < 0.85:
        d["x"] = rng.choice(XS if huge else [x for x in XS if abs(x) < 1e10])
    if rng.random() < 0.8:
        d["s"] = rng.choice(SS)
    return d


def _built(coll: Any, doc: Any, how: str) -> Any:
    got = columnar_seed(coll, doc, {}, columns=True)
    assert isinstance(got, ColumnSeed), got
    m = make_maintainer(plan_live(doc, frozenset()), {}, {}, coll.storage_order)
    report = {"build": how}
    seeded(m, got, matching_rows(got), threading.Event(), report)
    assert report["build"] == how, report
    return m


def _tally_state(t: Any) -> tuple[Any, ...]:
    if t.name in ("min", "max"):  # (they read only the kinds and the extreme)
        return t.name, t.n, t.strings, t.others, repr(t.best), t.lost, repr(t.value())
    return t.name, t.n, t.ints, t.scaled, t.floats, t.specials, t.strings, t.others, repr(t.value())


def _same_state(bulk: Any, rows: Any) -> None:
    assert orjson.dumps(bulk.rows) == orjson.dumps(rows.rows)
    assert repr(bulk.rows) == repr(rows.rows)  # (1 and 1.0, 0.0 and -0.0 apart)
    if isinstance(bulk, Groups):
        assert list(bulk.groups) == list(rows.groups) or set(bulk.groups) == set(rows.groups)
        for hk, (gk, members, items) in rows.groups.items():
            gk2, members2, items2 = bulk.groups[hk]
            assert repr(gk2) == repr(gk) and repr(items2) == repr(items)
            assert members2.order == members.order and members2.sort == members.sort
            assert [_tally_state(t) for t in bulk.tallies[hk]] == [_tally_state(t) for t in rows.tallies[hk]]
        assert len(bulk.members) == len(rows.members)
        for key, member in rows.members.items():
            assert repr(bulk.members[key]) == repr(member)
        return
    if isinstance(bulk, Accumulator):
        assert _tally_state(bulk.tally) == _tally_state(rows.tally)
        bulk, rows = bulk.inner, rows.inner
    assert isinstance(bulk, Sorted)
    e, e2 = rows.entries, bulk.entries
    assert e2.order == e.order and e2.sort == e.sort and e2.multi == e.multi
    assert [dict(c) for c in bulk.kinds] == [dict(c) for c in rows.kinds]
    for key, items in e.items.items():
        assert repr(e2.items[key]) == repr(items)
    assert bulk.keyed == rows.keyed
    assert repr(bulk.rows) == repr(rows.rows)


@pytest.mark.parametrize("name", list(DOCS))
def test_a_bulk_build_holds_what_the_row_by_row_build_holds(store: Any, name: str) -> None:
    rng = random.Random(name)
    nums = store["nums"]
    nums.insert_many([_doc(rng) for _ in range(1_500)])
    for _ in range(60):  # deletes and rewrites leave holes in the keys
        key = rng.randrange(1, 1_500)
        if nums.get(key) is not None:
            nums.delete(key) if rng.random() < 0.5 else nums.put(_doc(rng), key)
    doc = DOCS[name]
    _same_state(_built(nums, doc, "columnar"), _built(nums, doc, "rows"))


def opened_in_bulk(coll: Any, docs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Each of ``docs`` opened live on ``coll``, seeded from the columns and built in bulk, its
    patches recorded; the rows checked against a fresh run. Returns what ``_check`` takes."""
    lives: dict[str, Any] = {}
    patches: dict[str, list[Any]] = {}
    for name, doc in docs.items():
        live = coll.live(doc, columns=True)
        assert live.wait_seeded().seeded.get("build") == "columnar", (name, live.seeded)
        patches[name] = []
        live.subscribe(lambda patch, seq, name=name: patches[name].append(patch))
        lives[name] = (live, coll, doc, {}, live.mode.strategy)
    before = {name: v[0].rows for name, v in lives.items()}
    _check(lives, before, patches)
    return lives, patches, before


def test_bulk_built_queries_follow_random_writes(store: Any) -> None:
    """Every bulk-built query, seeded from the columns, then 300 random writes (several in one
    commit now and then): after every commit each equals a fresh run of the engine, and its patch
    turns the old rows into the new ones."""
    rng = random.Random(7)
    nums = store["nums"]
    known = list(range(1, 801))
    nums.insert_many([_doc(rng, huge=False) for _ in known])
    lives, patches, before = opened_in_bulk(nums, DOCS)
    for step in range(300):
        with nums.store.transaction():
            for _ in range(1 if step % 10 else rng.randrange(2, 5)):
                roll = rng.random()
                if roll < 0.35:
                    known.append(nums.insert(_doc(rng, huge=False)))
                elif roll < 0.75 and known:
                    nums.put(_doc(rng, huge=False), rng.choice(known))
                elif known:
                    key = known.pop(rng.randrange(len(known)))
                    nums.delete(key)
        _check(lives, before, patches)


def test_what_is_built_row_by_row_and_why(store: Any) -> None:
    nums = store["nums"]
    nums.insert_many([_doc(random.Random(i)) for i in range(200)])
    cases = {
        "accumulator": {"$count": {**F, "$where": {"$gt": ["$r.n", 3]}, "$return": {"n": "$r.n"}}},
        "window": {**F, "$orderby": {"$key": "$r.x"}, "$return": "$r.n"},
    }
    for name, doc in cases.items():
        live = nums.live(doc, columns=True)
        seeded = live.wait_seeded().seeded
        assert seeded["source"] == "columns", (name, seeded)
        assert seeded["build"] == "rows" and seeded["build_reason"].startswith(name), (name, seeded)
        assert repr(live.rows) == repr(fresh(nums, doc, {}, windowed=name == "window")), name
