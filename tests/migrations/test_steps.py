"""Every kind of migration step, applied and undone, on both backends."""

from __future__ import annotations

from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import MigrationError
from tests.migrations.conftest import BASE, NOTES, evolve


def kinds(migration: Any) -> list[tuple[str, str | None]]:
    return [(s.kind, s.collection) for s in migration.steps]


def with_index(name: str, path: Any, **extra: Any) -> dict[str, Any]:
    return evolve(
        BASE, lambda m: m["collections"]["notes"]["indexes"].append({"name": name, "path": path, **extra})
    )


def test_adding_an_index_is_seen_by_explain_stats_and_a_reopen(store: Any, open_store: Any) -> None:
    new = with_index("by_n", "$.n")
    plan = store.migrate(new, dry_run=True)
    assert kinds(plan) == [("add index", "notes")] and not plan.applied and plan.steps[0].documents == 10
    assert store.model.hash != jl.open  # the dry run changed nothing:
    assert [ix.name for ix in store["notes"].spec.indexes] == ["by_tag"]
    done = store.migrate(new, progress=False)
    assert done.applied and done.documents == 0
    assert [ix.name for ix in store["notes"].spec.indexes] == ["by_tag", "by_n"]
    explained = store["notes"].where(jl.it.n > 5).explain()
    assert any("by_n" in ix for ix in explained.indexes)
    assert "notes_by_n" in store.stats().to_frame().to_string()
    assert store["notes"].where(jl.it.n > 7).to_list() == NOTES[8:]
    store.close()
    again = open_store.reopen(store, new)  # the shape verifies against the new model
    assert again["notes"].count() == 10


def test_dropping_and_changing_indexes(store: Any, open_store: Any) -> None:
    new = evolve(
        BASE,
        lambda m: m["collections"]["notes"].update(
            indexes=[
                {"name": "by_tag", "path": ["$.tag", "$.n"]},
                {"name": "by_n", "path": "$.n", "unique": True},
            ]
        ),
    )
    done = store.migrate(new, progress=False)
    assert kinds(done) == [("change index", "notes"), ("add index", "notes")]
    back = store.migrate(evolve(BASE, lambda m: m["collections"]["notes"].update(indexes=[])), progress=False)
    assert kinds(back) == [("drop index", "notes"), ("drop index", "notes")]
    store.close()
    assert open_store.reopen(store)["notes"].count() == 10


def _index_definition(store: Any, name: str) -> str:
    """The database's own text of an index (SQLite's sqlite_master, PostgreSQL's pg_indexes)."""
    if store.backend.name == "sqlite":
        import sqlite3

        with sqlite3.connect(store.path) as conn:
            return str(conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0])
    conn = store.db.connection()
    row = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE indexname = %s AND schemaname = %s",
        (name, store.backend.schema),
    ).fetchone()
    return str(row[0])


def test_changing_an_index_direction_remakes_it(store: Any, open_store: Any) -> None:
    """An index whose path turns descending is a changed index: made again with the column DESC, and
    a query ordered that way reads its order from it (SQLite: no sort left in the plan)."""

    def composite(direction: str) -> dict[str, Any]:
        entry = {"path": "$.n", "dir": direction}
        return evolve(
            BASE,
            lambda m: m["collections"]["notes"]["indexes"].append(
                {"name": "by_tag_n", "path": ["$.tag", entry]}
            ),
        )

    store.migrate(composite("asc"), progress=False)
    query = store["notes"].where(jl.it.tag == "even").order_by(jl.it.n.desc())
    assert "DESC" not in _index_definition(store, "notes_by_tag_n")
    sorted_before = [p["detail"] for p in query.explain().engine_plan if "TEMP B-TREE" in p["detail"]]
    plan = store.migrate(composite("desc"), dry_run=True)
    assert kinds(plan) == [("change index", "notes")]
    assert plan.steps[0].detail == "by_tag_n on $.tag, $.n -> by_tag_n on $.tag, $.n desc"
    store.migrate(composite("desc"), progress=False)
    assert "DESC" in _index_definition(store, "notes_by_tag_n")
    assert store["notes"].spec.indexes[1].descending == (False, True)
    assert [d["n"] for d in query.to_list()] == [8, 6, 4, 2, 0]
    if store.backend.name == "sqlite":
        assert sorted_before, "the ascending index leaves a sort (else the check below proves nothing)"
        details = [p["detail"] for p in query.explain().engine_plan]
        assert any("notes_by_tag_n" in d for d in details) and not any("TEMP B-TREE" in d for d in details)
    store.close()
    again = open_store.reopen(store, composite("desc"))  # the shape verifies against the new model
    assert kinds(again.migrate(composite("asc"), dry_run=True)) == [("change index", "notes")]


