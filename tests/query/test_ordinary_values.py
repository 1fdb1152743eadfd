"""Ordinary pandas values and habits: a Series, an Index or ``.unique()``'s result as a ``param``
value (as ``docs/query.md`` says, and as a literal takes them), ``key()`` outside a group-by,
``str.contains(..., na=False)``, Python's ``abs()`` and ``round()`` on an expression. Checked
against pandas on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from jarenlab import JarenlabError, agg, it, key, param

ROWS = [
    {
        "id": f"n{i}",
        "score": i * 5 % 11 - 5,
        **({"tag": ["red", "green", "blue", "ruby"][i % 4]} if i % 5 else {}),
    }
    for i in range(30)
]


@pytest.fixture
def notes(store: Any) -> Any:
    store["notes"].insert_many(ROWS)
    return store["notes"]


def test_series_index_and_unique_are_parameter_values(notes: Any) -> None:
    frame = pd.DataFrame(ROWS)
    wanted = frame.tag.dropna()[frame.tag.dropna().str.startswith("r")]
    expected = int(frame.tag.isin(wanted).sum())
    q = notes.where(it.tag.isin(param("tags")))
    for value in (wanted, pd.Index(wanted), wanted.unique(), np.asarray(wanted.unique(), dtype=object)):
        assert q.count(tags=value) == expected, type(value)
        assert notes.where(it.tag.isin(value)).count() == expected, type(value)
    scores = frame.score[frame.score > 2]
    assert notes.where(it.score.isin(param("s"))).count(s=scores) == int(frame.score.isin(scores).sum())
    with pytest.raises(JarenlabError) as err:  # a missing value in the list has no JSON form
        q.count(tags=frame.tag)
    assert err.value.code == "JQ2011"


def test_key_outside_a_group_by_names_what_key_is(notes: Any) -> None:
    for build in (
        lambda: notes.select({"day": key("day"), "n": agg.count()}),
        lambda: notes.order_by(key("day")),
        lambda: notes.group_by(t=it.tag).select({"t": key("t")}).select({"day": key("t")}),
    ):
        with pytest.raises(JarenlabError) as err:
            build()
        assert err.value.code == "JQ0006"
        assert "names a group-by key" in err.value.reason
    groups = notes.group_by(day=it.tag).select({"day": key("day"), "n": agg.count()}).to_list()
    assert sum(g["n"] for g in groups) == len(ROWS)


def test_a_key_group_by_does_not_bind_names_the_keys_it_does(notes: Any) -> None:
    """``key("zz")`` after ``group_by(it.tag)`` was JQ2006 "external $zz has no value"."""
    for build, binds in (
        (lambda: notes.group_by(it.tag).select({"t": key("zz"), "n": agg.count()}), "key('key')"),
        (lambda: notes.group_by(t=it.tag).select({"t": key("key")}), "key('t')"),
        (lambda: notes.group_by(t=it.tag, s=it.score).order_by(key("zz")), "key('t'), key('s')"),
    ):
        with pytest.raises(JarenlabError) as err:
            build()
        assert err.value.code == "JQ0006"
        assert f"names no key this group_by binds: it binds {binds}" in err.value.reason
    for name in ("", 3, "a.b", "$t", "it"):
        with pytest.raises(JarenlabError) as err:
            key(name)  # type: ignore[arg-type]
        assert err.value.code == "JQ0004"
        assert err.value.reason.startswith("key() takes the name of a key group_by binds")
        assert err.value.reason.endswith(f"not {name!r}")
    by_tag = notes.group_by(it.tag).select({"t": key("key"), "n": agg.count()}).order_by(it.n).to_list()
    assert sum(g["n"] for g in by_tag) == len(ROWS)


def test_contains_with_na_false_abs_and_round(notes: Any) -> None:
    frame = pd.DataFrame(ROWS)
    assert notes.where(it.tag.str.contains("re", na=False)).count() == int(
        frame.tag.str.contains("re", na=False).sum()
    )
    assert notes.where(it.tag.str.contains("r.", na=False)).count() == int(
        frame.tag.str.contains("r.", na=False).sum()
    )
    with pytest.raises(JarenlabError) as err:
        it.tag.str.contains("re", na=True)
    assert err.value.code == "JQ0034" and "is_empty()" in err.value.reason
    got = notes.where(abs(it.score) >= 3).order_by(it.id).select({"a": abs(it.score)}).to_list()
    kept = frame[frame.score.abs() >= 3].sort_values("id")
    assert [r["a"] for r in got] == kept.score.abs().tolist()
    with pytest.raises(JarenlabError) as err:
        round(it.score, 1)
    assert err.value.code == "JQ0034" and "it.score.round(1)" in err.value.reason
