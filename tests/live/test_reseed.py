"""Re-seeding from the planner's narrowed candidates: the same rows, order and errors as a seed
over every document, through streams of writes with external changes in between."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from jarenlab.errors import QueryError
from jarenlab.query.planner.run import narrowed_rows

from .conftest import fresh
from .test_oracle import WHERE_N, _check, _watch, _write

F = {"$for": {"r": "$[*]"}}
RAISES = {"$eq": [{"$mul": ["$r.s", 2]}, 1]}  # JQ2004 for a row whose s is a string
#: Documents with externals the pushed conjuncts read, the values to switch between, the strategy.
DOCS: dict[str, tuple[Any, str, list[Any], str]] = {
    "rows": ({**F, "$where": WHERE_N, "$return": {"id": "$r.id", "n": "$r.n"}}, "min", [], "rows"),
    "rows-let": (
        {**F, "$let": {"d": {"$mul": ["$r.n", 2]}}, "$where": {"$eq": ["$r.g", "$g"]}, "$return": "$d"},
        "g",
        ["a", "b", "c", "d", "zz"],
        "rows",
    ),
    "window": (
        {
            "$subsequence": [
                {**F, "$where": WHERE_N, "$orderby": {"$key": "$r.x", "$dir": "desc"}, "$return": "$r.s"},
                1,
                4,
            ]
        },
        "min",
        [],
        "window",
    ),
    "sum-x": ({"$sum": {**F, "$where": WHERE_N, "$return": "$r.x"}}, "min", [], "accumulator"),
    "min-s": ({"$min": {**F, "$where": WHERE_N, "$return": "$r.s"}}, "min", [], "accumulator"),
    "groups": (
        {**F, "$where": WHERE_N, "$groupby": {"k": "$r.s"}, "$return": {"$max": "$r.x"}},
        "min",
        [],
        "groups",
    ),
}
MINS = [0, 20, 50, 90, 99, 2.5, "a", True, None, float(2**62)]  # True and None divert


@pytest.mark.parametrize("collection", ["items", "nums"])
def test_reseeds_between_writes_match_fresh_runs(store: Any, collection: str) -> None:
    rng = random.Random(f"reseed-{collection}")
    coll = store[collection]
    keyed = collection == "items"
    known: list[Any] = []
    for _ in range(30):
        _write(coll, rng, keyed, known)
    lives, patches = _watch(
        coll,
        [
            (name, doc, {ext: (values or MINS)[1]}, strategy)
            for name, (doc, ext, values, strategy) in DOCS.items()
        ],
    )
    before = {name: v[0].rows for name, v in lives.items()}
    _check(lives, before, patches)
    for step in range(1_100):
        _write(coll, rng, keyed, known)
        _check(lives, before, patches)
        if step % 7 == 3:
            name = rng.choice(sorted(DOCS))
            live, _, _, ext, _ = lives[name]
            ext_name, values = DOCS[name][1], DOCS[name][2] or MINS
            ext[ext_name] = rng.choice(values)
            live.set_externals(**ext)
            _check(lives, before, patches)
    assert all(not v[0].closed for v in lives.values())


@pytest.mark.parametrize("collection", ["items", "nums"])
def test_narrowing_is_used_and_diverting_externals_read_everything(store: Any, collection: str) -> None:
    coll = store[collection]
    rng = random.Random(3)
    known: list[Any] = []
    for _ in range(60):
        _write(coll, rng, collection == "items", known)
    doc = DOCS["rows"][0]
    rows = narrowed_rows(coll, doc, {"min": 50})
    assert rows is not None and 0 < len(rows) < coll.count()
    assert all(orjson.loads(text)["n"] > 50 for _, text in rows)
    for diverts in (True, None):
        assert narrowed_rows(coll, doc, {"min": diverts}) is None
    assert narrowed_rows(coll, {"$count": "$[*]"}, {}) is None  # nothing to push
    live = coll.live(doc, min=50)
    live.set_externals(min=None)
    assert live.rows == fresh(coll, doc, {"min": None}, windowed=False)


def test_a_row_that_starts_matching_keeps_its_storage_place(store: Any) -> None:
    coll = store["items"]
    for i in range(10):
        coll.put({"id": f"k{9 - i}", "n": i})  # storage order k9, k8, ..., k0
    doc = DOCS["rows"][0]
    live = coll.live(doc, min=90)
    assert live.rows == []
    live.set_externals(min=6)  # the narrowed seed reads k2, k1, k0 only
    assert [r["id"] for r in live.rows] == ["k2", "k1", "k0"]
    coll.patch("k5", {"n": 99})
    coll.patch("k8", {"n": 98})
    coll.put({"id": "new", "n": 97})
    expected = fresh(coll, doc, {"min": 6}, windowed=False)
    assert [r["id"] for r in expected] == ["k8", "k5", "k2", "k1", "k0", "new"]
    assert live.rows == expected


def _error_of(run: Any) -> tuple[str, str, str | None] | None:
    try:
        run()
    except QueryError as err:
        return (err.code, str(err), err.doc_path)
    return None


def test_narrowing_never_hides_an_error(store: Any) -> None:
    coll = store["nums"]
    coll.insert({"n": 1, "s": "x"})  # the residual's $mul raises here; n > 5 would skip it
    coll.insert({"n": 50})
    raising_first = {**F, "$where": {"$and": [RAISES, {"$gt": ["$r.n", "$min"]}]}, "$return": "$r.n"}
    expected = _error_of(lambda: fresh(coll, raising_first, {"min": 5}, windowed=False))
    assert expected is not None and expected[0] == "JQ2004"
    assert narrowed_rows(coll, raising_first, {"min": 5}) is None  # the raising conjunct blocks narrowing
    assert _error_of(lambda: coll.live(raising_first, min=5)) == expected

    # Pushed first: the engine never evaluates $mul for n <= min, so the skipped row cannot raise.
    pushed_first = {**F, "$where": {"$and": [{"$gt": ["$r.n", "$min"]}, RAISES]}, "$return": "$r.n"}
    assert narrowed_rows(coll, pushed_first, {"min": 5}) is not None
    live = coll.live(pushed_first, min=5)
    assert live.rows == fresh(coll, pushed_first, {"min": 5}, windowed=False) == []
    errors: list[Any] = []
    live.subscribe(lambda patch, seq: None, on_error=errors.append)
    live.set_externals(min=0)  # now the raising row is a candidate: the re-seed raises and closes
    expected = _error_of(lambda: fresh(coll, pushed_first, {"min": 0}, windowed=False))
    assert expected is not None and live.closed
    assert [(e.code, str(e), e.doc_path) for e in errors] == [expected]


@pytest.mark.parametrize(
    "orderby",
    [{"$key": "$r.u"}, [{"$key": "$r.g"}, {"$key": "$r.u", "$dir": "desc"}]],
    ids=["one-term", "separated-by-g"],
)
def test_a_window_seed_over_mixed_kinds_raises_as_per_row_apply(store: Any, orderby: Any) -> None:
    from jarenlab.live.analyze import plan_live
    from jarenlab.live.strategies import make_maintainer

    coll = store["nums"]
    for g, u in [("a", 1), ("b", "x"), ("a", 2), ("b", "y"), ("c", 3.5)]:
        coll.insert({"g": g, "u": u})
    doc = {**F, "$orderby": orderby, "$return": "$r.u"}
    keys, texts = coll.texts()
    per_row = make_maintainer(plan_live(doc), {}, {}, coll.storage_order)
    expected = _error_of(lambda: per_row.apply(dict(zip(keys, map(orjson.loads, texts)))))
    assert expected is not None and expected[0] == "JQ2005"
    assert _error_of(lambda: coll.live(doc)) == expected
