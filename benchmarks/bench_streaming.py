"""Peak memory of streaming a long result, on SQLite and PostgreSQL, against the drivers by hand.

Run from the repository root::

    .venv/bin/python benchmarks/bench_streaming.py               # 1,000,000 rows
    .venv/bin/python benchmarks/bench_streaming.py --rows 200000

One collection of small documents (``{"n": int, "s": str, "x": float}``) is loaded into a store on
each backend (a throwaway PostgreSQL server from the machine's binaries). Each path then reads every
row, 65,536 a batch, in a fresh process whose peak resident size (``VmHWM``) is reset just before
the read, and the growth of the peak over the resident size before it is reported:

- ``where(it.n >= 0).iter_batches()`` through jarenlab: a query matching every row, streamed by the
  planner (Arrow batches, dropped as they come; a whole collection's ``iter_batches`` reads it in
  keyset pages instead, flat on both backends before and after);
- the floor by hand: ``sqlite3`` ``fetchmany``; psycopg with a client-side cursor (``execute`` then
  ``fetchmany``: the whole answer in the driver's buffer, as jarenlab read it before); psycopg with a
  server-side cursor (``DECLARE ... WITH HOLD``, as it reads now);
- with ``--before DIR``, jarenlab's ``iter_batches`` on PostgreSQL through an earlier package
  (``git archive <commit> jarenlab | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_machine

import jarenlab as jl
from jarenlab.backends.postgres.server import LocalServer

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "rows": {
            "schema": {
                "type": "object",
                "required": ["n"],
                "properties": {"n": {"type": "integer"}, "s": {"type": "string"}, "x": {"type": "number"}},
            },
            "key": None,
            "identity": "integer",
        }
    },
}
BATCH = 65_536

_READ = """
import gc, json, sys
HOW, TARGET, SCHEMA, BATCH = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def hwm_kb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))

def reset():
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:  # a fresh peak from here
        f.write("5")
    return hwm_kb()

rows = 0
if HOW.startswith("jarenlab"):
    import jarenlab as jl
    store = jl.open(TARGET, json.loads(sys.argv[5]), **({"schema": SCHEMA} if SCHEMA else {}))
    coll = store["rows"]
    coll.count()
    base = reset()
    for batch in coll.where(jl.it.n >= 0).iter_batches(BATCH):  # (a query: the planner's stream)
        rows += batch.num_rows
elif HOW == "sqlite3":
    import sqlite3
    conn = sqlite3.connect(TARGET)
    base = reset()
    cur = conn.execute("SELECT key, doc FROM rows ORDER BY key")
    while chunk := cur.fetchmany(BATCH):
        rows += len(chunk)
else:
    import psycopg
    conn = psycopg.connect(TARGET, autocommit=True)
    conn.execute(f'SET search_path TO "{SCHEMA}"')
    base = reset()
    cur = conn.cursor(name="by_hand", withhold=True) if HOW == "psycopg server-side" else conn.cursor()
    cur.execute("SELECT key, doc FROM rows ORDER BY pos")
    while chunk := cur.fetchmany(BATCH):
        rows += len(chunk)
    cur.close()
print(json.dumps({"rows": rows, "grow_mb": (hwm_kb() - base) / 1024}))
"""


def read(how: str, target: str, schema: str, tree: str, batch: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run(
        [sys.executable, "-c", _READ, how, target, schema, str(batch), json.dumps(MODEL)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,  # (``python -c`` reads its working folder first: the tree measured)
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def docs(n: int) -> Any:
    for i in range(n):
        yield {"n": i, "s": f"row {i:07d}", "x": i / 7}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=BATCH, help="rows a batch (default 65,536)")
    parser.add_argument(
        "--before",
        metavar="DIR",
        help="also read through the jarenlab package in DIR (an earlier version, e.g. from git archive)",
    )
    args = parser.parse_args()
    print_machine()
    folder = tempfile.mkdtemp(prefix="jl-stream-")
    path = os.path.join(folder, "rows.db")
    with jl.open(path, MODEL) as store:
        store["rows"].insert_many(docs(args.rows), progress=False)
    with LocalServer() as server:
        url = server.url()
        with jl.open(url, MODEL, schema="bench") as store:
            store["rows"].insert_many(docs(args.rows), progress=False)
        paths = [
            ("jarenlab iter_batches, SQLite", "jarenlab", path, ""),
            ("sqlite3 fetchmany (by hand)", "sqlite3", path, ""),
            ("jarenlab iter_batches, PostgreSQL", "jarenlab", url, "bench"),
            ("psycopg server-side cursor (by hand)", "psycopg server-side", url, "bench"),
            ("psycopg client-side cursor (by hand)", "psycopg client-side", url, "bench"),
        ]
        here = str(Path(__file__).resolve().parents[1])
        print(
            f"\n### streaming {args.rows:,} rows, {args.batch:,} a batch: peak RSS growth (fresh process each)\n"
        )
        print("| path | rows | peak RSS growth |\n|---|---:|---:|")
        runs = [(label, how, target, schema, here) for label, how, target, schema in paths]
        if args.before:
            runs.append(
                (
                    "jarenlab iter_batches, PostgreSQL, before (--before)",
                    "jarenlab",
                    url,
                    "bench",
                    args.before,
                )
            )
        for label, how, target, schema, tree in runs:
            r = read(how, target, schema, tree, args.batch)
            print(f"| {label} | {r['rows']:,} | {r['grow_mb']:,.0f} MiB |")


if __name__ == "__main__":
    main()