def test_a_unique_index_over_duplicates_is_refused_and_nothing_changes(store: Any) -> None:
    new = with_index("by_tag_u", "$.tag", unique=True)
    with pytest.raises(MigrationError) as info:
        store.migrate(new, progress=False)
    assert info.value.code == "JD0023" and "unique index" in info.value.reason
    assert info.value.__cause__.condition == "duplicate"
    assert [ix.name for ix in store["notes"].spec.indexes] == ["by_tag"]
    assert store.stored_hash() == store.model.hash
    store["notes"].insert({"id": "z", "tag": "even"})  # the store goes on under the old model


def test_adding_a_field_with_a_transform_rewrites_every_document(store: Any) -> None:
    new = evolve(
        BASE,
        lambda m: (
            m["collections"]["notes"]["schema"]["properties"].update(double={"type": "integer"}),
            m["collections"]["notes"]["schema"]["required"].append("double"),
        ),
    )
    plan = store.migrate(new, dry_run=True)
    assert len(plan.violations) == 10 and set(plan.violations["collection"]) == {"notes"}
    assert list(plan.violations.columns) == ["collection", "key", "pointer", "message"]
    with pytest.raises(MigrationError) as info:
        store.migrate(new, progress=False)
    assert info.value.code == "JD0021" and len(info.value.violations) == 10

    def double(doc: dict[str, Any]) -> dict[str, Any]:
        return {**doc, "double": doc["n"] * 2}

    plan = store.migrate(new, transforms={"notes": double}, dry_run=True)
    assert plan.violations.empty and store["notes"].get("n3") == NOTES[3]
    done = store.migrate(new, transforms={"notes": double}, progress=False)
    assert done.documents == 10 and ("transform", "notes") in kinds(done)
    assert store["notes"].get("n3") == {**NOTES[3], "double": 6}
    with pytest.raises(jl.ValidationError):
        store["notes"].insert({"id": "x"})  # handles already taken validate against the new schema


def test_a_transform_may_delete_and_its_output_is_validated(store: Any) -> None:
    done = store.migrate(BASE, transforms={"notes": lambda d: None if d["n"] < 5 else d}, progress=False)
    assert done.documents == 5 and store["notes"].count() == 5
    with pytest.raises(MigrationError) as info:
        store.migrate(BASE, transforms={"notes": lambda d: {**d, "n": "text"}}, progress=False)
    assert info.value.code == "JD0023" and info.value.key == "n5"
    assert set(info.value.violations["pointer"]) == {"/n"}
    assert store["notes"].count() == 5


def test_a_transform_that_raises_rolls_everything_back(store: Any) -> None:
    new = with_index("by_n", "$.n")

    def boom(doc: dict[str, Any]) -> dict[str, Any]:
        if doc["id"] == "n7":
            raise ValueError("bad row")
        return {**doc, "n": doc["n"] + 100}

    with pytest.raises(MigrationError) as info:
        store.migrate(new, transforms={"notes": boom}, progress=False)
    err = info.value
    assert (err.code, err.collection, err.key) == ("JD0023", "notes", "n7")
    assert isinstance(err.__cause__, ValueError) and "bad row" in err.reason
    assert store["notes"].to_list() == NOTES  # the first pages' rewrites are gone too
    assert store.migrations().empty and [ix.name for ix in store["notes"].spec.indexes] == ["by_tag"]


