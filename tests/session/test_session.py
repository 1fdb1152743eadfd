"""The unit of work on every backend: snapshots, staged writes, the minimal save, its order, its
versions, its report, and a save that fails leaving the session as it was."""

from __future__ import annotations

import copy
import gc
import pickle
import weakref
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.session import FrozenDict, FrozenList, Session
from tests.session.conftest import MODEL


@pytest.fixture
def store(open_store: Any) -> jl.Store:
    store = open_store(MODEL)
    store["airlines"].insert_many([{"code": "AA", "name": "American"}, {"code": "UA", "name": "United"}])
    store["flights"].insert_many(
        [{"id": i, "carrier": "AA", "delay": i, "route": {"from": "JFK", "to": "LAX"}} for i in range(5)]
    )
    return store


def code(info: pytest.ExceptionInfo[jl.JarenlabError]) -> str:
    return info.value.code


# -- snapshots -----------------------------------------------------------------------------------
def test_reads_are_frozen_plain_values(store: jl.Store) -> None:
    with store.session() as s:
        f = s.get("flights", 1)
        assert type(f) is FrozenDict and isinstance(f, dict) and f == store["flights"].get(1)
        assert type(f["route"]) is FrozenDict
        with pytest.raises(jl.StoreError) as info:
            f["delay"] = 5
        assert code(info) == "JD2042"
        for change in (lambda: f.update(delay=5), lambda: f.pop("delay"), lambda: f.clear()):
            with pytest.raises(jl.StoreError):
                change()
        tagged = s.put("flights", {**f, "tags": ["a"]})
        assert tagged == 1
        tags = s.get("flights", 1)["tags"]
        assert type(tags) is FrozenList
        with pytest.raises(jl.StoreError) as info:
            tags.append("b")
        assert code(info) == "JD2042"
        thawed = copy.deepcopy(f)
        thawed["route"]["to"] = "SFO"  # a deep copy is plain and mutable
        assert type(thawed) is dict and f["route"]["to"] == "LAX"
        assert pickle.loads(pickle.dumps(f)) == f
        s.discard("flights", 1)


def test_a_no_tracking_read_retains_nothing(store: jl.Store) -> None:
    with store.session() as s:
        doc = s.get("flights", 2, track=False)
        ref = weakref.ref(doc)
        assert s.tracked == 0
        del doc
        gc.collect()
        assert ref() is None
        kept = s.get("flights", 2)
        ref = weakref.ref(kept)
        del kept
        gc.collect()
        assert ref() is not None and s.tracked == 1
        assert len(s.all("flights", track=False)) == 5 and s.tracked == 1
        with pytest.raises(jl.StoreError) as info:
            s.get("flights", 2, track="no")  # type: ignore[arg-type]
        assert code(info) == "JD0006"


def test_a_clean_reread_refreshes_and_a_staged_one_stays(store: jl.Store) -> None:
    with store.session() as s:
        first = s.get("flights", 3)
        store["flights"].patch(3, {"delay": 30})
        assert s.get("flights", 3)["delay"] == 30 and first["delay"] == 3
        s.put("flights", {**s.get("flights", 3), "delay": 31})
        store["flights"].patch(3, {"delay": 32})
        assert s.get("flights", 3)["delay"] == 31  # what the session stages is what it reads
        s.remove("flights", 3)
        assert s.get("flights", 3) is None and all(f["id"] != 3 for f in s.all("flights"))
        s.discard("flights", 3)


# -- staging -------------------------------------------------------------------------------------
def test_staging_refuses_what_it_cannot_write(store: jl.Store) -> None:
    with store.session() as s:
        with pytest.raises(jl.StoreError) as info:
            s.put("flights", {"id": 4, "carrier": "AA"})  # never read
        assert code(info) == "JD2006" and info.value.collection == "flights" and info.value.key == 4
        with pytest.raises(jl.StoreError) as info:
            s.remove("flights", 4)
        assert code(info) == "JD2006"
        with pytest.raises(jl.ValidationError) as vinfo:
            s.add("flights", {"id": 9, "delay": "late"})  # validated at once
        assert vinfo.value.code == "JD2003"
        s.get("flights", 4)
        with pytest.raises(jl.StoreError) as info:
            s.add("flights", {"id": 4})
        assert code(info) == "JD2001"
        with pytest.raises(jl.StoreError) as info:
            s.add("nowhere", {"id": 4})
        assert code(info) == "JD2004"
        assert s.pending == 0
        s.add("flights", {"id": 9})
        s.remove("flights", 9)  # a staged addition is simply dropped
        assert s.pending == 0 and s.tracked == 1
        assert s.discard("flights", 4) and not s.discard("flights", 4)


