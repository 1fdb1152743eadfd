"""Owner views: one owner's records only, in owned collections; nothing of others leaks."""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import pytest

from jarenlab.collection import Collection
from jarenlab.errors import IntervalConflict, StoreError
from jarenlab.owner import OwnedCollection

from .conftest import booking


def test_writes_set_or_require_the_owner(store: Any) -> None:
    ann = store.as_owner("ann")["bookings"]
    assert isinstance(ann, OwnedCollection)
    doc = booking("a", "10", "11")
    del doc["owner"]
    assert ann.insert(doc) == "a" and "owner" not in doc  # the caller's dict is not changed
    assert store["bookings"].get("a")["owner"] == "ann"
    with pytest.raises(StoreError) as info:
        ann.insert(booking("b", "12", "13", owner="bob"))
    assert info.value.code == "JD2094"
    assert store["bookings"].get("b") is None


def test_reads_of_another_owners_record_behave_as_absent(store: Any) -> None:
    store["bookings"].insert(booking("a", "10", "11", owner="ann"))
    store["bookings"].insert(booking("b", "10", "11", owner="bob", room="B"))
    ann, bob = store.as_owner("ann")["bookings"], store.as_owner("bob")["bookings"]
    assert ann.get("b") is None and bob.get("b")["owner"] == "bob"
    assert ann.count() == len(ann) == 1 and [d["id"] for d in ann.to_list()] == ["a"]
    assert list(ann.to_pandas().index) == ["a"] and ann.to_arrow().num_rows == 1
    with pytest.raises(StoreError) as info:
        ann.patch("b", {"status": "cancelled"})
    assert info.value.code == "JD2006"
    assert ann.delete("b") is False and store["bookings"].get("b")["status"] == "booked"
    with pytest.raises(StoreError) as info:
        ann.put(booking("b", "14", "15", room="C"))
    assert info.value.code == "JD2094"
    assert store["bookings"].get("b")["owner"] == "bob"


def test_the_owner_type_is_exact(store: Any) -> None:
    shifts = store["shifts"]
    shifts.insert({"owner": "1", "from": 0, "to": 1})
    assert store.as_owner(1)["shifts"].count() == 0
    assert store.as_owner("1")["shifts"].count() == 1
    with pytest.raises(StoreError):
        store.as_owner(True)


def test_own_writes_through_the_view(store: Any) -> None:
    ann = store.as_owner("ann")["bookings"]
    ann.insert(booking("a", "10", "11"))
    assert ann.patch("a", {"status": "cancelled"})["status"] == "cancelled"
    with pytest.raises(StoreError) as info:
        ann.patch("a", {"owner": "bob"})
    assert info.value.code == "JD2094" and store["bookings"].get("a")["owner"] == "ann"
    ann.put(booking("a", "12", "13"))
    assert ann.get("a")["start"] == "2024-05-01T12:00:00Z"
    assert (
        ann.insert_many(
            [booking("m1", "14", "15"), {k: v for k, v in booking("m2", "15", "16").items() if k != "owner"}]
        )
        == 2
    )
    assert ann.count() == 3
    assert ann.delete("a") is True and ann.get("a") is None


def test_unowned_collections_pass_through(store: Any) -> None:
    plain = store.as_owner("ann")["plain"]
    assert isinstance(plain, Collection)
    plain.insert({"id": "p"})
    assert store.as_owner("bob")["plain"].get("p") == {"id": "p"}


def _no_trace_of(err: BaseException, *secrets: str) -> None:
    text = "".join(traceback.format_exception(err)) + repr(err.__dict__)
    for secret in secrets:
        assert secret not in text, (secret, text)
    assert err.__cause__ is None and err.__context__ is None


