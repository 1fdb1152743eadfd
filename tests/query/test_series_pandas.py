"""``$rolling`` against pandas' own time-based rolling windows (``rolling("90min", closed="right")``: the
window ``(t - width, t]``), on seeded random series with ties, missing values and partitions."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from jarenlab.query import agg, it
from jarenlab.query.build.builder import _Docs

WIDTHS = {"PT90M": "90min", "PT1H": "60min", "P1D": "1D", "PT7M": "7min"}


@pytest.mark.parametrize("seed", range(6))
def test_rolling_agrees_with_pandas(seed: int) -> None:
    rng = random.Random(seed)
    width, offset = list(WIDTHS.items())[seed % len(WIDTHS)]
    rows = []
    for i in range(300):
        minute = rng.randrange(0, 3 * 24 * 60, rng.choice((1, 5, 30)))  # many ties
        row = {
            "i": i,
            "g": rng.choice("ab"),
            "t": f"2013-01-0{1 + minute // 1440}T{minute // 60 % 24:02d}:{minute % 60:02d}:00Z",
        }
        if rng.random() > 0.2:
            row["x"] = rng.randrange(-50, 200)
        rows.append(row)
    computed = {
        "n": agg.count(it.x),
        "s": agg.sum(it.x),
        "a": agg.avg(it.x),
        "lo": agg.min(it.x),
        "hi": agg.max(it.x),
    }
    got = _Docs(rows).rolling(it.t, width, partition=it.g, **computed).to_list()

    frame = pd.DataFrame(rows)
    frame["t"] = pd.to_datetime(frame["t"])
    frame = frame.sort_values(["g", "t", "i"], kind="stable")
    want: dict[int, dict[str, object]] = {}
    for _, part in frame.groupby("g"):
        r = part.set_index("t")["x"].rolling(offset, closed="right")
        stats = pd.DataFrame({"n": r.count(), "s": r.sum(), "a": r.mean(), "lo": r.min(), "hi": r.max()})
        # pandas gives each row the window up to its own position; peers (equal times) belong to
        # every row of their instant, so take the last row of each instant
        stats = stats[~stats.index.duplicated(keep="last")].reindex(stats.index)
        for i, (_, s) in zip(part["i"], stats.iterrows()):
            want[i] = {"n": int(s.n), "s": int(s.s) if s.n else 0} | {
                k: s[k] for k in ("a", "lo", "hi") if s.n
            }
    assert len(got) == len(rows)
    for row in got:
        mine = {k: row[k] for k in ("n", "s", "a", "lo", "hi") if k in row}
        theirs = want[row["i"]]
        assert mine == pytest.approx(theirs, rel=1e-12), (seed, row)
        assert type(mine["s"]) is int
