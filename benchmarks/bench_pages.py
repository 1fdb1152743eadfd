"""Keyset page latency by depth: a page of 50 at 10%, 50% and 90% of an ordering, against the same
page read by a hand-written row-value keyset query on the same database (the floor).

Run from the repository root::

    .venv/bin/python benchmarks/bench_pages.py                   # 300,000 rows
    .venv/bin/python benchmarks/bench_pages.py --rows 50000 --runs 5 --engines sqlite

One collection with an integer member ``n`` (many rows per value) and an index on it; the ordering
is ``n`` ascending and descending (ties broken by key, as pages break them). For each depth the
continuation is the one a page gave at that row; each run reads the next page of 50 with
``q.page(50, after)`` (parsed, planned, run, decoded). The floor runs the statements a page runs
(``... WHERE (n, key) > (?, ?) ORDER BY n, key LIMIT 51``; descending, ``n = ? AND key > ?`` then
``n < ?``) through the driver alone, with nothing parsed, planned or decoded. Beside them, the
statement pages ran before (the disjunction ``n > ? OR (n = ? AND key > ?) OR n IS NULL``, which no
index seeks) at the same positions. A flat row is one whose times do not grow with depth.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tempfile

from common import Row, measure_rounds, print_machine, print_table

import jarenlab as jl
from jarenlab import it
from jarenlab.query.planner.pages import planned

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "t": {
            "schema": {
                "type": "object",
                "required": ["id"],
                "properties": {
                    "id": {"type": "integer"},
                    "n": {"type": "integer"},
                    "pad": {"type": "string"},
                },
            },
            "key": "/id",
            "indexes": [{"name": "by_n", "path": "$.n"}],
        }
    },
}
LIMIT = 50


def fill(store: jl.Store, rows: int) -> None:
    step = 50_000
    for start in range(0, rows, step):
        store["t"].insert_many(
            [
                {"id": i, "n": (i * 7919) % (rows // 20 + 1), "pad": "x" * 40}
                for i in range(start, min(rows, start + step))
            ]
        )


def continuation_at(q: Any, depth: int) -> Any:
    """The continuation a page gave at row ``depth`` (walked in pages of 1,000)."""
    after = None
    seen = 0
    while seen + 1000 <= depth:
        after = q.page(1000, after).continuation
        seen += 1000
    if depth > seen:
        after = q.page(depth - seen, after).continuation
    return after


def floor_statements(store: jl.Store, q: Any, after: Any) -> list[tuple[str, list[Any]]]:
    """The floor: the statements of the page, with their values, for the driver alone."""
    got = planned(store["t"], q.document, LIMIT, after)
    return [(s.sql, s.bind(got.externals)) for s in got.statements]


def disjunction(store: jl.Store, q: Any, desc: bool, after: Any) -> tuple[str, list[Any]]:
    """The statement pages ran before: the lexicographic "after" as one disjunction, no index seek
    (``n > ? OR (n = ? AND key > ?)``; descending ``n < ?``), for the same position."""
    got = planned(store["t"], q.document, LIMIT, after)
    n, key = got.statements[0].bind(got.externals)[:2]  # the position: its first part binds (n, key)
    pg = store.backend.name != "sqlite"
    expr, mark = ("((body->'n')::numeric)", "%s") if pg else ("gx_n", "?")
    order = f"{expr} DESC NULLS LAST, key" if desc and pg else f"{expr} DESC, key" if desc else f"{expr}, key"
    sql = (
        f'SELECT key, doc, {expr} FROM "t" WHERE ({expr} {"<" if desc else ">"} {mark} OR '
        f"({expr} = {mark} AND key > {mark}) OR {expr} IS NULL) ORDER BY {order} LIMIT {LIMIT + 1}"
    )
    return sql, [n, n, key]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--engines", nargs="*", default=["sqlite", "postgresql"])
    args = parser.parse_args()
    print_machine()
    targets: list[tuple[str, dict[str, Any], Any]] = []
    if "sqlite" in args.engines:
        targets.append(("sqlite", {"path": Path(tempfile.mkdtemp(prefix="bench-pages-")) / "p.db"}, None))
    if "postgresql" in args.engines:
        from jarenlab.backends.postgres.server import LocalServer

        server = LocalServer()
        server.__enter__()
        targets.append(("postgresql", {"path": server.url(), "schema": "pages"}, server))
    for engine, target, server in targets:
        store = jl.open(model=MODEL, **target)
        fill(store, args.rows)
        if server is not None:
            store.db.connection().execute('ANALYZE "t"')
        conn = store.db.connection()
        for label, key in (("n", it.n), ("n desc", it.n.desc())):
            q = store["t"].order_by(key).select(it.id)
            contenders: dict[str, Any] = {}
            for pct in (10, 50, 90):
                after = continuation_at(q, args.rows * pct // 100)
                raw = floor_statements(store, q, after)

                def ours(_: Any, after: Any = after, q: Any = q) -> None:
                    assert len(q.page(LIMIT, after).items) == LIMIT

                def floor(_: Any, raw: Any = raw, conn: Any = conn) -> None:
                    got: list[Any] = []
                    for sql, params in raw:
                        got += conn.execute(sql, params).fetchall()
                        if len(got) > LIMIT:
                            break
                    assert len(got) > LIMIT

                before, values = disjunction(store, q, label == "n desc", after)

                def old(_: Any, before: str = before, values: Any = values, conn: Any = conn) -> None:
                    assert len(conn.execute(before, values).fetchall()) > LIMIT

                contenders[f"floor {pct}%"] = (floor, None)
                contenders[f"page {pct}%"] = (ours, None)
                contenders[f"before {pct}%"] = (old, None)
            times = measure_rounds(contenders, runs=args.runs, loops=dict.fromkeys(contenders, 20))
            rows = []
            for pct in (10, 50, 90):
                rows.append(
                    Row(f"{engine} {label}: raw keyset at {pct}%", times[f"floor {pct}%"], floor=True)
                )
                rows.append(Row(f"{engine} {label}: q.page(50) at {pct}%", times[f"page {pct}%"]))
                rows.append(Row(f"{engine} {label}: the disjunction at {pct}%", times[f"before {pct}%"]))
            floors = [rows[0]]
            print_table(
                f"{engine}, {args.rows:,} rows, order by {label}: a page of {LIMIT} by depth",
                rows,
                floors=floors,
            )
        store.close()
        if server is not None:
            server.__exit__(None, None, None)


if __name__ == "__main__":
    main()
