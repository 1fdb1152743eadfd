"""The builder's ``.dt`` accessor, ``any``/``all`` and ``isin``: the documents they build and their answers."""

from __future__ import annotations

from datetime import timedelta

import pytest

from jarenlab.errors import QueryError
from jarenlab.query import agg, it, param, win
from jarenlab.query.build.builder import _Docs

FLIGHTS = _Docs(
    [
        {"id": 1, "t": "2013-01-01T05:00:00Z", "legs": [{"d": 5}, {"d": 40}], "c": "AA"},
        {"id": 2, "t": "2013-01-01T06:30:00Z", "legs": [], "c": "UA"},
        {"id": 3, "t": "2013-01-02T05:15:00-05:00", "legs": [{"d": 1}], "c": "B6"},
    ]
)


def test_parts_and_truncation() -> None:
    assert FLIGHTS.select(it.t.dt.hour).to_list() == [5, 6, 10]
    assert FLIGHTS.select(it.t.dt.weekday).to_list() == [2, 2, 3]
    assert FLIGHTS.select(it.t.dt.trunc("day")).to_list() == [
        "2013-01-01T00:00:00Z",
        "2013-01-01T00:00:00Z",
        "2013-01-02T00:00:00Z",
    ]
    assert FLIGHTS.select(it.t.dt.epoch).first() == 1357016400000
    assert FLIGHTS.select(it.t.dt.bucket("PT2H")).to_list()[1] == "2013-01-01T06:00:00Z"


def test_adding_and_subtracting_durations() -> None:
    assert FLIGHTS.select(it.t.dt + "PT30M").first() == "2013-01-01T05:30:00Z"
    assert FLIGHTS.select(it.t.dt - "PT30M").first() == "2013-01-01T04:30:00Z"
    assert FLIGHTS.select(it.t.dt - "-PT30M").first() == "2013-01-01T05:30:00Z"
    assert FLIGHTS.select(it.t.dt + timedelta(days=31)).first() == "2013-02-01T05:00:00Z"
    assert FLIGHTS.select(it.t.dt.add("P1M")).first() == "2013-02-01T05:00:00Z"
    d = it.t.dt.diff("2013-01-02T00:00:00Z", "hour")
    assert FLIGHTS.select(d).to_list() == [19, 18, -10]


def test_grouping_by_hour_of_day() -> None:
    q = FLIGHTS.group_by(h=it.t.dt.hour).order_by(param("h")).select({"h": param("h"), "n": agg.count()})
    assert q.to_list() == [{"h": 5, "n": 1}, {"h": 6, "n": 1}, {"h": 10, "n": 1}]


def test_bad_units_and_durations_are_coded() -> None:
    with pytest.raises(QueryError) as info:
        it.t.dt.trunc("decade")
    assert info.value.code == "JQ0020"
    with pytest.raises(QueryError) as info:
        it.t.dt.part("dow")
    assert info.value.code == "JQ0020"
    with pytest.raises(QueryError) as info:
        it.t.dt - it.u
    assert info.value.code == "JQ2010"
    with pytest.raises(QueryError) as info:
        FLIGHTS.select(it.t.dt + "30 minutes").to_list()
    assert info.value.code == "JQ2021"
    with pytest.raises(QueryError) as info:
        FLIGHTS.select(it.c.dt.year).to_list()
    assert info.value.code == "JQ2020"


def test_any_and_all() -> None:
    assert FLIGHTS.where(it.legs.any(lambda leg: leg.d > 30)).select(it.id).to_list() == [1]
    assert FLIGHTS.where(it.legs.all(lambda leg: leg.d < 10)).select(it.id).to_list() == [2, 3]
    assert FLIGHTS.where(it.legs.any()).select(it.id).to_list() == [1, 3]
    assert FLIGHTS.where(~it.legs.any()).select(it.id).to_list() == [2]
    nested = it.legs.any(lambda leg: leg.d.isin([1, 5]))
    assert nested.document == {
        "$some": {"leg": "$it.legs[*]", "$satisfies": {"$eq": ["$leg.d", {"$seq": [1, 5]}]}}
    }
    with pytest.raises(QueryError):
        it.legs.any(3)


def test_isin_a_list_and_a_param() -> None:
    assert FLIGHTS.where(it.c.isin(["AA", "B6"])).select(it.id).to_list() == [1, 3]
    assert FLIGHTS.where(it.c.isin(param("cs"))).select(it.id).to_list(cs=["UA"]) == [2]
    assert FLIGHTS.where(it.c.isin([])).count() == 0


def test_window_top_n_per_group_and_running_sums() -> None:
    src = _Docs([{"c": "a", "d": 5}, {"c": "a", "d": 9}, {"c": "b", "d": 1}, {"c": "a", "d": 9}, {"c": "b"}])
    ranked = src.window(partition=it.c, order_by=it.d.desc(), rk=win.rank(), rn=win.row_number())
    assert ranked.select([it.rk, it.rn]).to_list() == [[3, 3], [1, 1], [1, 1], [1, 2], [2, 2]]
    top = ranked.where(it.rn <= 2).order_by(it.c, it.rn).select({"c": it.c, "d": it.d})
    assert top.to_list() == [{"c": "a", "d": 9}, {"c": "a", "d": 9}, {"c": "b", "d": 1}, {"c": "b"}]
    run = src.where(it.d.exists()).window(order_by=it.d, s=win.sum(it.d), m=win.avg(it.d, frame=(-1, 0)))
    assert run.select([it.d, it.s, it.m]).to_list() == [[5, 6, 3.0], [9, 15, 7.0], [1, 1, 1.0], [9, 24, 9.0]]
    assert src.window(order_by=it.d, p=win.lag(it.d, 1, 0)).select(it.p).to_list()[:2] == [1, 5]
    with pytest.raises(QueryError) as info:
        src.window(partition=it.c)
    assert info.value.code == "JQ0021"