def test_a_transform_must_return_a_document_under_the_same_key(store: Any) -> None:
    with pytest.raises(MigrationError) as info:
        store.migrate(BASE, transforms={"notes": lambda d: {**d, "id": d["id"] + "x"}}, progress=False)
    assert info.value.code == "JD0024" and "changed the key" in info.value.reason
    with pytest.raises(MigrationError) as info:
        store.migrate(BASE, transforms={"notes": lambda d: [d]}, progress=False)
    assert info.value.code == "JD0024"
    assert store["notes"].to_list() == NOTES


def test_tightening_a_schema_lists_the_violations(store: Any) -> None:
    new = evolve(BASE, lambda m: m["collections"]["notes"]["schema"]["properties"]["n"].update(maximum=6))
    plan = store.migrate(new, dry_run=True)
    assert sorted(plan.violations["key"]) == ["n7", "n8", "n9"]
    assert set(plan.violations["pointer"]) == {"/n"} and "schema" in plan.to_frame()["kind"].tolist()
    assert "violations" in plan._repr_html_()
    fixed = store.migrate(new, transforms={"notes": lambda d: {**d, "n": min(d["n"], 6)}}, progress=False)
    assert fixed.documents == 3


def test_a_schema_change_of_an_indexed_member_retypes_its_column(store: Any, open_store: Any) -> None:
    new = evolve(
        BASE, lambda m: m["collections"]["notes"]["schema"]["properties"].update(tag={"type": "integer"})
    )
    done = store.migrate(new, transforms={"notes": lambda d: {**d, "tag": d["n"] % 2}}, progress=False)
    assert ("change index", "notes") in kinds(done)
    assert [d["id"] for d in store["notes"].where(jl.it.tag == 1).to_list()] == [
        f"n{i}" for i in range(1, 10, 2)
    ]
    store.close()
    assert open_store.reopen(store)["notes"].count() == 10


def test_collections_added_renamed_and_dropped(store: Any, open_store: Any) -> None:
    def change(m: dict[str, Any]) -> None:
        m["collections"]["memos"] = m["collections"].pop("notes")
        m["collections"]["tags"] = {
            "key": "/t",
            "schema": {"type": "object", "required": ["t"], "properties": {"t": {"type": "string"}}},
        }

    new = evolve(BASE, change)
    with pytest.raises(MigrationError) as info:
        store.migrate(new, progress=False)
    assert info.value.code == "JD0061" and "10 documents" in info.value.reason
    done = store.migrate(new, renames={"notes": "memos"}, progress=False)
    assert kinds(done) == [("rename collection", "memos"), ("add collection", "tags")]
    assert "notes" not in store and store["memos"].get("n1") == NOTES[1]
    assert store["memos"].where(jl.it.tag == "odd").count() == 5
    store["tags"].insert({"t": "x"})
    dropped = store.migrate(
        evolve(new, lambda m: m["collections"].pop("counts")), drop=["counts"], progress=False
    )
    assert kinds(dropped) == [("drop collection", "counts")] and dropped.steps[0].documents == 3
    assert "counts" not in store
    store.close()
    again = open_store.reopen(store)
    assert sorted(again.collections) == ["memos", "tags"] and again["memos"].count() == 10


def test_renaming_back_and_forth_keeps_the_documents(store: Any) -> None:
    def rename(a: str, b: str) -> dict[str, Any]:
        return (
            evolve(BASE, lambda m: m["collections"].__setitem__(b, m["collections"].pop(a)))
            if a == "notes"
            else BASE
        )

    store.migrate(rename("notes", "memos"), renames={"notes": "memos"}, progress=False)
    store.migrate(BASE, renames={"memos": "notes"}, progress=False)
    assert store["notes"].to_list() == NOTES and len(store.migrations()) == 2


