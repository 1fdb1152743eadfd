"""``select`` of aggregates without ``group_by`` aggregates every item into one row, as SQL and pandas
do (it once gave one ``{"n": 1}`` per item), on SQLite and on PostgreSQL, checked against pandas."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from jarenlab import agg, it, param

ROWS = [
    {"id": f"n{i}", "tag": "ab"[i % 2], "score": i * 3 % 7, **({"o": {"x": i / 4}} if i % 3 else {})}
    for i in range(20)
]


def test_aggregates_without_group_by_are_one_row(store: Any) -> None:
    notes = store["notes"]
    assert notes.select({"n": agg.count()}).to_list() == [{"n": 0}]  # SQL's count(*) of nothing
    notes.insert_many(ROWS)
    frame = pd.DataFrame(ROWS)
    q = notes.select(
        {"n": agg.count(), "s": agg.sum(it.score), "lo": agg.min(it.score), "hi": agg.max(it.score)}
    )
    assert q.to_list() == [
        {
            "n": len(frame),
            "s": int(frame.score.sum()),
            "lo": int(frame.score.min()),
            "hi": int(frame.score.max()),
        }
    ]
    kept = frame[frame.score > 2]
    q = notes.where(it.score > param("m")).select({"n": agg.count(), "mean": agg.sum(it.score) / agg.count()})
    assert q.to_list(m=2) == [{"n": len(kept), "mean": kept.score.sum() / len(kept)}]
    xs = [r["o"]["x"] for r in ROWS if "o" in r]
    assert notes.select({"x": agg.avg(it.o.x)}).to_list() == [{"x": sum(xs) / len(xs)}]
    assert notes.select([agg.count()]).to_list() == [[len(ROWS)]]
    assert len(notes.select({"n": agg.count()}).to_pandas()) == 1
    top = notes.order_by(it.score.desc(), it.id).take(3).select({"s": agg.sum(it.score)}).to_list()
    assert top == [{"s": int(frame.score.nlargest(3).sum())}]
    per_tag = notes.group_by(t=it.tag).select({"t": param("t"), "n": agg.count()})
    assert per_tag.select({"groups": agg.count(), "rows": agg.sum(it.n)}).to_list() == [
        {"groups": 2, "rows": 20}
    ]


def test_group_by_still_groups_and_mixing_is_refused(store: Any) -> None:
    notes = store["notes"]
    notes.insert_many(ROWS)
    groups = notes.group_by(t=it.tag).select({"t": param("t"), "n": agg.count()}).to_list()
    assert sorted((g["t"], g["n"]) for g in groups) == [("a", 10), ("b", 10)]
    with pytest.raises(Exception) as err:
        notes.select({"score": it.score, "n": agg.count()})
    assert getattr(err.value, "code", None) == "JQ0006"
    assert "group_by" in str(err.value)


def test_count_distinct_is_pandas_nunique_whole_and_per_group(store: Any) -> None:
    """``agg.count_distinct`` counts each value once (a missing member counts for none), over every
    item and per group, as pandas' ``nunique``; ``2`` and ``2.0`` are one value, as the engine's
    ``$distinct`` has them."""
    notes = store["notes"]
    rows = [*ROWS, {"id": "x1", "tag": "a"}, {"id": "x2", "tag": "a", "score": 2.0}]
    notes.insert_many(rows)
    frame = pd.DataFrame(rows)
    per_tag = frame.groupby("tag").score.nunique()
    whole = notes.select({"d": agg.count_distinct(it.score), "n": agg.count()}).to_list()
    assert whole == [{"d": int(frame.score.nunique()), "n": len(rows)}]
    for columns in (None, True, False):
        q = notes.group_by(t=it.tag).select({"t": param("t"), "d": agg.count_distinct(it.score)})
        assert {g["t"]: g["d"] for g in notes.execute(q.document, columns=columns)} == per_tag.to_dict()
    ordered = notes.group_by(t=it.tag).order_by(agg.count_distinct(it.score).desc(), param("t"))
    expected = sorted(per_tag.to_dict(), key=lambda t: (-per_tag[t], t))
    assert [g["t"] for g in ordered.select({"t": param("t")}).to_list()] == expected


def test_exports_are_the_one_row_frame(store: Any) -> None:
    """``to_pandas()`` and ``to_arrow()`` of a whole-query aggregate give one row, with pandas'
    answers over the kept rows; over no rows, the one row holds what the engine gives (counts and
    sums 0, the literal) and no column for a member without a value (an average, a minimum, a median)."""
    notes = store["notes"]
    q = notes.where(it.score > param("m")).select(
        {
            "n": agg.count(),
            "s": agg.sum(it.score),
            "x": agg.avg(it.o.x),
            "lo": agg.min(it.tag),
            "med": agg.median(it.score),
            "d": agg.count_distinct(it.tag),
            "k": 1,
        }
    )
    empty = pd.DataFrame({"n": [0], "s": [0], "d": [0], "k": [1]})
    pd.testing.assert_frame_equal(q.to_pandas(m=0), empty)  # an empty collection
    notes.insert_many(ROWS)
    frame = pd.DataFrame(ROWS)
    kept = frame[frame.score > 2]
    xs = [r["o"]["x"] for r in ROWS if "o" in r and r["score"] > 2]
    want = pd.DataFrame(
        {
            "n": [len(kept)],
            "s": [int(kept.score.sum())],
            "x": [sum(xs) / len(xs)],
            "lo": pd.array([kept.tag.min()], dtype=pd.StringDtype(na_value=float("nan"))),
            "med": [float(kept.score.median())],
            "d": [int(kept.tag.nunique())],
            "k": [1],
        }
    )
    pd.testing.assert_frame_equal(q.to_pandas(m=2), want)
    table = q.to_arrow(m=2)
    assert table.num_rows == 1 and table.to_pylist() == q.to_list(m=2)
    kinds = ["int64", "int64", "double", "string", "double", "int64", "int64"]
    assert [str(t) for t in table.schema.types] == kinds
    pd.testing.assert_frame_equal(q.to_pandas(m=100), empty)  # a filter that keeps no rows
    assert q.to_arrow(m=100).to_pylist() == [{"n": 0, "s": 0, "d": 0, "k": 1}]
