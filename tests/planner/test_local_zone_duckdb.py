"""Time truncated on a local wall clock (``it.t.dt.trunc(unit, tz=...)``, ``$date-trunc`` with a zone)
against DuckDB's ``date_trunc`` of a ``TIMESTAMPTZ`` under that zone, on SQLite and PostgreSQL: a year
of instants every 5 hours grouped per local day gives 365 buckets in Paris as in UTC (it gave 366 when
only UTC was known), with the 23- and 25-hour days at the clock changes."""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import pytest
from backend_fixtures import BACKENDS, scratch_store

from jarenlab import JarenlabError, agg, it, key

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "times": {
            "schema": {
                "type": "object",
                "required": ["id", "t"],
                "properties": {"id": {"type": "integer"}, "t": {"type": "string", "format": "date-time"}},
            },
            "key": "/id",
            "indexes": [{"name": "by_t", "path": "$.t"}],
        }
    },
}
START = dt.datetime(2013, 1, 1, 2, 30)
DOCS = [{"id": i, "t": (START + dt.timedelta(hours=5 * i)).isoformat() + "Z"} for i in range(1752)]
ZONES = ("Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe")
UNITS = ("hour", "day", "week", "month")


@pytest.fixture(scope="module", params=BACKENDS)
def times(request: pytest.FixtureRequest) -> Any:
    s = scratch_store(request.param, request, MODEL, "local_zone")
    s["times"].insert_many(DOCS)
    yield s["times"]
    s.close()


def duck_counts(zone: str, unit: str) -> list[dict[str, Any]]:
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{zone}'")
    con.execute("CREATE TABLE t (id INTEGER, ts TIMESTAMPTZ)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(d["id"], d["t"].replace("Z", "+00:00")) for d in DOCS])
    rows = con.execute(
        f"SELECT strftime(timezone('UTC', date_trunc('{unit}', ts)), '%Y-%m-%dT%H:%M:%SZ') AS k, count(*) "
        "FROM t GROUP BY 1 ORDER BY min(id)"
    ).fetchall()
    return [{"d": k, "n": n} for k, n in rows]


def test_local_truncation_agrees_with_duckdb(times: Any) -> None:
    checked = 0
    for zone in ZONES:
        for unit in UNITS:
            q = times.group_by(d=it.t.dt.trunc(unit, tz=zone)).select({"d": key("d"), "n": agg.count()})
            got = q.to_list()
            assert got == duck_counts(zone, unit), (zone, unit)
            assert got == times._run_query(q.document, {}, pushdown=False)[0], (zone, unit)
            ex = q.explain()
            assert ex.mode == "set" and any("time zone" in r["reason"] for r in ex.residual["reasons"])
            checked += 1
    assert checked == len(ZONES) * len(UNITS) == 16
    days = times.group_by(d=it.t.dt.trunc("day", tz="Europe/Paris")).select({"d": key("d"), "n": agg.count()})
    assert len(days.to_list()) == len(times.group_by(d=it.t.dt.trunc("day")).to_list()) == 365


def test_an_unknown_zone_is_a_coded_error(times: Any) -> None:
    with pytest.raises(JarenlabError) as err:
        times.select(it.t.dt.trunc("day", tz="Mars/Olympus")).to_list()
    assert err.value.code == "JQ2010" and "Mars/Olympus" in err.value.reason
    with pytest.raises(JarenlabError) as err:
        it.t.dt.trunc("day", tz=2)
    assert err.value.code == "JQ0020"
