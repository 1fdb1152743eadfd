"""Members declared ``format: date`` and ``format: date-time`` compared with Python's and pandas'
time values, against DuckDB's date semantics (a ``DATE`` compared with a ``TIMESTAMP`` is its
midnight; a ``TIMESTAMPTZ`` an instant), on SQLite and on PostgreSQL.

A generated family: each operator, each kind of value (a midnight ``pd.Timestamp``, one with a time
of day, zoned ones, ``datetime``, ``date``, numpy ``datetime64`` in nanoseconds), as a literal and as
an external, through the planner (pushed), the reference engine over the collection
(``pushdown=False``) and DuckDB; ``isin`` lists and ``between`` likewise. A date-time without a zone
against the zoned date-time member is refused (``JQ0038``), as pandas refuses that comparison.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
from backend_fixtures import BACKENDS, scratch_store

import jarenlab as jl
from jarenlab import it, param

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "days": {
            "schema": {
                "type": "object",
                "required": ["id", "d", "t", "owner"],
                "properties": {
                    "id": {"type": "integer"},
                    "d": {"type": "string", "format": "date"},
                    "t": {"type": "string", "format": "date-time"},
                    "owner": {"type": "string"},
                },
            },
            "key": "/id",
            "owner": "/owner",
            "indexes": [{"name": "by_d", "path": "$.d"}, {"name": "by_t", "path": "$.t"}],
        }
    },
}
#: 48 rows: a day each from 2012-01-04, and an instant every 6 hours from 2012-01-13T00:00Z.
DOCS = [
    {
        "id": i,
        "d": (dt.date(2012, 1, 4) + dt.timedelta(days=i % 24)).isoformat(),
        "t": (dt.datetime(2012, 1, 13) + dt.timedelta(hours=6 * i)).isoformat() + "Z",
        "owner": "a" if i % 3 else "b",
    }
    for i in range(48)
]
UTC = dt.UTC
PARIS = "Europe/Paris"
#: Values compared with the date member ``d`` (any zone) and with ``t`` (zoned ones only).
VALUES: dict[str, Any] = {
    "Timestamp midnight": pd.Timestamp("2012-01-15"),
    "Timestamp 05:30": pd.Timestamp("2012-01-15 05:30"),
    "Timestamp UTC midnight": pd.Timestamp("2012-01-15", tz="UTC"),
    "Timestamp Paris 01:00 (midnight UTC)": pd.Timestamp("2012-01-15 01:00", tz=PARIS),
    "Timestamp Paris 00:30 (the day before)": pd.Timestamp("2012-01-15 00:30", tz=PARIS),
    "datetime midnight": dt.datetime(2012, 1, 16),
    "datetime UTC 23:00": dt.datetime(2012, 1, 16, 23, tzinfo=UTC),
    "date": dt.date(2012, 1, 17),
    "datetime64[ns] midnight": np.datetime64("2012-01-18", "ns"),
    "datetime64[ns] 12:00": np.datetime64("2012-01-18T12:00", "ns"),
}
OPS = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
SQL_OPS = {"==": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def naive(value: Any) -> bool:
    if isinstance(value, np.datetime64):
        return True
    return isinstance(value, dt.datetime) and value.tzinfo is None


def duck_value(value: Any) -> str:
    """The value as DuckDB reads it: a DATE, a TIMESTAMP (naive: UTC, the session's zone) or a
    TIMESTAMPTZ."""
    if isinstance(value, np.datetime64):
        value = pd.Timestamp(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return f"TIMESTAMP '{value.isoformat()}'"
        return f"TIMESTAMPTZ '{value.isoformat()}'"
    return f"DATE '{value.isoformat()}'"


#: The family: (member, operator, value name) for every case that compares, and the refused ones.
FAMILY = [(m, op, v) for m in ("d", "t") for op in OPS for v in VALUES]
CASES = len(FAMILY)


@pytest.fixture(scope="module", params=BACKENDS)
def days(request: pytest.FixtureRequest) -> Any:
    s = scratch_store(request.param, request, MODEL, "date_members")
    s["days"].insert_many(DOCS)
    yield s["days"]
    s.close()


@pytest.fixture(scope="module")
def duck() -> Any:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE TABLE days (id INTEGER, d DATE, t TIMESTAMPTZ)")
    con.executemany(
        "INSERT INTO days VALUES (?, ?, ?)", [(r["id"], r["d"], r["t"].replace("Z", "+00:00")) for r in DOCS]
    )
    return con


def ids(rows: list[Any]) -> list[int]:
    return sorted(r["id"] for r in rows)


def want(duck: Any, where: str) -> list[int]:
    return [r[0] for r in duck.execute(f"SELECT id FROM days WHERE {where} ORDER BY id").fetchall()]


def compare(member: str, op: str, value: Any) -> Any:
    return getattr(getattr(it, member), f"__{OPS[op]}__")(value)


def test_every_comparison_agrees_with_duckdb(days: Any, duck: Any) -> None:
    checked = refused = never = 0
    for member, op, name in FAMILY:
        value = VALUES[name]
        literal = days.where(compare(member, op, value))
        external = days.where(compare(member, op, param("v")))
        label = f"{member} {op} {name}"
        if member == "t" and naive(value):
            for run, given in ((literal.to_list, {}), (external.to_list, {"v": value})):
                with pytest.raises(jl.JarenlabError) as err:
                    run(**given)
                assert err.value.code == "JQ0038", label
                assert "tz_localize" in err.value.reason, label
            refused += 1
            continue
        expected = want(duck, f"{member} {SQL_OPS[op]} {duck_value(value)}")
        if member == "d" and op == "==" and not expected:  # an instant within a day: never a date
            with pytest.raises(jl.JarenlabError) as err:
                literal.to_list()
            assert err.value.code == "JQ0031", label
            assert ids(external.to_list(v=value)) == [], label
            never += 1
            continue
        assert ids(literal.to_list()) == expected, label
        assert ids(external.to_list(v=value)) == expected, label
        assert ids(days._run_query(literal.document, {}, pushdown=False)[0]) == expected, label
        assert literal.explain().mode == "native", label
        checked += 1
    # 5 naive values x 6 operators against t are refused; 4 values with a time of day are never a date
    assert (checked, refused, never) == (CASES - 30 - 4, 30, 4)
    assert CASES == 120


@pytest.mark.parametrize("member", ["d", "t"])
def test_isin_and_between_agree_with_duckdb(days: Any, duck: Any, member: str) -> None:
    zoned = [v for v in VALUES.values() if member == "d" or not naive(v)]
    in_sql = ", ".join(duck_value(v) for v in zoned)
    expected = want(duck, f"{member} IN ({in_sql})")
    assert expected  # the midnight values find their day
    col = getattr(it, member)
    assert ids(days.where(col.isin(zoned)).to_list()) == expected
    assert ids(days.where(col.isin(param("vs"))).to_list(vs=zoned)) == expected
    lo, hi = pd.Timestamp("2012-01-15", tz="UTC"), pd.Timestamp("2012-01-17 06:00", tz="UTC")
    if member == "d":
        lo, hi = pd.Timestamp("2012-01-15"), pd.Timestamp("2012-01-17 06:00")
    expected = want(duck, f"{member} BETWEEN {duck_value(lo)} AND {duck_value(hi)}")
    assert ids(days.where(col.between(lo, hi)).to_list()) == expected
    assert ids(days.where(col.between(param("lo"), param("hi"))).to_list(lo=lo, hi=hi)) == expected


def test_the_cars_example(days: Any, duck: Any) -> None:
    """A DataFrame's datetime64 column of dates is inferred as ``format: date``; a midnight
    Timestamp, the column's maximum and "the last 3 days" from an instant count as pandas counts."""
    frame = pd.DataFrame(
        {"Year": pd.to_datetime([r["d"] for r in DOCS]), "mpg": [float(i) for i in range(48)]}
    )
    model = jl.infer_model(frame, name="cars")
    assert model["collections"]["cars"]["schema"]["properties"]["Year"] == {
        "type": "string",
        "format": "date",
    }
    store = jl.open(model=model)
    try:
        cars = store["cars"]
        cars.insert_many(frame)
        for value in (
            pd.Timestamp("2012-01-15"),
            frame.Year.max(),
            pd.Timestamp("2012-01-20 13:45") - pd.Timedelta(days=3),
        ):
            assert cars.where(it.Year >= value).count() == int((frame.Year >= value).sum()), value
            assert cars.where(it.Year < value).count() == int((frame.Year < value).sum()), value
    finally:
        store.close()


def test_live_queries_and_owner_views_compare_dates_too(days: Any, duck: Any) -> None:
    value = pd.Timestamp("2012-01-15")
    live = days.where(it.d >= param("v")).live(v=value)
    try:
        assert ids(live.rows) == want(duck, f"d >= {duck_value(value)}")
        live.set_externals(v=np.datetime64("2012-01-20", "ns"))
        assert ids(live.rows) == want(duck, "d >= DATE '2012-01-20'")
    finally:
        live.close()
    literal = days.where(it.d <= value).live()
    try:
        assert ids(literal.rows) == want(duck, f"d <= {duck_value(value)}")
    finally:
        literal.close()
    owned = days.store.as_owner("a")["days"]
    expected = [i for i in want(duck, f"d >= {duck_value(value)}") if DOCS[i]["owner"] == "a"]
    assert ids(owned.where(it.d >= value).to_list()) == expected
    assert ids(owned.where(it.d >= param("v")).to_list(v=value)) == expected


def test_one_external_against_both_formats_is_refused(days: Any) -> None:
    q = days.where((it.d >= param("v")) & (it.t >= param("v")))
    with pytest.raises(jl.JarenlabError) as err:
        q.to_list(v=pd.Timestamp("2012-01-15", tz="UTC"))
    assert err.value.code == "JQ0038"


def test_datetime64_is_written_as_the_instant_it_is(days: Any) -> None:
    """numpy's nanosecond ``datetime64`` (what a DataFrame column holds) is stored as the date or
    date-time it stands for, never as an integer: a write, an array's items, a query value."""
    with pytest.raises(_Rollback), days.store.transaction():  # the module's store stays as loaded
        days.insert(
            {"id": 1000, "d": np.datetime64("2013-02-01", "ns"), "t": "2013-02-01T00:00:00Z", "owner": "a"}
        )
        row = days.get(1000)
        assert row is not None and row["d"] == "2013-02-01"
        array = np.array(["2013-02-02", "2013-02-03"], dtype="datetime64[ns]")
        days.insert_many(
            [{"id": 1001 + i, "d": v, "t": "2013-02-01T00:00:00Z", "owner": "a"} for i, v in enumerate(array)]
        )
        assert [days.get(k)["d"] for k in (1001, 1002)] == ["2013-02-02", "2013-02-03"]
        assert days.where(it.d >= np.datetime64("2013-02-02", "ns")).count() == 2
        assert days.where(it.d.isin(array)).count() == 2
        raise _Rollback
    assert days.get(1000) is None


class _Rollback(Exception):
    """Leaves the transaction, rolled back."""
