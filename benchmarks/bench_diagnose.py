"""What schema-aware checking costs: nothing on a statement-cache hit, a little once per statement.

A store holds 20,000 typed documents (SQLite file, indexed ``symbol``). Each round times, in turns:

- raw ``sqlite3`` running the same indexed SELECT (the floor);
- the same builder query, repeated (a statement-cache hit), on stores opened with ``checks="default"``
  and with ``checks="off"``: checking adds nothing when the findings are already in the cache entry;
- the same query with the symbol as an external (``param("s")``), ``checks="default"`` and ``"off"``:
  a comparison with an external is checked when its value is bound (one test of the value's kind);
- a repeated query WITH a finding (`symbol != 5`, an always-true `!=`: a warning, filtered to "ignore"
  so no output is timed; the same rows come back);
- ``diagnose()`` alone on the document (what a cache miss pays once), next to ``compile_query``.

Run: ``python benchmarks/bench_diagnose.py`` (a minute on the shared machine).
"""

from __future__ import annotations

import sqlite3
import warnings
from typing import Any

from common import Row, measure_rounds, print_machine, print_table

import jarenlab as jl
from jarenlab import it, param
from jarenlab.query.lang.engine import compile_query
from jarenlab.query.planner.diagnose import diagnose

N = 20_000
LOOPS = 200
RUNS = 25

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "prices": {
            "schema": {
                "type": "object",
                "required": ["symbol", "close"],
                "properties": {
                    "symbol": {"type": "string"},
                    "close": {"type": "number"},
                    "volume": {"type": "integer"},
                },
            },
            "key": None,
            "identity": "integer",
            "indexes": [{"name": "by_symbol", "path": "$.symbol"}],
        }
    },
}


def main() -> None:
    print_machine()
    rows = [{"symbol": f"S{i % 500:03d}", "close": i / 7, "volume": i} for i in range(N)]
    default = jl.open(model=MODEL)
    off = jl.open(model=MODEL, checks="off")
    for store in (default, off):
        store["prices"].insert_many(rows)
    clean = default["prices"].where(it.symbol == "S007").select(it.close)
    clean_off = off["prices"].where(it.symbol == "S007").select(it.close)
    flagged = default["prices"].where((it.symbol == "S007") & (it.symbol != 5)).select(it.close)
    bound = default["prices"].where(it.symbol == param("s")).select(it.close)
    bound_off = off["prices"].where(it.symbol == param("s")).select(it.close)
    warnings.simplefilter("ignore", jl.QueryWarning)
    for q in (clean, clean_off, flagged):
        q.to_list()  # prepared once: every timed call is a cache hit
    for q in (bound, bound_off):
        q.to_list(s="S007")
    raw = sqlite3.connect(default.path)
    sql = "SELECT json_extract(doc, '$.close') FROM \"prices\" WHERE gx_symbol = ?"
    assert len(raw.execute(sql, ("S007",)).fetchall()) == len(clean.to_list()) == N // 500

    def loop(fn: Any) -> Any:
        return lambda _: [fn() for _ in range(LOOPS)]

    document = flagged.document
    schema = MODEL["collections"]["prices"]["schema"]
    times = measure_rounds(
        {
            "raw sqlite3 (floor)": (loop(lambda: raw.execute(sql, ("S007",)).fetchall()), None),
            "jarenlab, checks='default' (cache hit)": (loop(clean.to_list), None),
            "jarenlab, checks='off' (cache hit)": (loop(clean_off.to_list), None),
            "jarenlab, param('s'), checks='default' (cache hit)": (
                loop(lambda: bound.to_list(s="S007")),
                None,
            ),
            "jarenlab, param('s'), checks='off' (cache hit)": (
                loop(lambda: bound_off.to_list(s="S007")),
                None,
            ),
            "jarenlab, a warning finding (cache hit)": (loop(flagged.to_list), None),
            "diagnose() alone (a cache miss pays it once)": (loop(lambda: diagnose(document, schema)), None),
            "compile_query() alone (for scale)": (loop(lambda: compile_query(document)), None),
        },
        runs=RUNS,
    )
    names = list(times)
    table = [Row(names[0], times[names[0]], floor=True)]
    table += [Row(n, times[n], note=f"{LOOPS} calls") for n in names[1:]]
    print_table(f"{LOOPS} repeated queries over {N:,} documents (20 rows each)", table)
    per = {n: sorted(t)[len(t) // 2] / LOOPS * 1e6 for n, t in times.items()}
    print("\nper call (us): " + ", ".join(f"{n}: {v:.1f}" for n, v in per.items()))
    for what, on, off_ in (
        ("checking", names[1], names[2]),
        ("checking a bound external", names[3], names[4]),
    ):
        hit, hit_off = per[on], per[off_]
        print(f"{what} on a cache hit: {hit - hit_off:+.1f} us per query ({(hit / hit_off - 1) * 100:+.1f}%)")
    default.close()
    off.close()


if __name__ == "__main__":
    main()