def test_refusals_name_what_is_wrong(store: Any) -> None:
    cases = [
        (dict(renames={"nope": "memos"}), "JD0062"),
        (dict(transforms={"nope": lambda d: d}), "JD0062"),
        (dict(transforms={"notes": 3}), "JD0062"),
        (dict(drop=["notes"]), "JD0062"),
        (dict(drop="counts"), "JD0062"),
    ]
    for options, code in cases:
        with pytest.raises(MigrationError) as info:
            store.migrate(BASE, progress=False, **options)
        assert info.value.code == code, options
    keyed = evolve(BASE, lambda m: m["collections"]["notes"].update(key=None, identity="uuid"))
    with pytest.raises(MigrationError) as info:
        store.migrate(keyed, progress=False)
    assert info.value.code == "JD0060" and info.value.doc_path == "/collections/notes/key"
    with pytest.raises(jl.ModelError) as model_err:
        store.migrate({"$model": "0.1", "collections": {}}, progress=False)
    assert model_err.value.code == "JD0005"
    with store.transaction(), pytest.raises(MigrationError) as info:
        store.migrate(with_index("by_n", "$.n"), progress=False)
    assert info.value.code == "JD2112"
    with pytest.raises(jl.StoreError) as opt:
        store.migrate(BASE, dry_run="yes")
    assert opt.value.code == "JD0006"
    assert store.migrations().empty


def test_nothing_to_do_records_nothing(store: Any) -> None:
    done = store.migrate(BASE, progress=False)
    assert not done.applied and done.steps == [] and done.state == "nothing to do"
    assert store.migrations().empty


def test_versions_are_recorded_and_a_downgrade_is_refused(store: Any, open_store: Any) -> None:
    v2 = evolve(with_index("by_n", "$.n"), lambda m: m.update(version=2))
    done = store.migrate(v2, progress=False)
    assert ("version", None) in kinds(done)
    history = store.migrations()
    assert history[["from_version", "to_version"]].iloc[0].tolist() == [None, 2] or (
        history["from_version"].isna().iloc[0] and history["to_version"].iloc[0] == 2
    )
    assert history["from_hash"].iloc[0] == done.from_hash[:12] and history["documents"].iloc[0] == 0
    for older in (evolve(v2, lambda m: m.update(version=1)), BASE):
        with pytest.raises(jl.ModelError) as info:
            store.migrate(older, progress=False)
        assert info.value.code == "JD0022"
    with pytest.raises(jl.ModelError) as info:
        store.migrate(evolve(v2, lambda m: m["collections"]["notes"]["indexes"].pop()), progress=False)
    assert info.value.code == "JD0022" and "higher" in info.value.reason
    store.close()
    with pytest.raises(jl.ModelError) as info:
        open_store.reopen(store, evolve(v2, lambda m: m.update(version=1)))
    assert info.value.code == "JD0022" and "downgrade" in info.value.reason
    assert open_store.reopen(store, v2).model.version == 2


def test_open_with_another_model_names_the_difference_and_points_at_migrate(
    store: Any, open_store: Any
) -> None:
    store.close()
    with pytest.raises(jl.ModelError) as info:
        open_store.reopen(store, with_index("by_n", "$.n"))
    err = info.value
    assert err.code == "JD0002" and err.doc_path == "/collections/notes/indexes/1"
    assert "store.migrate(new_model)" in err.reason
    assert 'nothing stored, {"name":"by_n","path":"$.n"} given' in err.reason


