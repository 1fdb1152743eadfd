"""Time for the queue: the system clock and a virtual clock for tests (backoff is
:func:`jarenlab.backoff.backoff`).

Workers, leases and retries read time only through a clock (a zero-argument callable returning
float epoch seconds). A clock with a ``sleep(seconds)`` method is *virtual*: waiting on it moves
its time forward instead of blocking, so retry and lease tests run without sleeping.

>>> clock = VirtualClock(1_900_000_000.0)
>>> clock.advance(30); clock()
1900000030.0
"""

from __future__ import annotations

import threading
from collections.abc import Callable

Clock = Callable[[], float]


class VirtualClock:
    """A clock that moves only when told to (``advance``) or when something waits on it (``sleep``).

    Args:
        start: the initial time in epoch seconds.
    """

    def __init__(self, start: float = 1_900_000_000.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` (never backwards)."""
        if seconds < 0:
            raise ValueError("a virtual clock never moves backwards")
        with self._lock:
            self._now += seconds

    def sleep(self, seconds: float) -> None:
        """Waiting on a virtual clock is advancing it."""
        self.advance(max(0.0, seconds))

    def __repr__(self) -> str:
        return f"VirtualClock({self._now!r})"


def is_virtual(clock: Clock) -> bool:
    """True when waiting on ``clock`` should advance it rather than block."""
    return callable(getattr(clock, "sleep", None))
