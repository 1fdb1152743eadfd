"""Composite keys (``"key": ["/day", "/origin", "/n"]``): every call that names a document takes the
key as a tuple or a dict and hands tuples back; lookups are primary-key lookups; the stored order
is the members' order; the change feed names a document by its members; relations, migrations and
sessions know the key; bad keys and declarations are coded errors. On SQLite and PostgreSQL."""

from __future__ import annotations

import copy
from typing import Any

import pandas as pd
import pytest

import jarenlab as jl
from jarenlab import it
from jarenlab.errors import JarenlabError, ModelError
from jarenlab.model import load_model

_STR = {"type": "string"}
MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "airports": {
            "schema": {"type": "object", "required": ["faa"], "properties": {"faa": _STR, "name": _STR}},
            "key": "/faa",
        },
        "legs": {
            "schema": {
                "type": "object",
                "required": ["day", "origin", "n"],
                "properties": {
                    "day": _STR,
                    "origin": _STR,
                    "n": {"type": "integer"},
                    "delay": {"type": "integer"},
                },
            },
            "key": ["/day", "/origin", "/n"],
            "indexes": [{"name": "by_delay", "path": "$.delay"}],
            "relations": {"airport": {"to": "airports", "via": "/origin", "on_delete": "cascade"}},
        },
    },
}
K1 = ("2013-01-01", "JFK", 1)
DOC1 = {"day": "2013-01-01", "origin": "JFK", "n": 1, "delay": 5}


@pytest.fixture
def store(open_store: Any) -> Any:
    return open_store(copy.deepcopy(MODEL))


def leg(day: str, origin: str, n: int, delay: int = 0) -> dict[str, Any]:
    return {"day": day, "origin": origin, "n": n, "delay": delay}


def test_a_tuple_or_a_dict_names_a_document_and_writes_hand_back_tuples(store: Any) -> None:
    legs = store["legs"]
    assert legs.insert(DOC1) == K1
    assert legs.get(K1) == DOC1
    assert legs.get({"origin": "JFK", "n": 1, "day": "2013-01-01"}) == DOC1
    assert legs.get(["2013-01-01", "JFK", 1]) == DOC1  # a list reads as the tuple
    assert legs.get(("2013-01-01", "JFK", 2)) is None
    assert legs.put({**DOC1, "delay": 7}) == K1
    assert legs.put({**DOC1, "delay": 8}, key={"day": "2013-01-01", "origin": "JFK", "n": 1}) == K1
    assert legs.patch(K1, {"delay": 9}) == {**DOC1, "delay": 9}
    assert legs.patch(K1, [{"op": "replace", "path": "/delay", "value": 10}])["delay"] == 10
    assert legs.delete(K1) is True and legs.delete(K1) is False and legs.get(K1) is None


def test_writes_that_name_the_key_wrongly_are_coded(store: Any) -> None:
    legs = store["legs"]
    legs.insert(DOC1)
    with pytest.raises(JarenlabError) as info:
        legs.insert(DOC1)
    assert (info.value.code, info.value.key) == ("JD2001", K1)
    with pytest.raises(JarenlabError) as info:
        legs.put(DOC1, key=("2013-01-01", "JFK", 2))
    assert info.value.code == "JD2002"
    with pytest.raises(JarenlabError) as info:
        legs.patch(K1, {"n": 2})
    assert info.value.code == "JD2002" and "('2013-01-01', 'JFK', 2)" in info.value.reason
    assert legs.get(K1) == DOC1
    with pytest.raises(JarenlabError) as info:
        legs.patch(("2013-01-01", "JFK", 2), {"delay": 1})
    assert (info.value.code, info.value.key) == ("JD2006", ("2013-01-01", "JFK", 2))


@pytest.mark.parametrize(
    ("key", "code"),
    [
        ("2013-01-01", "JD2200"),
        (("2013-01-01", "JFK"), "JD2200"),
        (("2013-01-01", "JFK", 1, 2), "JD2200"),
        ({"day": "2013-01-01", "origin": "JFK"}, "JD2200"),
        ({"day": "2013-01-01", "origin": "JFK", "n": 1, "x": 0}, "JD2200"),
        (7, "JD2200"),
        (("2013-01-01", "JFK", "1"), "JD2201"),
        (("2013-01-01", "JFK", True), "JD2201"),
        (("2013-01-01", "JFK", 1.0), "JD2201"),
        (("2013-01-01", "JFK", 2**63), "JD2201"),
        (("2013-01-01", "J\x00K", 1), "JD2201"),
    ],
)
def test_a_key_of_the_wrong_shape_or_type_is_coded_in_every_call(store: Any, key: Any, code: str) -> None:
    legs = store["legs"]
    legs.insert(DOC1)
    calls = [
        lambda: legs.get(key),
        lambda: legs.delete(key),
        lambda: legs.patch(key, {"delay": 1}),
        lambda: legs.put(DOC1, key=key),
    ]
    for call in calls:
        with pytest.raises(JarenlabError) as info:
            call()
        assert info.value.code == code and info.value.collection == "legs", info.value
    assert legs.to_list() == [DOC1]


