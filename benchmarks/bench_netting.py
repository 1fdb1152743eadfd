"""Netting a commit's changes: ``database.net_changes`` (every commit's delivery to the live
queries) and ``database.net_states`` (the change log's, keeping the old texts), on ``--changes``
changes (a seeded mix over two collections: 60 % new keys, 25 % rewrites of a key already
touched, 15 % deletes, some of them written again, so keys move), medians of ``--runs``.

``--against FILE`` times another version of ``jarenlab/database.py`` beside this one, in turns (for
before/after: ``git show main:jarenlab/database.py > /tmp/before.py``), after checking that both
give the same nettings:

    PYTHONPATH=. .venv/bin/python benchmarks/bench_netting.py [--changes 100000] [--runs 15] [--against FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import measure_rounds, print_machine

from jarenlab.database import net_changes, net_states


def changes(n: int, seed: int = 7) -> list[tuple[Any, ...]]:
    """``n`` changes as collections record them: (collection, key, document or None, old text)."""
    rng = random.Random(seed)
    out: list[tuple[Any, ...]] = []
    touched: list[tuple[str, int]] = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.6 or not touched:
            coll, key = rng.choice("ab"), i
            touched.append((coll, key))
            out.append((coll, key, {"n": i}, None))
        elif roll < 0.85:
            coll, key = rng.choice(touched)
            out.append((coll, key, {"n": i}, '{"n":0}'))
        else:
            coll, key = rng.choice(touched)
            out.append((coll, key, None, '{"n":0}'))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--against", help="another version's jarenlab/database.py, timed beside this one")
    args = parser.parse_args()
    print_machine()
    data = changes(args.changes)
    versions: dict[str, Any] = {"": (net_changes, net_states)}
    if args.against:
        spec = importlib.util.spec_from_file_location("against", args.against)
        assert spec is not None and spec.loader is not None
        other = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(other)
        assert other.net_changes(data) == net_changes(data) and other.net_states(data) == net_states(data)
        versions = {" (against)": (other.net_changes, other.net_states), " (this)": versions[""]}
    contenders = {}
    for label, (changes_fn, states_fn) in versions.items():
        contenders[f"net_changes{label}"] = (lambda _, f=changes_fn: f(data), None)
        contenders[f"net_states{label}"] = (lambda _, f=states_fn: f(data), None)
    times = measure_rounds(contenders, runs=args.runs)
    for name, runs in times.items():
        print(f"{name:24} {args.changes:,} changes: median {statistics.median(runs) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
