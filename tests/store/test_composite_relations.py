"""Relations to a collection with a composite key (``"via": ["/origin", "/time_hour"]``): checked
with the model, every ``on_delete`` action enforced inside the delete's transaction, graph loads
in one statement equal to the reference engine's store-level query, and migrations adding and
dropping such a relation. On SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

import pytest

from jarenlab.errors import ModelError, StoreError
from jarenlab.model import load_model

_STR = {"type": "string"}
_INT = {"type": "integer"}
_NSTR = {"type": ["string", "null"]}
_NINT = {"type": ["integer", "null"]}


def model(on_delete: str | None = None, *, inverse: bool = True) -> dict[str, Any]:
    """weather keyed by (origin, hour), flights pointing at it; slots keyed by (day, n), an integer
    member, legs pointing at them (negative numbers and U+0001 test the key's encoding in SQL)."""
    weather_rel: dict[str, Any] = {"to": "weather", "via": ["/origin", "/hour"]}
    slot_rel: dict[str, Any] = {"to": "slots", "via": ["/day", "/n"]}
    if on_delete:
        weather_rel["on_delete"] = slot_rel["on_delete"] = on_delete
    return {
        "$model": "0.1",
        "collections": {
            "weather": {
                "schema": {
                    "type": "object",
                    "required": ["origin", "hour"],
                    "properties": {"origin": _STR, "hour": _STR, "temp": {"type": "number"}},
                },
                "key": ["/origin", "/hour"],
                "relations": (
                    {"flights": {"to": "flights", "many": True, "via": ["/origin", "/hour"]}}
                    if inverse
                    else {}
                ),
            },
            "flights": {
                "schema": {
                    "type": "object",
                    "required": ["id"],
                    "properties": {"id": _INT, "origin": _NSTR, "hour": _NSTR, "delay": _INT},
                },
                "key": "/id",
                "indexes": [{"name": "by_origin_hour", "path": ["$.origin", "$.hour"]}],
                "relations": {"weather": weather_rel},
            },
            "slots": {
                "schema": {
                    "type": "object",
                    "required": ["day", "n"],
                    "properties": {"day": _STR, "n": _INT, "label": _STR},
                },
                "key": ["/day", "/n"],
            },
            "legs": {
                "schema": {
                    "type": "object",
                    "required": ["id"],
                    "properties": {"id": _INT, "day": _NSTR, "n": _NINT},
                },
                "key": "/id",
                "relations": {"slot": slot_rel},
            },
        },
    }


def _refused(m: dict[str, Any]) -> tuple[str, str | None]:
    with pytest.raises(ModelError) as info:
        load_model(m)
    return info.value.code, info.value.doc_path


FLIGHT_REL = "/collections/flights/relations/weather"


def test_the_declaration_is_one_pointer_per_key_member_in_order() -> None:
    rel = load_model(model("cascade")).relations["flights"]["weather"]
    assert (rel.holder, rel.members, rel.target, rel.reference) == (
        "flights",
        ("origin", "hour"),
        "weather",
        ("flights", "origin/hour", "weather"),
    )
    inverse = load_model(model()).relations["weather"]["flights"]
    assert inverse.reference == rel.reference and inverse.many

    def via(value: Any) -> dict[str, Any]:
        m = model()
        m["collections"]["flights"]["relations"]["weather"]["via"] = value
        return m

    for bad in (
        "/origin",
        ["/origin"],
        ["/origin", "/hour", "/id"],
        ["/origin", "/origin"],
        ["/origin", "hour"],
    ):
        assert _refused(via(bad)) == ("JD2204", f"{FLIGHT_REL}/via")
    assert _refused(via(["/origin", "/delay"])) == ("JD0071", f"{FLIGHT_REL}/via/1")
    assert _refused(via(["/origin", "/nope"])) == ("JD0030", f"{FLIGHT_REL}/via/1")
    single = model()
    single["collections"]["legs"]["relations"]["slot"] = {"to": "flights", "via": ["/n", "/day"]}
    assert _refused(single) == ("JD2204", "/collections/legs/relations/slot/via")
    strict = model("set_null")
    strict["collections"]["flights"]["schema"]["properties"]["hour"] = _STR
    assert _refused(strict) == ("JD0030", f"{FLIGHT_REL}/on_delete")
    disagree = model("cascade")
    disagree["collections"]["weather"]["relations"]["flights"]["on_delete"] = "restrict"
    assert _refused(disagree)[0] == "JD0031"


def test_a_join_collection_names_a_composite_end_by_one_member_per_key_member() -> None:
    m = model()
    m["collections"]["links"] = {
        "schema": {
            "type": "object",
            "properties": {"flight": _INT, "weather": _STR, "origin": _STR, "hour": _STR},
        },
        "key": None,
        "identity": "integer",
    }
    m["collections"]["flights"]["relations"]["seen"] = {
        "to": "weather",
        "through": {"collection": "links", "from": "/flight", "to": "/weather"},
    }
    assert _refused(m) == ("JD2204", "/collections/flights/relations/seen/through/to")
    m["collections"]["flights"]["relations"]["seen"]["through"]["to"] = ["/origin", "/hour"]
    rel = load_model(m).relations["flights"]["seen"]
    assert (rel.members, rel.others) == (("flight",), ("origin", "hour"))


def _seed(store: Any) -> None:
    store["weather"].insert_many(
        [
            {"origin": "JFK", "hour": "05", "temp": 39.0},
            {"origin": "JFK", "hour": "06", "temp": 39.9},
            {"origin": "LGA", "hour": "05", "temp": 37.4},
        ]
    )
    store["flights"].insert_many(
        [
            {"id": 1, "origin": "JFK", "hour": "05", "delay": 3},
            {"id": 2, "origin": "JFK", "hour": "06", "delay": 9},
            {"id": 3, "origin": "LGA", "hour": "05", "delay": 1},
            {"id": 4, "origin": "JFK", "hour": "05", "delay": 7},
        ]
    )


def test_restrict_refuses_and_writes_nothing(open_store: Any) -> None:
    store = open_store(model("restrict"))
    _seed(store)
    with pytest.raises(StoreError) as info:
        store["weather"].delete(("JFK", "05"))
    err = info.value
    assert (err.code, err.collection, err.key) == ("JD2115", "weather", ("JFK", "05"))
    assert "flights 1 and 1 more" in err.reason and "/origin, /hour" in err.reason
    assert store["weather"].get(("JFK", "05")) is not None and store["flights"].count() == 4
    store["flights"].delete(1)
    store["flights"].delete(4)
    assert store["weather"].delete(("JFK", "05")) is True


def test_cascade_deletes_the_referencing_documents_in_one_transaction(open_store: Any) -> None:
    store = open_store(model("cascade"))
    _seed(store)
    assert store["weather"].delete({"hour": "05", "origin": "JFK"}) is True
    assert sorted(store["flights"].keys()) == [2, 3]
    with pytest.raises(RuntimeError), store.transaction():
        store["weather"].delete(("LGA", "05"))
        assert store["flights"].get(3) is None
        raise RuntimeError("undo")
    assert store["flights"].get(3) is not None and store["weather"].get(("LGA", "05")) is not None


def test_set_null_clears_every_member_of_the_reference(open_store: Any) -> None:
    store = open_store(model("set_null"))
    _seed(store)
    store["weather"].delete(("JFK", "06"))
    assert store["flights"].get(2) == {"id": 2, "origin": None, "hour": None, "delay": 9}
    assert store["flights"].get(1)["origin"] == "JFK"  # another key with one member alike: untouched


def test_an_integer_member_and_control_characters_on_delete(open_store: Any) -> None:
    store = open_store(model("cascade"))
    days = ["d", "d\x01", "d\x01\x02", "e"]
    store["slots"].insert_many([{"day": d, "n": n} for d in days for n in (-(2**63), -1, 0, 5, 2**63 - 1)])
    store["legs"].insert_many(
        [{"id": i, "day": d, "n": n} for i, (d, n) in enumerate((d, n) for d in days for n in (-1, 0, 5))]
    )
    store["slots"].delete(("d\x01", -1))
    assert {(x["day"], x["n"]) for x in store["legs"].to_list()} == {
        (d, n) for d in days for n in (-1, 0, 5)
    } - {("d\x01", -1)}


@pytest.fixture
def loaded(open_store: Any) -> Any:
    """nycflights-like weather and flights, some flights pointing at no stored hour."""
    store = open_store(model("cascade"))
    rng = random.Random(11)
    origins, hours = ["EWR", "JFK", "LGA"], [f"2013-01-01T{h:02}" for h in range(12)]
    store["weather"].insert_many(
        [{"origin": o, "hour": h, "temp": round(rng.uniform(20, 50), 1)} for o in origins for h in hours[:10]]
    )
    store["flights"].insert_many(
        [
            {"id": i, "origin": rng.choice(origins), "hour": rng.choice(hours), "delay": rng.randint(-10, 90)}
            for i in range(150)
        ]
        + [{"id": 150, "delay": 0}]
    )
    days = ["d", "d\x01", "é"]
    store["slots"].insert_many(
        [{"day": d, "n": n, "label": f"{d}{n}"} for d in days for n in (-(2**63), -3, 0, 7)]
    )
    store["legs"].insert_many(
        [{"id": i, "day": rng.choice(days), "n": rng.choice([-(2**63), -3, 0, 7, 8])} for i in range(40)]
        + [{"id": 40, "day": "d"}, {"id": 41, "n": 0}]  # a member missing: no slot
    )
    return store


@pytest.fixture
def statements(loaded: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    seen: list[str] = []
    query = loaded.db.query

    def counted(sql: str, params: Any) -> Any:
        seen.append(sql)
        return query(sql, params)

    monkeypatch.setattr(loaded.db, "query", counted)
    yield seen


def _match(store: Any, holder: str, target: str, members: tuple[str, str], where: Any) -> list[Any]:
    """The pairs (holder document, target document) the store-level query joins on every member,
    in the reference engine, in the holder's storage order."""
    document = {
        "$for": {"h": f"$.{holder}[*]", "t": f"$.{target}[*]"},
        "$where": {"$and": [{"$eq": [f"$h.{m}", f"$t.{m}"]} for m in members] + [where]},
        "$return": {"h": "$h", "t": "$t"},
    }
    return store.execute([document], {}, pushdown=False)


def test_a_to_one_load_equals_the_reference_in_one_statement(loaded: Any, statements: list[str]) -> None:
    flights = loaded["flights"].load({"order_by": "$it.id", "include": {"weather": True}})
    legs = loaded["legs"].load({"include": {"slot": True}})
    assert len(statements) == 2
    found = {p["h"]["id"]: p["t"] for p in _match(loaded, "flights", "weather", ("origin", "hour"), True)}
    assert flights == [
        {**f, "weather": found.get(f["id"])}
        for f in sorted(loaded["flights"].to_list(), key=lambda f: f["id"])
    ]
    assert sum(f["weather"] is not None for f in flights) >= 100 and flights[-1]["weather"] is None
    slots = {p["h"]["id"]: p["t"] for p in _match(loaded, "legs", "slots", ("day", "n"), True)}
    assert legs == [{**x, "slot": slots.get(x["id"])} for x in loaded["legs"].to_list()]
    assert any(x["slot"] and x["slot"]["n"] == -(2**63) for x in legs)
    assert any(x["slot"] and x["slot"]["day"] == "d\x01" for x in legs)
    assert any(x["slot"] is None for x in legs)  # n == 8: no such slot
    assert legs[-2:] == [{"id": 40, "day": "d", "slot": None}, {"id": 41, "n": 0, "slot": None}]


def test_to_many_windows_and_counts_from_the_composite_side(loaded: Any, statements: list[str]) -> None:
    spec = {
        "order_by": ["$it.origin", "$it.hour"],
        "include": {
            "flights": {
                "where": {"$gt": ["$it.delay", 20]},
                "order_by": {"$key": "$it.delay", "$dir": "desc"},
                "take": 2,
            },
        },
    }
    result = loaded["weather"].load(spec)
    assert len(statements) == 1
    pairs = _match(loaded, "flights", "weather", ("origin", "hour"), {"$gt": ["$h.delay", 20]})
    for w in result:
        mine = [p["h"] for p in pairs if (p["t"]["origin"], p["t"]["hour"]) == (w["origin"], w["hour"])]
        best = sorted(mine, key=lambda f: -f["delay"])[:2]  # a stable sort: ties in storage order
        assert w["flights"] == best
    assert [(w["origin"], w["hour"]) for w in result] == sorted(loaded["weather"].keys())
    assert sum(len(w["flights"]) for w in result) >= 20
    counts = loaded["weather"].load({"include": {"flights": {"count": True}}})
    every = _match(loaded, "flights", "weather", ("origin", "hour"), True)
    assert {(w["origin"], w["hour"]): w["flights"] for w in counts} == {
        k: sum((p["t"]["origin"], p["t"]["hour"]) == k for p in every)
        for k in sorted(loaded["weather"].keys())
    }
    ex = loaded["flights"].explain_load({"include": {"weather": True}})
    assert ex.statements == 1 and ex.includes[0]["via"] == "flights/origin, /hour"


def test_migrations_add_and_drop_such_a_relation(open_store: Any) -> None:
    plain = model(inverse=False)
    del plain["collections"]["flights"]["relations"]
    plain["version"] = 1
    store = open_store(plain)
    _seed(store)
    assert store["weather"].delete(("LGA", "05")) is True  # no relation: flight 3 keeps its members
    related = model("restrict", inverse=False)
    related["version"] = 2
    plan = store.migrate(related, dry_run=True)
    assert next((s.kind, s.collection) for s in plan.steps) == ("add relation", "flights")
    assert "flights(/origin, /hour) -> weather, on_delete restrict" in plan.steps[0].detail
    store.migrate(related, progress=False)
    with pytest.raises(StoreError) as info:
        store["weather"].delete(("JFK", "06"))
    assert info.value.code == "JD2115"
    loaded = store["flights"].load({"include": {"weather": True}})
    assert [f["weather"] and f["weather"]["temp"] for f in loaded] == [39.0, 39.9, None, 39.0]
    dropped = copy.deepcopy(plain)
    dropped["version"] = 3
    plan = store.migrate(dropped, dry_run=True)
    assert next((s.kind, s.collection) for s in plan.steps) == ("drop relation", "flights")
    store.migrate(dropped, progress=False)
    assert store["weather"].delete(("JFK", "06")) is True and store["flights"].count() == 4


def test_a_to_many_load_searches_an_index_on_the_members(open_store: Any) -> None:
    m = model("cascade")
    props = m["collections"]["flights"]["schema"]["properties"]
    props["origin"] = props["hour"] = _STR
    store = open_store(m)
    _seed(store)
    spec = {"include": {"flights": {"order_by": {"$key": "$it.delay", "$dir": "desc"}, "take": 1}}}
    ex = store["weather"].explain_load(spec)
    assert ex.suggested_indexes == [
        {
            "collection": "flights",
            "index": {
                "name": "by_origin_hour_delay_desc",
                "path": ["$.origin", "$.hour", {"path": "$.delay", "dir": "desc"}],
            },
        }
    ]
    if store.backend.name == "sqlite":  # the children are found member by member, through the index
        details = " ".join(step["detail"] for step in ex.engine_plan)
        assert "SEARCH flights USING INDEX flights_by_origin_hour (gx_origin=? AND gx_hour=?)" in details
    assert [[f["id"] for f in w["flights"]] for w in store["weather"].load(spec)] == [[4], [2], [3]]
