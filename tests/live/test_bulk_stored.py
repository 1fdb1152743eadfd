"""A ``rows`` query and an accumulator built in bulk from the columns (:mod:`jarenlab.live.stored`)
hold exactly what the row-by-row build holds (every row's place and items, the running totals),
in key order and in insertion order (text keys), and then follow random writes, moves (a key
deleted and written again in one commit) and rollbacks equal to a fresh run of the engine after
every commit, on both backends."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from jarenlab.live.analyze import plan_live
from jarenlab.live.seed import matching_rows, seeded
from jarenlab.live.stored import build
from jarenlab.live.strategies import make_maintainer
from jarenlab.query.planner.run import ColumnSeed, columnar_seed

from .test_bulk import F, _built, _doc, _same_state, opened_in_bulk
from .test_oracle import _check

#: Kept in bulk: rows returning a member, a map or an array; aggregates of a member or of the row.
DOCS: dict[str, Any] = {
    "rows-map": {**F, "$where": {"$lt": ["$r.n", 60]}, "$return": {"n": "$r.n", "x": "$r.x", "s": "$r.s"}},
    "rows-x": {**F, "$where": {"$exists": "$r.g"}, "$return": "$r.x"},
    "rows-array": {**F, "$return": ["$r.g", "$r.x"]},
    "count": {"$count": {**F, "$where": {"$lt": ["$r.n", 50]}, "$return": "$r"}},
    "count-s": {"$count": {**F, "$where": {"$ge": ["$r.n", 5]}, "$return": "$r.s"}},
    "sum-x": {"$sum": {**F, "$where": {"$ge": ["$r.n", 5]}, "$return": "$r.x"}},
    "sum-n": {"$sum": {**F, "$return": "$r.n"}},
    "avg-x": {"$avg": {**F, "$return": "$r.x"}},
    "avg-n": {"$avg": {**F, "$where": {"$exists": "$r.s"}, "$return": "$r.n"}},
    "max-s": {"$max": {**F, "$where": {"$exists": "$r.g"}, "$return": "$r.s"}},
    "min-n": {"$min": {**F, "$where": {"$exists": "$r.x"}, "$return": "$r.n"}},
    "min-s": {"$min": {**F, "$return": "$r.s"}},
    "max-n": {"$max": {**F, "$return": "$r.n"}},
}


def _write(coll: Any, rng: random.Random, key: Any, *, huge: bool = True) -> None:
    """Put a new document at ``key`` (an ``items`` key is its ``id``)."""
    doc = _doc(rng, huge=huge)
    if coll.name == "items":
        coll.put({"id": key, **doc})
    else:
        coll.put(doc, key)


def _filled(
    store: Any, collection: str, rng: random.Random, n: int, *, huge: bool = True
) -> tuple[Any, list[Any]]:
    """``collection`` with ``n`` documents (``items``: keys in no order), their keys."""
    coll = store[collection]
    if collection == "items":
        keys: list[Any] = [f"k{rng.randrange(10**6):06d}" for _ in range(n)]
        coll.insert_many([{"id": k, **_doc(rng, huge=huge)} for k in dict.fromkeys(keys)])
        return coll, list(dict.fromkeys(keys))
    return coll, list(range(1, coll.insert_many([_doc(rng, huge=huge) for _ in range(n)]) + 1))


@pytest.mark.parametrize("collection", ["nums", "items"])
@pytest.mark.parametrize("name", list(DOCS))
def test_a_bulk_build_holds_what_the_row_by_row_build_holds(store: Any, collection: str, name: str) -> None:
    rng = random.Random(f"{name}-{collection}")
    coll, keys = _filled(store, collection, rng, 1_200)
    for _ in range(60):  # deletes, rewrites and moves leave holes and change storage order
        key = rng.choice(keys)
        roll = rng.random()
        if roll < 0.4:
            coll.delete(key)
        elif roll < 0.7:
            _write(coll, rng, key)
        else:
            with store.transaction():
                coll.delete(key)
                _write(coll, rng, key)
    doc = DOCS[name]
    _same_state(_built(coll, doc, "columnar"), _built(coll, doc, "rows"))


@pytest.mark.parametrize("collection", ["nums", "items"])
def test_bulk_built_storage_order_queries_follow_random_writes(store: Any, collection: str) -> None:
    """Every query here seeded from the columns and built in bulk, then 250 commits: inserts,
    rewrites, deletes, moves, several writes at once, and now and then a commit rolled back; after
    every commit each equals a fresh run of the engine, and its patch turns the old rows into the
    new ones (a rollback emits nothing)."""
    rng = random.Random(f"stored-{collection}")
    coll, known = _filled(store, collection, rng, 700, huge=False)
    lives, patches, before = opened_in_bulk(coll, DOCS)
    fresh_keys = iter(range(10**6))
    for step in range(250):
        kept = list(known)
        try:
            with store.transaction():
                for _ in range(1 if step % 7 else rng.randrange(2, 5)):
                    roll = rng.random()
                    if roll < 0.3 or not known:
                        if collection == "items":
                            known.append(f"n{next(fresh_keys)}")
                            _write(coll, rng, known[-1], huge=False)
                        else:
                            known.append(coll.insert(_doc(rng, huge=False)))
                    elif roll < 0.55:
                        _write(coll, rng, rng.choice(known), huge=False)
                    elif roll < 0.8:  # a move: deleted and written again in one commit
                        key = rng.choice(known)
                        coll.delete(key)
                        _write(coll, rng, key, huge=False)
                    else:
                        coll.delete(known.pop(rng.randrange(len(known))))
                if step % 23 == 22:
                    raise KeyError("roll back")
        except KeyError:
            known = kept
        _check(lives, before, patches)


def test_an_answer_that_does_not_line_up_with_the_rows_is_built_row_by_row(store: Any) -> None:
    """The rows' items come from the seed's answer, one a matching row: an answer short of a row
    leaves the maintainer untouched, and the seed builds it row by row, saying why."""
    coll, _ = _filled(store, "items", random.Random(3), 300)
    doc = DOCS["rows-map"]
    got = columnar_seed(coll, doc, {}, columns=True)
    assert isinstance(got, ColumnSeed), got
    rows = matching_rows(got)
    m = make_maintainer(plan_live(doc), {}, {}, coll.storage_order)
    assert (
        build(m, got.answered.table, rows, got.items[:-1])
        == "rows: the answer does not hold one item a matching row"
    )
    assert m.size == 0 and m.rows == []
    short = ColumnSeed(got.items[:-1], got.answered, got.plan, got.externals)
    report = {"build": "columnar"}
    built = seeded(m, short, rows, threading.Event(), report)
    assert report == {
        "build": "rows",
        "build_reason": "rows: the answer does not hold one item a matching row",
    }
    _same_state(built, _built(coll, doc, "rows"))


def test_a_negative_zero_member_seeds_as_the_engine_gives_it(store: Any) -> None:
    """The seed's answer (the rows first shown, and the items a ``rows`` query is built from) keeps
    ``-0.0`` apart from ``0.0``, as the engine does (on PostgreSQL, whose jsonb numbers have no
    negative zero, the columns read that member from the document's text)."""
    nums = store["nums"]
    nums.insert_many([{"n": 1, "x": -0.0}, {"n": 2, "x": 1.5}])
    doc = DOCS["rows-map"]
    live = nums.live(doc, columns=True)
    assert live.wait_seeded().seeded["build"] == "columnar"
    assert (
        repr(live.rows)
        == repr(nums.execute([doc], columns=False))
        == "[{'n': 1, 'x': -0.0}, {'n': 2, 'x': 1.5}]"
    )
