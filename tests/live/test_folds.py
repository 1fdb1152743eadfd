"""Per-group tallies (``jarenlab.live.folds``) against the engine's own aggregate functions."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from jarenlab.errors import QueryError
from jarenlab.live.analyze import plan_live
from jarenlab.live.folds import Tally, split_return
from jarenlab.live.strategies import Groups, make_maintainer
from jarenlab.query import compile_query
from jarenlab.query.lang.document import parse
from jarenlab.query.lang.functions import FUNCTIONS

VALUES = [
    0.1,
    0.2,
    0.3,
    -0.0,
    0.0,
    0,
    1,
    1.0,
    -1,
    1e16,
    -1e16,
    5e-324,
    -5e-324,
    2.5,
    1e300,
    2**53 + 1,
    -(2**70),
]


def _exact(items: list[Any]) -> list[tuple[str, str]]:
    """Items told apart as JSON text tells them: 1 from 1.0, 0.0 from -0.0."""
    return [(type(x).__name__, repr(x)) for x in items]


def _engine(name: str, items: list[Any]) -> list[Any]:
    return list(FUNCTIONS[name]([items], "/"))


@pytest.mark.parametrize("name", ["count", "sum", "avg", "min", "max"])
def test_a_tally_gives_the_engines_value_through_random_joins_and_leaves(name: str) -> None:
    """Rows join and leave (each with its storage place) in random order: after every step the
    tally's value is the engine's over the remaining items in storage order, byte for byte."""
    rng = random.Random(f"tally-{name}")
    for _ in range(40):
        tally = Tally(name)
        rows: dict[int, list[Any]] = {}
        for _ in range(60):
            if rows and rng.random() < 0.4:
                place = rng.choice(list(rows))
                tally.remove(rows.pop(place), place)
            else:
                place = rng.randrange(1000)
                if place in rows:
                    tally.remove(rows.pop(place), place)
                items = [rng.choice(VALUES) for _ in range(rng.randrange(0, 3))]
                rows[place] = items
                tally.add(items, place)
            if tally.needs_scan:
                tally.found(sorted(rows.items()))
            want = _engine(name, [x for _, items in sorted(rows.items()) for x in items])
            got = tally.value()
            assert got is not None
            assert _exact(got) == _exact(want), (name, sorted(rows.items()))


def test_min_and_max_keep_the_first_of_equal_items_in_storage_order() -> None:
    for name in ("min", "max"):
        tally = Tally(name)
        tally.add([1.0], (5, "b"))
        tally.add([1], (2, "a"))  # equal, earlier: the engine's min/max keep it
        assert orjson.dumps(tally.value()) == b"[1]"
        tally.add([1.0], (9, "c"))  # equal, later
        assert orjson.dumps(tally.value()) == b"[1]"
        tally.remove([1], (2, "a"))  # the extreme leaves: found again from the rest
        assert tally.needs_scan and tally.value() is None
        tally.found([((5, "b"), [1.0]), ((9, "c"), [1.0])])
        assert orjson.dumps(tally.value()) == b"[1.0]"


@pytest.mark.parametrize(
    ("name", "items"),
    [
        ("min", [1, "a"]),  # mixed kinds: the engine raises JQ2005
        ("max", [True]),  # not orderable
        ("sum", [1, "a"]),  # not a number: JQ2004
        ("avg", [float("inf"), 1.0]),  # infinities and NaN follow IEEE in the engine
        ("sum", [1.5e308, 1.5e308]),  # past the largest float
        ("sum", [2**1100, 0.5]),  # an integer total no float holds: JQ2010
    ],
)
def test_a_tally_declines_what_it_cannot_promise(name: str, items: list[Any]) -> None:
    tally = Tally(name)
    tally.add(items, 0)
    assert tally.value() is None


def _ret(doc: dict[str, Any]) -> Any:
    return parse({"$for": {"r": "$[*]"}, "$groupby": {"k": "$r.g"}, "$return": doc}).node.ret


def test_split_return_replaces_aggregates_of_row_paths_and_refuses_other_reads_of_rows() -> None:
    split = split_return(
        _ret({"k": "$k", "c": {"$count": "$r"}, "m": {"$add": [{"$max": "$r.x"}, 1]}}), ["r"]
    )
    assert split is not None and [f.name for f in split[1]] == ["count", "max"]
    assert split_return(_ret({"c": {"$count": "$r"}, "all": ["$r.x"]}), ["r"]) is None  # a row outside
    assert split_return(_ret({"$count": {"$for": {"y": "$r"}, "$return": "$y"}}), ["r"]) is None  # a scope
    assert split_return(_ret({"c": {"$median": "$r.x"}}), ["r"]) is None  # not kept per group
    assert split_return(_ret({"k": "$k"}), ["r"]) is None  # nothing to keep


def test_a_folded_group_raises_what_the_engine_raises() -> None:
    """A ``$min`` over mixed kinds goes through the engine, which raises JQ2005 as a fresh run does."""
    doc = {"$for": {"r": "$[*]"}, "$groupby": {"k": "$r.g"}, "$return": {"$min": "$r.v"}}
    m = make_maintainer(plan_live(doc), {}, {}, "key")
    assert isinstance(m, Groups) and m.folds
    m.seed([(1, {"g": "a", "v": 1}), (2, {"g": "a", "v": 0.5})])
    assert m.rows == [0.5]
    with pytest.raises(QueryError) as fresh:
        compile_query(doc).run([{"g": "a", "v": 1}, {"g": "a", "v": "x"}], {})
    with pytest.raises(QueryError) as live:
        m.apply({2: {"g": "a", "v": "x"}})
    assert live.value.code == fresh.value.code == "JQ2005"
