"""The public change feed, ``store.changes(after=cursor)``: minimal patches per document, cursors,
retention, the DataFrame and HTML forms, and an oracle that replays the feed onto an empty copy."""

from __future__ import annotations

import random
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.live.feed import encode_cursor
from jarenlab.patch import apply_patch

from .conftest import MODEL


def _feed(store: Any, after: str) -> tuple[list[tuple[str, str, Any, list[dict[str, Any]]]], str]:
    page = store.changes(after=after)
    return [(c.change, c.collection, c.key, c.ops) for c in page], page.cursor


def test_each_commit_gives_the_minimal_patch_of_each_document(store: Any) -> None:
    items = store["items"]
    start = store.changes.cursor()
    items.insert({"id": "a", "n": 1, "s": "x"})
    items.put({"id": "a", "n": 1, "s": "x"})  # the same document: nothing
    items.put({"id": "a", "s": "x", "n": 1})  # members reordered: the same value, nothing
    items.patch("a", {"n": 2, "s": None})
    items.put({"id": "a", "n": 2.0, "g": "p"})  # 2.0 is not 2: a change
    got, cursor = _feed(store, start)
    assert got == [
        ("insert", "items", "a", [{"op": "add", "path": "/items/a", "value": {"id": "a", "n": 1, "s": "x"}}]),
        (
            "update",
            "items",
            "a",
            [{"op": "remove", "path": "/items/a/s"}, {"op": "replace", "path": "/items/a/n", "value": 2}],
        ),
        (
            "update",
            "items",
            "a",
            [
                {"op": "replace", "path": "/items/a/n", "value": 2.0},
                {"op": "add", "path": "/items/a/g", "value": "p"},
            ],
        ),
    ]
    with store.transaction():  # inserted and deleted in one commit: nothing
        items.insert({"id": "ghost"})
        items.delete("ghost")
    with store.transaction():  # inserted then changed: one add of the final document
        items.insert({"id": "b", "n": 1})
        items.patch("b", {"n": 5})
    with store.transaction():  # deleted and written again: the difference
        items.delete("a")
        items.insert({"id": "a", "n": 2.0, "g": "q"})
    key = store["nums"].insert({"x": 0.5})
    store["nums"].delete(key)
    got, cursor2 = _feed(store, cursor)
    assert got == [
        ("insert", "items", "b", [{"op": "add", "path": "/items/b", "value": {"id": "b", "n": 5}}]),
        ("update", "items", "a", [{"op": "replace", "path": "/items/a/g", "value": "q"}]),
        ("insert", "nums", 1, [{"op": "add", "path": "/nums/1", "value": {"x": 0.5}}]),
        ("delete", "nums", 1, [{"op": "remove", "path": "/nums/1"}]),
    ]
    assert _feed(store, cursor2) == ([], cursor2)  # nothing new: the same cursor


def test_a_commit_that_changed_nothing_is_no_record(store: Any) -> None:
    store["items"].insert({"id": "a", "n": 1})
    high = store.changes.high_watermark()
    store["items"].put({"id": "a", "n": 1})
    store["items"].patch("a", [{"op": "test", "path": "/n", "value": 1}])
    assert store.changes.high_watermark() == high


def test_a_document_deleted_and_written_again_is_an_update_with_no_operations(store: Any) -> None:
    """It has a new place in storage order (the order of ``$[*]``), so the commit is recorded: an
    update of the document whose patch is empty; live queries and the columns follow the move."""
    store["items"].insert({"id": "a", "n": 1})
    store["items"].insert({"id": "b", "n": 2})
    cursor = store.changes.cursor()
    with store.transaction():
        store["items"].delete("a")
        store["items"].put({"id": "a", "n": 1})
    got, _ = _feed(store, cursor)
    assert got == [("update", "items", "a", [])]
    assert [d["id"] for d in store["items"].to_list()] == ["b", "a"]


def test_cursors_resume_page_by_page_and_refuse_what_is_not_theirs(store: Any) -> None:
    for i in range(7):
        store["items"].insert({"id": f"k{i}"})
    page = store.changes(limit=3)
    assert [c.key for c in page] == ["k0", "k1", "k2"] and page.has_more and page.commits == 3
    seen = [c.key for c in page]
    while page.has_more:
        page = store.changes(after=page.cursor, limit=3)
        seen += [c.key for c in page]
    assert seen == [f"k{i}" for i in range(7)] and not page.has_more
    assert isinstance(page.cursor, str) and "7" not in page.cursor  # opaque
    for bad in ("nope", 7, "", encode_cursor(7) + "x", page.cursor.upper()):
        with pytest.raises(jl.JarenlabError) as err:
            store.changes(after=bad)
        assert err.value.code == "JD2129"
    with pytest.raises(jl.JarenlabError) as err:
        store.changes(after=encode_cursor(8))
    assert err.value.code == "JD2129" and "ahead of the log" in err.value.reason
    with pytest.raises(jl.JarenlabError) as err:
        store.changes(limit=0)
    assert err.value.code == "JD2010"


