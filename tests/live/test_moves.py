"""A key deleted and written again in one commit takes a new place in storage order (insertion
order: it goes last), and the maintained live queries in storage order (``rows``, ``accumulator``,
``groups``) move it there too: after every commit they equal a fresh run of their document, in
this store and in another one following the change log."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from jarenlab.patch import apply_patch
from tests.waiting import wait_for

from .conftest import MODEL, fresh
from .test_oracle import DOCS, F, _check, _doc, _watch, _write
from .test_seed import SEEDED, UNORDERED
from .test_seed import _open as _seeded

#: Queries whose order is storage order, each telling a move apart: row order, the first of equal
#: extremes (1 before 1.0), a float sum (added in storage order), the order of groups (by their
#: first row), a group's rows read through the engine.
ORDERED: dict[str, tuple[Any, str]] = {
    "ids": ({**F, "$return": "$r.id"}, "rows"),
    "xs": ({**F, "$where": {"$exists": "$r.g"}, "$return": "$r.x"}, "rows"),
    "min-x": ({"$min": "$[*].x"}, "accumulator"),
    "max-x": ({"$max": {**F, "$where": {"$exists": "$r.g"}, "$return": "$r.x"}}, "accumulator"),
    "sum-x": ({"$sum": "$[*].x"}, "accumulator"),
    "groups": ({**F, "$groupby": {"k": "$r.g"}, "$return": {"g": "$k", "n": {"$count": "$r"}}}, "groups"),
    "groups-engine": ({**F, "$groupby": {"k": "$r.g"}, "$return": {"g": "$k", "ids": ["$r.id"]}}, "groups"),
}


def _open(coll: Any, docs: dict[str, tuple[Any, str]]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    return _watch(coll, [(name, doc, {}, strategy) for name, (doc, strategy) in docs.items()])


def _start(store: Any) -> tuple[Any, dict[str, Any], dict[str, list[Any]], dict[str, list[Any]]]:
    items = store["items"]
    items.put({"id": "a", "g": "p", "x": 1})
    items.put({"id": "b", "g": "q", "x": 1.0})
    items.put({"id": "c", "g": "p", "x": 2.5})
    items.put({"id": "d", "g": "r", "x": 3})
    lives, patches = _open(items, ORDERED)
    before = {name: v[0].rows for name, v in lives.items()}
    return items, lives, patches, before


def test_a_key_deleted_and_written_again_in_one_commit_moves_to_the_end(store: Any) -> None:
    """``a`` goes after ``d``: its row last, ``1.0`` now the first minimum, group ``q`` first."""
    items, lives, patches, before = _start(store)
    with store.transaction():
        items.delete("a")
        items.put({"id": "a", "g": "p", "x": 1})  # the same document, in a new place
    assert items.keys() == ["b", "c", "d", "a"]
    assert lives["ids"][0].rows == ["b", "c", "d", "a"]
    assert repr(lives["min-x"][0].rows) == "[1.0]"
    assert [g["g"] for g in lives["groups"][0].rows] == ["q", "p", "r"]
    _check(lives, before, patches)
    with store.transaction():  # a move and a change of the document together
        items.delete("b")
        items.patch("c", {"x": 5})
        items.put({"id": "b", "g": "p", "x": 2.5})
    _check(lives, before, patches)
    assert lives["ids"][0].rows == ["c", "d", "a", "b"]


def test_moves_and_new_keys_take_their_places_in_the_order_they_were_written(store: Any) -> None:
    """Storage order is the order of the writes that made each key present again, not the order in
    which the commit first touched the keys."""
    items, lives, patches, before = _start(store)
    with store.transaction():
        items.delete("b")
        items.delete("c")
        items.put({"id": "c", "g": "p", "x": 2.5})
        items.put({"id": "b", "g": "q", "x": 1.0})
    assert items.keys() == ["a", "d", "c", "b"]
    _check(lives, before, patches)
    with store.transaction():  # a new key inserted, deleted and inserted again after another new one
        items.insert({"id": "x", "g": "s"})
        items.patch("a", {"x": 3})
        items.delete("x")
        items.insert({"id": "y", "g": "s", "x": 1})
        items.insert({"id": "x", "g": "t"})
    assert items.keys() == ["a", "d", "c", "b", "y", "x"]
    _check(lives, before, patches)
    with store.transaction():  # moved, then changed, then moved again: one place, the last
        items.delete("d")
        items.put({"id": "d", "g": "r"})
        items.delete("a")
        items.patch("d", {"x": -1})
        items.delete("d")
        items.put({"id": "d", "g": "u", "x": 7})
        items.put({"id": "a", "g": "p"})
    assert items.keys() == ["c", "b", "y", "x", "d", "a"]
    _check(lives, before, patches)


def test_a_rolled_back_savepoint_takes_its_move_with_it(store: Any) -> None:
    items, lives, patches, before = _start(store)
    with store.transaction():
        try:
            with store.transaction():
                items.delete("a")
                items.put({"id": "a", "g": "p", "x": 1})
                raise KeyError("roll back")
        except KeyError:
            pass
        items.patch("b", {"x": 4})
    assert items.keys() == ["a", "b", "c", "d"]
    _check(lives, before, patches)
    with store.transaction():  # deleted outside, written again in a savepoint that rolls back: gone
        items.delete("c")
        try:
            with store.transaction():
                items.put({"id": "c", "g": "p"})
                raise KeyError("roll back")
        except KeyError:
            pass
    assert items.keys() == ["a", "b", "d"]
    _check(lives, before, patches)
    with store.transaction():  # deleted in a savepoint that holds, written again outside: moved
        with store.transaction():
            items.delete("a")
        items.put({"id": "a", "g": "v", "x": 1})
    assert items.keys() == ["b", "d", "a"]
    _check(lives, before, patches)


def test_an_integer_key_is_its_own_place(store: Any) -> None:
    """In key order (integer keys, identities) a key deleted and written again keeps its place."""
    nums = store["nums"]
    keys = [nums.insert({"g": g, "x": x}) for g, x in (("p", 1), ("q", 1.0), ("p", 2))]
    docs = {
        name: ({**doc, "$return": "$r.x"} if name == "ids" else doc, s) for name, (doc, s) in ORDERED.items()
    }
    lives, patches = _open(nums, docs)
    before = {name: v[0].rows for name, v in lives.items()}
    with store.transaction():
        nums.delete(keys[0])
        nums.put({"g": "p", "x": 1}, keys[0])
    assert nums.keys() == keys
    _check(lives, before, patches)
    assert repr(lives["min-x"][0].rows) == "[1]"


def test_the_change_log_says_which_keys_moved(store: Any) -> None:
    """A moved key is a ``replace`` marked ``moved`` in the log (another store reads it so); the
    change feed still publishes the difference (nothing when it is the same document)."""
    items = store["items"]
    for key in "abc":
        items.put({"id": key, "n": 1})
    seq = store.changes.high_watermark()
    cursor = store.changes.cursor()
    with store.transaction():
        items.delete("a")
        items.patch("b", {"n": 2})
        items.put({"id": "a", "n": 1})
    (rec,) = store.changes.read(after=seq)
    assert rec.moved == {"items": frozenset({"a"})}
    assert [(op["path"], op.get("moved", False)) for op in rec.ops or []] == [
        ("/items/b", False),
        ("/items/a", True),
    ]
    page = store.changes(after=cursor)
    assert [(c.change, c.key, c.ops) for c in page] == [
        ("update", "b", [{"op": "replace", "path": "/items/b/n", "value": 2}]),
        ("update", "a", []),
    ]


@pytest.mark.parametrize("collection", ["items", "nums"])
def test_a_write_stream_with_moves_matches_fresh_runs_here_and_in_a_follower(
    open_store: Any, collection: str
) -> None:
    """Random writes where one commit in four deletes stored keys and writes them again (the same
    document or another, sometimes in a savepoint that rolls back) among other writes. After every
    commit each live query of the writing store equals a fresh run; so does each one of a second
    store that follows the change log, once it caught up with the commit."""
    store = open_store(MODEL)
    follower = open_store.reopen(store, MODEL)
    rng = random.Random(f"moves-{collection}")
    coll = store[collection]
    keyed = collection == "items"
    known: list[Any] = []
    for _ in range(25):
        _write(coll, rng, keyed, known)
    specs = [(name, doc, ext, strategy) for name, (doc, ext, strategy) in DOCS.items()]
    lives, patches = _watch(coll, specs)
    # and the same kinds seeded from the columns (a maintainer built in bulk or row by row from them)
    seeded, seeded_patches = _seeded(coll, list(SEEDED) if not keyed else UNORDERED)
    lives.update({f"columns-{name}": v for name, v in seeded.items()})
    patches.update({f"columns-{name}": v for name, v in seeded_patches.items()})
    far, far_patches = _watch(follower[collection], specs)
    before = {name: v[0].rows for name, v in lives.items()}
    far_before = {name: v[0].rows for name, v in far.items()}

    def move() -> None:
        stored = coll.keys()
        if not stored:
            return
        for key in rng.sample(stored, min(len(stored), rng.randrange(1, 3))):
            doc = coll.get(key)
            if doc is None:  # (the other write of this move deleted it)
                continue
            coll.delete(key)
            if rng.random() < 0.3:
                _write(coll, rng, keyed, known)
            doc = doc if rng.random() < 0.5 else {**_doc(rng), **({"id": key} if keyed else {})}
            coll.put(doc) if keyed else coll.put(doc, key)

    for step in range(400):
        if step % 4 == 3:
            with store.transaction():
                for _ in range(rng.randrange(1, 4)):
                    roll = rng.random()
                    if roll < 0.5:
                        move()
                    elif roll < 0.65:
                        try:
                            with store.transaction():
                                move()
                                raise KeyError("roll back")
                        except KeyError:
                            pass
                    else:
                        _write(coll, rng, keyed, known)
        else:
            _write(coll, rng, keyed, known)
        if not keyed:
            known[:] = coll.keys()  # (what a rolled-back savepoint inserted is not there)
        _check(lives, before, patches)
        if step % 10 == 9:
            high = store.changes.high_watermark()
            wait_for(lambda h=high: all(v[0].seq >= h for v in far.values()), 30, what="the follower")
            for name, (live, fcoll, doc, ext, strategy) in far.items():
                expected = fresh(fcoll, doc, ext, windowed=strategy == "window")
                assert orjson.dumps(live.rows) == orjson.dumps(expected), name
                replayed = far_before[name]
                for patch in far_patches[name]:  # one emission per commit, each from the one before
                    replayed = apply_patch({"rows": replayed}, patch)["rows"]
                assert orjson.dumps(replayed) == orjson.dumps(live.rows), name
                far_before[name] = live.rows
                far_patches[name].clear()


def test_the_netting_matches_a_store_that_writes_the_changes() -> None:
    """The one netting rule (``net_states``, and ``net_changes`` from the same pass) against a
    model store in insertion order, over random commits of puts and deletes: each touched key's
    text before the commit (unknown where the change did not say) and document after it; moved
    exactly when its row was deleted and written again in the commit; the new and moved keys
    listed in the order their rows now lie. ``net_changes`` is ``net_states`` without the texts."""
    from jarenlab.database import UNKNOWN, net_changes, net_states

    rng = random.Random("nettings")
    moves = 0
    for _ in range(2_000):
        rows = {
            c: {
                k: orjson.dumps({"n": -i}).decode()
                for i, k in enumerate(rng.sample("abcde", rng.randrange(5)))
            }
            for c in "st"
        }
        before = {c: dict(per) for c, per in rows.items()}
        deleted: dict[str, set[str]] = {c: set() for c in "st"}
        again: dict[str, set[str]] = {c: set() for c in "st"}
        known = rng.random() < 0.8
        changes: list[tuple[Any, ...]] = []
        for i in range(rng.randrange(1, 12)):
            coll, key = rng.choice("st"), rng.choice("abcde")
            per = rows[coll]
            old = per.get(key)
            doc: dict[str, Any] | None = None
            if old is not None and rng.random() < 0.4:  # (a delete of nothing records nothing)
                del per[key]
                deleted[coll].add(key)
                again[coll].discard(key)
            else:
                doc = {"n": i}
                per[key] = orjson.dumps(doc).decode()  # a new row goes last; a changed one stays
                if old is None and key in deleted[coll]:
                    again[coll].add(key)
            changes.append((coll, key, doc, old) if known else (coll, key, doc))
        states = net_states(changes)
        touched = {c: list(dict.fromkeys(k for cc, k, *_ in changes if cc == c)) for c in "st"}
        assert set(states) == {c for c in "st" if touched[c]}
        for coll, per in states.items():
            assert set(per) == set(touched[coll])
            for key, (old, doc, moved) in per.items():
                assert old == (before[coll].get(key) if known else UNKNOWN), (changes, key)
                now = rows[coll].get(key)
                assert (None if doc is None else orjson.dumps(doc).decode()) == now, (changes, key)
                assert moved == (key in again[coll]), (changes, key)
                moves += moved
            placed = {k for k in per if k in rows[coll] and (k not in before[coll] or k in again[coll])}
            assert [k for k in per if k in placed] == [k for k in rows[coll] if k in placed], changes
        net, moved_keys = net_changes(changes)
        assert {c: list(per.items()) for c, per in net.items()} == {
            c: [(key, doc) for key, (_, doc, _) in per.items()] for c, per in states.items()
        }
        assert moved_keys == {
            c: frozenset(k for k, (_, _, m) in per.items() if m)
            for c, per in states.items()
            if any(m for *_, m in per.values())
        }
    assert moves > 500  # the commits move keys often enough to test the rule
