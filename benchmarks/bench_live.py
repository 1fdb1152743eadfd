"""Live queries: one write then the live update, against one write then re-running the query.

At 10k and 100k flights-like documents, for a window (``where origin == $o``, ``order by
dep_delay desc``, ``take 10``, the DESIGN's example) and a whole-query accumulator (``$max``),
each timed case is ``put`` of one random document (with the live update delivered inside the
commit) versus the same ``put`` followed by a fresh run of the query. Prints medians and ratios;
bars: 20x at 10k, 100x at 100k. Then the re-seed of ``set_externals`` at 100k, from the planner's
narrowed candidates against every document.

    .venv/bin/python benchmarks/bench_live.py [--runs 41]
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

from common import print_machine

import jarenlab as jl
from jarenlab.query.planner.run import run_query

MODEL = {
    "$model": "0.1",
    "collections": {
        "flights": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "integer"},
                    "origin": {"type": "string"},
                    "dep_delay": {"type": "integer"},
                },
            },
            "key": "/id",
        }
    },
}
WINDOW = {
    "$subsequence": [
        {
            "$for": {"f": "$[*]"},
            "$where": {"$eq": ["$f.origin", "$o"]},
            "$orderby": {"$key": "$f.dep_delay", "$dir": "desc"},
            "$return": {"id": "$f.id", "carrier": "$f.carrier", "dep_delay": "$f.dep_delay"},
        },
        0,
        10,
    ]
}
MAX = {"$max": "$[*].dep_delay"}


def _doc(i: int, rng: random.Random) -> dict[str, Any]:
    return {
        "id": i,
        "origin": rng.choice(["JFK", "LGA", "EWR"]),
        "dep_delay": rng.randrange(-20, 400),
        "carrier": rng.choice(["UA", "AA", "B6", "DL"]),
        "flight": rng.randrange(1, 3000),
    }


def _fresh(coll: Any, document: Any, externals: dict[str, Any]) -> list[Any]:
    """A fresh run's flat result sequence (what ``live.rows`` holds)."""
    return run_query(coll, document, externals, profile=coll.store.profile)[0]


def bench(n: int, document: Any, runs: int) -> tuple[float, float]:
    rng = random.Random(n)
    with jl.open(model=MODEL) as store:
        coll = store["flights"]
        coll.insert_many([_doc(i, rng) for i in range(n)], progress=False)
        externals = {"o": "JFK"} if "$subsequence" in document else {}
        live_t, rerun_t = [], []
        live = coll.live(document, **externals)
        for _ in range(runs):
            doc = _doc(rng.randrange(n), rng)
            t = time.perf_counter()
            coll.put(doc)  # the live update is delivered inside this call
            live_t.append(time.perf_counter() - t)
        # integer keys: storage order is key order, so the engine's ties agree with the window's
        assert live.rows == _fresh(coll, document, externals), "live result differs from a fresh run"
        live.close()
        for _ in range(max(runs // 4, 5)):
            doc = _doc(rng.randrange(n), rng)
            t = time.perf_counter()
            coll.put(doc)
            _fresh(coll, document, externals)
            rerun_t.append(time.perf_counter() - t)
    return statistics.median(live_t), statistics.median(rerun_t)


SELECTIVE = {
    "$subsequence": [
        {
            "$for": {"f": "$[*]"},
            "$where": {"$gt": ["$f.dep_delay", "$min"]},
            "$orderby": {"$key": "$f.dep_delay", "$dir": "desc"},
            "$return": "$f",
        },
        0,
        10,
    ]
}


def bench_reseed(n: int, runs: int) -> list[tuple[str, float, float]]:
    """``set_externals`` (a re-seed) from the planner's narrowed candidates against every document.

    With an index on ``(origin, dep_delay)``; ``origin == $o`` keeps a third of the rows (all of
    them maintained by the window), ``dep_delay > $min`` a few hundred (no index has it first).
    """
    import copy

    import jarenlab.live.live as live_module

    model = copy.deepcopy(MODEL)
    model["collections"]["flights"]["indexes"] = [{"name": "by_od", "path": ["$.origin", "$.dep_delay"]}]
    rng = random.Random(n)
    narrowed = live_module.narrowed_rows
    out = []
    with jl.open(model=model) as store:
        coll = store["flights"]
        coll.insert_many([_doc(i, rng) for i in range(n)], progress=False)
        cases = (
            ("origin == $o", WINDOW, "o", ["JFK", "LGA", "EWR"]),
            ("dep_delay > $min", SELECTIVE, "min", [395, 390]),
        )
        for label, document, name, values in cases:
            times = {}
            for how in ("narrowed", "every document"):
                live_module.narrowed_rows = narrowed if how == "narrowed" else (lambda *a: None)  # type: ignore[assignment]
                live = coll.live(document, **{name: values[0]})
                t = []
                for i in range(runs):
                    start = time.perf_counter()
                    live.set_externals(**{name: values[(i + 1) % len(values)]})
                    t.append(time.perf_counter() - start)
                assert live.rows == _fresh(coll, document, live.externals), "live result differs"
                live.close()
                times[how] = statistics.median(t)
            live_module.narrowed_rows = narrowed
            out.append((label, times["narrowed"], times["every document"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=41)
    args = parser.parse_args()
    print_machine()
    print(f"{'query':<12} {'docs':>8} {'write+live':>12} {'write+rerun':>12} {'ratio':>8}  bar")
    for name, document in (("window", WINDOW), ("max", MAX)):
        for n, bar in ((10_000, 20), (100_000, 100)):
            live, rerun = bench(n, document, args.runs)
            ratio = rerun / live
            mark = "ok" if ratio >= bar else "MISSED"
            print(
                f"{name:<12} {n:>8,} {live * 1e3:>10.3f}ms {rerun * 1e3:>10.1f}ms {ratio:>7.0f}x  {bar}x {mark}"
            )
    n = 100_000
    print(f"\nre-seed (set_externals), {n:,} docs, median of 5")
    print(f"{'query':<20} {'narrowed':>10} {'every doc':>10}")
    for label, narrow, full in bench_reseed(n, 5):
        print(f"{label:<20} {narrow * 1e3:>8.1f}ms {full * 1e3:>8.1f}ms")


if __name__ == "__main__":
    main()