def test_bulk_writes_and_frames(store: Any) -> None:
    legs = store["legs"]
    docs = [leg("2013-01-02", o, n, n * 10) for o in ("LGA", "EWR") for n in (1, 2)]
    assert legs.insert_many(docs) == 4
    frame = legs.to_pandas()
    assert list(frame.index.names) == ["day", "origin", "n"]
    assert frame.loc[("2013-01-02", "EWR", 2), "delay"] == 20
    assert legs.keys() == [("2013-01-02", o, n) for o in ("LGA", "EWR") for n in (1, 2)]
    # A frame indexed by the members loads like one holding them as columns; twice leaves one copy.
    indexed = pd.DataFrame(docs).set_index(["day", "origin", "n"])
    indexed["delay"] += 1
    assert legs.put_many(indexed) == 4 and legs.put_many(indexed) == 4 and legs.count() == 4
    assert legs.get(("2013-01-02", "LGA", 2))["delay"] == 21
    renamed = indexed.rename_axis(["a", "b", "c"])
    assert legs.put_many(renamed.assign(delay=0), key_from_index=True) == 4
    assert legs.where(it.delay == 0).count() == 4
    assert legs.to_pandas(flatten=True).index.names == ["day", "origin", "n"]
    with pytest.raises(JarenlabError) as info:
        legs.put_many(renamed.reset_index(level=2), key_from_index=True)
    assert info.value.code == "JD2200"
    with pytest.raises(JarenlabError) as info:
        legs.insert_many([leg("2013-01-03", "JFK", 1), leg("2013-01-03", "JFK", 1)])
    err = info.value
    assert (err.code, err.position, err.key) == ("JD2001", 1, ("2013-01-03", "JFK", 1))
    assert legs.count() == 4


ORDERED = [
    ("a", "", -(2**63)),
    ("a", "", -1),
    ("a", "", 0),
    ("a", "", 2**63 - 1),
    ("a", "\x01", 0),
    ("a", "\x01x", 0),
    ("a", "\x02", 0),
    ("a", "b", 5),
    ("a\x01", "", 0),
    ("ab", "", 0),
    ("é", "a", 1),
    ("😀", "a", 1),
]


def test_stored_order_and_pages_follow_the_members(store: Any) -> None:
    legs = store["legs"]
    shuffled = ORDERED[5:] + ORDERED[:5]
    legs.insert_many([leg(*k) for k in shuffled])
    assert sorted(ORDERED) == ORDERED
    # ties of the ordering break by the key, member by member
    q = legs.order_by(it.delay).select([it.day, it.origin, it.n])
    got: list[Any] = []
    page = q.page(5)
    while True:
        got += [tuple(i) for i in page.items]
        if not page.has_more:
            break
        page = q.page(5, after=page.continuation)
    assert got == ORDERED
    # a plain query breaks ties by storage order (insertion, for text keys), a keyed read by key
    assert [tuple(r) for r in q.to_list()] == shuffled
    assert legs.where(it.delay == 0).page(20).items == [leg(*k) for k in ORDERED]
    for k in ORDERED:
        assert legs.get(k) == leg(*k)


def _plan_text(store: Any, table: str) -> str:
    sql = store.db.sql("collection.get", table=table)
    stored = store["legs"].stored_key(K1)
    rows = store.db.explain(sql, [stored])
    if store.backend.name == "sqlite":
        return " ".join(r["detail"] for r in store.backend.dialect.plan_tree(rows))
    return str(rows)


def test_a_lookup_by_composite_key_is_served_by_the_primary_key(store: Any) -> None:
    store["legs"].insert_many([leg("2013-01-01", o, n) for o in ("JFK", "LGA") for n in range(200)])
    if store.backend.name != "sqlite":
        store.db.connection().execute('ANALYZE "legs"')
    plan = _plan_text(store, "legs")
    if store.backend.name == "sqlite":
        assert "SEARCH legs USING INDEX" in plan and "(key=?)" in plan, plan
    else:
        assert "Index Scan" in plan and "legs_pkey" in plan, plan


