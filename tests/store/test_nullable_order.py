"""A member declared ``{"type": ["number", "null"]}`` as an ordering key of a keyset page or a graph
load's include: the language cannot order a stored null among numbers (``JQ2005``), so SQL cannot
push that ordering for every document; the refusal says how to declare the member instead, and the
declaration it names pages and includes as the engine orders. On SQLite and on PostgreSQL."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jarenlab import JarenlabError, it

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "cars": {
            "schema": {
                "type": "object",
                "required": ["id", "maker"],
                "properties": {
                    "id": {"type": "integer"},
                    "maker": {"type": "string"},
                    "mpg": {"type": ["number", "null"]},
                },
            },
            "key": "/id",
            "relations": {"maker_row": {"to": "makers", "via": "/maker"}},
        },
        "makers": {
            "schema": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
            "key": "/name",
            "relations": {"cars": {"to": "cars", "many": True, "via": "/maker"}},
        },
    },
}
#: Cars with an mpg, and some without one (missing, as a DataFrame's NaN is written).
CARS = [{"id": i, "maker": "ab"[i % 2], **({"mpg": (i * 7 % 13) / 2} if i % 4 else {})} for i in range(24)]


def declared(mpg: dict[str, Any]) -> dict[str, Any]:
    m = copy.deepcopy(MODEL)
    m["collections"]["cars"]["schema"]["properties"]["mpg"] = mpg
    return m


def fill(store: Any) -> Any:
    store["makers"].insert_many([{"name": "a"}, {"name": "b"}])
    store["cars"].insert_many(CARS)
    return store


SPEC = {"include": {"cars": {"order_by": {"$key": "$it.mpg", "$dir": "desc"}, "take": 3}}}


def test_a_nullable_ordering_key_says_how_to_declare_it(open_store: Any) -> None:
    store = fill(open_store(MODEL))
    for run in (lambda: store["cars"].order_by(it.mpg).page(5), lambda: store["makers"].load(SPEC)):
        with pytest.raises(JarenlabError) as err:
            run()
        assert err.value.code == "JD0032"
        assert 'mpg is declared {"type": ["number", "null"]}' in err.value.reason
        assert 'declare it {"type": "number"}' in err.value.reason
    # a plain query orders it in the engine: the stored numbers and missing members, as the engine does
    engine = store["cars"]._run_query(store["cars"].order_by(it.mpg, it.id).document, {}, pushdown=False)[0]
    assert store["cars"].order_by(it.mpg, it.id).to_list() == engine


def test_the_declaration_it_names_pages_and_includes(open_store: Any) -> None:
    store = fill(open_store(declared({"type": "number"})))
    q = store["cars"].order_by(it.mpg.desc()).select(it.id)
    pages, after = [], None
    while True:
        page = q.page(5, after=after)
        pages.extend(page.items)
        if not page.has_more:
            break
        after = page.continuation
    everything = sorted(CARS, key=lambda c: (-c.get("mpg", float("-inf")), c["id"]))
    assert pages == [c["id"] for c in everything]  # missing last in a descending order, ties by key
    loaded = store["makers"].load(SPEC)
    for maker in loaded:
        mine = [c for c in everything if c["maker"] == maker["name"]][:3]
        assert [c["id"] for c in maker["cars"]] == [c["id"] for c in mine]