def test_a_put_equal_to_the_snapshot_writes_nothing(store: jl.Store) -> None:
    with store.session() as s:
        f = s.get("flights", 1)
        s.put("flights", {**f, "delay": 7})
        s.put("flights", dict(reversed(list(f.items()))))  # back to the snapshot, members reordered
        assert s.pending == 0
        report = s.save()
        assert report.statements == () and report.counts == {"inserted": 0, "updated": 0, "deleted": 0}


# -- the minimal save ----------------------------------------------------------------------------
def test_one_statement_per_changed_document_with_its_members_where_the_backend_can(store: jl.Store) -> None:
    with store.session() as s:
        for f in s.all("flights"):
            if f["id"] % 2:
                s.put("flights", {**f, "delay": f["delay"] + 100, "route": {"from": "JFK"}})
        report = s.save()
    merges = store.backend.merges_members
    assert [(st.statement, st.rows) for st in report.statements] == [
        ("merge" if merges else "save_update", 1),
        ("merge" if merges else "save_update", 1),
    ]
    assert report.updated == (("flights", 1), ("flights", 3)) and report.checked == report.updated
    stored = {f["id"]: f for f in store["flights"].to_list()}
    assert stored[1] == {"id": 1, "carrier": "AA", "delay": 101, "route": {"from": "JFK"}, "rev": 2}
    assert stored[2] == {
        "id": 2,
        "carrier": "AA",
        "delay": 2,
        "route": {"from": "JFK", "to": "LAX"},
        "rev": 1,
    }


def test_a_member_set_to_null_is_written_whole(store: jl.Store) -> None:
    with store.session() as s:
        s.put("flights", {**s.get("flights", 2), "delay": None})
        report = s.save()
        assert [st.statement for st in report.statements] == ["save_update"]
        assert s.get("flights", 2)["delay"] is None
    assert store["flights"].get(2)["delay"] is None


def test_new_documents_are_batched_and_allocated_keys_reported(store: jl.Store) -> None:
    with store.session() as s:
        for i in range(100, 2100):
            s.add("flights", {"id": i, "carrier": "UA"})
        assert s.add("tally", {"n": 1}) is None
        report = s.save()
        assert [(st.statement, st.collection, st.rows) for st in report.statements] == [
            ("insert_keyed", "flights", 2000),
            ("insert", "tally", 1),
        ]
        (_, tally_key) = report.inserted[-1]
        assert s.get("tally", tally_key) == {"n": 1}
        s.put("tally", {"n": 2}, key=tally_key)
        assert s.save().updated == (("tally", tally_key),)
    assert len(store["flights"]) == 2005 and store["flights"].get(2099)["rev"] == 1
    assert store["tally"].get(tally_key) == {"n": 2}


def test_parents_are_inserted_first_and_children_deleted_first(store: jl.Store) -> None:
    with store.session() as s:
        s.add("flights", {"id": 50, "carrier": "DL"})
        s.add("airlines", {"code": "DL", "name": "Delta"})
        report = s.save()
        assert [st.collection for st in report.statements] == ["airlines", "flights"]
        s.remove("airlines", "DL")  # restrict: refused unless its flight goes first
        s.remove("flights", 50)
        report = s.save()
        assert report.deleted == (("flights", 50), ("airlines", "DL"))
    assert store["airlines"].get("DL") is None and store["flights"].get(50) is None