def test_interval_declarations_are_checked_against_stored_records(open_store: Any) -> None:
    base = {
        "$model": "0.1",
        "collections": {
            "slots": {
                "key": "/id",
                "owner": "/owner",
                "schema": {
                    "type": "object",
                    "required": ["id", "owner", "start", "end"],
                    "properties": {
                        "id": {"type": "string"},
                        "owner": {"type": "string"},
                        "who": {"type": "string"},
                        "start": {"type": "integer"},
                        "end": {"type": "integer"},
                    },
                },
            }
        },
    }
    store = open_store(base)
    store["slots"].insert_many(
        [
            {"id": "a", "owner": "x", "start": 0, "end": 10},
            {"id": "b", "owner": "x", "start": 5, "end": 15},
            {"id": "c", "owner": "y", "start": 20, "end": 30},
        ]
    )
    new = evolve(
        base, lambda m: m["collections"]["slots"].update(intervals=[{"start": "/start", "end": "/end"}])
    )
    plan = store.migrate(new, dry_run=True)
    assert ("add interval", "slots") in kinds(plan) and len(plan.violations) == 1
    with pytest.raises(MigrationError) as info:
        store.migrate(new, progress=False)
    err = info.value
    assert err.code == "JD0023" and "'a'" in err.reason and "'b'" in err.reason
    assert err.__cause__.code == "JD2090"
    done = store.migrate(
        new, transforms={"slots": lambda d: {**d, "end": 5} if d["id"] == "a" else d}, progress=False
    )
    assert done.documents == 1
    with pytest.raises(jl.IntervalConflict):
        store["slots"].insert({"id": "d", "owner": "y", "start": 25, "end": 26})
    # the owner pointer changes: scope "owner" now keeps each owner's calendar apart
    per_owner = evolve(
        new,
        lambda m: m["collections"]["slots"].update(
            owner="/who", intervals=[{"start": "/start", "end": "/end", "scope": "owner"}]
        ),
    )
    per_owner["collections"]["slots"]["schema"]["required"].append("who")
    moved = store.migrate(per_owner, transforms={"slots": lambda d: {**d, "who": d["owner"]}}, progress=False)
    assert ("owner", "slots") in kinds(moved)
    store.as_owner("z")["slots"].insert({"id": "e", "owner": "q", "start": 0, "end": 100})
    assert store.as_owner("z")["slots"].count() == 1
    # dropping the declaration lets records overlap again
    free = evolve(per_owner, lambda m: m["collections"]["slots"].pop("intervals"))
    assert kinds(store.migrate(free, progress=False)) == [("drop interval", "slots")]
    store.as_owner("z")["slots"].insert({"id": "f", "owner": "q", "start": 50, "end": 60})
    assert store.as_owner("z")["slots"].count() == 2


def test_event_schemas_change_with_the_model(store: Any) -> None:
    new = evolve(BASE, lambda m: m.update(events={"noted": {"type": "object", "required": ["id"]}}))
    done = store.migrate(new, progress=False)
    assert kinds(done) == [("events", None)]
    store.events.emit("noted", {"id": "n1"})
    with pytest.raises(jl.EventError):
        store.events.emit("noted", {})


def test_live_queries_reseed_or_close_with_a_reason(store: Any) -> None:
    by_n = store["notes"].where(jl.it.n >= 0).order_by(jl.it.n.desc()).take(3).live()
    counts = store["counts"].where(jl.it.c > 1).live()
    closed: list[Any] = []
    counts.subscribe(lambda ops, seq: None, on_error=closed.append)
    assert [r["id"] for r in by_n.rows] == ["n9", "n8", "n7"]
    seen: list[Any] = []
    by_n.subscribe(lambda ops, seq: seen.append(ops))
    wider = evolve(BASE, lambda m: m["collections"]["notes"]["schema"]["properties"]["n"].update(minimum=-9))
    store.migrate(
        wider, transforms={"notes": lambda d: {**d, "n": -d["n"] if d["n"] > 7 else d["n"]}}, progress=False
    )
    assert [r["id"] for r in by_n.rows] == ["n7", "n6", "n5"] and seen and not by_n.closed
    renamed = evolve(wider, lambda m: m["collections"].__setitem__("tallies", m["collections"].pop("counts")))
    store.migrate(renamed, renames={"counts": "tallies"}, progress=False)
    assert counts.closed and counts.error.code == "JD2111" and closed == [counts.error]
    broken = store["tallies"].order_by(jl.it.c).live()
    broken.subscribe(lambda ops, seq: None, on_error=closed.append)
    mixed = evolve(renamed, lambda m: m["collections"]["tallies"]["schema"].update(required=["c"]))
    store.migrate(
        mixed, transforms={"tallies": lambda d: {**d, "c": "x"} if d["c"] == 2 else d}, progress=False
    )
    assert broken.closed and broken.error.code == "JD2111" and broken.error.__cause__.code == "JQ2005"


