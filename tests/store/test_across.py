"""Store-level queries over several collections, on SQLite and PostgreSQL: execute, explain, strict,
the statement cache, the builder's join / group_join / select_many, frames, and live joins checked
against a fresh run after every commit."""

from __future__ import annotations

import random
from typing import Any

import pytest

from jarenlab import it, param, var
from jarenlab.errors import JarenlabError
from jarenlab.query import evaluate
from jarenlab.query.joins.run import run

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "flights": {
            "schema": {
                "type": "object",
                "required": ["id", "carrier"],
                "properties": {
                    "id": {"type": "integer"},
                    "carrier": {"type": "string"},
                    "delay": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
            "key": "/id",
            "indexes": [{"name": "by_carrier", "path": "$.carrier"}],
        },
        "airlines": {
            "schema": {
                "type": "object",
                "required": ["carrier"],
                "properties": {"carrier": {"type": "string"}, "name": {"type": "string"}},
            },
            "key": "/carrier",
        },
    },
}
FLIGHTS = [
    {"id": 1, "carrier": "AA", "delay": 30, "tags": ["x", "y"]},
    {"id": 2, "carrier": "UA", "delay": 5},
    {"id": 3, "carrier": "AA", "delay": 90, "tags": ["z"]},
    {"id": 4, "carrier": "ZZ", "delay": 1},
    {"id": 5, "carrier": "UA"},
]
AIRLINES = [{"carrier": "UA", "name": "United"}, {"carrier": "AA", "name": "American"}]
JOIN = {
    "$for": {"f": "$.flights[*]", "a": "$.airlines[*]"},
    "$where": {"$eq": ["$f.carrier", "$a.carrier"]},
    "$orderby": [{"$key": "$f.delay", "$dir": "desc"}],
    "$return": {"id": "$f.id", "airline": "$a.name"},
}


@pytest.fixture
def store(open_store: Any) -> Any:
    s = open_store(MODEL)
    s["flights"].insert_many(FLIGHTS)
    s["airlines"].insert_many(AIRLINES)
    return s


def root(store: Any) -> dict[str, Any]:
    return {name: c.to_list() for name, c in store.collections.items()}


def test_a_join_is_the_engines_nested_loop_order_included(store: Any) -> None:
    got = store.execute(JOIN)
    assert got == evaluate(JOIN, root(store))
    assert got == [
        {"id": 3, "airline": "American"},
        {"id": 1, "airline": "American"},
        {"id": 2, "airline": "United"},
        {"id": 5, "airline": "United"},
    ]
    assert store.execute(JOIN, pushdown=False) == got


def test_a_document_binding_no_collection_is_a_coded_error(store: Any) -> None:
    with pytest.raises(JarenlabError) as err:
        store.execute({"$for": {"x": "$[*]"}, "$return": "$x"})
    assert err.value.code == "JD0033"
    assert "$.flights[*]" in err.value.reason
    with pytest.raises(JarenlabError) as unknown:
        store.execute({"$for": {"x": "$.nope[*]"}, "$return": "$x"})
    assert unknown.value.code == "JD2004" and "declared: flights, airlines" in unknown.value.reason


def test_explain_shows_the_join_order_and_the_join_indexes(store: Any) -> None:
    ex = store.explain(JOIN)
    # SQLite projects the members natively; PostgreSQL's jsonb cannot tell 2.0 from 2, so the engine
    # builds each row's map there (row mode).
    assert ex.mode == ("native" if store.backend.dialect.keeps_integers_apart else "row")
    assert store.explain({**JOIN, "$return": {"airline": "$a.name"}}).mode == "native"
    assert store.explain({**JOIN, "$return": "$a"}).mode == "row"
    assert [j["collection"] for j in ex.join] == ["flights", "airlines"]
    assert ex.join[0]["indexes"] == ["flights_by_carrier"] and ex.join[1]["indexes"] == ["airlines key"]
    assert set(ex.join_order) == {"flights", "airlines"}
    frame = ex.to_frame()
    assert "join f" in set(frame["field"]) and "join order" in set(frame["field"])
    assert "airlines key" in ex._repr_html_()
    assert "join order" in ex.widget().children[0].value
    analyzed = store.explain(JOIN, analyze=True)
    assert analyzed.rows_returned == 4 and analyzed.rows_read == 4