def test_relations_in_a_cycle_are_named(open_store: Any) -> None:
    cyclic = copy.deepcopy(MODEL)
    cyclic["collections"]["airlines"]["schema"]["properties"]["hub"] = {"type": "integer"}
    cyclic["collections"]["airlines"]["relations"] = {"hub": {"to": "flights", "via": "/hub"}}
    store = open_store(cyclic)
    with store.session() as s:
        s.add("airlines", {"code": "B6"})
        s.add("flights", {"id": 1, "carrier": "B6"})
        with pytest.raises(jl.StoreError) as info:
            s.save()
        assert code(info) == "JD2041" and "airlines -> flights -> airlines" in info.value.reason
        assert s.pending == 2 and len(store["airlines"]) == 0
        s.discard("flights", 1)
        assert s.save().inserted == (("airlines", "B6"),)


# -- versions ------------------------------------------------------------------------------------
def test_two_sessions_racing_on_one_version(store: jl.Store) -> None:
    first, second = store.session(), store.session()
    a, b = first.get("flights", 4), second.get("flights", 4)
    assert a["rev"] == b["rev"] == 1
    first.put("flights", {**a, "delay": 40})
    second.put("flights", {**b, "delay": 41})
    second.add("flights", {"id": 77})
    assert first.save().checked == (("flights", 4),)
    with pytest.raises(jl.StoreError) as info:
        second.save()
    assert code(info) == "JD2040" and (info.value.collection, info.value.key) == ("flights", 4)
    # nothing of the losing save was written, and the session is exactly as it was: retryable
    assert store["flights"].get(4) == {**a, "delay": 40, "rev": 2} and store["flights"].get(77) is None
    assert second.changes() == [("update", "flights", 4), ("insert", "flights", 77)]
    assert second.get("flights", 4)["delay"] == 41
    second.discard("flights", 4)
    second.put("flights", {**second.get("flights", 4), "delay": 41})
    report = second.save()
    assert report.counts == {"inserted": 1, "updated": 1, "deleted": 0}
    assert store["flights"].get(4)["rev"] == 3 and store["flights"].get(4)["delay"] == 41
    first.close()
    second.close()


def test_a_versioned_delete_of_a_changed_document_is_refused(store: jl.Store) -> None:
    with store.session() as s:
        s.remove("airlines", s.get("airlines", "UA")["code"])
        store["airlines"].patch("UA", {"name": "United Airlines"})  # a direct write bumps the version
        with pytest.raises(jl.StoreError) as info:
            s.save()
        assert code(info) == "JD2040" and info.value.key == "UA"
        s.discard("airlines", "UA")
    assert store["airlines"].get("UA") == {"code": "UA", "name": "United Airlines", "rev": 2}


def test_direct_writes_keep_the_version(store: jl.Store) -> None:
    airlines = store["airlines"]
    assert airlines.get("AA")["rev"] == 1
    airlines.put({"code": "AA", "name": "AA", "rev": 1})
    assert airlines.get("AA")["rev"] == 2
    airlines.patch("AA", [{"op": "replace", "path": "/name", "value": "A"}])
    assert airlines.get("AA")["rev"] == 3
    airlines.put({"code": "B6", "name": "JetBlue"})
    assert airlines.get("B6")["rev"] == 1


def test_unversioned_writes_merge_members_and_say_so(store: jl.Store) -> None:
    store["log"].insert({"id": "x", "a": 1, "b": 1})
    with store.session() as s:
        s.put("log", {**s.get("log", "x"), "a": 2})
        store["log"].put({"id": "x", "a": 1, "b": 5})  # another writer meanwhile
        report = s.save()
        assert report.unversioned == (("log", "x"),) and report.checked == ()
        expected = (
            {"id": "x", "a": 2, "b": 5} if store.backend.merges_members else {"id": "x", "a": 2, "b": 1}
        )
        assert s.get("log", "x") == expected
    assert store["log"].get("x") == expected
    with store.session() as s:
        s.put("log", {**s.get("log", "x"), "a": 3})
        store["log"].delete("x")
        with pytest.raises(jl.StoreError) as info:
            s.save()
        assert code(info) == "JD2006" and info.value.key == "x"
        s.discard("log", "x")


