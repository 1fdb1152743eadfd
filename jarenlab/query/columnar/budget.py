"""The columns' budget: how many bytes a store's columns may hold (``jl.open(..., columns="2GB")``).

>>> parse_budget("2GB"), parse_budget("512MiB"), parse_budget(10_000), parse_budget(True)
(2000000000, 536870912, 10000, 1000000000)
"""

from __future__ import annotations

import re
from typing import Any

from jarenlab.errors import StoreError

#: The budget when ``jl.open(..., columns=True)`` or nothing is said.
DEFAULT_BUDGET = 1_000_000_000
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*")


def parse_budget(value: Any) -> int:
    """Bytes from ``"2GB"``, ``"512MiB"``, an int, or True (the default budget); JD0006 otherwise."""
    if value is True:
        return DEFAULT_BUDGET
    if type(value) is int and value > 0:
        return value
    if isinstance(value, str):
        match = _SIZE.fullmatch(value)
        if match and match[2].upper() in _UNITS and float(match[1]) > 0:
            return int(float(match[1]) * _UNITS[match[2].upper()])
    raise StoreError(
        "JD0006", f"columns is a budget of bytes such as '2GB' or 500_000_000, True or False, not {value!r}"
    )


def budget_of(value: Any) -> int | None:
    """What ``columns=`` says: None (the columnar path off) for False, else :func:`parse_budget`.

    >>> budget_of(False), budget_of("1KB")
    (None, 1000)
    """
    return None if value is False else parse_budget(value)
