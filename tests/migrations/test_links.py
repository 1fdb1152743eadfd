"""Adding and removing a many-to-many relation by migration, on SQLite and PostgreSQL: the stored join
documents are checked (a dry run lists, an applied migration refuses), a transform can fix them in
the same migration, and the store enforces the new model's on_delete at once."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab.errors import MigrationError, StoreError
from tests.migrations.conftest import evolve

_STR = {"type": "string"}
PLAIN: dict[str, Any] = {
    "$model": "0.1",
    "version": 1,
    "collections": {
        "students": {
            "schema": {"type": "object", "required": ["name"], "properties": {"name": _STR}},
            "key": "/name",
        },
        "courses": {
            "schema": {"type": "object", "required": ["code"], "properties": {"code": _STR}},
            "key": "/code",
        },
        "enrollments": {
            "schema": {"type": "object", "properties": {"student": _STR, "course": _STR, "grade": _STR}},
            "key": None,
            "identity": "integer",
        },
    },
}
THROUGH = {"collection": "enrollments", "from": "/student", "to": "/course"}


def linked(version: int = 2, on_delete: str = "cascade") -> dict[str, Any]:
    def change(m: dict[str, Any]) -> None:
        m["version"] = version
        m["collections"]["students"]["relations"] = {
            "courses": {"to": "courses", "through": THROUGH, "on_delete": on_delete}
        }

    return evolve(PLAIN, change)


@pytest.fixture
def store(open_store: Any) -> Any:
    s = open_store(PLAIN)
    s["students"].insert_many([{"name": "ada"}, {"name": "bo"}])
    s["courses"].insert_many([{"code": "alg"}, {"code": "art"}])
    s["enrollments"].insert_many(
        [
            {"student": "ada", "course": "alg", "grade": "A"},
            {"student": "bo", "course": "bio"},  # no such course
            {"student": "ada", "course": "alg"},  # the same pair again
            {"student": "bo", "course": "art"},
        ]
    )
    return s


def test_adding_a_relation_checks_the_stored_join_documents(store: Any) -> None:
    plan = store.migrate(linked(), dry_run=True)
    assert [(s.kind, s.collection, s.how) for s in plan.steps] == [
        ("add relation", "students", "check"),
        ("version", None, "record"),
    ]
    found = plan.violations[["key", "pointer"]].to_dict("records")
    assert found == [{"key": 2, "pointer": "/course"}, {"key": 3, "pointer": ""}]
    assert "again" in plan.violations["message"][1]
    before = store.model.hash
    with pytest.raises(MigrationError) as err:
        store.migrate(linked(), progress=False)
    assert (err.value.code, err.value.collection, err.value.key) == ("JD0023", "enrollments", 2)
    assert "2 problems" in err.value.reason and len(err.value.errors) == 2
    assert store.model.hash == before and store["enrollments"].count() == 4
    with pytest.raises(StoreError) as refused:
        store["students"].relation("courses")
    assert refused.value.code == "JD2193"


def test_a_transform_fixes_them_and_on_delete_holds_at_once(store: Any, open_store: Any) -> None:
    seen: set[tuple[str, str]] = set()
    known = {"alg", "art"}

    def keep_good(doc: dict[str, Any]) -> dict[str, Any] | None:
        pair = (doc["student"], doc["course"])
        if doc["course"] not in known or pair in seen:
            return None
        seen.add(pair)
        return doc

    done = store.migrate(linked(), transforms={"enrollments": keep_good}, progress=False)
    assert done.applied and done.documents == 2 and len(done.violations) == 0
    courses = store["students"].relation("courses")
    assert courses.link("ada", "art") == 5
    assert [d["code"] for d in store["students"].load({"include": {"courses": True}})[0]["courses"]] == [
        "alg",
        "art",
    ]
    assert store["courses"].delete("alg")  # cascades: the new model's on_delete, in this process
    assert [(d["student"], d["course"]) for d in store["enrollments"].to_list()] == [
        ("bo", "art"),
        ("ada", "art"),
    ]
    store.close()
    again = open_store.reopen(store, linked())
    assert again["students"].delete("bo")
    assert again["enrollments"].count() == 1


def test_removing_a_relation_keeps_the_join_documents(open_store: Any) -> None:
    store = open_store(linked(on_delete="restrict"))
    store["students"].insert({"name": "ada"})
    store["courses"].insert({"code": "alg"})
    store["students"].relation("courses").link("ada", "alg")
    with pytest.raises(StoreError) as err:
        store["courses"].delete("alg")
    assert err.value.code == "JD2191"
    stricter = store.migrate(linked(3, "cascade"), progress=False)
    assert next((s.kind, s.how) for s in stricter.steps) == ("change relation", "record")
    assert "on_delete restrict -> " in stricter.steps[0].detail
    back = store.migrate(evolve(PLAIN, lambda m: m.update(version=4)), progress=False)
    assert next((s.kind, s.collection) for s in back.steps) == ("drop relation", "students")
    assert "stay in enrollments" in back.steps[0].detail
    assert store["courses"].delete("alg")  # nothing cascades or restricts now
    assert store["enrollments"].to_list() == [{"student": "ada", "course": "alg"}]
    assert next(s.kind for s in store.migrate(linked(5), dry_run=True).steps) == "add relation"
    assert len(store.migrate(linked(5), dry_run=True).violations) == 1