def test_jobs_and_events_are_untouched(store: Any) -> None:
    store.jobs.enqueue("k", {"a": 1}, id="j1")
    store.migrate(with_index("by_n", "$.n"), transforms={"notes": lambda d: d}, progress=False)
    assert store.jobs.get("j1")["payload"] == {"a": 1}


def test_another_store_on_the_same_database_adopts_the_migration(store: Any, open_store: Any) -> None:
    other = open_store.reopen(store)
    other["notes"].insert({"id": "early", "n": -5})  # its next commit would follow its own record
    other["notes"].delete("early")
    new = evolve(BASE, lambda m: m["collections"]["notes"]["schema"]["properties"]["n"].update(minimum=0))
    store.migrate(new, progress=False)
    with pytest.raises(jl.StoreError) as info:
        other["notes"].insert({"id": "late", "n": -1})  # valid under the old model only
    assert info.value.code == "JD2110" and info.value.retryable
    assert other.model.hash == store.model.hash
    with pytest.raises(jl.ValidationError):
        other["notes"].insert({"id": "late", "n": -1})
    other["notes"].insert({"id": "late", "n": 1})
    assert store["notes"].get("late") == {"id": "late", "n": 1}
    third = open_store.reopen(store)
    stale = open_store.reopen(store)
    third.migrate(evolve(new, lambda m: m.update(version=3)), progress=False)
    with pytest.raises(MigrationError) as plan_err:
        stale.migrate(with_index("by_n", "$.n"), progress=False)
    assert plan_err.value.code == "JD0020" and stale.model.version == 3


def test_a_typed_column_out_of_order_rebuilds_on_sqlite_only(store: Any, open_store: Any) -> None:
    store["notes"].delete("n3")
    store["notes"].insert({"id": "a-late", "n": 99})  # storage order: n0..n9 without n3, then a-late
    order = store["notes"].keys()
    new = evolve(
        BASE, lambda m: m["collections"]["notes"]["indexes"].insert(0, {"name": "by_n", "path": "$.n"})
    )
    done = store.migrate(new, progress=False)
    rebuilt = [s for s in done.steps if s.kind == "rebuild"]
    assert len(rebuilt) == (1 if store.backend.name == "sqlite" else 0)
    assert store["notes"].keys() == order and store["notes"].where(jl.it.n == 99).count() == 1
    store.close()
    again = open_store.reopen(store, new)
    assert again["notes"].keys() == order and again["notes"].where(jl.it.n > 8).explain().indexes


def test_the_plan_renders_and_converts(store: Any) -> None:
    plan = store.migrate(with_index("by_n", "$.n"), dry_run=True, progress=False)
    frame = plan.to_frame()
    assert frame.to_dict("records") == [
        {
            "kind": "add index",
            "collection": "notes",
            "detail": "by_n on $.n",
            "how": "in place",
            "documents": 10,
        }
    ]
    html = plan._repr_html_()
    assert "dry run" in html and "by_n on $.n" in html and plan.from_hash[:12] in html
    assert repr(plan) == "<jarenlab.Migration dry run: 1 step, 0 documents to rewrite, 0 violations>"
    assert plan.violations.empty and list(plan.violations.columns) == [
        "collection",
        "key",
        "pointer",
        "message",
    ]


def test_a_read_only_store_plans_but_does_not_migrate(store: Any, open_store: Any) -> None:
    reader = open_store.reopen(store, read_only=True)
    new = with_index("by_n", "$.n")
    assert [s.kind for s in reader.migrate(new, dry_run=True, progress=False).steps] == ["add index"]
    with pytest.raises(MigrationError) as info:
        reader.migrate(new, progress=False)
    assert info.value.code == "JD2112" and "read-only" in info.value.reason


