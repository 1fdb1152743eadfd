"""Unit of work benchmark: 2,000 tracked changes saved at once, vs the same writes one by one, vs raw SQL.

Run from the repository root::

    .venv/bin/python benchmarks/bench_session.py                 # SQLite, 5 runs
    .venv/bin/python benchmarks/bench_session.py --postgres      # also on a local PostgreSQL server

The store holds 20,000 versioned documents (``{"id", "name", "n", "tags", "rev"}``, an index on
``$.n``). The changes: 1,600 documents get a new ``n`` (one member), 200 new documents, 200
deletes, 2,000 in all. Contenders, each on a fresh copy of the same store:

- **session**: ``s.save()`` of the staged changes (staging, which validates each document, is not
  timed; it is shown on its own line): version-checked, one statement per changed document (its
  changed member alone on SQLite), the new ones in one batch, all in one transaction;
- **one by one**: ``patch`` (a merge patch of the one member), ``insert`` and ``delete`` of the
  same documents, each its own transaction (what a loop over the store's calls does);
- **one by one, one transaction**: the same calls inside ``store.transaction()``;
- **raw SQL** (the floor): the new document texts precomputed (``orjson``), then one transaction
  of ``executemany`` UPDATE (whole documents, no version check), INSERT and DELETE on the same
  table through the driver (sqlite3; psycopg on PostgreSQL), no validation, no change log.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure, print_machine, print_table

import jarenlab as jl

DOCS = 20_000
UPDATES, INSERTS, DELETES = 1_600, 200, 200
MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "items": {
            "schema": {
                "type": "object",
                "required": ["id", "rev"],
                "properties": {
                    "id": {"type": "integer"},
                    "name": {"type": "string"},
                    "n": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "rev": {"type": "integer"},
                },
            },
            "key": "/id",
            "version": "/rev",
            "indexes": [{"name": "by_n", "path": "$.n"}],
        }
    },
}


def documents() -> list[dict[str, Any]]:
    return [{"id": i, "name": f"item {i}", "n": i % 97, "tags": ["a", "b"], "rev": 1} for i in range(DOCS)]


def changes() -> tuple[list[int], list[dict[str, Any]], list[int]]:
    """Keys to update (every 12th), new documents, keys to delete (every 100th, offset 5)."""
    updated = list(range(0, DOCS, DOCS // UPDATES))[:UPDATES]
    new = [{"id": DOCS + i, "name": f"new {i}", "n": i, "tags": [], "rev": 1} for i in range(INSERTS)]
    deleted = list(range(5, DOCS, DOCS // DELETES))[:DELETES]
    return updated, new, deleted


class Place:
    """Where fresh stores come from: a SQLite template file copied per run, or a PostgreSQL
    schema cloned per run."""

    def __init__(self, server: Any = None) -> None:
        self.server = server
        self.tmp = Path(tempfile.mkdtemp(prefix="jl-bench-session-"))
        self.runs = 0
        if server is None:
            template = self.tmp / "template.db"
            with jl.open(template, MODEL) as store:
                store["items"].insert_many(documents())
            self.template = template

    def fresh(self) -> jl.Store:
        self.runs += 1
        if self.server is None:
            target = self.tmp / f"run{self.runs}.db"
            shutil.copy(self.template, target)
            return jl.open(target)
        store = jl.open(self.server.url(), MODEL, schema=f"run{self.runs}")
        store["items"].insert_many(documents())
        return store

    def raw(self, store: jl.Store) -> tuple[Any, str]:
        """A plain driver connection on the store's table, and its placeholder."""
        if self.server is None:
            path = store.path
            store.close()
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            return conn, "?"
        import psycopg

        schema = f"run{self.runs}"
        store.close()
        conn = psycopg.connect(self.server.url(), autocommit=True)
        conn.execute(f'SET search_path TO "{schema}"')
        return conn, "%s"


def staged(store: jl.Store) -> Any:
    updated, new, deleted = changes()
    s = store.session()
    for key in updated:
        doc = s.get("items", key)
        s.put("items", {**doc, "n": doc["n"] + 1000})
    for doc in new:
        s.add("items", doc)
    for key in deleted:
        s.get("items", key)
        s.remove("items", key)
    return s


def one_by_one(store: jl.Store) -> None:
    updated, new, deleted = changes()
    items = store["items"]
    for key in updated:
        items.patch(key, {"n": key % 97 + 1000})
    for doc in new:
        items.insert(doc)
    for key in deleted:
        items.delete(key)


def raw_sql(arg: tuple[Any, str, list[tuple[str, int]], list[tuple[int, str]], list[tuple[int]]]) -> None:
    conn, mark, updates, inserts, deletes = arg
    cur = conn.cursor()
    cur.execute("BEGIN IMMEDIATE" if mark == "?" else "BEGIN")
    cur.executemany(f"UPDATE items SET doc = {mark} WHERE key = {mark}", updates)
    cur.executemany(f"INSERT INTO items(key, doc) VALUES ({mark}, {mark})", inserts)
    cur.executemany(f"DELETE FROM items WHERE key = {mark}", deletes)
    cur.execute("COMMIT")


def raw_setup(place: Place) -> Callable[[], Any]:
    def setup() -> Any:
        store = place.fresh()
        updated, new, deleted = changes()
        docs = {k: store["items"].get(k) for k in updated}
        updates = [(orjson.dumps({**docs[k], "n": docs[k]["n"] + 1000}).decode(), k) for k in updated]
        inserts = [(d["id"], orjson.dumps(d).decode()) for d in new]
        conn, mark = place.raw(store)
        return conn, mark, updates, inserts, [(k,) for k in deleted]

    return setup


def run(place: Place, runs: int, title: str) -> None:
    opened: list[jl.Store] = []

    def fresh() -> jl.Store:
        store = place.fresh()
        opened.append(store)
        return store

    def session_setup() -> Any:
        return staged(fresh())

    def in_one(store: jl.Store) -> None:
        with store.transaction():
            one_by_one(store)

    staging = measure(lambda store: staged(store).close(), runs=runs, setup=fresh)
    rows = [
        Row(
            "raw SQL: executemany, one transaction",
            measure(raw_sql, runs=runs, setup=raw_setup(place)),
            floor=True,
        ),
        Row("session: s.save()", measure(lambda s: s.save(), runs=runs, setup=session_setup)),
        Row("one by one: patch/insert/delete", measure(one_by_one, runs=runs, setup=fresh)),
        Row("one by one, one transaction", measure(in_one, runs=runs, setup=fresh)),
        Row("(session staging: get + put/add/remove, untimed above)", staging),
    ]
    for store in opened:
        if not store.closed:
            store.close()
    print_table(f"{title}: 2,000 tracked changes over {DOCS:,} documents", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--postgres", action="store_true", help="also on a local PostgreSQL server")
    args = parser.parse_args()
    print_machine()
    run(Place(), args.runs, "SQLite")
    if args.postgres:
        from jarenlab.backends.postgres.server import LocalServer

        server = LocalServer().start()
        try:
            run(Place(server), args.runs, "PostgreSQL")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