# -- all or nothing ------------------------------------------------------------------------------
def test_a_failed_save_writes_nothing_and_leaves_the_session_as_it_was(store: jl.Store) -> None:
    with store.session() as s:
        s.put("flights", {**s.get("flights", 0), "delay": 500})
        s.get("flights", 1)
        s.remove("flights", 1)
        s.add("flights", {"id": 2, "carrier": "UA"})  # stored, not tracked: a duplicate at save
        before = (s.changes(), s.get("flights", 0), s.pending, s.tracked)
        with pytest.raises(jl.StoreError) as info:
            s.save()
        assert code(info) == "JD2001"
        assert (s.changes(), s.get("flights", 0), s.pending, s.tracked) == before
        assert store["flights"].get(0)["delay"] == 0 and store["flights"].get(1) is not None
        s.discard("flights", 2)
        assert s.save().counts == {"inserted": 0, "updated": 1, "deleted": 1}


def test_a_save_is_its_own_transaction(store: jl.Store) -> None:
    with store.session() as s:
        s.put("flights", {**s.get("flights", 0), "delay": 1})
        with store.transaction(), pytest.raises(jl.StoreError) as info:
            s.save()
        assert code(info) == "JD2010"
        s.save()


def test_leaving_with_unsaved_changes_warns_and_a_closed_session_refuses(store: jl.Store) -> None:
    with pytest.warns(UserWarning, match="1 unsaved"), store.session() as s:
        s.add("airlines", {"code": "WN"})
    assert store["airlines"].get("WN") is None
    with pytest.raises(jl.StoreError) as info:
        s.get("airlines", "AA")
    assert code(info) == "JD2010"
    assert repr(s) == "<jarenlab.Session closed>"


# -- the report ----------------------------------------------------------------------------------
def test_the_report_renders_and_frames(store: jl.Store) -> None:
    with store.session() as s:
        s.add("airlines", {"code": "DL"})
        s.put("airlines", {**s.get("airlines", "AA"), "name": "AA"})
        s.add("log", {"id": "l"})
        report = s.save()
    frame = report.to_pandas()
    assert frame.to_dict("records") == [
        {"collection": "airlines", "key": "DL", "action": "insert", "checked": False},
        {"collection": "log", "key": "l", "action": "insert", "checked": False},
        {"collection": "airlines", "key": "AA", "action": "update", "checked": True},
    ]
    html = report._repr_html_()
    assert (
        "2 inserted, 1 updated, 0 deleted in 3 statements" in html and "<td><code>insert_keyed</code>" in html
    )
    assert repr(report).startswith("<SaveReport inserted=2 updated=1 deleted=0 statements=3 checked=1")


def test_the_change_feed_sees_one_commit(store: jl.Store) -> None:
    seen: list[Any] = []
    store.db.on_commit(after=lambda changes: seen.append(sorted((c[0], c[1]) for c in changes)))
    with store.session() as s:
        s.put("flights", {**s.get("flights", 0), "delay": 9})
        s.add("airlines", {"code": "DL"})
        s.save()
    assert seen == [[("airlines", "DL"), ("flights", 0)]]


def test_a_version_member_is_a_required_integer(open_store: Any) -> None:
    bad = copy.deepcopy(MODEL)
    bad["collections"]["airlines"]["version"] = "/name"
    with pytest.raises(jl.ModelError) as info:
        open_store(bad)
    assert info.value.code == "JD0005" and info.value.doc_path == "/collections/airlines/version"


def test_session_is_the_store_s(store: jl.Store) -> None:
    assert isinstance(store.session(), Session)


def test_declaring_a_version_is_a_migration_step(open_store: Any) -> None:
    before = copy.deepcopy(MODEL)
    log = before["collections"]["log"]
    store = open_store(before)
    store["log"].insert({"id": "a"})
    log["schema"]["properties"]["v"] = {"type": "integer"}
    log["schema"]["required"] = ["id", "v"]
    log["version"] = "/v"
    plan = store.migrate(before, transforms={"log": lambda d: {**d, "v": 1}}, dry_run=True)
    assert ("version", "log", "none -> /v") in [(s.kind, s.collection, s.detail) for s in plan.steps]
    store.migrate(before, transforms={"log": lambda d: {**d, "v": 1}}, progress=False)
    with store.session() as s:
        s.put("log", {**s.get("log", "a"), "n": 1})
        assert s.save().checked == (("log", "a"),)
    assert store["log"].get("a") == {"id": "a", "v": 2, "n": 1}
