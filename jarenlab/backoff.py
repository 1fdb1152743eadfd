"""How long to wait before trying again: capped exponential backoff with jitter.

Job retries, and every background loop that waits for a database to come back (job workers, the
live poller), pause by this one rule, with the store's source of randomness.

>>> backoff(3, rand=lambda: 1.0)
4.0
"""

from __future__ import annotations

from collections.abc import Callable

#: A source of floats in [0, 1) (the store's ``random``; a fixed one in tests).
Rand = Callable[[], float]


def backoff(attempts: int, *, base: float = 1.0, cap: float = 60.0, rand: Rand) -> float:
    """Seconds before retry number ``attempts``: ``min(cap, base * 2**(attempts-1)) * (0.5 + rand()/2)``.

    Args:
        attempts: attempts made so far (1 after the first failure).
        base: the first delay before jitter. cap: the largest delay before jitter.
        rand: a source of floats in [0, 1) (inject a fixed one in tests).

    >>> [backoff(n, rand=lambda: 0.0) for n in (1, 2, 3, 8)]
    [0.5, 1.0, 2.0, 30.0]
    """
    exponent = min(max(attempts - 1, 0), 62)
    return min(cap, base * 2.0**exponent) * (0.5 + rand() / 2)
