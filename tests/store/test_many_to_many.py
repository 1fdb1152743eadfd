"""Many-to-many relations through a join collection, on SQLite and PostgreSQL: the declaration is
checked with the model, ``link``/``unlink`` write join documents inside the caller's transaction,
``on_delete`` cascades or restricts from either end, and graph loads read them in ONE statement,
checked against the store-level query the reference engine answers."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from jarenlab.errors import JarenlabError, ModelError, StoreError
from jarenlab.model import load_model
from tests.store.links_child import race

_STR = {"type": "string"}
THROUGH = {"collection": "enrollments", "from": "/student", "to": "/course"}
MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "students": {
            "schema": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": _STR, "year": {"type": "integer"}},
            },
            "key": "/name",
            "relations": {"courses": {"to": "courses", "through": THROUGH, "on_delete": "cascade"}},
        },
        "courses": {
            "schema": {
                "type": "object",
                "required": ["code"],
                "properties": {"code": _STR, "title": _STR, "credits": {"type": "integer"}, "teacher": _STR},
            },
            "key": "/code",
            "relations": {
                "students": {
                    "to": "students",
                    "through": {"collection": "enrollments", "from": "/course", "to": "/student"},
                },
                "teacher": {"to": "teachers", "via": "/teacher"},
            },
        },
        "teachers": {
            "schema": {"type": "object", "required": ["name"], "properties": {"name": _STR}},
            "key": "/name",
        },
        "enrollments": {
            "schema": {
                "type": "object",
                "required": ["student", "course"],
                "properties": {"student": _STR, "course": _STR, "grade": _STR},
            },
            "key": None,
            "identity": "integer",
            "indexes": [
                {"name": "by_student", "path": "$.student"},
                {"name": "by_course", "path": "$.course"},
            ],
        },
    },
}


def model() -> dict[str, Any]:
    return copy.deepcopy(MODEL)


def refused(doc: dict[str, Any]) -> ModelError:
    with pytest.raises(ModelError) as err:
        load_model(doc)
    return err.value


def test_the_declaration_is_checked_with_the_model() -> None:
    rel = load_model(model()).relations["students"]["courses"]
    assert (rel.through, rel.member, rel.other, rel.to, rel.many) == (
        "enrollments",
        "student",
        "course",
        "courses",
        True,
    )
    assert rel.references == (("enrollments", "student", "students"), ("enrollments", "course", "courses"))

    def bad(change: Any) -> ModelError:
        m = model()
        change(m["collections"]["students"]["relations"]["courses"])
        return refused(m)

    err = bad(lambda r: r["through"].update(collection="signups"))
    assert (err.code, err.doc_path) == (
        "JD0070",
        "/collections/students/relations/courses/through/collection",
    )
    err = bad(lambda r: r["through"].update({"from": "/grade2"}))
    assert err.code == "JD0030" and err.doc_path.endswith("/through/from")
    err = bad(lambda r: r["through"].update({"to": "/student"}))
    assert err.code == "JD0030" and "two members" in err.reason
    err = bad(lambda r: r["through"].pop("to"))
    assert err.code == "JD0030" and err.doc_path.endswith("/through")
    err = bad(lambda r: r.update(on_delete="set_null"))
    assert err.code == "JD0030" and "whole" in err.reason
    err = bad(lambda r: r.update(many=True))
    assert err.code == "JD0030" and err.doc_path.endswith("/many")
    err = bad(lambda r: r["through"].update(collection="students"))
    assert err.code == "JD0030" and "third" in err.reason

    typed = model()
    typed["collections"]["enrollments"]["schema"]["properties"]["course"] = {"type": "integer"}
    err = refused(typed)
    assert err.code == "JD0071" and err.doc_path.endswith("/through/to") and "string" in err.reason

    disagree = model()
    disagree["collections"]["courses"]["relations"]["students"]["on_delete"] = "restrict"
    err = refused(disagree)
    assert err.code == "JD0031" and "cascade" in err.reason

    twice = model()
    twice["collections"]["students"]["relations"]["classes"] = {"to": "courses", "through": THROUGH}
    assert refused(twice).code == "JD0031"


def test_a_collection_linked_to_itself_declares_both_directions() -> None:
    m = {
        "$model": "0.1",
        "collections": {
            "users": {
                "schema": {"type": "object", "required": ["id"], "properties": {"id": _STR}},
                "key": "/id",
                "relations": {
                    "following": {
                        "to": "users",
                        "through": {"collection": "follows", "from": "/a", "to": "/b"},
                    },
                    "followers": {
                        "to": "users",
                        "through": {"collection": "follows", "from": "/b", "to": "/a"},
                    },
                },
            },
            "follows": {
                "schema": {"type": "object", "properties": {"a": _STR, "b": _STR}},
                "key": None,
                "identity": "integer",
            },
        },
    }
    rels = load_model(m).relations["users"]
    assert rels["following"].references == tuple(reversed(rels["followers"].references))


@pytest.fixture
def store(open_store: Any) -> Any:
    s = open_store(model())
    s["teachers"].insert_many([{"name": "Noether"}, {"name": "Turing"}])
    s["students"].insert_many(
        [{"name": n, "year": 1 + i % 3} for i, n in enumerate(["ada", "bo", "cy", "di"])]
    )
    s["courses"].insert_many(
        [
            {"code": "alg", "title": "Algebra", "credits": 6, "teacher": "Noether"},
            {"code": "cmp", "title": "Computing", "credits": 6, "teacher": "Turing"},
            {"code": "art", "title": "Art", "credits": 3, "teacher": "Nobody"},
        ]
    )
    return s


def test_link_writes_one_join_document_and_is_idempotent(store: Any) -> None:
    courses = store["students"].relation("courses")
    key = courses.link("ada", "alg", grade="A")
    assert store["enrollments"].get(key) == {"student": "ada", "course": "alg", "grade": "A"}
    assert courses.link("ada", "alg") == key and courses.link("ada", "alg", grade="A") == key
    assert store["enrollments"].count() == 1
    with pytest.raises(StoreError) as err:
        courses.link("ada", "alg", grade="B")
    assert (err.value.code, err.value.key, err.value.collection) == ("JD2192", key, "enrollments")
    with pytest.raises(StoreError) as err:
        courses.link("ada", "cmp", course="art")
    assert err.value.code == "JD2192"
    assert courses.of("ada") == [{"student": "ada", "course": "alg", "grade": "A"}]
    # the inverse handle writes the same join documents, its own end first
    students = store["courses"].relation("students")
    assert students.link("alg", "ada") == key
    students.link("alg", "bo")
    assert [d["student"] for d in students.of("alg")] == ["ada", "bo"]
    assert list(courses.to_pandas().columns[:2]) == ["student", "course"]
    assert "through <code>enrollments</code>" in courses._repr_html_() and "2 links" in courses._repr_html_()


def test_linking_a_missing_document_is_coded_and_writes_nothing(store: Any) -> None:
    courses = store["students"].relation("courses")
    for args, missing in ((("zed", "alg"), ("students", "zed")), (("ada", "bio"), ("courses", "bio"))):
        with pytest.raises(StoreError) as err:
            courses.link(*args)
        assert (err.value.code, err.value.collection, err.value.key) == ("JD2190", *missing)
    assert store["enrollments"].count() == 0
    with pytest.raises(StoreError) as err:
        store["courses"].relation("teacher")
    assert err.value.code == "JD2193" and "students" in err.value.reason


def test_links_commit_and_roll_back_with_the_callers_transaction(store: Any) -> None:
    courses = store["students"].relation("courses")
    with pytest.raises(RuntimeError), store.transaction():
        store["students"].insert({"name": "eve"})
        courses.link("eve", "alg")
        assert courses.of("eve") != []
        raise RuntimeError("changed my mind")
    assert store["students"].get("eve") is None and store["enrollments"].count() == 0
    with store.transaction():
        store["courses"].insert({"code": "bio", "title": "Biology"})
        courses.link("di", "bio", grade="C")
    assert courses.of("di") == [{"student": "di", "course": "bio", "grade": "C"}]
    # a failed link inside a transaction leaves the transaction's other writes usable
    with store.transaction():
        courses.link("di", "alg")
        with pytest.raises(StoreError):
            courses.link("di", "nope")
    assert [d["course"] for d in courses.of("di")] == ["bio", "alg"]


def test_unlink_removes_the_pair_only(store: Any) -> None:
    courses = store["students"].relation("courses")
    courses.link("ada", "alg")
    courses.link("ada", "cmp")
    courses.link("bo", "alg")
    assert courses.unlink("ada", "alg") == 1 and courses.unlink("ada", "alg") == 0
    assert [(d["student"], d["course"]) for d in courses.to_pandas().to_dict("records")] == [
        ("ada", "cmp"),
        ("bo", "alg"),
    ]


def test_deleting_either_end_cascades_to_its_join_documents(store: Any) -> None:
    courses = store["students"].relation("courses")
    for s, c in [("ada", "alg"), ("ada", "cmp"), ("bo", "alg"), ("cy", "cmp")]:
        courses.link(s, c)
    assert store["students"].delete("ada")
    assert sorted((d["student"], d["course"]) for d in store["enrollments"].to_list()) == [
        ("bo", "alg"),
        ("cy", "cmp"),
    ]
    assert store["courses"].delete("alg")
    assert [(d["student"], d["course"]) for d in store["enrollments"].to_list()] == [("cy", "cmp")]
    with pytest.raises(RuntimeError), store.transaction():
        store["courses"].delete("cmp")
        assert store["enrollments"].count() == 0
        raise RuntimeError
    assert store["enrollments"].count() == 1


def test_restrict_refuses_deleting_a_linked_end_from_either_side(open_store: Any) -> None:
    m = model()
    m["collections"]["students"]["relations"]["courses"]["on_delete"] = "restrict"
    store = open_store(m)
    store["students"].insert_many([{"name": "ada"}, {"name": "bo"}])
    store["courses"].insert_many([{"code": "alg"}, {"code": "cmp"}])
    key = store["students"].relation("courses").link("ada", "alg")
    for collection, k in (("students", "ada"), ("courses", "alg")):
        with pytest.raises(JarenlabError) as err:
            store[collection].delete(k)
        assert (err.value.code, err.value.collection, err.value.key) == ("JD2191", collection, k)
        assert f"enrollments {key!r}" in err.value.reason and store[collection].get(k) is not None
    assert store["students"].delete("bo") and store["courses"].delete("cmp")
    store["students"].relation("courses").unlink("ada", "alg")
    assert store["students"].delete("ada")


# -- graph loads --------------------------------------------------------------------------------


@pytest.fixture
def linked(store: Any) -> Any:
    """Seeded links, plus join documents written directly: one to a missing course, one twice."""
    rng = random.Random(7)
    courses = store["students"].relation("courses")
    names = [f"s{i:02}" for i in range(24)]
    store["students"].insert_many([{"name": n, "year": rng.randint(1, 4)} for n in names])
    codes = [f"c{i:02}" for i in range(9)]
    store["courses"].insert_many(
        [
            {"code": c, "title": rng.choice(["Logic", "Optics", "Music"]), "credits": rng.randint(1, 8)}
            for c in codes
        ]
    )
    pairs = {(rng.choice(names), rng.choice(codes)) for _ in range(110)}
    for s, c in sorted(pairs, key=lambda _: rng.random()):
        courses.link(s, c, grade=rng.choice("ABC"))
    store["enrollments"].insert_many(
        [
            {"student": "s01", "course": "gone"},
            {"student": "s02", "course": "c03"},
            {"student": "s02", "course": "c03"},
        ]
    )
    return store


def reference(
    store: Any, side: str, key: Any, order: list[Any] | None = None, *, link: str | None = None
) -> list[Any]:
    """The linked documents of one end by the store-level query, in the reference engine (each
    with its join document in the member ``link`` when it is given)."""
    rel = store.model.relations[side][{"students": "courses", "courses": "students"}[side]]
    to_key = store.model.collections[rel.to].key[1:]
    document: dict[str, Any] = {
        "$for": {"e": f"$.{rel.holder}[*]", "x": f"$.{rel.to}[*]"},
        "$where": {
            "$and": [{"$eq": [f"$e.{rel.member}", "$k"]}, {"$eq": [f"$e.{rel.other}", f"$x.{to_key}"]}]
        },
        "$return": {"x": "$x", "e": "$e"},
    }
    if order:
        document["$orderby"] = order
    pairs = store.execute([document], {"k": key}, pushdown=False)
    return [{**p["x"], link: p["e"]} if link else p["x"] for p in pairs]


def test_a_many_to_many_load_equals_the_reference_in_one_statement(
    linked: Any, statements: list[str]
) -> None:
    trace: list[str] = []
    if linked.backend.name == "sqlite":
        linked.db.connection().set_trace_callback(trace.append)
    loaded = linked["students"].load(
        {"order_by": "$it.name", "include": {"courses": {"link": "enrollment", "include": {"teacher": True}}}}
    )
    if linked.backend.name == "sqlite":
        linked.db.connection().set_trace_callback(None)
        assert len(trace) == 1, trace
    assert len(statements) == 1
    teachers = {t["name"]: t for t in linked["teachers"].to_list()}
    expected = [
        {
            **s,
            "courses": [
                {**c, "teacher": teachers.get(c.get("teacher"))}
                for c in reference(linked, "students", s["name"], link="enrollment")
            ],
        }
        for s in sorted(linked["students"].to_list(), key=lambda s: s["name"])
    ]
    assert loaded == expected
    by_name = {s["name"]: s for s in loaded}
    assert [c["code"] for c in by_name["s02"]["courses"]].count("c03") >= 2  # linked twice: twice
    assert sum(len(s["courses"]) for s in loaded) >= 80


def test_ordered_windows_counts_and_the_inverse_side(linked: Any, statements: list[str]) -> None:
    spec = {
        "order_by": "$it.code",
        "include": {
            "students": {
                "where": {"$ge": ["$it.year", 2]},
                "order_by": [{"$key": "$it.year", "$dir": "desc"}],
                "skip": 1,
                "take": 3,
            }
        },
    }
    loaded = linked["courses"].load(spec)
    counts = linked["courses"].load({"order_by": "$it.code", "include": {"students": {"count": True}}})
    assert len(statements) == 2
    order = [{"$key": "$x.year", "$dir": "desc"}]
    for course, counted in zip(loaded, counts):
        every = reference(linked, "courses", course["code"], order)
        assert course["students"] == [s for s in every if s["year"] >= 2][1:4]
        assert counted["students"] == len(reference(linked, "courses", course["code"]))
    by_credits = linked["students"].load(
        {"include": {"courses": {"order_by": [{"$key": "$it.credits"}, "$it.code"], "take": 2, "link": "e"}}}
    )
    for s in by_credits:
        order = [{"$key": "$x.credits"}, {"$key": "$x.code"}]
        assert s["courses"] == reference(linked, "students", s["name"], order, link="e")[:2]
    for bad in ({"students": {"link": "e", "count": True}}, {"students": {"link": 3}}):
        with pytest.raises(JarenlabError) as err:
            linked["courses"].load({"include": bad})
        assert err.value.code == "JD0032" and "link" in err.value.reason
    with pytest.raises(JarenlabError) as err:
        linked["courses"].load({"include": {"teacher": {"link": "e"}}})
    assert err.value.code == "JD0032"


def test_explain_load_names_the_join_collection_and_its_index(linked: Any, open_store: Any) -> None:
    ex = linked["students"].explain_load({"include": {"courses": True}})
    inc = ex.includes[0]
    assert inc["kind"].startswith("many-to-many (through enrollments")
    assert inc["via"] == "enrollments/student and /course"
    assert ex.statements == 1 and ex.suggested_indexes == []
    bare = model()
    bare["collections"]["enrollments"]["indexes"] = []
    ex = open_store(bare, name="bare")["courses"].explain_load({"include": {"students": True}})
    assert ex.suggested_indexes == [
        {"collection": "enrollments", "index": {"name": "by_course", "path": "$.course"}}
    ]


# -- real processes -----------------------------------------------------------------------------


@pytest.mark.slow
def test_processes_linking_the_same_pairs_while_ends_are_deleted(open_store: Any, tmp_path: Any) -> None:
    """Two processes link the same 30 pairs in different orders while a third deletes three
    students: each pair ends up linked once, and no link names a deleted student."""
    store = open_store(model(), "race")
    store["students"].insert_many([{"name": f"s{i}"} for i in range(6)])
    store["courses"].insert_many([{"code": f"c{i}"} for i in range(5)])
    reports = race(open_store.target("race"), tmp_path / "go", "single")
    assert reports[2]["deleted"] == 3
    pairs = [(d["student"], d["course"]) for d in store["enrollments"].to_list()]
    assert len(pairs) == len(set(pairs))
    assert set(pairs) == {(f"s{i}", f"c{j}") for i in range(3, 6) for j in range(5)}
    assert all(r["linked"] + r["missing"] == 30 for r in reports[:2])