def test_a_clash_with_another_owners_record_reveals_nothing(store: Any) -> None:
    store.as_owner("bob")["bookings"].insert(booking("secret-key", "10", "12", owner="bob"))
    ann = store.as_owner("ann")["bookings"]
    for call in (
        lambda: ann.insert(booking("mine", "11", "13")),
        lambda: ann.insert_many([booking("m1", "08", "09"), booking("m2", "11", "13")]),
    ):
        with pytest.raises(IntervalConflict) as info:
            call()
        assert info.value.code == "JD2090" and info.value.conflict is None
        _no_trace_of(info.value, "secret-key", "bob")
    ann.insert(booking("mine", "12", "13"))
    with pytest.raises(IntervalConflict) as info:
        ann.patch("mine", {"start": "2024-05-01T11:00:00Z"})
    _no_trace_of(info.value, "secret-key", "bob")
    with pytest.raises(IntervalConflict) as info:
        ann.put(booking("mine", "09", "11"))
    _no_trace_of(info.value, "secret-key", "bob")
    assert ann.get("mine")["start"] == "2024-05-01T12:00:00Z"
    assert ann.count() == 1


def test_a_clash_with_ones_own_record_names_it(store: Any) -> None:
    ann = store.as_owner("ann")["bookings"]
    ann.insert(booking("first", "10", "12"))
    with pytest.raises(IntervalConflict) as info:
        ann.insert(booking("second", "11", "13"))
    assert info.value.conflict == {"key": "first", "declaration": 0}


def test_owner_scope_through_views(store: Any) -> None:
    ann, bob = store.as_owner("ann")["shifts"], store.as_owner("bob")["shifts"]
    ann.insert({"from": 0, "to": 8})
    bob.insert({"from": 0, "to": 8})
    with pytest.raises(IntervalConflict) as info:
        bob.insert({"from": 7, "to": 9})
    assert info.value.conflict["key"] == 2
    assert ann.count() == bob.count() == 1


def _while_held(store: Any, work: Callable[[], Any]) -> threading.Thread:
    """Run ``work`` in another thread inside a transaction that stays open a moment after it."""
    inside = threading.Event()

    def hold() -> None:
        with store.transaction():
            work()
            inside.set()
            time.sleep(0.3)  # the view's write starts meanwhile and must wait for this commit

    thread = threading.Thread(target=hold)
    thread.start()
    assert inside.wait(10)
    return thread


@pytest.mark.parametrize("write", ["delete", "patch"])
def test_a_view_write_waits_for_a_record_being_handed_to_another_owner(store: Any, write: str) -> None:
    b = store["bookings"]
    b.insert(booking("a", "10", "11", owner="ann"))
    ann = store.as_owner("ann")["bookings"]
    thread = _while_held(store, lambda: b.patch("a", {"owner": "bob"}))
    try:
        if write == "delete":
            assert ann.delete("a") is False
        else:
            with pytest.raises(StoreError) as info:
                ann.patch("a", {"status": "cancelled"})
            assert info.value.code == "JD2006"
    finally:
        thread.join()
    assert b.get("a") == booking("a", "10", "11", owner="bob")


def test_a_view_put_does_not_overwrite_a_record_another_owner_is_creating(store: Any) -> None:
    thread = _while_held(
        store, lambda: store.as_owner("bob")["bookings"].insert(booking("n", "10", "11", owner="bob"))
    )
    try:
        with pytest.raises(StoreError) as info:
            store.as_owner("ann")["bookings"].put(booking("n", "12", "13"))
        assert info.value.code == "JD2094"
    finally:
        thread.join()
    assert store["bookings"].get("n")["owner"] == "bob"


def test_a_view_put_of_a_new_key_inserts_it(store: Any) -> None:
    ann = store.as_owner("ann")["bookings"]
    assert ann.put(booking("n", "10", "11")) == "n"
    assert ann.put(booking("n", "11", "12")) == "n" and ann.get("n")["start"] == "2024-05-01T11:00:00Z"
    assert ann.count() == 1


def test_a_clash_in_a_plain_collection_carries_nothing_from_the_database(store: Any) -> None:
    b = store["bookings"]
    b.insert(booking("a", "10", "12", owner="zed"))
    with pytest.raises(IntervalConflict) as info:
        b.insert(booking("b", "11", "13"))
    assert info.value.conflict == {"key": "a", "declaration": 0} and info.value.conflict_owner == "zed"
    # the other record is named by its key; its bounds (which PostgreSQL's error detail prints) are not
    _no_trace_of(info.value, "2024-05-01T10:00:00Z", "1714557600000")
