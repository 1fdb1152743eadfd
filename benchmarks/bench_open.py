"""The first ``jl.open`` of a fresh interpreter: ``import jarenlab`` and opening a store, then the
first DataFrame export, each in a new process, against sqlite-utils opening the same file and
``import pandas`` alone.

Run from the repository root::

    .venv/bin/python benchmarks/bench_open.py --runs 7

Each run is one new interpreter that imports, opens a store file holding 1,000 documents, counts
them, and prints its own times (the process start itself is not counted). pandas and pyarrow load
on first use: a store that is opened, written and queried loads neither.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_machine

import jarenlab as jl

MODEL = {
    "$model": "0.1",
    "collections": {"t": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}
OURS = """
import json, sys, time
t0 = time.perf_counter()
import jarenlab as jl
with jl.open(sys.argv[1], json.loads(sys.argv[2])) as store:
    n = store["t"].count()
    t1 = time.perf_counter()
    loaded = "pandas" in sys.modules or "pyarrow" in sys.modules
    store["t"].to_pandas()
    t2 = time.perf_counter()
print(json.dumps({"open": t1 - t0, "frame": t2 - t1, "loaded": loaded, "n": n}))
"""
PEERS = {
    "sqlite-utils: import, open, count": """
import json, sys, time
t0 = time.perf_counter()
import sqlite_utils
db = sqlite_utils.Database(sys.argv[1])
n = db["t"].count
print(json.dumps({"open": time.perf_counter() - t0, "n": n}))
""",
    "import pandas alone": """
import json, time
t0 = time.perf_counter()
import pandas
print(json.dumps({"open": time.perf_counter() - t0}))
""",
}


def run(script: str, *args: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print_machine()
    path = Path(tempfile.mkdtemp(prefix="bench-open-")) / "lab.db"
    with jl.open(path, MODEL) as store:
        store["t"].insert_many([{"i": i} for i in range(1000)])
    times: dict[str, list[float]] = {}
    for _ in range(args.runs):
        got = run(OURS, str(path), json.dumps(MODEL))
        assert not got["loaded"] and got["n"] == 1000
        times.setdefault("jarenlab: import, jl.open, count", []).append(got["open"])
        times.setdefault("jarenlab: then the first to_pandas()", []).append(got["frame"])
        for name, script in PEERS.items():
            try:
                times.setdefault(name, []).append(run(script, str(path))["open"])
            except subprocess.CalledProcessError:
                times.pop(name, None)  # not installed here
    print(f"\n== a fresh interpreter, median of {args.runs} (ms)")
    for name, ts in times.items():
        print(f"{name:44} {statistics.median(ts) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
