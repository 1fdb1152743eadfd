"""Bad input to a live query's own calls: a coded error."""

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


def test_an_external_the_query_does_not_have_is_refused_when_it_goes_live(open_store: Any) -> None:
    """``live(lo=1, hi=2)`` on a query with no ``$hi`` went live and dropped hi without a word,
    though ``set_externals(hi=2)`` on the same query was JQ0005: going live refuses it the same way."""
    items = open_store(MODEL)["items"]
    q = items.where(it.n > param("lo"))
    with pytest.raises(jl.JarenlabError) as info:
        q.live(lo=1, hi=2)
    assert info.value.code == "JQ0005" and "$hi" in info.value.reason
    live = q.live(lo=1)
    with pytest.raises(jl.JarenlabError) as info:
        live.set_externals(hi=2)
    assert info.value.code == "JQ0005"
    live.close()


def test_subscribe_refuses_an_on_close_that_is_not_callable(open_store: Any) -> None:
    """``subscribe(fn, on_close="done")`` was taken, and the close then warned of a listener that
    raised TypeError ('str' object is not callable): it is JD2010, as on_error and on_state are."""
    live = open_store(MODEL)["items"].where(it.n > 0).live()
    with pytest.raises(jl.JarenlabError) as info:
        live.subscribe(lambda patch, seq: None, on_close="done")  # type: ignore[arg-type]
    assert info.value.code == "JD2010" and "on_close()" in info.value.reason
    live.close()


def test_widget_refuses_an_option_it_does_not_take(open_store: Any) -> None:
    """``widget(interval=1)`` was a TypeError from the widget's constructor (and a second
    AttributeError from its __del__): an option other than min_interval/static_interval is JD0006."""
    pytest.importorskip("anywidget")
    live = open_store(MODEL)["items"].where(it.n > 0).live()
    with pytest.raises(jl.JarenlabError) as info:
        live.widget(interval=1)
    assert info.value.code == "JD0006" and "min_interval=" in info.value.reason
    live.close()
