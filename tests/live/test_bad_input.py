"""Bad input to a live query's own calls: found by an outside trial, left for the live room.

Each case is a strict xfail with the reason: the fix belongs in ``jarenlab/live/``, which other
work holds now; when it lands the xfail turns into a failure and is removed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import jarenlab as jl
from jarenlab import it, param

from .conftest import MODEL


def _bind_a_number(items: Any) -> Any:
    return items.where(it.n > param("lo")).live(lo=1).bind(lo=5)


def _columns_yes(items: Any) -> Any:
    return items.where(it.n > 0).live(columns="yes")


def _reported(call: Callable[[Any], Any], reason: str) -> Any:
    return pytest.param(call, marks=pytest.mark.xfail(strict=True, reason=reason), id=call.__name__)


@pytest.mark.parametrize(
    "call",
    [
        _reported(
            _bind_a_number,
            "live.bind(lo=5) raises AttributeError ('int' object has no attribute 'observe'): bind() "
            "should refuse a value that is not a control with a coded error (jarenlab/live/)",
        ),
        _reported(
            _columns_yes,
            "live(columns='yes') is accepted as true: columns= should be True, False or None, else "
            "JD0006, as the store's options are (jarenlab/live/)",
        ),
    ],
)
def test_bad_input_is_a_coded_error(open_store: Any, call: Callable[[Any], Any]) -> None:
    items = open_store(MODEL)["items"]
    with pytest.raises(jl.JarenlabError):
        call(items)
