"""Aggregates where an analyst puts them: answered per group or over every item, never quietly
per item.

An aggregate (``agg.count()``, ``agg.sum(it.x)``) counts the group after ``group_by`` and every item
in a ``select`` without one. In a ``where`` it would count the one item being kept or dropped (so
``where(agg.count() > 1)`` keeps nothing and ``where(agg.sum(it.x) > 2)`` is ``it.x > 2``), which is
never what SQL's ``HAVING`` or pandas' ``filter`` habit means: it is refused with what to write.
"""

from __future__ import annotations

from typing import Any

from jarenlab import agg, it, key, var

from .test_habits import refused


def test_logic_over_aggregates_stays_one_row_over_every_item(lab: Any) -> None:
    prices = lab()["prices"]
    both = (agg.count() > 1) & (agg.sum(it.volume) > 30)
    either = (agg.count() > 10) | (agg.max(it.close) > 300)
    assert prices.select({"n": agg.count(), "both": both, "either": either}).to_list() == [
        {"n": 4, "both": True, "either": True}
    ]
    # Alone, without another aggregate beside it, the combination is still one row.
    assert prices.select({"both": both}).to_list() == [{"both": True}]
    assert prices.select({"none": ~((agg.count() > 1) & (agg.min(it.close) < 0))}).to_list() == [
        {"none": False}
    ]
    per_symbol = (
        prices.group_by(s=it.symbol)
        .order_by(key("s"))
        .select({"s": key("s"), "busy": (agg.count() > 1) & (agg.sum(it.volume) > 20)})
    )
    assert per_symbol.to_list() == [
        {"s": "AAPL", "busy": True},
        {"s": "MSFT", "busy": False},
        {"s": "XOM", "busy": False},
    ]


def test_an_aggregate_in_where_is_refused_with_the_having_spelling(lab: Any) -> None:
    store = lab()
    prices = store["prices"]
    joined = prices.join(store["closed"], "c", on=it.symbol == var("c").symbol)
    for build in (
        lambda: prices.where(agg.count() > 1),
        lambda: prices.where(agg.sum(it.volume) > 2),
        lambda: prices.where((it.close > 0) & (agg.count() > 1)),
        lambda: prices.group_by(s=it.symbol).where(agg.count() > 1),
        lambda: prices.group_by(s=it.symbol).select({"s": key("s")}).where(agg.count() > 1),
        lambda: joined.where(agg.count() > 1),
    ):
        err = refused(build)
        assert err.code == "JQ0006"
        assert "group_by(...).select({..., 'n': agg.count()}).where(it.n > 1)" in err.reason
    # The spelling it points at answers the question.
    busy = prices.group_by(s=it.symbol).select({"s": key("s"), "n": agg.count()}).where(it.n > 1)
    assert busy.to_list() == [{"s": "AAPL", "n": 2}]


def test_an_aggregate_ordering_items_one_at_a_time_is_refused(lab: Any) -> None:
    prices = lab()["prices"]
    for build in (
        lambda: prices.order_by(agg.sum(it.volume)),
        lambda: prices.where(it.close > 0).order_by(agg.count().desc()),
        lambda: prices.group_by(s=it.symbol).select({"s": key("s")}).order_by(agg.count()),
    ):
        err = refused(build)
        assert err.code == "JQ0006" and "after group_by" in err.reason
    # After group_by it orders the groups, as before.
    ranked = prices.group_by(s=it.symbol).order_by(agg.count().desc(), key("s")).select(key("s"))
    assert ranked.to_list() == ["AAPL", "MSFT", "XOM"]
