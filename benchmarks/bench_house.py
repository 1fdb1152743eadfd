"""What the shape of the house costs: ``import jarenlab`` and the planner's cache-hit path.

``python benchmarks/bench_house.py [--tree PATH ...]``: for each source tree (default: this one),
times ``import jarenlab`` in a fresh interpreter (``-X importtime``'s cumulative figure, many rounds,
trees interleaved) and a repeated query answered from the statement cache (an empty result by
index on 20,000 documents, the median of 3,001 calls, in 5 processes) beside the same statement in raw ``sqlite3``:
the difference is the planning and binding overhead. Pass an earlier checkout with ``--tree`` to
compare a change of the package's layout with what it replaced.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from common import print_machine

HERE = Path(__file__).resolve().parent.parent

CACHE_HIT = """
import sqlite3, statistics, tempfile, time, os
import jarenlab as jl
from jarenlab import it
model = {"$model": "0.1", "collections": {"docs": {"key": "/id", "schema": {"type": "object",
    "required": ["id", "g"], "properties": {"id": {"type": "integer"}, "g": {"type": "string"}}},
    "indexes": [{"name": "by_g", "path": "$.g"}]}}}
folder = tempfile.mkdtemp()
store = jl.open(os.path.join(folder, "h.db"), model)
store["docs"].insert_many([{"id": i, "g": f"g{i % 50}"} for i in range(20000)])
q = store["docs"].where(it.g == "zz")
q.to_list()
def median(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter(); fn(); out.append(time.perf_counter() - t)
    return statistics.median(out)
hit = median(q.to_list, 3001)
conn = sqlite3.connect(os.path.join(folder, "h.db"))
bare = median(lambda: conn.execute('SELECT doc FROM "docs" WHERE gx_g = ? ORDER BY rowid', ("zz",)).fetchall(), 3001)
print(hit * 1e6, bare * 1e6)
store.close()
"""


def import_ms(tree: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = (
        subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import jarenlab"],
            capture_output=True,
            text=True,
            env=env,
            cwd="/",
            check=True,
        )
        .stderr.strip()
        .splitlines()[-1]
    )
    return int(out.split("|")[1]) / 1000


def cache_hit(tree: Path) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", CACHE_HIT], capture_output=True, text=True, env=env, cwd="/", check=True
    )
    hit, bare = map(float, out.stdout.split())
    return hit, bare


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", action="append", type=Path, help="another source tree to compare")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    trees = [HERE, *(args.tree or [])]
    print_machine()
    imports: dict[Path, list[float]] = {t: [] for t in trees}
    for _ in range(args.rounds):
        for tree in trees:
            imports[tree].append(import_ms(tree))
    hits: dict[Path, list[tuple[float, float]]] = {t: [] for t in trees}
    for _ in range(5):  # processes interleaved: a busy moment hits every tree alike
        for tree in trees:
            hits[tree].append(cache_hit(tree))
    print(
        "| tree | import jarenlab ms (min / median) | cache hit us (min / median) | raw sqlite3 us | overhead us |"
    )
    print("|---|---|---|---|---|")
    for tree in trees:
        hit = [h for h, _ in hits[tree]]
        bare = min(b for _, b in hits[tree])
        print(
            f"| {tree} | {min(imports[tree]):.1f} / {statistics.median(imports[tree]):.1f} "
            f"| {min(hit):.1f} / {statistics.median(hit):.1f} | {bare:.1f} | {min(hit) - bare:.1f} |"
        )


if __name__ == "__main__":
    main()
