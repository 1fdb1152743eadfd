"""Many-to-many relations whose ends (one or both) have composite keys, on SQLite and PostgreSQL:
the join collection holds one member per key member (``"from": ["/day", "/n"]``, as a relation's
``via``); ``link``/``unlink``/``of`` take the key as a tuple or a dict; bad keys are coded and write
nothing; ``on_delete`` cascades or restricts from both ends; graph loads read them in ONE statement,
equal to the store-level query the reference engine answers; the change feed and live queries see
the join documents; migrations add and drop such relations."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from jarenlab import it
from jarenlab.errors import JarenlabError, MigrationError, ModelError, StoreError
from jarenlab.model import load_model
from tests.store.links_child import SHAPES, race

_STR = {"type": "string"}
_INT = {"type": "integer"}
SLOT = ["/day", "/n"]
GATE = ["/airport", "/gate"]
SHIFTS = {"collection": "shifts", "from": SLOT, "to": "/crew"}
ASSIGNMENTS = {"collection": "assignments", "from": SLOT, "to": GATE}


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "slots": {
            "schema": _object(["day", "n"], day=_STR, n=_INT, label=_STR),
            "key": SLOT,
            "relations": {
                "crews": {"to": "crews", "through": SHIFTS, "on_delete": "cascade"},
                "gates": {"to": "gates", "through": ASSIGNMENTS, "on_delete": "restrict"},
            },
        },
        "crews": {
            "schema": _object(["name"], name=_STR, rank=_INT),
            "key": "/name",
            "relations": {
                "slots": {
                    "to": "slots",
                    "through": {"collection": "shifts", "from": "/crew", "to": SLOT},
                }
            },
        },
        "gates": {
            "schema": _object(["airport", "gate"], airport=_STR, gate=_STR, size=_INT),
            "key": GATE,
            "relations": {
                "slots": {
                    "to": "slots",
                    "through": {"collection": "assignments", "from": GATE, "to": SLOT},
                }
            },
        },
        "shifts": {
            "schema": _object(["day", "n", "crew"], day=_STR, n=_INT, crew=_STR, role=_STR),
            "key": None,
            "identity": "integer",
            "indexes": [
                {"name": "by_slot", "path": ["$.day", "$.n"]},
                {"name": "by_crew", "path": "$.crew"},
            ],
        },
        "assignments": {
            "schema": _object(["day", "n", "airport", "gate"], day=_STR, n=_INT, airport=_STR, gate=_STR),
            "key": None,
            "identity": "integer",
            "indexes": [
                {"name": "by_slot", "path": ["$.day", "$.n"]},
                {"name": "by_gate", "path": ["$.airport", "$.gate"]},
            ],
        },
    },
}
REL = "/collections/slots/relations/crews"


def model() -> dict[str, Any]:
    return copy.deepcopy(MODEL)


def refused(doc: dict[str, Any]) -> tuple[str, str | None, str]:
    with pytest.raises(ModelError) as err:
        load_model(doc)
    return err.value.code, err.value.doc_path, err.value.reason


def test_the_declaration_names_a_composite_end_by_its_members() -> None:
    rels = load_model(model()).relations
    crews = rels["slots"]["crews"]
    assert (crews.members, crews.others, crews.holder, crews.target, crews.to) == (
        ("day", "n"),
        ("crew",),
        "shifts",
        "slots",
        "crews",
    )
    assert crews.references == (("shifts", "day/n", "slots"), ("shifts", "crew", "crews"))
    assert rels["crews"]["slots"].references == tuple(reversed(crews.references))
    assert rels["slots"]["gates"].references == (
        ("assignments", "day/n", "slots"),
        ("assignments", "airport/gate", "gates"),
    )
    assert crews.join_members == "[/day, /n], /crew"

    def bad(side: str, value: Any) -> tuple[str, str | None, str]:
        m = model()
        m["collections"]["slots"]["relations"]["crews"]["through"][side] = value
        return refused(m)

    for value in ("/day", ["/day"], ["/day", "/n", "/crew"], ["/day", "/day"], ["/day", "n"], [1, 2]):
        code, at, reason = bad("from", value)
        assert (code, at) == ("JD2204", f"{REL}/through/from") and "through's from" in reason
    assert bad("to", ["/crew"])[:2] == ("JD2204", f"{REL}/through/to")
    assert bad("from", ["/day", "/role"])[:2] == ("JD0071", f"{REL}/through/from/1")
    assert bad("from", ["/nope", "/n"])[:2] == ("JD0030", f"{REL}/through/from/0")
    code, at, reason = bad("to", "/day")  # one member holding a key member of each end
    assert (code, at) == ("JD2202", f"{REL}/through/to") and "/day" in reason
    shared = model()
    shared["collections"]["gates"]["schema"]["properties"]["day"] = _STR
    shared["collections"]["gates"]["key"] = ["/day", "/gate"]
    shared["collections"]["gates"]["schema"]["required"] = ["day", "gate"]
    shared["collections"]["slots"]["relations"]["gates"]["through"]["to"] = ["/day", "/gate"]
    del shared["collections"]["gates"]["relations"]
    assert refused(shared)[:2] == ("JD2202", "/collections/slots/relations/gates/through/to")
    disagree = model()
    disagree["collections"]["crews"]["relations"]["slots"]["on_delete"] = "restrict"
    assert refused(disagree)[0] == "JD0031"


def test_a_composite_keyed_collection_linked_to_itself() -> None:
    m = {
        "$model": "0.1",
        "collections": {
            "slots": {
                "schema": _object(["day", "n"], day=_STR, n=_INT),
                "key": SLOT,
                "relations": {
                    "next": {
                        "to": "slots",
                        "through": {"collection": "hops", "from": SLOT, "to": ["/d2", "/n2"]},
                    },
                    "previous": {
                        "to": "slots",
                        "through": {"collection": "hops", "from": ["/d2", "/n2"], "to": SLOT},
                    },
                },
            },
            "hops": {
                "schema": _object([], day=_STR, n=_INT, d2=_STR, n2=_INT),
                "key": None,
                "identity": "integer",
            },
        },
    }
    rels = load_model(m).relations["slots"]
    assert rels["next"].references == tuple(reversed(rels["previous"].references))


DAYS = ["d", "d\x01", "é"]
NS = [-(2**63), -3, 0, 7]


@pytest.fixture
def store(open_store: Any) -> Any:
    s = open_store(model())
    s["slots"].insert_many([{"day": d, "n": n, "label": f"{d}{n}"} for d in DAYS for n in NS])
    s["crews"].insert_many([{"name": c, "rank": i % 3} for i, c in enumerate(["ann", "bo", "cy", "di"])])
    s["gates"].insert_many(
        [{"airport": a, "gate": g, "size": len(g)} for a in ("JFK", "LGA") for g in ("A1", "B22")]
    )
    return s


def test_link_takes_a_composite_key_as_a_tuple_or_a_dict(store: Any) -> None:
    crews = store["slots"].relation("crews")
    key = crews.link(("d\x01", -(2**63)), "ann", role="lead")
    assert store["shifts"].get(key) == {"day": "d\x01", "n": -(2**63), "crew": "ann", "role": "lead"}
    assert crews.link({"n": -(2**63), "day": "d\x01"}, "ann") == key
    assert crews.link(["d\x01", -(2**63)], "ann", role="lead") == key
    assert store["crews"].relation("slots").link("ann", {"day": "d\x01", "n": -(2**63)}) == key
    with pytest.raises(StoreError) as err:
        crews.link(("d\x01", -(2**63)), "ann", role="crew")
    assert (err.value.code, err.value.key) == ("JD2192", key)
    gates = store["slots"].relation("gates")
    both = gates.link(("é", 7), ("JFK", "B22"))
    assert store["assignments"].get(both) == {"day": "é", "n": 7, "airport": "JFK", "gate": "B22"}
    assert store["gates"].relation("slots").link({"airport": "JFK", "gate": "B22"}, ("é", 7)) == both
    store["gates"].relation("slots").link(("JFK", "B22"), ("d", 0))
    assert [(d["day"], d["n"]) for d in store["gates"].relation("slots").of(("JFK", "B22"))] == [
        ("é", 7),
        ("d", 0),
    ]
    assert store["crews"].relation("slots").of("ann") == crews.of(("d\x01", -(2**63)))
    assert crews.of(("d", -(2**63))) == []  # another slot with one member alike
    assert list(gates.to_pandas().columns[:4]) == ["day", "n", "airport", "gate"]
    assert "[/day, /n], [/airport, /gate]" in repr(gates)
    assert gates.unlink(("é", 7), {"gate": "B22", "airport": "JFK"}) == 1
    assert gates.unlink(("é", 7), ("JFK", "B22")) == 0
    assert store["assignments"].count() == 1


def test_bad_keys_are_coded_and_write_nothing(store: Any) -> None:
    crews, gates = store["slots"].relation("crews"), store["slots"].relation("gates")
    cases = [
        (lambda: crews.link(("d", 0, 1), "ann"), "JD2200", "slots"),
        (lambda: crews.link("d", "ann"), "JD2200", "slots"),
        (lambda: crews.link({"day": "d"}, "ann"), "JD2200", "slots"),
        (lambda: crews.link(("d", "0"), "ann"), "JD2201", "slots"),
        (lambda: crews.link(("d", True), "ann"), "JD2201", "slots"),
        (lambda: crews.link(("d", 2**63), "ann"), "JD2201", "slots"),
        (lambda: crews.link(("d", 0), ("ann",)), "JD2002", "crews"),
        (lambda: gates.link(("d", 0), ("JFK",)), "JD2200", "gates"),
        (lambda: gates.link(("d", 0), ("JFK", 1)), "JD2201", "gates"),
        (lambda: store["gates"].relation("slots").link(("JFK", "A1"), ("d", 1.0)), "JD2201", "slots"),
        (lambda: crews.link(("d", 1), "ann"), "JD2190", "slots"),  # no such slot
        (lambda: gates.link(("d", 0), ("EWR", "A1")), "JD2190", "gates"),
        (lambda: crews.link(("d", 0), "ann", n=3), "JD2192", "shifts"),
        (lambda: crews.unlink(("d",), "ann"), "JD2200", "slots"),
        (lambda: gates.of(("d", "x")), "JD2201", "slots"),
    ]
    for call, code, collection in cases:
        with pytest.raises(JarenlabError) as err:
            call()
        assert (err.value.code, err.value.collection) == (code, collection), err.value
    with pytest.raises(StoreError) as info:
        gates.link(("d", 0), ("EWR", "A1"))
    assert info.value.key == ("EWR", "A1")
    assert store["shifts"].count() == store["assignments"].count() == 0
    with store.transaction():  # a refused link inside a transaction leaves its other writes
        store["crews"].insert({"name": "eve"})
        crews.link(("d", 0), "eve")
        with pytest.raises(StoreError):
            crews.link(("d", 0, 0), "eve")
        with pytest.raises(StoreError):
            crews.link(("d", 5), "eve")
    assert [(d["day"], d["n"], d["crew"]) for d in store["shifts"].to_list()] == [("d", 0, "eve")]


def test_deleting_either_end_cascades_or_restricts(store: Any) -> None:
    crews, gates = store["slots"].relation("crews"), store["slots"].relation("gates")
    for slot, crew in [(("d", 0), "ann"), (("d", 0), "bo"), (("d", 7), "ann"), (("é", 0), "cy")]:
        crews.link(slot, crew)
    assert store["slots"].delete(("d", 0))
    assert [(d["day"], d["n"], d["crew"]) for d in store["shifts"].to_list()] == [
        ("d", 7, "ann"),
        ("é", 0, "cy"),
    ]
    assert store["crews"].delete("ann")
    assert [d["crew"] for d in store["shifts"].to_list()] == ["cy"]
    with pytest.raises(RuntimeError), store.transaction():
        store["slots"].delete({"day": "é", "n": 0})
        assert store["shifts"].count() == 0
        raise RuntimeError("undo")
    assert store["shifts"].count() == 1

    link = gates.link(("d", 7), ("LGA", "A1"))
    crews.link(("d", 7), "bo")
    for collection, key, members in (
        ("slots", ("d", 7), "/day, /n"),
        ("gates", ("LGA", "A1"), "/airport, /gate"),
    ):
        with pytest.raises(StoreError) as err:
            store[collection].delete(key)
        assert (err.value.code, err.value.collection, err.value.key) == ("JD2191", collection, key)
        assert f"assignments {link!r}" in err.value.reason and f"through /{members[1:]}" in err.value.reason
        assert store[collection].get(key) is not None
    assert [d["crew"] for d in store["shifts"].to_list()] == ["cy", "bo"]  # the cascade was undone too
    assert gates.unlink(("d", 7), ("LGA", "A1")) == 1
    assert store["gates"].delete(("LGA", "A1")) and store["slots"].delete(("d", 7))
    assert [d["crew"] for d in store["shifts"].to_list()] == ["cy"]


def test_the_change_feed_and_live_queries_see_the_join_documents(store: Any) -> None:
    crews = store["slots"].relation("crews")
    start = store.changes().cursor
    live = store["shifts"].where(it.crew == "ann").order_by(it.n).live()
    first = crews.link(("d", 7), "ann")
    second = crews.link(("é", -3), "ann", role="lead")
    crews.link(("é", -3), "bo")
    assert [(r["day"], r["n"]) for r in live.rows] == [("é", -3), ("d", 7)]
    crews.unlink(("é", -3), "ann")
    store["slots"].delete(("d", 7))
    assert live.rows == []
    live.close()
    got = [(c.change, c.key, c.ops[0]["path"]) for c in store.changes(after=start)]
    assert got[:2] == [("insert", first, f"/shifts/{first}"), ("insert", second, f"/shifts/{second}")]
    assert ("delete", second, f"/shifts/{second}") in got and ("delete", first, f"/shifts/{first}") in got


# -- graph loads --------------------------------------------------------------------------------


@pytest.fixture
def linked(store: Any) -> Any:
    """Seeded links through both relations, plus join documents written directly: one to a missing
    slot, one pair twice."""
    rng = random.Random(5)
    crews, gates = store["slots"].relation("crews"), store["slots"].relation("gates")
    store["crews"].insert_many([{"name": f"c{i:02}", "rank": rng.randint(0, 5)} for i in range(10)])
    names = [c["name"] for c in store["crews"].to_list()]
    slots, every_gate = store["slots"].keys(), store["gates"].keys()
    for slot, crew in sorted(
        {(rng.choice(slots), rng.choice(names)) for _ in range(70)}, key=lambda _: rng.random()
    ):
        crews.link(slot, crew, role=rng.choice(["lead", "crew"]))
    for slot, gate in sorted(
        {(rng.choice(slots), rng.choice(every_gate)) for _ in range(25)}, key=lambda _: rng.random()
    ):
        gates.link(slot, gate)
    store["shifts"].insert_many(
        [
            {"day": "d", "n": 8, "crew": "ann"},
            {"day": "é", "n": 0, "crew": "bo"},
            {"day": "é", "n": 0, "crew": "bo"},
        ]
    )
    return store


def _key_of(store: Any, collection: str, doc: dict[str, Any]) -> Any:
    key = store.model.collections[collection].key
    return tuple(doc[p[1:]] for p in key) if isinstance(key, tuple | list) else doc[key[1:]]


def reference(
    store: Any, side: str, name: str, key: Any, order: list[Any] | None = None, link: str | None = None
) -> list[Any]:
    """The linked documents of one end by the store-level query, in the reference engine: the join
    documents holding ``key`` member by member, in storage order, then the document each names."""
    rel = store.model.relations[side][name]
    to_key = store.model.collections[rel.to].key
    to_key = [p[1:] for p in to_key] if isinstance(to_key, tuple | list) else [to_key[1:]]
    values = key if len(rel.members) > 1 else (key,)
    conds = [{"$eq": [f"$e.{m}", {"$const": v}]} for m, v in zip(rel.members, values)]
    conds += [{"$eq": [f"$e.{m}", f"$x.{k}"]} for m, k in zip(rel.others, to_key)]
    document: dict[str, Any] = {
        "$for": {"e": f"$.{rel.holder}[*]", "x": f"$.{rel.to}[*]"},
        "$where": {"$and": conds},
        "$return": {"x": "$x", "e": "$e"},
    }
    if order:
        document["$orderby"] = order
    pairs = store.execute([document], {}, pushdown=False)
    return [{**p["x"], link: p["e"]} if link else p["x"] for p in pairs]


@pytest.mark.parametrize(
    ("side", "name"), [("slots", "crews"), ("crews", "slots"), ("slots", "gates"), ("gates", "slots")]
)
def test_a_load_equals_the_reference_in_one_statement(
    linked: Any, statements: list[str], side: str, name: str
) -> None:
    loaded = linked[side].load({"include": {name: {"link": "via"}}})
    counts = linked[side].load({"include": {name: {"count": True}}})
    assert len(statements) == 2
    expected = [
        {**doc, name: reference(linked, side, name, _key_of(linked, side, doc), link="via")}
        for doc in linked[side].to_list()
    ]
    assert loaded == expected
    assert [c[name] for c in counts] == [len(d[name]) for d in expected]
    assert sum(len(d[name]) for d in loaded) >= 20


def test_windows_and_nested_includes_from_and_to_composite_ends(linked: Any, statements: list[str]) -> None:
    spec = {
        "order_by": ["$it.day", "$it.n"],
        "include": {
            "crews": {
                "where": {"$ge": ["$it.rank", 1]},
                "order_by": [{"$key": "$it.rank", "$dir": "desc"}],
                "skip": 1,
                "take": 2,
            },
            "gates": {"order_by": "$it.gate", "take": 1},
        },
    }
    loaded = linked["slots"].load(spec)
    nested = linked["crews"].load(
        {
            "include": {
                "slots": {
                    "order_by": {"$key": "$it.n", "$dir": "desc"},
                    "take": 3,
                    "link": "shift",
                    "include": {"gates": {"count": True}},
                }
            }
        }
    )
    assert len(statements) == 2
    assert [(s["day"], s["n"]) for s in loaded] == sorted(linked["slots"].keys())
    for s in loaded:
        key = (s["day"], s["n"])
        every = reference(linked, "slots", "crews", key, [{"$key": "$x.rank", "$dir": "desc"}])
        assert s["crews"] == [c for c in every if c["rank"] >= 1][1:3]
        assert s["gates"] == reference(linked, "slots", "gates", key, [{"$key": "$x.gate"}])[:1]
    assert any(s["crews"] for s in loaded) and any(s["gates"] for s in loaded)
    assert any(s["day"] == "d\x01" and s["crews"] for s in loaded)
    for c in nested:
        want = reference(
            linked, "crews", "slots", c["name"], [{"$key": "$x.n", "$dir": "desc"}], link="shift"
        )
        assert c["slots"] == [
            {**s, "gates": len(reference(linked, "slots", "gates", (s["day"], s["n"])))} for s in want[:3]
        ]
    assert any(s["gates"] for c in nested for s in c["slots"])


def test_explain_load_names_the_members_and_the_index(linked: Any, open_store: Any) -> None:
    ex = linked["slots"].explain_load({"include": {"crews": True}})
    assert ex.statements == 1 and ex.suggested_indexes == []
    assert ex.includes[0]["via"] == "shifts/day, /n and /crew"
    ex = linked["crews"].explain_load({"include": {"slots": True}})
    assert ex.includes[0]["via"] == "shifts/crew and /day, /n"
    if linked.backend.name == "sqlite":  # the links are found member by member, through the index
        ex = linked["slots"].explain_load({"include": {"gates": True}})
        details = " ".join(step["detail"] for step in ex.engine_plan)
        assert "USING INDEX assignments_by_slot (gx_day=? AND gx_n=?)" in details, details
    bare = model()
    bare["collections"]["shifts"]["indexes"] = []
    ex = open_store(bare, name="bare")["slots"].explain_load({"include": {"crews": True}})
    assert ex.suggested_indexes == [
        {"collection": "shifts", "index": {"name": "by_day_n", "path": ["$.day", "$.n"]}}
    ]


# -- migrations ---------------------------------------------------------------------------------


def test_migrations_check_add_and_drop_such_a_relation(open_store: Any) -> None:
    plain = model()
    for rels in ("slots", "crews", "gates"):
        del plain["collections"][rels]["relations"]
    plain["version"] = 1
    store = open_store(plain)
    store["slots"].insert_many([{"day": "d", "n": n} for n in (0, 1)])
    store["gates"].insert_many([{"airport": "JFK", "gate": g} for g in ("A1", "B2")])
    store["assignments"].insert_many(
        [
            {"day": "d", "n": 0, "airport": "JFK", "gate": "A1"},
            {"day": "d", "n": 2, "airport": "JFK", "gate": "A1"},  # no such slot
            {"day": "d", "n": 0, "airport": "JFK", "gate": "A1"},  # the same pair again
            {"day": "d", "n": 1, "airport": "EWR", "gate": "B2"},  # no such gate
        ]
    )
    related = copy.deepcopy(plain)
    related["version"] = 2
    related["collections"]["slots"]["relations"] = {
        "gates": {"to": "gates", "through": ASSIGNMENTS, "on_delete": "cascade"}
    }
    plan = store.migrate(related, dry_run=True)
    step = plan.steps[0]
    assert (step.kind, step.collection, step.how) == ("add relation", "slots", "check")
    assert "through assignments ([/day, /n], [/airport, /gate]), on_delete cascade" in step.detail
    assert plan.violations[["key", "pointer"]].to_dict("records") == [
        {"key": 2, "pointer": "/day"},
        {"key": 3, "pointer": ""},
        {"key": 4, "pointer": "/airport"},
    ]
    assert "slots ('d', 2), which does not exist" in plan.violations["message"][0]
    with pytest.raises(MigrationError) as err:
        store.migrate(related, progress=False)
    assert (err.value.code, err.value.key) == ("JD0023", 2)
    for key in (2, 3, 4):
        store["assignments"].delete(key)
    store.migrate(related, progress=False)
    assert store["gates"].delete(("JFK", "A1")) and store["assignments"].count() == 0
    gates = store["slots"].relation("gates")
    gates.link(("d", 1), ("JFK", "B2"))
    assert store["slots"].load({"include": {"gates": True}})[1]["gates"] == [{"airport": "JFK", "gate": "B2"}]
    dropped = copy.deepcopy(plain)
    dropped["version"] = 3
    plan = store.migrate(dropped, dry_run=True)
    assert (plan.steps[0].kind, plan.steps[0].how) == ("drop relation", "record")
    store.migrate(dropped, progress=False)
    assert store["slots"].delete(("d", 1)) and store["assignments"].count() == 1  # kept, unchecked


# -- real processes -----------------------------------------------------------------------------


@pytest.mark.slow
def test_processes_linking_composite_keys_while_ends_are_deleted(open_store: Any, tmp_path: Any) -> None:
    """Two processes link the same 30 (slot, crew) pairs in different orders, one through each
    side's handle, while a third deletes three slots (on_delete cascade): each pair ends up linked
    once, and no link names a deleted slot."""
    store = open_store(model(), "race")
    _, _, _, _, slots, crews = SHAPES["composite"]
    store["slots"].insert_many([{"day": d, "n": n} for d, n in slots])
    store["crews"].insert_many([{"name": c} for c in crews])
    reports = race(open_store.target("race"), tmp_path / "go", "composite")
    assert reports[2]["deleted"] == 3
    pairs = [((d["day"], d["n"]), d["crew"]) for d in store["shifts"].to_list()]
    assert len(pairs) == len(set(pairs))
    assert set(pairs) == {(s, c) for s in slots[3:] for c in crews}
    assert all(r["linked"] + r["missing"] == 30 for r in reports[:2])
