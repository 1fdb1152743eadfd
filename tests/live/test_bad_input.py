"""Bad input to a live query's own calls (found by an outside trial): a coded error."""

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


@pytest.mark.parametrize("call", [_bind_a_number, _columns_yes])
def test_bad_input_is_a_coded_error(open_store: Any, call: Callable[[Any], Any]) -> None:
    items = open_store(MODEL)["items"]
    with pytest.raises(jl.JarenlabError) as info:
        call(items)
    assert info.value.code == "JD0006"
