"""Store benchmark on PostgreSQL: jarenlab against the same work in hand-written psycopg SQL.

Run from the repository root::

    .venv/bin/python benchmarks/bench_postgres_store.py              # 100,000 flights
    .venv/bin/python benchmarks/bench_postgres_store.py --rows 20000 --runs 3

A throwaway server is started from the machine's PostgreSQL binaries with durability ON
(``fsync``, ``synchronous_commit``, ``full_page_writes``), as a real server runs. Both sides write
into a table of **the same physical shape** (the jarenlab ``CREATE TABLE``, its ``body jsonb``
column and the indexes of ``flights_model()``), in another schema of the same database.

1. **insert**: ``insert_many`` of the flights (validated, one transaction) against ``orjson.dumps``
   of each document and one ``executemany`` of ``INSERT (key, doc)`` in one transaction. Bar: 2.0x.
2. **get**: 1,000 random keys, one ``get`` each, against ``SELECT doc ... WHERE key = %s`` +
   ``orjson.loads``. Bar: 1.5x.
3. **export**: the whole collection to pandas against "select every doc in storage order, decode
   each, ``pd.DataFrame(list)``". Bar: 1.0x.
4. **indexed query**: origin JFK, dep_delay > 30, by dep_delay descending, take 50, against the
   hand-written SQL on the same expression index. Bar: 1.3x.

Ratios are medians of interleaved runs (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure_rounds, print_machine, print_table

import jarenlab as jl
from jarenlab import it
from jarenlab.backends.postgres import ddl
from jarenlab.backends.postgres.server import LocalServer
from jarenlab.examples import flights_frames, flights_model, frame_documents
from jarenlab.model import load_model

DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
GETS = 1_000
TAKE_SQL = (
    "SELECT doc FROM flights WHERE ((body->>'origin') COLLATE \"C\") = %s "
    "AND ((body->'dep_delay')::numeric) > %s "
    "ORDER BY ((body->'dep_delay')::numeric) DESC NULLS LAST, pos LIMIT 50"
)


def raw_table(url: str, schema: str) -> psycopg.Connection[Any]:
    """A plain connection to a schema holding the jarenlab flights table shape, empty."""
    conn = psycopg.connect(url, autocommit=True)
    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    conn.execute(f'CREATE SCHEMA "{schema}"')
    conn.execute(f'SET search_path TO "{schema}"')
    spec = load_model(flights_model()).collections["flights"]
    conn.execute(ddl.table_statement(spec))
    for _, sql in ddl.index_statements(spec):
        conn.execute(sql)
    for oid in ("json", "jsonb"):
        conn.adapters.register_loader(oid, psycopg.types.string.TextLoader)
    return conn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print_machine()
    docs = frame_documents(flights_frames()["flights"])[: args.rows]
    texts = [orjson.dumps(d).decode() for d in docs]
    keys = list(range(1, len(docs) + 1))
    with LocalServer(settings=DURABLE) as server:
        url = server.url()
        print(f"PostgreSQL server with fsync on; {len(docs):,} flights")
        model = flights_model()
        model["collections"] = {"flights": model["collections"]["flights"]}

        def fresh_store(_: Any = None) -> Any:
            store = jl.open(url, model, schema="bench")
            store.backend.execute(store.db.connection(), 'TRUNCATE "flights"')
            return store

        def jl_insert(store: Any) -> None:
            store["flights"].insert_many(docs, progress=False)
            store.close()

        def raw_insert(conn: Any) -> None:
            with conn.transaction():
                conn.cursor().executemany(
                    "INSERT INTO flights(key, doc) VALUES (%s, %s)", list(zip(keys, texts))
                )
            conn.close()

        times = measure_rounds(
            {
                "raw psycopg: orjson + executemany": (raw_insert, lambda: raw_table(url, "raw")),
                "jarenlab insert_many": (jl_insert, fresh_store),
            },
            runs=args.runs,
        )
        floor = Row(
            "raw psycopg: orjson + executemany", times["raw psycopg: orjson + executemany"], floor=True
        )
        print_table("insert", [floor, Row("jarenlab insert_many", times["jarenlab insert_many"], bar=2.0)])

        store = jl.open(url, model, schema="bench")
        flights = store["flights"]
        if flights.count() != len(docs):
            store.backend.execute(store.db.connection(), 'TRUNCATE "flights"')
            flights.insert_many(docs, progress=False)
        raw = raw_table(url, "raw")
        with raw.transaction():
            raw.cursor().executemany("INSERT INTO flights(key, doc) VALUES (%s, %s)", list(zip(keys, texts)))
        raw.execute("ANALYZE flights")
        store.backend.execute(store.db.connection(), 'ANALYZE "flights"')
        picks = random.Random(7).sample(keys, min(GETS, len(keys)))
        loads = orjson.loads

        def raw_gets(_: Any) -> None:
            for k in picks:
                loads(raw.execute("SELECT doc FROM flights WHERE key = %s", (k,)).fetchone()[0])

        def jl_gets(_: Any) -> None:
            for k in picks:
                flights.get(k)

        def raw_export(_: Any) -> None:
            pd.DataFrame([loads(r[0]) for r in raw.execute("SELECT doc FROM flights ORDER BY pos")])

        def jl_export(_: Any) -> None:
            flights.to_pandas()

        query = (
            flights.where((it.origin == "JFK") & (it.dep_delay > 30)).order_by(it.dep_delay.desc()).take(50)
        )
        expected = [loads(r[0]) for r in raw.execute(TAKE_SQL, ("JFK", 30))]
        assert query.to_list() == expected, "the pushed query and the hand-written SQL disagree"

        def raw_take(_: Any) -> None:
            [loads(r[0]) for r in raw.execute(TAKE_SQL, ("JFK", 30))]

        def jl_take(_: Any) -> None:
            query.to_list()

        for title, pair, bar in (
            ("get (1,000 random keys)", (raw_gets, jl_gets), 1.5),
            ("export to pandas", (raw_export, jl_export), 1.0),
            ("indexed filter + order + take 50", (raw_take, jl_take), 1.3),
        ):
            times = measure_rounds({"raw": (pair[0], None), "jarenlab": (pair[1], None)}, runs=args.runs)
            print_table(
                title,
                [Row("raw psycopg", times["raw"], floor=True), Row("jarenlab", times["jarenlab"], bar=bar)],
            )
        print("\nplan of the pushed query:")
        print(query.explain().to_frame().to_string())
        store.close()
        raw.close()


if __name__ == "__main__":
    main()
