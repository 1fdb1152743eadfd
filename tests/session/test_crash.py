"""A save SIGKILLed in the middle of its transaction (a real process) writes nothing."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.migrations.test_processes import start, wait_for
from tests.session.conftest import MODEL

pytestmark = pytest.mark.slow
CHILD = Path(__file__).with_name("child.py")


def test_a_save_killed_midway_writes_nothing(open_store: Any, tmp_path: Path) -> None:
    store = open_store(MODEL, "crash")
    store["airlines"].insert({"code": "AA"})
    store["flights"].insert_many([{"id": i, "carrier": "AA", "delay": 0} for i in range(200)])
    before = store["flights"].to_list()
    ready = tmp_path / "ready"
    child = start("", open_store.target("crash"), ready, script=CHILD)
    wait_for(ready, child)
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    store.close()
    again = open_store.reopen(store)
    assert again["flights"].to_list() == before  # no update, no insert, no delete of the save
    with again.session() as s:  # and the store takes the same save whole afterwards
        for doc in s.all("flights"):
            s.put("flights", {**doc, "delay": 99})
        s.remove("flights", 0)
        for i in range(1000, 1300):
            s.add("flights", {"id": i, "carrier": "AA"})
        assert s.save().counts == {"inserted": 300, "updated": 199, "deleted": 1}
    assert len(again["flights"]) == 499
