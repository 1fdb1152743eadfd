"""What counts as a count, a duration or a time when a caller passes one: the one test of each.

Every call that takes such an argument asks these predicates and raises its own coded error (the
code and wording belong to the call). ``bool`` is never a number here, although Python says it is
an ``int``: ``limit=True`` is a mistake, not 1.

>>> is_count(3), is_count(True), is_count(-1), is_count(0, least=1)
(True, False, False, False)
>>> is_flag(True), is_flag("yes")
(True, False)
>>> is_seconds(0.5), is_seconds(float("inf")), is_seconds(float("nan"))
(True, False, False)
"""

from __future__ import annotations

import math
from typing import Any


def is_count(value: Any, *, least: int = 0) -> bool:
    """True for an ``int`` (not a ``bool``) of at least ``least``.

    >>> is_count(2, least=1), is_count(2.0)
    (True, False)
    """
    return type(value) is int and value >= least


def is_flag(value: Any) -> bool:
    """True for ``True`` or ``False`` only: a switch such as ``flatten=`` (``"x"``, ``1`` or ``None``
    would pass Python's truth test and switch it silently).

    >>> is_flag(False), is_flag(1), is_flag("no")
    (True, False, False)
    """
    return type(value) is bool


def is_progress(value: Any) -> bool:
    """True for ``True``, ``False`` or ``None``: a ``progress=`` (None: a bar from the call's own
    threshold; ``"no"`` would pass as true).

    >>> is_progress(None), is_progress(False), is_progress("no")
    (True, True, False)
    """
    return value is None or is_flag(value)


def is_seconds(value: Any) -> bool:
    """True for a finite ``int`` or ``float`` (not a ``bool``) >= 0: a timeout, a poll interval.

    >>> is_seconds(0), is_seconds(-1), is_seconds(10**400)
    (True, False, False)
    """
    return _is_finite(value) and value >= 0


def is_number(value: Any) -> bool:
    """True for a finite ``int`` or ``float`` (not a ``bool``): epoch seconds, for instance.

    >>> is_number(1.7e9), is_number(True), is_number(float("-inf")), is_number(-(10**400))
    (True, False, False, False)
    """
    return _is_finite(value)


def _is_finite(value: Any) -> bool:
    """A real number that a float can hold (an int too large for one is not: callers use floats)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False