def test_the_change_feed_names_a_document_by_its_members(store: Any) -> None:
    legs = store["legs"]
    start = store.changes().cursor
    legs.insert(DOC1)
    legs.insert(leg("2013/01/02", "JFK", -3))
    legs.patch(K1, {"delay": 6})
    legs.delete(K1)
    page = store.changes(after=start)
    got = [(c.change, c.key, c.ops[0]["path"]) for c in page]
    assert got == [
        ("insert", K1, '/legs/["2013-01-01","JFK",1]'),
        ("insert", ("2013/01/02", "JFK", -3), '/legs/["2013~101~102","JFK",-3]'),
        ("update", K1, '/legs/["2013-01-01","JFK",1]/delay'),
        ("delete", K1, '/legs/["2013-01-01","JFK",1]'),
    ]
    assert list(page.to_frame()["key"]) == [c.key for c in page]


def test_a_live_query_follows_writes_by_composite_key(store: Any) -> None:
    legs = store["legs"]
    legs.insert_many([leg("2013-01-01", "JFK", n, n) for n in range(5)])
    live = legs.live(
        {"$for": {"r": "$[*]"}, "$orderby": {"$key": "$r.delay", "$dir": "desc"}, "$return": "$r.n"}
    )
    assert live.rows == [4, 3, 2, 1, 0]
    legs.patch(("2013-01-01", "JFK", 0), {"delay": 9})
    legs.delete(("2013-01-01", "JFK", 4))
    assert live.rows == [0, 3, 2, 1]
    live.close()


def test_a_composite_keyed_holder_takes_on_delete_actions(store: Any) -> None:
    store["airports"].insert_many([{"faa": "JFK"}, {"faa": "LGA"}])
    store["legs"].insert_many([leg("2013-01-01", o, n) for o in ("JFK", "LGA") for n in (1, 2)])
    assert store["airports"].delete("JFK")
    assert store["legs"].keys() == [("2013-01-01", "LGA", 1), ("2013-01-01", "LGA", 2)]


def test_a_session_tracks_composite_keys(store: Any) -> None:
    store["legs"].insert(DOC1)
    with store.session() as s:
        doc = s.get("legs", K1)
        assert doc["delay"] == 5
        assert s.put("legs", {**DOC1, "delay": 6}) == K1
        assert s.add("legs", leg("2013-01-02", "JFK", 1)) == ("2013-01-02", "JFK", 1)
        s.save()
    assert store["legs"].get(K1)["delay"] == 6 and store["legs"].count() == 2
    with store.session() as s:
        s.get("legs", {"day": "2013-01-02", "origin": "JFK", "n": 1})
        s.remove("legs", ("2013-01-02", "JFK", 1))
        s.save()
    assert store["legs"].keys() == [K1]


def _declared(key: Any, **more: Any) -> dict[str, Any]:
    model = copy.deepcopy(MODEL)
    model["collections"]["legs"]["key"] = key
    model["collections"]["legs"].update(more)
    return model


@pytest.mark.parametrize(
    ("key", "code", "doc_path"),
    [
        (["/day"], "JD2203", "/collections/legs/key"),
        ([], "JD2203", "/collections/legs/key"),
        (["/day", "/day"], "JD2203", "/collections/legs/key"),
        (["/day", "/delay"], "JD0005", "/collections/legs/key/1"),
        (["/day", "/nope"], "JD0005", "/collections/legs/key/1"),
        (["/day", "origin"], "JD0005", "/collections/legs/key/1"),
    ],
)
def test_a_bad_composite_declaration_is_coded(key: Any, code: str, doc_path: str) -> None:
    with pytest.raises(ModelError) as info:
        load_model(_declared(key))
    assert (info.value.code, info.value.doc_path) == (code, doc_path)


def test_a_relation_to_a_composite_key_names_each_member() -> None:
    model = copy.deepcopy(MODEL)  # (tests/store/test_composite_relations.py covers such relations)
    model["collections"]["airports"]["relations"] = {"legs": {"to": "legs", "via": "/faa"}}
    with pytest.raises(ModelError) as info:
        load_model(model)
    assert info.value.code == "JD2204" and info.value.doc_path == "/collections/airports/relations/legs/via"
    with pytest.raises(ModelError) as info:  # also when the version member is a key member
        load_model(_declared(["/day", "/n"], version="/n"))
    assert info.value.code == "JD0005"


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m["collections"]["legs"].update(key=["/origin", "/day", "/n"]),
        lambda m: m["collections"]["legs"].update(key=["/day", "/origin"]),
        lambda m: m["collections"]["legs"].update(key="/origin"),
        lambda m: m["collections"]["legs"]["schema"]["properties"].update(n=_STR),
    ],
    ids=["reordered", "fewer", "single", "member type"],
)
def test_changing_a_composite_key_is_refused_by_a_migration(store: Any, change: Any) -> None:
    store["legs"].insert(DOC1)
    new = copy.deepcopy(MODEL)
    change(new)
    with pytest.raises(JarenlabError) as info:
        store.migrate(new, progress=False)
    assert info.value.code == "JD0060" and info.value.doc_path == "/collections/legs/key"
    assert store["legs"].get(K1) == DOC1


