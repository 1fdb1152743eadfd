"""Live queries on PostgreSQL while the server goes away: visibly stale, then current again.

A real server (the fault tests' own, :func:`backend_fixtures.fault_server`) is halted, restarted
at once (``pg_ctl -m immediate``), or has every session of the store ended
(``pg_terminate_backend``). While the live query cannot reach it, it says ``stale`` (``state``,
``status()``, ``on_error`` with the retryable JD2005, ``on_state``); once the server is back it
converges to a fresh run's answer, including what other stores committed meanwhile.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from backend_fixtures import terminate_sessions

import jarenlab as jl
from jarenlab import it
from tests.waiting import wait_for

from .conftest import MODEL

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:jarenlab live queries are stale")]


@pytest.fixture
def opened(fault_server: Any) -> Iterator[Callable[..., Any]]:
    """``opened(**options)``: a store in this test's schema on the fault server (closed after)."""
    schema = f"live_{uuid.uuid4().hex[:12]}"
    stores: list[Any] = []

    def open_one(**options: Any) -> Any:
        store = jl.open(fault_server.url(), MODEL, schema=schema, **options)
        stores.append(store)
        return store

    yield open_one
    for store in stores:
        store.close()


def fresh_top(store: Any) -> list[Any]:
    return store["nums"].where(it.n >= 0).order_by(it.n.desc()).take(5).select(it.n).to_list()


def follow(store: Any) -> tuple[Any, list[Any], list[str]]:
    live = store["nums"].where(it.n >= 0).order_by(it.n.desc()).take(5).select(it.n).live()
    errors: list[Any] = []
    states: list[str] = []
    live.subscribe(lambda patch, seq: None, on_error=errors.append, on_state=states.append)
    return live, errors, states


@pytest.mark.parametrize("notify", [True, False], ids=["notify", "polling"])
def test_stale_while_the_server_is_down_then_current_again(
    opened: Callable[..., Any], fault_server: Any, notify: bool
) -> None:
    store, writer = opened(notify=notify), opened()
    writer["nums"].insert_many([{"n": n} for n in range(3)])
    live, errors, states = follow(store)
    wait_for(lambda: live.rows == [2, 1, 0])
    fault_server.halt()
    try:
        wait_for(lambda: live.state == "stale")
        assert live.status()["state"] == "stale" and live.status()["error"] == "JD2005 database_error"
        assert "stale" in repr(live) and not live.closed
        assert states == ["stale"]
        assert [(e.code, e.retryable, e.condition) for e in errors] == [("JD2005", True, "connection")]
        assert store.changes.stats()["stale"] == 1
        time.sleep(0.3)  # more failed attempts: told once per outage, never closed
        assert len(errors) == 1 and live.state == "stale"
    finally:
        fault_server.resume()
    writer["nums"].insert_many([{"n": 10}, {"n": 7}])
    wait_for(lambda: live.state == "live" and live.rows == fresh_top(writer))
    assert live.rows == [10, 7, 2, 1, 0]
    assert states == ["stale", "live"] and len(errors) == 1
    writer["nums"].insert({"n": 8})  # and it keeps following
    wait_for(lambda: live.rows == [10, 8, 7, 2, 1])


def test_an_immediate_restart_with_writes_around_it_converges(
    opened: Callable[..., Any], fault_server: Any
) -> None:
    store, writer = opened(), opened()
    live, errors, _ = follow(store)
    writer["nums"].insert_many([{"n": n} for n in range(4)])
    wait_for(lambda: live.rows == [3, 2, 1, 0])
    fault_server.restart("immediate")
    # Writes land as soon as the server accepts them, before the hub has noticed anything.
    for n in (20, 15, 12):
        writer["nums"].insert({"n": n})
    fifteen = next(k for k in writer["nums"].keys() if writer["nums"].get(k)["n"] == 15)  # noqa: SIM118
    writer["nums"].delete(fifteen)
    wait_for(lambda: live.state == "live" and live.rows == fresh_top(writer))
    assert live.rows == [20, 12, 3, 2, 1]
    assert live.error is None and not live.closed and all(e.retryable for e in errors)


def test_terminated_sessions_heal_and_the_query_follows_on(
    opened: Callable[..., Any], fault_server: Any
) -> None:
    store, writer = opened(), opened()
    live, _, _ = follow(store)
    writer["nums"].insert({"n": 1})
    wait_for(lambda: live.rows == [1])
    assert terminate_sessions(fault_server, store.backend.schema) >= 3  # both stores' and the listener's
    writer["nums"].insert({"n": 5})
    wait_for(lambda: live.state == "live" and live.rows == [5, 1])
    store["nums"].insert({"n": 3})  # this store's own commits too
    wait_for(lambda: live.rows == [5, 3, 1])


def test_a_stale_query_without_on_error_warns_once_per_outage(
    opened: Callable[..., Any], fault_server: Any
) -> None:
    store = opened()
    live = store["nums"].where(it.n >= 0).live()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fault_server.halt()
        try:
            wait_for(lambda: live.state == "stale")
            time.sleep(0.3)
        finally:
            fault_server.resume()
        wait_for(lambda: live.state == "live")
    stale = [w for w in seen if "stale" in str(w.message)]
    assert len(stale) == 1, [str(w.message) for w in seen]
