"""Waiting for another thread or process in a test: always with a deadline, never a bare spin."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, *, what: str = "the condition") -> Any:
    """Poll ``predicate`` until it is true and return its value; fail after ``timeout`` seconds.

    The default is long on purpose: a loaded machine starts a worker process slowly, and a test
    that waits is about whether something happens, not how fast (that is a benchmark's question).
    """
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.01)
    return value