def test_a_migration_keeps_composite_keys_and_names_them(store: Any) -> None:
    store["legs"].insert_many([leg("2013-01-01", "JFK", n, n) for n in range(3)])
    new = copy.deepcopy(MODEL)
    new["collections"]["legs"]["schema"]["properties"]["delay"]["minimum"] = 1
    plan = store.migrate(new, dry_run=True)
    assert list(plan.violations["key"]) == [("2013-01-01", "JFK", 0)]
    done = store.migrate(new, transforms={"legs": lambda d: {**d, "delay": d["delay"] + 1}}, progress=False)
    assert done.applied and store["legs"].get(("2013-01-01", "JFK", 0))["delay"] == 1
    with pytest.raises(JarenlabError) as info:
        store.migrate(
            copy.deepcopy(MODEL), transforms={"legs": lambda d: {**d, "n": d["n"] + 10}}, progress=False
        )
    assert info.value.code == "JD0024" and info.value.key == ("2013-01-01", "JFK", 0)


def test_reopening_with_another_key_is_a_model_mismatch(open_store: Any) -> None:
    store = open_store(copy.deepcopy(MODEL))
    store["legs"].insert(DOC1)
    store.close()
    with pytest.raises(JarenlabError) as info:
        open_store.reopen(store, _declared(["/origin", "/day", "/n"]))
    assert info.value.code == "JD0002"
    again = open_store.reopen(store, copy.deepcopy(MODEL))
    assert again["legs"].get(K1) == DOC1 and "/day + /origin + /n" in again["legs"]._repr_html_()


def test_a_model_inferred_with_a_composite_key_loads_a_frame_indexed_by_it(open_store: Any) -> None:
    frame = pd.DataFrame(
        {"origin": ["JFK", "JFK", "LGA"], "hour": [1, 2, 1], "temp": [3.5, 4.0, 5.0]}
    ).set_index(["origin", "hour"])
    model = jl.infer_model(frame, key=["origin", "hour"], name="weather")
    assert model["collections"]["weather"]["key"] == ["/origin", "/hour"]
    store = open_store(model)
    assert store["weather"].put_many(frame) == 3 and store["weather"].put_many(frame) == 3
    assert store["weather"].get(("LGA", 1)) == {"origin": "LGA", "hour": 1, "temp": 5.0}
    for bad in (["origin"], ["origin", 1]):
        with pytest.raises(JarenlabError) as info:
            jl.infer_model(frame, key=bad)
        assert info.value.code == "JD2010"
    with pytest.raises(JarenlabError) as info:
        jl.infer_model(frame, key=["origin", "temp"])
    assert info.value.code == "JD2002"


OWNED: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "slots": {
            "schema": {
                "type": "object",
                "required": ["day", "gate", "who"],
                "properties": {
                    "day": _STR,
                    "gate": {"type": "integer"},
                    "who": _STR,
                    "n": {"type": "integer"},
                },
            },
            "key": ["/day", "/gate"],
            "owner": "/who",
            "indexes": [{"name": "by_who", "path": "$.who"}],
        }
    },
}


def test_an_owner_view_and_a_narrowed_live_query_on_a_composite_key(open_store: Any) -> None:
    store = open_store(copy.deepcopy(OWNED))
    slots = store["slots"]
    slots.insert_many(
        [{"day": f"d{i % 3}", "gate": i, "who": "ann" if i % 2 else "bob", "n": i} for i in range(6)]
    )
    ann = store.as_owner("ann").collection("slots")
    assert ann.keys() == [("d1", 1), ("d0", 3), ("d2", 5)]
    assert ann.get(("d1", 1))["n"] == 1 and ann.get(("d0", 0)) is None
    assert ann.patch(("d1", 1), {"n": 10})["n"] == 10
    assert ann.put({"day": "d9", "gate": 9, "n": 9}) == ("d9", 9)
    assert ann.delete(("d0", 0)) is False and ann.delete(("d0", 3)) is True
    assert list(ann.to_pandas().index) == [("d1", 1), ("d2", 5), ("d9", 9)]
    live = slots.where(it.who == "bob").live()
    assert [r["gate"] for r in live.rows] == [0, 2, 4]
    slots.put({"day": "d1", "gate": 1, "who": "bob", "n": 1})  # ann's record becomes bob's
    slots.delete(("d2", 2))
    assert [r["gate"] for r in live.rows] == [0, 1, 4]
    live.close()
