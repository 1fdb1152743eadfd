"""Every write that can overwrite a stored document publishes on the change feed what the
single-document form publishes: a bulk put (``put_many``, of dicts or of a DataFrame, by key
member or by identity), an update of a query's documents (``q.update``), a transaction that
deletes a key and writes it again, the typed and owner handles. Both backends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import pandas as pd
import pytest

import jarenlab as jl
from jarenlab.patch import apply_patch
from jarenlab.query import agg, it, key
from jarenlab.query.planner.run import run_query

from .conftest import MODEL

SEED = [{"id": "a", "n": 1, "s": "x"}, {"id": "b", "n": 2}, {"id": "c", "n": 3, "g": "p"}]
#: A changed member, the same document, a new key, a member gone and one changed.
NEW = [{"id": "a", "n": 1, "s": "y"}, {"id": "b", "n": 2}, {"id": "d", "n": 4}, {"id": "c", "g": "q"}]


class Item(TypedDict, total=False):
    id: str
    n: int
    s: str
    g: str


Published = list[tuple[str, Any, list[dict[str, Any]]]]


def published(
    store: Any, write: Callable[[list[Any]], Any], collection: str = "items", seed: list[Any] = SEED
) -> Published:
    """``collection`` reset to ``seed``, then what the feed publishes for ``write(keys)`` (``keys``:
    the seeded documents' keys, which a collection that allocates them allocates anew)."""
    coll = store[collection]
    with store.transaction():
        stored = coll.keys()
        for k in stored:
            coll.delete(k)
        for doc in seed:
            coll.insert(doc)
    cursor = store.changes.cursor()
    write(coll.keys())
    return [(c.change, c.key, c.ops) for c in store.changes(after=cursor)]


def one_by_one(store: Any, collection: str, writes: list[tuple[Any, ...]]) -> None:
    """The single-document puts of ``writes`` (``(doc,)`` or ``(doc, key)``), in one transaction."""
    with store.transaction():
        for args in writes:
            store[collection].put(*args)


def test_a_bulk_put_publishes_what_puts_publish(store: Any) -> None:
    """A replaced document is an update with its minimal patch (not an insert), an unchanged one
    publishes nothing, a new one is an insert: from dicts and from a DataFrame."""
    items = store["items"]
    single = published(store, lambda _: one_by_one(store, "items", [(d,) for d in NEW]))
    assert single == [
        ("update", "a", [{"op": "replace", "path": "/items/a/s", "value": "y"}]),
        ("insert", "d", [{"op": "add", "path": "/items/d", "value": {"id": "d", "n": 4}}]),
        ("update", "c", single[2][2]),
    ]
    assert sorted(op["op"] for op in single[2][2]) == ["remove", "replace"]
    assert published(store, lambda _: items.put_many(NEW)) == single
    frame = pd.DataFrame(NEW[:3]).astype({"n": "Int64"}).set_index("id")
    as_frame = published(store, lambda _: items.put_many(frame))
    assert as_frame == single[:2]
    assert published(store, lambda _: items.put_many(SEED)) == []  # the same documents: no change


def test_a_bulk_put_by_identity_publishes_what_puts_publish(store: Any) -> None:
    """A collection whose keys the store allocates: ``put_many(frame, key_from_index=True)``."""
    nums = store["nums"]
    seed = [{"n": 1}, {"n": 2, "g": "p"}]
    new = [{"n": 5}, {"n": 2, "g": "q"}]

    def puts(keys: list[Any]) -> None:
        one_by_one(store, "nums", [(doc, k) for doc, k in zip(new, keys)])

    single = published(store, puts, "nums", seed)
    keys = nums.keys()
    assert single == [
        ("update", keys[0], [{"op": "replace", "path": f"/nums/{keys[0]}/n", "value": 5}]),
        ("update", keys[1], [{"op": "replace", "path": f"/nums/{keys[1]}/g", "value": "q"}]),
    ]

    def bulk(keys: list[Any]) -> None:
        nums.put_many(pd.DataFrame(new, index=pd.Index(keys, name="key")), key_from_index=True)

    bulked = published(store, bulk, "nums", seed)
    keys = nums.keys()
    assert bulked == [
        (change, k, [{**op, "path": op["path"].replace(f"/{old}/", f"/{k}/")} for op in ops])
        for (change, old, ops), k in zip(single, keys)
    ]


def test_an_update_of_a_querys_documents_publishes_what_patches_publish(store: Any) -> None:
    """``q.update(ops)`` and ``q.update(set=...)`` patch each document: updates with their patches."""
    items = store["items"]
    chosen = items.where(it.n >= 2)

    def patches(ops: Any) -> Callable[[list[Any]], None]:
        def write(_: list[Any]) -> None:
            with store.transaction():
                for k in ("b", "c"):
                    items.patch(k, ops)

        return write

    single = published(store, patches({"s": "z"}))
    assert [(change, k) for change, k, _ in single] == [("update", "b"), ("update", "c")]
    assert published(store, lambda _: chosen.update({"s": "z"})) == single
    assert published(store, lambda _: chosen.update(set={"/s": "z"})) == single
    single = published(store, patches([{"op": "remove", "path": "/n"}]))
    assert published(store, lambda _: chosen.update([{"op": "remove", "path": "/n"}])) == single


def test_a_key_deleted_and_written_again_in_one_transaction_publishes_what_a_put_publishes(
    store: Any,
) -> None:
    """A different document: an update with the same patch as a put's (it also moved, which the
    feed's copy, keyed by key, does not hold)."""
    items = store["items"]
    single = published(store, lambda _: items.put(NEW[3]))

    def again(_: list[Any]) -> None:
        with store.transaction():
            items.delete("c")
            items.insert(NEW[3])

    assert single[0][0] == "update" and published(store, again) == single


def test_the_typed_and_owner_handles_publish_what_puts_publish(open_store: Any) -> None:
    owned = {
        "schema": {
            "type": "object",
            "required": ["id", "owner"],
            "properties": {"id": {"type": "string"}, "owner": {"type": "string"}, "n": {"type": "integer"}},
        },
        "key": "/id",
        "owner": "/owner",
    }
    store = open_store({**MODEL, "collections": {**MODEL["collections"], "notes": owned}})
    items = store["items"]
    single = published(store, lambda _: items.put(NEW[0]))
    assert published(store, lambda _: items.typed(Item).put(NEW[0])) == single
    seed = [{"id": "a", "owner": "ann", "n": 1}]
    single = published(
        store, lambda _: store["notes"].put({"id": "a", "owner": "ann", "n": 2}), "notes", seed
    )
    assert single == [("update", "a", [{"op": "replace", "path": "/notes/a/n", "value": 2}])]
    ann = store.as_owner("ann")
    assert (
        published(store, lambda _: ann["notes"].put({"id": "a", "owner": "ann", "n": 2}), "notes", seed)
        == single
    )


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "compact"])
def test_a_bulk_put_leaves_warm_columns_right(store: Any, inline: bool) -> None:
    """The columns follow a commit by its recorded changes: a bulk put that replaced documents
    was recorded as inserts, so the columns held the replaced rows twice. A bulk put of more
    documents than a record holds inline (compact: the feed says nothing of them) does not read
    what it replaces, and records that it does not know."""
    items = store["items"]
    items.put_many([{"id": k, "n": n, "s": "x"} for k, n in (("a", 1), ("b", 2))])
    q = items.group_by(g=it.s).select({"s": key("g"), "rows": agg.count(), "n": agg.sum(it.n)}).document
    store.columns.warm("items")
    assert run_query(items, q, {}, columns=True)[1].mode == "columnar"
    if not inline:
        store.changes.log.inline_limit = 1
    cursor = store.changes.cursor()
    items.put_many([{"id": "a", "n": 10, "s": "x"}, {"id": "e", "n": 5, "s": "x"}])
    got, trace, _ = run_query(items, q, {}, columns=True)
    assert trace.mode == "columnar"
    assert got == run_query(items, q, {}, columns=False)[0] == [[{"s": "x", "rows": 3, "n": 17}]]
    if inline:
        assert [c.change for c in store.changes(after=cursor)] == ["update", "insert"]
    else:
        with pytest.raises(jl.JarenlabError) as err:
            store.changes(after=cursor)
        assert err.value.code == "JD2128"


def test_replaying_a_bulk_puts_page_onto_a_copy_gives_the_store(store: Any) -> None:
    items = store["items"]
    items.put_many(SEED)
    data, cursor = store.changes.snapshot()
    items.put_many(NEW)
    copy = apply_patch(data, store.changes(after=cursor).patch)
    assert copy["items"] == {d["id"]: d for d in items.to_list()}
