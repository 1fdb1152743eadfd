"""The server's clock as a PostgreSQL store reads it (:mod:`jarenlab.backends.postgres.clock`), with a
stand-in connection: readings carried forward, read again after ``resync``, failures, close."""

from __future__ import annotations

import time
from typing import Any

import pytest

from jarenlab.backends.postgres.clock import ServerClock
from jarenlab.errors import StoreError


class Server:
    """Answers the clock query with its own time (an hour ahead of this machine) or fails."""

    def __init__(self) -> None:
        self.reads = 0
        self.connects = 0
        self.down = False

    def connect(self) -> Any:
        if self.down:
            raise StoreError("JD2005", "could not connect", condition="connection")
        self.connects += 1
        return self

    def execute(self, sql: str) -> Any:
        if self.down:
            raise OSError("connection lost")
        self.reads += 1
        return self

    def fetchone(self) -> tuple[float]:
        return (time.time() + 3600,)

    def close(self) -> None:
        pass


def test_one_reading_is_carried_forward_until_resync() -> None:
    server = Server()
    clock = ServerClock(server.connect, lambda exc: None, resync=60)
    start = time.monotonic()
    first = clock()
    assert abs(first - (time.time() + 3600)) < 1  # the server's time, not this machine's
    time.sleep(0.05)
    second = clock()
    assert 0.05 <= second - first <= time.monotonic() - start and server.reads == 1
    again = ServerClock(server.connect, lambda exc: None, resync=0)
    again()
    again()
    assert server.reads == 3 and server.connects == 2  # one connection per clock, kept


def test_a_failed_rereading_keeps_the_last_and_only_a_first_reading_raises() -> None:
    server = Server()
    clock = ServerClock(server.connect, lambda exc: None, resync=0.0)
    before = clock()
    server.down = True
    assert clock() >= before  # carried forward; the connection is dropped and opened again later
    server.down = False
    time.sleep(1.05)
    clock()
    assert server.connects == 2
    unreachable = Server()
    unreachable.down = True
    with pytest.raises(StoreError) as err:
        ServerClock(unreachable.connect, lambda exc: None)()
    assert err.value.code == "JD2005"


def test_after_close_nothing_reconnects() -> None:
    server = Server()
    clock = ServerClock(server.connect, lambda exc: None, resync=0.0)
    reading = clock()
    clock.close()
    assert clock() >= reading and server.connects == 1
    unread = ServerClock(server.connect, lambda exc: None)
    unread.close()
    with pytest.raises(StoreError) as err:
        unread()
    assert err.value.code == "JD2063"
