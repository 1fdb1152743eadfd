"""The window's keyed diff: applying its ops gives the new rows, and a row that moves costs one
remove and one add however far it moves."""

from __future__ import annotations

import random
from typing import Any

from jarenlab.live.window import diff_keyed


def _apply(rows: list[Any], ops: list[dict[str, Any]]) -> list[Any]:
    rows = list(rows)
    for op in ops:
        i = int(op["path"].rsplit("/", 1)[1])
        if op["op"] == "remove":
            del rows[i]
        elif op["op"] == "add":
            rows.insert(i, op["value"])
        else:
            rows[i] = op["value"]
    return rows


def test_applying_the_ops_gives_the_new_rows() -> None:
    rng = random.Random("diff")
    for _ in range(2000):
        old = [(k, object()) for k in rng.sample(range(40), rng.randint(0, 15))]
        new = [(k, item if rng.random() < 0.8 else object()) for k, item in old if rng.random() < 0.85]
        if rng.random() < 0.3:
            rng.shuffle(new)
        for k in rng.sample(range(40, 60), rng.randint(0, 3)):
            new.insert(rng.randint(0, len(new)), (k, object()))
        got = _apply([item for _, item in old], diff_keyed(old, new))
        assert [id(x) for x in got] == [id(item) for _, item in new]


def test_a_row_moving_far_down_or_up_is_two_ops() -> None:
    old = [(i, object()) for i in range(10_000)]
    down = [*old[1:6000], old[0], *old[6000:]]
    up = [old[9000], *old[:9000], *old[9001:]]
    assert [op["op"] for op in diff_keyed(old, down)] == ["remove", "add"]
    assert [op["op"] for op in diff_keyed(old, up)] == ["remove", "add"]
