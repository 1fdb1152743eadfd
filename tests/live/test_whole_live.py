"""A live whole-query aggregate (the builder's ``select`` of aggregates without ``group_by``, and
the same map written by hand) follows every write exactly, on both backends: it re-runs (the
planner answers each run as a group-by without keys) and equals the engine's fresh run after
every commit, inserts, updates, deletes and rolled-back transactions among them."""

from __future__ import annotations

import random
from typing import Any

from jarenlab import agg, it, param
from tests.query.corpus import same

#: Every kind of aggregate, over typed members (``n`` integer, ``x`` number, ``g`` and ``s``
#: strings), and literals.
SELECT = {
    "n": agg.count(),
    "sum": agg.sum(it.n),
    "avg": agg.avg(it.n),
    "lo": agg.min(it.s),
    "hi": agg.max(it.n),
    "fsum": agg.sum(it.x),
    "med": agg.median(it.x),
    "sd": agg.std(it.n),
    "groups": agg.count_distinct(it.g),
    "k": "whole",
}


def _fresh(coll: Any, document: Any, externals: dict[str, Any]) -> list[Any]:
    """The engine's answer over the whole collection, as a live query's ``rows``."""
    got = coll._run_query(document, externals, pushdown=False)
    return got[0] if document and isinstance(document, list) else got


def _follows(live: Any, coll: Any, document: Any, externals: dict[str, Any]) -> None:
    want = _fresh(coll, document, externals)
    assert same(live.rows, want), (live.rows, want)


def test_a_live_whole_query_aggregate_follows_writes(store: Any) -> None:
    items = store["items"]
    q = items.where(it.n > param("m")).select(SELECT)
    live = q.live(m=0)
    seen: list[tuple[Any, int]] = []
    live.subscribe(lambda patch, seq: seen.append((patch, seq)))
    assert live.rows == [{"n": 0, "sum": 0, "fsum": 0, "groups": 0, "k": "whole"}]  # over no rows

    items.insert({"id": "a", "g": "p", "n": 3, "x": 0.1, "s": "b"})
    assert live.rows == [
        {"n": 1, "sum": 3, "avg": 3.0, "lo": "b", "hi": 3, "fsum": 0.1, "med": 0.1, "groups": 1, "k": "whole"}
    ]
    items.insert_many(
        [
            {"id": "b", "g": "q", "n": 2.0, "x": 0.2, "s": "a"},  # 2.0 in an integer member
            {"id": "c", "g": "p", "n": 9007199254740993, "x": 1e16},  # beyond 2^53
            {"id": "d", "g": "r", "n": -4, "x": 0.3, "s": "c"},  # the filter keeps it out
        ]
    )
    _follows(live, items, q.document, {"m": 0})
    assert live.rows[0]["n"] == 3 and live.rows[0]["sum"] == 9007199254740998
    emitted = len(seen)

    items.put({"id": "d", "g": "r", "n": 4, "x": 0.3, "s": "c"})  # an update that starts to match
    _follows(live, items, q.document, {"m": 0})
    items.patch("c", {"n": 1})  # an update inside the kept rows
    _follows(live, items, q.document, {"m": 0})
    items.delete("a")
    _follows(live, items, q.document, {"m": 0})
    assert len(seen) == emitted + 3

    before = live.rows
    try:
        with store.transaction():
            items.insert({"id": "e", "g": "z", "n": 100})
            items.delete("b")
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert live.rows is before and len(seen) == emitted + 3  # nothing committed, nothing emitted
    with store.transaction():
        items.insert({"id": "f", "g": "z", "n": 7, "x": -0.0, "s": "d"})
        try:
            with store.transaction():  # a savepoint rolled back inside a commit
                items.delete("c")
                raise RuntimeError("roll back the inner level")
        except RuntimeError:
            pass
    _follows(live, items, q.document, {"m": 0})
    assert live.rows[0]["n"] == 4 and len(seen) == emitted + 4  # one emission for the commit

    for key in ("b", "c", "d", "f"):
        items.delete(key)
    assert live.rows == [{"n": 0, "sum": 0, "fsum": 0, "groups": 0, "k": "whole"}]
    live.set_externals(m=-10)
    _follows(live, items, q.document, {"m": -10})
    live.close()


def test_a_hand_written_map_follows_random_writes(store: Any) -> None:
    """Another binding name than the builder's, no outer ``$for``, the map as the result: after
    each of 150 seeded random writes (puts, patches, deletes, several in one commit now and then)
    the live rows equal a fresh run."""
    items = store["items"]

    def each(path: str | None) -> dict[str, Any]:
        return {"$for": {"v": "$kept"}, "$return": "$v" + (f".{path}" if path else "")}

    document = {
        "$let": {"kept": {"$for": {"d": "$[*]"}, "$where": {"$ne": ["$d.g", "$skip"]}, "$return": "$d"}},
        "$return": {
            "rows": {"$count": [each(None)]},
            "total": {"$sum": [each("n")]},
            "mean": {"$avg": [each("x")]},
            "first": {"$min": [each("s")]},
            "kinds": {"$count": [{"$distinct": [each("g")]}]},
            "one": 1,
        },
    }
    ext = {"skip": "z"}
    live = items.live(document, **ext)
    rng = random.Random(20261206)
    values: list[Any] = [0, 1, 2, 2.0, -3, 2**53 + 1, 10**6]
    floats = [0.1, 0.2, 1e16, -0.0, 5e-324, 2.5]
    for step in range(150):
        with store.transaction():
            for _ in range(1 if rng.random() < 0.8 else 3):
                key = f"k{rng.randrange(12)}"
                roll = rng.random()
                if roll < 0.2:
                    items.delete(key)
                elif roll < 0.35 and items.get(key) is not None:
                    items.patch(key, {"n": rng.choice(values)})
                else:
                    doc: dict[str, Any] = {"id": key, "g": rng.choice("pqz")}
                    if rng.random() < 0.8:
                        doc["n"] = rng.choice(values)
                    if rng.random() < 0.7:
                        doc["x"] = rng.choice(floats)
                    if rng.random() < 0.7:
                        doc["s"] = rng.choice(["a", "b", "é", ""])
                    items.put(doc)
        want = _fresh(items, document, ext)
        assert same(live.rows, want), (step, live.rows, want)
    live.close()
