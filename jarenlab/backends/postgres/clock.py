"""The server's clock as one process reads it: :meth:`PostgresBackend.clock`.

Worker machines' clocks disagree; a lease written by one machine and judged by another must be in
one time. So a PostgreSQL store's time is the server's: read with one query at first use and again
every ``resync`` seconds, and carried forward in between by this machine's monotonic clock (which
never steps). The reading is taken as the midpoint of the query's round trip, so it is off by at
most half a round trip, plus the drift of two clocks over ``resync`` seconds (microseconds). A
failed re-reading keeps the last one and tries again a second later; only the first reading raises.
Once the store closes, the last reading is carried forward and no connection is opened again.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from jarenlab.errors import StoreError

#: The server's wall clock now (not ``now()``, which stands still for a whole transaction).
SERVER_NOW = "SELECT extract(epoch FROM clock_timestamp())::double precision"


class ServerClock:
    """Epoch seconds on the server's clock (a zero-argument callable).

    Args:
        connect: opens the connection the readings are taken on (kept until :meth:`close`).
        translate: turns a driver error into the store's coded error (None: not a driver error).
        resync: seconds between readings.
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        translate: Callable[[BaseException], BaseException | None],
        *,
        resync: float = 10.0,
    ) -> None:
        self._connect = connect
        self._translate = translate
        self._resync = resync
        self._lock = threading.Lock()
        self._conn: Any = None
        self._closed = False
        # (server seconds, monotonic seconds at that reading, monotonic seconds of the next reading)
        self._base: tuple[float, float, float] | None = None

    def __call__(self) -> float:
        base = self._base
        now = time.monotonic()
        if base is None or now >= base[2]:
            base = self._read()
            now = time.monotonic()
        return base[0] + (now - base[1])

    def _read(self) -> tuple[float, float, float]:
        with self._lock:
            base = self._base
            if base is not None and time.monotonic() < base[2]:
                return base  # another thread read it meanwhile
            if self._closed:  # the store closed: carry the last reading forward, never reconnect
                if base is None:
                    raise StoreError("JD2063", "the store is closed")
                return base
            try:
                if self._conn is None:
                    self._conn = self._connect()
                sent = time.monotonic()
                server = float(self._conn.execute(SERVER_NOW).fetchone()[0])
                back = time.monotonic()
            except Exception as exc:
                self._drop()
                if base is None:
                    err = self._translate(exc)
                    if err is None:
                        raise
                    raise err from err.__cause__
                base = self._base = (base[0], base[1], time.monotonic() + 1.0)
                return base
            base = self._base = (server, (sent + back) / 2, back + self._resync)
            return base

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def close(self) -> None:
        """Close the connection the readings are taken on (for good: no reading after this)."""
        with self._lock:
            self._closed = True
            self._drop()
