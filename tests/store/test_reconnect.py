"""A PostgreSQL store whose server sessions end under it: every call heals on a new connection.

The sessions are ended for real, by ``pg_terminate_backend`` from an administrator's connection of
its own (:func:`backend_fixtures.terminate_sessions`), or by the server's idle-in-transaction
timeout; no driver is mocked. Outside a transaction the next call runs on a new connection without
an error; a transaction the loss breaks fails with the retryable JD2005 (``condition="connection"``),
nothing of it commits, and the next transaction runs.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from backend_fixtures import terminate_sessions

import jarenlab as jl
from jarenlab import it
from jarenlab.errors import unreachable

pytestmark = pytest.mark.needs("sessions", "sessions a server ends; a SQLite file has none")


def ended(err: jl.JarenlabError) -> bool:
    return err.code == "JD2005" and err.retryable and err.condition == "connection" and unreachable(err)


def test_every_call_heals_after_the_sessions_are_terminated(store: Any, pg_server: Any) -> None:
    notes = store["notes"]
    notes.insert({"id": "a", "tag": "x", "score": 1})
    reader_before = store.db.reconnects
    assert terminate_sessions(pg_server, store.backend.schema) >= 1
    # Reads, writes, queries and a transaction right after: none raises, each on a new connection.
    assert notes.get("a") == {"id": "a", "tag": "x", "score": 1}
    assert store.db.reconnects == reader_before + 1
    notes.insert({"id": "b", "tag": "x", "score": 2})
    assert notes.where(it.tag == "x").order_by(it.score).select(it.id).to_list() == ["a", "b"]
    with store.transaction():
        notes.put({"id": "c", "tag": "y", "score": 3})
    assert notes.count() == 3
    # Again, after a second round: the replaced connection is replaced in turn.
    assert terminate_sessions(pg_server, store.backend.schema) >= 1
    assert notes.count() == 3


def test_a_transaction_broken_midway_fails_retryable_and_the_next_one_runs(
    store: Any, pg_server: Any
) -> None:
    notes = store["notes"]
    with pytest.raises(jl.JarenlabError) as caught, store.transaction():
        notes.insert({"id": "lost-1"})
        terminate_sessions(pg_server, store.backend.schema)
        notes.insert({"id": "lost-2"})
    assert ended(caught.value), caught.value
    assert isinstance(caught.value.__cause__, Exception)  # the driver's error
    # Inside the broken transaction everything keeps failing: no statement runs outside it.
    with pytest.raises(jl.JarenlabError) as again, store.transaction():
        notes.insert({"id": "ok-1"})
        terminate_sessions(pg_server, store.backend.schema)
        try:
            notes.insert({"id": "lost-3"})
        except jl.JarenlabError:
            pass
        notes.insert({"id": "lost-4"})  # the transaction is gone: this must not commit alone
    assert ended(again.value)
    with store.transaction():
        notes.insert({"id": "ok-2"})
    assert sorted(notes.keys()) == ["ok-2"]


def test_a_caller_that_retries_a_retryable_error_succeeds(store: Any, pg_server: Any) -> None:
    """The documented way to try again: catch ``err.retryable``, run the transaction once more."""
    notes = store["notes"]
    attempts = []

    def move(s: Any) -> None:
        attempts.append(len(attempts) + 1)
        s["notes"].put({"id": "m", "score": len(attempts)})
        if len(attempts) == 1:
            terminate_sessions(pg_server, s.backend.schema)
            s["notes"].get("m")  # fails: the session is gone

    for _ in range(3):
        try:
            store.transaction(move)
            break
        except jl.JarenlabError as err:
            assert err.retryable
    assert attempts == [1, 2]
    assert notes.get("m") == {"id": "m", "score": 2}


def test_the_idle_in_transaction_timeout_fails_the_transaction_and_the_next_one_runs(store: Any) -> None:
    notes = store["notes"]
    with pytest.raises(jl.JarenlabError) as caught, store.transaction():
        store.db.connection().execute("SET LOCAL idle_in_transaction_session_timeout = '100ms'")
        notes.insert({"id": "late"})
        time.sleep(0.4)  # a notebook paused inside the block: the server ends the session
        notes.insert({"id": "later"})
    assert ended(caught.value), caught.value
    notes.insert({"id": "next"})
    assert notes.keys() == ["next"]


def test_committed_reads_heal_too(store: Any, pg_server: Any) -> None:
    """The second connection a thread reads committed data on (``own_writes=False``) is replaced too."""
    notes = store["notes"]
    notes.insert({"id": "a"})
    with store.db.snapshot(own_writes=False):
        assert notes.count() == 1
    terminate_sessions(pg_server, store.backend.schema)
    with store.transaction():
        notes.insert({"id": "b"})
        with store.db.snapshot(own_writes=False):
            assert notes.count() == 1  # only what is committed
    assert notes.count() == 2


def test_a_server_that_cannot_be_reached_is_retryable_and_names_no_password(fault_server: Any) -> None:
    """While the server is down a call fails at once with the retryable error; once it is back the
    same store carries on."""
    model = {
        "$model": "0.1",
        "collections": {"t": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
    }
    with jl.open(fault_server.url(), model, schema="down_store") as store:
        store["t"].insert({"n": 1})
        fault_server.halt()
        try:
            started = time.monotonic()
            with pytest.raises(jl.JarenlabError) as caught:
                store["t"].count()
            assert ended(caught.value)
            assert time.monotonic() - started < 5  # refused at once, not a hang
        finally:
            fault_server.resume()
        assert store["t"].count() == 1
        store["t"].insert({"n": 2})
        assert store["t"].count() == 2


def test_a_call_racing_the_termination_fails_at_most_once(store: Any, pg_server: Any) -> None:
    """Called before the server has finished ending the session, a statement outside a
    transaction may reach the dying session: it fails once, retryable, and the next call heals."""
    notes = store["notes"]
    notes.insert({"id": "a"})
    for _ in range(5):
        terminate_sessions(pg_server, store.backend.schema, wait=False)
        failures = []
        for _ in range(3):
            try:
                assert notes.count() == 1
            except jl.JarenlabError as err:
                failures.append(err)
        assert len(failures) <= 1 and all(ended(err) for err in failures), failures
