"""The reference engine against a hand-written comprehension on the same query.

100k seeded flight-like documents; the query keeps JFK departures delayed more than
30 minutes, orders them by delay (descending) then flight number, and takes 20.
Both sides do the same work, including the engine's type guards (a delay must be a
number, not a bool or a string). Run: ``.venv/bin/python benchmarks/bench_engine.py``.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from jarenlab.query import compile_query, it, param
from jarenlab.query.build.builder import Query

N = 100_000
RUNS = 11
ORIGINS = ["JFK", "LGA", "EWR"]
CARRIERS = ["AA", "B6", "DL", "UA", "WN", "9E"]


def flights(n: int = N, seed: int = 13) -> list[dict[str, Any]]:
    """Seeded flight-like documents; about 2% have no departure delay."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        doc: dict[str, Any] = {
            "id": i,
            "flight": rng.randrange(1, 6000),
            "origin": rng.choice(ORIGINS),
            "carrier": rng.choice(CARRIERS),
            "distance": rng.randrange(80, 5000),
        }
        if rng.random() > 0.02:
            doc["dep_delay"] = rng.choice([rng.randrange(-20, 30), rng.randrange(-20, 300)])
        docs.append(doc)
    return docs


def by_hand(docs: list[dict[str, Any]], min_delay: int) -> list[dict[str, Any]]:
    """The same query written directly in Python."""
    hits = []
    for d in docs:
        delay = d.get("dep_delay")
        if d.get("origin") == "JFK" and type(delay) in (int, float) and delay > min_delay:
            hits.append(d)
    hits.sort(key=lambda d: d["flight"])
    hits.sort(key=lambda d: d["dep_delay"], reverse=True)
    return hits[:20]


def interleaved_ms(contenders: dict[str, Callable[[], Any]], runs: int = RUNS) -> dict[str, float]:
    """Median milliseconds of each contender, run round by round (order alternating) so load hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(runs):
        for name in names if r % 2 == 0 else reversed(names):
            t0 = time.perf_counter()
            contenders[name]()
            times[name].append((time.perf_counter() - t0) * 1000)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    docs = flights()

    class Source:
        name = "flights"

        def _run_query(self, document: Any, externals: dict[str, Any]) -> list[Any]:
            raise AssertionError("only the document is used here")

    q = (
        Query(Source())
        .where((it.origin == "JFK") & (it.dep_delay > param("min_delay")))
        .order_by(it.dep_delay.desc(), it.flight)
        .take(20)
    )
    cq = compile_query(q.document)
    engine = cq.run(docs, {"min_delay": 30})[0]
    assert engine == by_hand(docs, 30), "the engine and the comprehension disagree"
    medians = interleaved_ms(
        {"engine": lambda: cq.run(docs, {"min_delay": 30}), "hand": lambda: by_hand(docs, 30)}
    )
    t_engine, t_hand = medians["engine"], medians["hand"]
    t_compile = interleaved_ms({"compile": lambda: compile_query(q.document)})["compile"]
    print(f"documents: {len(docs)}, rows returned: {len(engine)}")
    print(f"engine (compiled once):  {t_engine:8.2f} ms  median of {RUNS}, interleaved")
    print(f"hand-written Python:     {t_hand:8.2f} ms  median of {RUNS}, interleaved")
    print(f"compile_query:           {t_compile:8.3f} ms")
    print(f"ratio engine / hand:     {t_engine / t_hand:8.2f}x")


if __name__ == "__main__":
    main()
