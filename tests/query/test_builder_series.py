"""The builder's ``rolling`` and ``resample``: the documents they build, their answers, chaining before and
after them, coded refusals, and the planner keeping them in the engine with the reason shown."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jarenlab.errors import QueryError
from jarenlab.query import agg, it, param
from jarenlab.query.build.builder import _Docs
from jarenlab.query.lang.document import canonical
from jarenlab.query.lang.engine import evaluate
from jarenlab.query.lang.series import MAX_INTERVALS

FLIGHTS = [
    {"id": 1, "origin": "JFK", "time_hour": "2013-01-01T05:00:00Z", "dep_delay": 10},
    {"id": 2, "origin": "LGA", "time_hour": "2013-01-01T05:00:00Z", "dep_delay": -3},
    {"id": 3, "origin": "JFK", "time_hour": "2013-01-03T06:00:00Z", "dep_delay": 20},
    {"id": 4, "origin": "JFK", "time_hour": "2013-01-08T05:00:00Z", "dep_delay": 0},
    {"id": 5, "origin": "LGA", "time_hour": "2013-01-01T08:00:00Z"},
    {"id": 6, "origin": "JFK", "time_hour": "2013-01-08T06:00:00Z", "dep_delay": 5},
]
SRC = _Docs(FLIGHTS, "flights")


def test_rolling_builds_its_phrase_and_adds_members() -> None:
    q = SRC.rolling(it.time_hour, "P7D", partition=it.origin, avg7=agg.avg(it.dep_delay), n=agg.count())
    (doc,) = q.document
    spec = doc["$for"]["it"]["$rolling"]
    assert (
        spec["$time"] == "$it.time_hour" and spec["$width"] == "P7D" and spec["$partition"] == ["$it.origin"]
    )
    assert spec["$compute"] == {"avg7": {"$avg": ["$it.dep_delay"]}, "n": {"$count": ["$it"]}}
    rows = q.select({"id": it.id, "avg7": it.avg7, "n": it.n}).to_list()
    # id 4 at 01-08T05: (01-01T05, 01-08T05] holds ids 3 and 4, not id 1 (the open left edge)
    assert rows == [
        {"id": 1, "avg7": 10.0, "n": 1},
        {"id": 2, "avg7": -3.0, "n": 1},
        {"id": 3, "avg7": 15.0, "n": 2},
        {"id": 4, "avg7": 10.0, "n": 2},
        {"id": 5, "avg7": -3.0, "n": 2},
        {"id": 6, "avg7": 25 / 3, "n": 3},
    ]


def test_rolling_chains_before_and_after() -> None:
    q = (
        SRC.where(it.origin == param("o"))
        .rolling(it.time_hour, "PT25H", s=agg.sum(it.dep_delay))
        .where(it.s > 4)
        .order_by(it.s.desc())
        .select(it.id)
    )
    assert q.to_list(o="JFK") == [3, 1, 6]
    assert q.to_list(o="LGA") == []


def test_resample_fills_gaps_and_names_members_after_paths() -> None:
    q = SRC.resample(it.time_hour, "PT1H", by=it.origin, n=agg.count(), fill=0)
    (doc,) = q.document
    spec = doc["$for"]["it"]["$resample"]
    assert spec["$by"] == {"origin": "$it.origin"} and spec["$fill"] == {"$value": 0}
    assert spec["$as"] == "time_hour"
    lga = q.where(it.origin == "LGA").select([it.time_hour, it.n]).to_list()
    assert lga == [["2013-01-01T05:00:00Z", 1], ["2013-01-01T06:00:00Z", 0], ["2013-01-01T07:00:00Z", 0],
                   ["2013-01-01T08:00:00Z", 1]]  # fmt: skip
    jfk = q.where(it.origin == "JFK").to_list()
    assert len(jfk) == 7 * 24 + 2 and sum(r["n"] for r in jfk) == 4
    assert list(jfk[0]) == ["origin", "time_hour", "n"]


def test_resample_fill_rules() -> None:
    daily = {"by": {"o": it.origin}, "avg": agg.avg(it.dep_delay)}
    dropped = SRC.resample(it.time_hour, "P1D", **daily).to_list()
    assert [(r["o"], r["time_hour"][:10], r.get("avg")) for r in dropped] == [
        ("JFK", "2013-01-01", 10.0),
        ("JFK", "2013-01-03", 20.0),
        ("JFK", "2013-01-08", 2.5),
        ("LGA", "2013-01-01", -3.0),
    ]
    carried = SRC.resample(it.time_hour, "P1D", fill="previous", **daily).where(it.o == "JFK").to_list()
    assert [r["avg"] for r in carried] == [10.0, 10.0, 20.0, 20.0, 20.0, 20.0, 20.0, 2.5]
    nulls = SRC.resample(it.time_hour, "P1D", fill=None, **daily).where(it.o == "JFK").to_list()
    assert [r["avg"] for r in nulls] == [10.0, None, 20.0, None, None, None, None, 2.5]
    external = SRC.resample(it.time_hour, "P1D", fill=param("f"), **daily).where(it.o == "JFK")
    assert [r["avg"] for r in external.to_list(f=-1)][:2] == [10.0, -1]


def test_resample_origin_and_computed_keys() -> None:
    q = SRC.resample(
        it.time_hour, "PT2H", origin="2013-01-01T05:00:00Z", by={"hour": it.time_hour.dt.hour}, n=agg.count()
    )
    assert q.where(it.hour == 5).select([it.time_hour, it.n]).to_list() == [
        ["2013-01-01T05:00:00Z", 2],
        ["2013-01-08T05:00:00Z", 1],
    ]
    plain = SRC.resample(it.time_hour.dt.trunc("day"), "P1D", n=agg.count()).to_list()
    assert list(plain[0]) == ["time", "n"]


def test_builder_refusals_are_coded() -> None:
    with pytest.raises(QueryError) as e:
        SRC.rolling(it.time_hour, "P7D")
    assert e.value.code == "JQ0021"
    with pytest.raises(QueryError) as e:
        SRC.rolling(it.time_hour, "P7D", x=it.dep_delay)
    assert e.value.code == "JQ0021" and "agg.avg" in e.value.reason
    with pytest.raises(QueryError) as e:
        SRC.rolling("time_hour", "P7D", n=agg.count())
    assert e.value.code == "JQ0021"
    with pytest.raises(QueryError) as e:
        SRC.resample(it.time_hour, "PT1H", n=agg.count(), fill="zero")
    assert e.value.code == "JQ0023"
    with pytest.raises(QueryError) as e:
        SRC.resample(it.time_hour, "PT1H", by=it.origin.str.lower(), n=agg.count())
    assert e.value.code == "JQ0021" and "by={'name'" in e.value.reason
    for width, rolling in (("P1M", False), ("7D", True), ("PT0S", True)):
        q = (
            SRC.rolling(it.time_hour, width, n=agg.count())
            if rolling
            else SRC.resample(it.time_hour, width, n=agg.count())
        )
        with pytest.raises(QueryError) as e:
            q.to_list()
        assert e.value.code == "JQ0022", width


def test_canonical_form_drops_defaults_and_round_trips() -> None:
    doc = {
        "$resample": {
            "r": "$[*]",
            "$time": "$r.t",
            "$width": "PT1H",
            "$origin": "2000-01-03T00:00:00Z",
            "$by": {},
            "$fill": "drop",
            "$as": "time",
            "$compute": {"n": {"$count": "$r"}},
        }
    }
    text = canonical(doc)
    assert (
        text == '{"$resample":{"r":"$[*]","$time":"$r.t","$width":"PT1H","$compute":{"n":{"$count":["$r"]}}}}'
    )
    rolling = {
        "$rolling": {"$compute": {"s": {"$sum": ["$r.x"]}}, "$width": "P1M", "r": "$[*]", "$time": "$r.t"}
    }
    assert (
        canonical(rolling)
        == '{"$rolling":{"r":"$[*]","$time":"$r.t","$width":"P1M","$compute":{"s":{"$sum":["$r.x"]}}}}'
    )
    assert canonical(json.loads(text)) == text


def test_the_interval_limit() -> None:
    """More than a million intervals over all groups is refused before any is built; dropped gaps are
    never refused (they build at most one row per input row)."""
    doc: dict[str, Any] = {
        "$resample": {
            "r": "$[*]",
            "$time": "$r.t",
            "$width": "PT1S",
            "$by": {"g": "$r.g"},
            "$compute": {"n": {"$count": "$r"}},
            "$fill": "previous",
        }
    }
    # 500,001 intervals for g=1 and 500,000 for g=2
    rows = [
        {"g": 1, "t": "2013-01-01T00:00:00Z"},
        {"g": 1, "t": "2013-01-06T18:53:20Z"},
        {"g": 2, "t": "2013-01-01T00:00:00Z"},
        {"g": 2, "t": "2013-01-06T18:53:19Z"},
    ]
    with pytest.raises(QueryError) as e:
        evaluate(doc, rows)
    assert e.value.code == "JQ2024" and "1,000,001" in e.value.reason
    doc["$resample"]["$fill"] = "drop"
    assert len(evaluate(doc, rows)) == 4


@pytest.mark.slow
def test_exactly_a_million_intervals_are_built() -> None:
    doc = {
        "$resample": {
            "r": "$[*]",
            "$time": "$r",
            "$width": "PT1S",
            "$compute": {"n": {"$count": "$r"}},
            "$fill": {"$value": 0},
        }
    }
    out = evaluate(doc, ["2013-01-01T00:00:00Z", "2013-01-12T13:46:39Z"])
    assert len(out) == MAX_INTERVALS and out[-1] == {"time": "2013-01-12T13:46:39Z", "n": 1}
    assert sum(r["n"] for r in out) == 2 and out[1] == {"time": "2013-01-01T00:00:01Z", "n": 0}


def test_the_planner_pushes_series_sql_computes_exactly(open_store: Any) -> None:
    """A rolling float average stays in the engine (a SQL window adds floats otherwise), narrowed by
    the SQL where; a rolling count and a resample of counts run in SQL on both backends."""
    model = {
        "$model": "0.1",
        "collections": {
            "flights": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer"},
                        "origin": {"type": "string"},
                        "time_hour": {"type": "string", "format": "date-time"},
                        "dep_delay": {"type": "number"},
                    },
                    "required": ["id"],
                },
                "key": "/id",
                "indexes": [{"name": "by_origin", "path": "$.origin"}],
            }
        },
    }
    store = open_store(model)
    flights = store["flights"]
    flights.insert_many(FLIGHTS)
    q = flights.where(it.origin == "JFK").rolling(it.time_hour, "P7D", avg7=agg.avg(it.dep_delay))
    ex = q.explain()
    assert ex.mode == "set" and ex.residual["reasons"][0]["construct"] == "$avg"
    assert "origin" in ex.sql  # the where runs in SQL, narrowing what the engine reads
    assert q.select(it.avg7).to_list() == [10.0, 15.0, 10.0, 25 / 3]
    counted = flights.where(it.origin == "JFK").rolling(it.time_hour, "P7D", n7=agg.count())
    assert counted.explain().mode == "native" and "RANGE BETWEEN" in counted.explain().sql
    assert counted.to_list() == flights._run_query(counted.document, {}, pushdown=False)[0]
    r = flights.resample(it.time_hour, "P1D", by=it.origin, n=agg.count(), fill=0)
    assert r.explain().mode == "native" and "GROUP BY" in r.explain().sql
    frame = r.to_pandas()
    assert list(frame.columns) == ["origin", "time_hour", "n"] and frame["n"].sum() == 6
    assert str(frame["time_hour"].dtype) == "datetime64[ns, UTC]"
    assert r.to_list() == flights._run_query(r.document, {}, pushdown=False)[0]