@pytest.mark.parametrize("kind", ["integer", "date-time"])
def test_adding_an_interval_declaration_by_migrate_holds_on_clean_and_clashing_data(
    open_store: Any, kind: str
) -> None:
    """Integer and date-time bounds alike (on PostgreSQL a date-time declaration reads its bounds
    through ``jl_instant_ms``, which the check of stored records needs before the migration creates
    it; a dry run creates nothing): the dry run reports what the run does, clean data migrates and
    the store then refuses overlaps, clashing data is refused naming both records."""
    bound: dict[str, Any] = (
        {"type": "integer"} if kind == "integer" else {"type": "string", "format": "date-time"}
    )

    def at(hour: int) -> Any:
        return hour if kind == "integer" else f"2024-05-01T{hour:02d}:00:00Z"

    base = {
        "$model": "0.1",
        "collections": {
            "slots": {
                "key": "/id",
                "schema": {
                    "type": "object",
                    "required": ["id", "room", "start", "end"],
                    "properties": {
                        "id": {"type": "string"},
                        "room": {"type": "string"},
                        "start": bound,
                        "end": bound,
                    },
                },
            }
        },
    }
    store = open_store(base)
    slots = store["slots"]
    slots.insert_many(
        [
            {"id": "a", "room": "A", "start": at(8), "end": at(10)},
            {"id": "b", "room": "A", "start": at(10), "end": at(12)},  # touches a: allowed
            {"id": "c", "room": "B", "start": at(9), "end": at(11)},
        ]
    )
    new = evolve(
        base,
        lambda m: m["collections"]["slots"].update(
            intervals=[{"start": "/start", "end": "/end", "within": ["/room"]}]
        ),
    )
    plan = store.migrate(new, dry_run=True)
    assert ("add interval", "slots") in kinds(plan) and len(plan.violations) == 0
    store.migrate(new, progress=False)
    with pytest.raises(jl.IntervalConflict) as info:
        slots.insert({"id": "d", "room": "A", "start": at(9), "end": at(11)})
    assert info.value.conflict["key"] in ("a", "b")
    assert slots.count() == 3
    # clashing data: the dry run lists the clash and the run refuses it, naming both records
    free = evolve(new, lambda m: m["collections"]["slots"].pop("intervals"))
    store.migrate(free, progress=False)
    slots = store["slots"]
    slots.insert({"id": "e", "room": "B", "start": at(10), "end": at(13)})
    again = evolve(
        free, lambda m: m["collections"]["slots"].update(intervals=new["collections"]["slots"]["intervals"])
    )
    assert len(store.migrate(again, dry_run=True).violations) == 1
    with pytest.raises(MigrationError) as refused:
        store.migrate(again, progress=False)
    assert refused.value.code == "JD0023" and "'c'" in refused.value.reason and "'e'" in refused.value.reason


def test_a_rename_in_the_schema_alone_is_visible(open_store: Any) -> None:
    """Renaming a member in the schema without a transform leaves the stored member undeclared: the
    plan lists it with the documents that hold it, and a query of it warns (JQ0036)."""
    base = {
        "$model": "0.1",
        "collections": {
            "cars": {
                "key": None,
                "identity": "integer",
                "schema": {
                    "type": "object",
                    "properties": {"mpg": {"type": "number"}, "hp": {"type": "integer"}},
                },
            }
        },
    }
    store = open_store(base)
    store["cars"].insert_many(
        [{"mpg": 10.5, "hp": 1}, {"mpg": 35.0, "hp": 2}, {"hp": 3}, {"mpg": 41.0, "hp": 4}]
    )
    renamed = evolve(
        base,
        lambda m: m["collections"]["cars"]["schema"]["properties"].update(
            miles_per_gallon=m["collections"]["cars"]["schema"]["properties"].pop("mpg")
        ),
    )
    for plan in (store.migrate(renamed, dry_run=True), store.migrate(renamed, progress=False)):
        (step,) = [s for s in plan.steps if s.kind == "undeclared member"]
        assert step.collection == "cars" and step.documents == 3 and "'mpg'" in step.detail
        assert "transform" in step.detail
    with pytest.warns(jl.QueryWarning) as seen:
        assert store["cars"].where(jl.it.mpg > 30).count() == 2
    assert [w.message.code for w in seen] == ["JQ0036"]
