"""Every attribute ``docs/intervals.md`` documents on an interval clash (``key``, ``conflict``,
``conflict_owner``) exists on every path that raises one: a collection, an owner view (a clash with
one's own record, and with a record it cannot read, redacted), a batch, a move, on both backends.
An owner view's redacted clash once had no ``conflict_owner`` at all (reading it raised
``AttributeError``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jarenlab.errors import IntervalConflict

from .conftest import booking

DOCUMENTED = ("code", "key", "conflict", "conflict_owner")


def clash(call: Callable[[], Any]) -> IntervalConflict:
    with pytest.raises(IntervalConflict) as info:
        call()
    err = info.value
    for name in DOCUMENTED:
        assert hasattr(err, name), name
    assert err.code == "JD2090"
    return err


def test_every_path_carries_every_documented_attribute(store: Any) -> None:
    bookings = store["bookings"]
    bookings.insert(booking("bob1", "10", "11", owner="bob"))
    ann = store.as_owner("ann")["bookings"]

    err = clash(lambda: bookings.insert(booking("x", "10", "12", owner="ann")))
    assert (err.key, err.conflict, err.conflict_owner) == ("x", {"key": "bob1", "declaration": 0}, "bob")

    for call in (
        lambda: ann.insert(booking("a1", "10", "12")),
        lambda: ann.insert_many([booking("a2", "08", "09"), booking("a3", "10", "12")]),
        lambda: ann.put(booking("a4", "09", "11")),
    ):
        err = clash(call)  # another owner's record: nothing of it is revealed
        assert (err.conflict, err.conflict_owner) == (None, None)

    ann.insert(booking("mine", "12", "13"))
    err = clash(lambda: ann.insert(booking("again", "12", "14")))
    assert (err.key, err.conflict, err.conflict_owner) == ("again", {"key": "mine", "declaration": 0}, "ann")
    err = clash(lambda: ann.insert_many([booking("b1", "14", "16"), booking("b2", "15", "17")]))
    assert err.conflict_owner == "ann" and {err.key, err.conflict["key"]} == {"b1", "b2"}
    err = clash(lambda: ann.patch("mine", {"start": "2024-05-01T10:30:00Z"}))
    assert (err.conflict, err.conflict_owner) == (None, None)
    assert ann.get("mine")["start"] == "2024-05-01T12:00:00Z"