def test_strict_refuses_a_join_that_is_not_pushed(store: Any) -> None:
    non_equi = {
        "$for": {"f": "$.flights[*]", "a": "$.airlines[*]"},
        "$where": {"$lt": ["$f.carrier", "$a.carrier"]},
        "$return": "$f.id",
    }
    with pytest.raises(JarenlabError) as err:
        store.execute(non_equi, strict=True)
    assert err.value.code == "JD0010" and "$lt" in err.value.reason
    assert store.execute(non_equi) == evaluate(non_equi, root(store))
    assert store.execute(JOIN, strict=True) == store.execute(JOIN)
    diverted = {**JOIN, "$where": {"$and": [JOIN["$where"], {"$gt": ["$f.delay", "$d"]}]}}
    with pytest.raises(JarenlabError) as div:
        store.execute(diverted, {"d": None}, strict=True)
    assert div.value.code == "JD0010"
    assert store.execute(diverted, {"d": None}) is None


def test_the_statement_cache_is_keyed_by_the_whole_document_and_options(store: Any) -> None:
    assert store.explain(JOIN).cache == "miss"
    assert store.explain(JOIN).cache == "hit"
    other = {**JOIN, "$return": "$f.id"}
    assert store.explain(other).cache == "miss"
    assert store.explain(JOIN, pushdown=False).cache == "miss"
    assert store.execute(other) == [3, 1, 2, 5]


def test_builder_join_group_join_and_select_many(store: Any) -> None:
    a = var("a")
    q = (
        store["flights"]
        .where(it.delay >= param("lo"))
        .join(store["airlines"], "a", on=it.carrier == a.carrier)
        .order_by(it.delay.desc())
        .select({"id": it.id, "airline": a.name})
    )
    assert q.to_list(lo=5) == [
        {"id": 3, "airline": "American"},
        {"id": 1, "airline": "American"},
        {"id": 2, "airline": "United"},
    ]
    assert q.count(lo=5) == 3
    assert q.take(1).to_list(lo=0) == [{"id": 3, "airline": "American"}]
    assert q.explain(lo=5).mode == ("native" if store.backend.name == "sqlite" else "row")
    outer = store["flights"].query().group_join(store["airlines"], "a", on=it.carrier == a.carrier)
    rows = outer.select({"id": it.id, "a": a}).to_list()
    assert [(r["id"], len(r["a"])) for r in rows] == [(1, 1), (2, 1), (3, 1), (4, 0), (5, 1)]
    tags = store["flights"].query().select_many(it.tags, "t").select({"id": it.id, "tag": var("t")}).to_list()
    assert tags == [{"id": 1, "tag": "x"}, {"id": 1, "tag": "y"}, {"id": 3, "tag": "z"}]


def test_join_frames_are_flat(store: Any) -> None:
    a = var("a")
    q = store["flights"].join(store["airlines"], "a", on=it.carrier == a.carrier)
    frame = q.to_pandas()
    assert {"flights.id", "flights.carrier", "a.name", "a.carrier"} <= set(frame.columns)
    assert len(frame) == 4
    table = q.to_arrow()
    assert "a.name" in table.column_names and table.num_rows == 4


def test_a_live_join_equals_a_fresh_run_after_every_commit(store: Any) -> None:
    doc = {"$subsequence": [JOIN, 0, 3]}
    live = store.live(doc)
    assert live.mode.strategy == "rerun" and "several collections" in str(live.mode)
    seen: list[Any] = []
    live.subscribe(lambda patch, seq: seen.append(patch))
    rng = random.Random(7)
    for n in range(40):
        kind = rng.random()
        if kind < 0.5:
            store["flights"].put(
                {
                    "id": rng.randint(1, 12),
                    "carrier": rng.choice(["AA", "UA", "DL"]),
                    "delay": rng.randint(0, 120),
                }
            )
        elif kind < 0.7:
            store["flights"].delete(rng.randint(1, 12))
        elif kind < 0.85:
            store["airlines"].put({"carrier": rng.choice(["AA", "UA", "DL"]), "name": f"name {n}"})
        else:
            store["airlines"].delete(rng.choice(["AA", "UA", "DL"]))
        assert live.rows == run(store, doc)[0], n
    assert seen
    live.close()