def test_a_cursor_behind_retention_needs_a_reset_and_a_snapshot_resumes(open_store: Any) -> None:
    store = open_store(MODEL)
    store.changes.log.retention = 4
    behind = store.changes.cursor()
    for i in range(40):
        store["items"].put({"id": f"k{i % 5}", "n": i})
    with pytest.raises(jl.JarenlabError) as err:
        store.changes(after=behind)
    assert err.value.code == "JD2128" and "snapshot" in err.value.reason
    data, cursor = store.changes.snapshot()
    assert data["items"] == {d["id"]: d for d in store["items"].to_list()} and data["nums"] == {}
    store["items"].patch("k1", {"n": -1})
    page = store.changes(after=cursor)
    assert [c.ops for c in page] == [[{"op": "replace", "path": "/items/k1/n", "value": -1}]]


def test_a_compact_record_needs_a_reset(store: Any) -> None:
    start = store.changes.cursor()
    store["items"].insert({"id": "first"})
    store.changes.log.inline_limit = 2
    store["items"].insert_many([{"id": f"b{i}"} for i in range(3)])  # written compactly
    page = store.changes(after=start)
    assert [c.key for c in page] == ["first"] and page.has_more  # stops before the compact commit
    with pytest.raises(jl.JarenlabError) as err:
        store.changes(after=page.cursor)
    assert err.value.code == "JD2128" and "compactly" in err.value.reason


def test_a_migrations_compact_record_says_so(store: Any) -> None:
    """A migration's commit is compact too: the reset's reason names it among the causes (it named
    only bulk writes and earlier versions)."""
    import copy

    start = store.changes.cursor()
    store["items"].insert({"id": "a", "n": 1})
    page = store.changes(after=start)
    new = copy.deepcopy(MODEL)
    new["collections"]["items"]["indexes"] = [{"name": "by_n", "path": "$.n"}]
    store.migrate(new, progress=False)
    with pytest.raises(jl.JarenlabError) as err:
        store.changes(after=page.cursor)
    assert err.value.code == "JD2128" and "a migration" in err.value.reason, err.value


def test_dataframe_and_html(store: Any) -> None:
    start = store.changes.cursor()
    store["items"].insert({"id": "a<b", "n": 1})
    store["items"].patch("a<b", {"n": 2})
    store["items"].delete("a<b")
    page = store.changes(after=start)
    frame = page.to_frame()
    assert list(frame.columns) == ["seq", "at", "collection", "key", "change", "ops", "n_ops"]
    assert list(frame["change"]) == ["insert", "update", "delete"] and list(frame["n_ops"]) == [1, 1, 1]
    assert str(frame["at"].dtype).startswith("datetime64") and frame["seq"].is_monotonic_increasing
    shown = page._repr_html_()
    assert "a&lt;b" in shown and "<table>" in shown and "3 document changes in 3 commits" in shown
    assert "3 document changes" in repr(page)


def _store_state(store: Any) -> dict[str, dict[str, Any]]:
    return store.changes.snapshot()[0]


def _write(rng: random.Random, store: Any) -> None:
    """One seeded write: an insert, put (sometimes the same document), patch, delete, or a small
    transaction of several, sometimes rolled back."""
    items, nums = store["items"], store["nums"]
    roll = rng.random()

    def doc() -> dict[str, Any]:
        d: dict[str, Any] = {}
        for name, make in (
            ("n", lambda: rng.randrange(5)),
            ("x", lambda: rng.choice([0.5, 1.0, 2.25])),
            ("s", lambda: rng.choice(["a", "β", "c d"])),
            ("g", lambda: rng.choice(["p", "q"])),
        ):
            if rng.random() < 0.6:
                d[name] = make()
        return d

    key = f"k{rng.randrange(12)}"
    if roll < 0.25:
        items.put({"id": key, **doc()})
    elif roll < 0.35:
        current = items.get(key)
        if current is not None:
            items.put(current)  # a no-op put
    elif roll < 0.5:
        if items.get(key) is not None:
            items.patch(key, {"n": rng.randrange(5), "s": None} if rng.random() < 0.5 else {"g": "z"})
    elif roll < 0.6:
        items.delete(key)
    elif roll < 0.75:
        nums.insert(doc())
    elif roll < 0.85:
        keys = nums.keys()
        if keys:
            nums.delete(rng.choice(keys))
    else:
        try:
            with store.transaction():
                items.put({"id": key, **doc()})
                nums.insert(doc())
                if rng.random() < 0.5:
                    items.delete(key)
                if rng.random() < 0.3:
                    items.insert({"id": "tmp"})
                    items.delete("tmp")
                if rng.random() < 0.2:
                    raise RuntimeError("rolled back")
        except RuntimeError:
            pass


@pytest.mark.slow  # 1,000 commits, each followed by a full comparison (about 8 s on PostgreSQL)
def test_replaying_the_feed_onto_an_empty_copy_equals_the_store_after_every_commit(open_store: Any) -> None:
    store = open_store(MODEL)
    writer = open_store.reopen(store, MODEL)  # another connection writes; this one follows the log
    live = store["items"].live({"$count": "$[*]"})
    rng = random.Random(17)
    mirror: dict[str, dict[str, Any]] = {"items": {}, "nums": {}}
    cursor = store.changes.cursor()
    commits = ops = 0
    for _ in range(1000):
        _write(rng, writer)
        page = store.changes(after=cursor)
        cursor = page.cursor
        commits += page.commits
        ops += len(page.patch)
        mirror = apply_patch(mirror, page.patch)
        assert mirror == _store_state(store)
    assert commits > 700 and ops > commits  # most writes commit something, and some commits several
    with store.changes.lock:  # the live query follows the same log
        store.changes._drain(check_log=True)
    assert live.rows == [len(mirror["items"])]
