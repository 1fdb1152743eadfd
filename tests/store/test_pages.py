"""Keyset pages on SQLite and PostgreSQL: every ordering with missing members, checked continuations,
and pages that stay correct while another process inserts and deletes."""

from __future__ import annotations

import base64
import multiprocessing
import random
import time
from typing import Any

import pytest

import jarenlab as jl
from jarenlab import it
from jarenlab.errors import JarenlabError

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "rows": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "integer"},
                    "g": {"type": "string"},
                    "n": {"type": "integer"},
                    "x": {"type": "number"},
                    "any": {},
                },
            },
            "key": "/id",
            "indexes": [{"name": "by_g_n", "path": ["$.g", "$.n"]}],
        }
    },
}


def docs(count: int, seed: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        d: dict[str, Any] = {"id": i}
        if rng.random() < 0.8:
            d["g"] = rng.choice(["a", "b", "é", "B"])
        if rng.random() < 0.7:
            d["n"] = rng.randint(-3, 3)
        if rng.random() < 0.5:
            d["x"] = rng.choice([0.5, 1.0, 2.25, -1.5])
        out.append(d)
    return out


@pytest.fixture
def store(open_store: Any) -> Any:
    s = open_store(MODEL)
    s["rows"].insert_many(docs(120))
    return s


def every_page(q: Any, limit: int, **ext: Any) -> list[Any]:
    out: list[Any] = []
    after = None
    while True:
        page = q.page(limit, after, **ext)
        out += page.items
        if not page.has_more:
            assert page.continuation is None
            return out
        after = page.continuation


@pytest.mark.parametrize(
    "keys",
    [
        (it.n,),
        (it.n.desc(),),
        (it.g.asc(empty="greatest"), it.n.desc()),
        (it.g.desc(empty="greatest"), it.x),
        (it.x.desc(), it.g, it.n.desc(empty="greatest")),
        (),
    ],
    ids=["n", "n desc", "g empty greatest, n desc", "g desc empty greatest, x", "x desc, g, n desc", "key"],
)
def test_pages_walk_the_whole_ordering_with_missing_members(store: Any, keys: tuple[Any, ...]) -> None:
    base = store["rows"].where(it.id >= 0)
    q = base.order_by(*keys, it.id) if keys else base.order_by(it.id)
    assert every_page(q.select({"id": it.id}), 7) == q.select({"id": it.id}).to_list()
    filtered = (q.where(it.g == jl.param("g")) if keys else q).select(it.id)
    ext = {"g": "a"} if keys else {}
    assert every_page(filtered, 5, **ext) == filtered.to_list(**ext)


def test_a_page_has_items_a_frame_and_html(store: Any) -> None:
    page = store["rows"].order_by(it.id).page(3)
    assert [d["id"] for d in page.items] == [0, 1, 2] and page.has_more and len(page) == 3
    assert list(page.to_pandas()["id"]) == [0, 1, 2]
    assert "more pages follow" in page._repr_html_()


def test_continuations_are_checked(store: Any, open_store: Any) -> None:
    q = store["rows"].order_by(it.n)
    token = q.page(4).continuation
    assert token is not None
    data, mac = token.split(".")
    body = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).replace(b'"k":', b'"k":1000+', 1)
    body = body.replace(b"1000+", b"")  # the same position, re-encoded: still signed
    moved = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).replace(b'"k":', b'"k":-', 1)
    forged = base64.urlsafe_b64encode(moved).decode().rstrip("=") + "." + mac
    assert (
        store["rows"].order_by(it.n).page(4, base64.urlsafe_b64encode(body).decode().rstrip("=") + "." + mac)
    )
    for bad, phrase in [
        (token[:-2] + ("00" if not token.endswith("00") else "11"), "altered"),
        (forged, "altered"),
        ("x" + token, "continuation"),
        ("nonsense", "continuation"),
    ]:
        with pytest.raises(JarenlabError) as err:
            q.page(4, bad)
        assert err.value.code == "JD0035" and phrase in err.value.reason
    with pytest.raises(JarenlabError) as other:
        store["rows"].order_by(it.n.desc()).page(4, token)
    assert other.value.code == "JD0035" and "another ordering" in other.value.reason
    elsewhere = open_store(MODEL, name="elsewhere")
    elsewhere["rows"].insert_many(docs(10))
    with pytest.raises(JarenlabError) as foreign:
        elsewhere["rows"].order_by(it.n).page(4, token)
    assert foreign.value.code == "JD0035"
    for refused in (q.take(5), q.skip(1)):
        with pytest.raises(JarenlabError) as err:
            refused.page(4)
        assert err.value.code == "JD0032" and "take/skip" in err.value.reason
    with pytest.raises(JarenlabError) as untyped:
        store["rows"].order_by(it["any"]).page(4)
    assert untyped.value.code == "JD0032" and "ordering" in untyped.value.reason


def _writer(target: dict[str, Any], stop: Any, seed: int) -> None:
    """Insert and delete transient rows (ids >= 1000): 400 writes at most (so a pager always reaches
    the end, however slow the machine), stopping early when told to."""
    store = jl.open(target.pop("path"), **target)
    rng = random.Random(seed)
    live: list[int] = []
    n = 1000
    try:
        for _ in range(400):
            if stop.is_set():
                break
            if live and rng.random() < 0.4:
                store["rows"].delete(live.pop(rng.randrange(len(live))))
            else:
                store["rows"].insert({"id": n, "n": rng.randint(-3, 3), "g": rng.choice(["a", "b"])})
                live.append(n)
                n += 1
    finally:
        store.close()


def test_pages_under_concurrent_writers_skip_and_repeat_nothing(store: Any) -> None:
    target: dict[str, Any] = {"path": store.path}
    if store.backend.name == "postgresql":
        target["schema"] = store.backend.schema
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    writer = ctx.Process(target=_writer, args=(target, stop, 11))
    writer.start()
    try:
        deadline = time.monotonic() + 20
        while store["rows"].count() < 125 and time.monotonic() < deadline:
            time.sleep(0.02)  # the writer is writing
        q = store["rows"].order_by(it.n.desc(), it.g).select(it.id)
        seen: list[int] = []
        after = None
        for _ in range(1_000):  # 400 writes at most: the pages end well before this
            page = q.page(6, after)
            seen += page.items
            time.sleep(0.01)
            if not page.has_more:
                break
            after = page.continuation
        else:
            pytest.fail("the pages never ended")
    finally:
        stop.set()
        writer.join(30)
    assert writer.exitcode == 0
    stable = [i for i in seen if i < 1000]
    assert len(stable) == len(set(stable)) == 120  # every row that existed throughout, once
    assert len(seen) == len(set(seen))  # nothing repeated, transient rows included
    expected = [d["id"] for d in store["rows"].where(it.id < 1000).order_by(it.n.desc(), it.g).to_list()]
    assert stable == [i for i in expected]
