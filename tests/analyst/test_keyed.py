"""Keys with results, and update/delete by query: counted, validated, in one transaction."""

from __future__ import annotations

from typing import Any

import pytest

import jarenlab as jl
from jarenlab import it, param


def code_of(call: Any) -> str:
    with pytest.raises(jl.JarenlabError) as info:
        call()
    return info.value.code


def test_identity_keyed_results_carry_their_keys(lab: Any) -> None:
    prices = lab()["prices"]
    aapl = prices.where(it.symbol == "AAPL")
    assert aapl.keys() == [1, 2]
    assert [(k, d["date"]) for k, d in aapl.items()] == [(1, "2020-01-02"), (2, "2020-01-03")]
    frame = aapl.to_pandas(keys=True)
    assert (
        frame.index.name == "key"
        and list(frame.index) == [1, 2]
        and frame["close"].tolist() == [300.35, 297.43]
    )
    # The same set as the query itself (the engine decides), with a residual condition too.
    odd = prices.where((it.close.abs() > 100) & it.name.str.contains("o"))
    assert [d for _, d in odd.items()] == odd.to_list()
    assert prices.query().keys() == [1, 2, 3, 4]
    assert prices.where(it.volume > param("v")).keys(v=9) == [1, 2]


def test_update_by_query_counts_validates_and_writes_in_one_transaction(lab: Any) -> None:
    store = lab()
    prices = store["prices"]
    assert prices.where(it.symbol == "AAPL").update({"name": "Apple"}) == 2
    assert prices.where(it.name == "Apple").count() == 2
    assert prices.where(it.symbol == "none").update({"name": "x"}) == 0
    ops = [{"op": "replace", "path": "/close", "value": 1.0}]
    assert prices.where(it.volume >= 10).update(ops) == 2
    assert prices.where(it.close == 1.0).keys() == [1, 2]
    before = prices.to_list()
    with pytest.raises(jl.ValidationError) as info:
        prices.query().update({"close": "high"})  # the schema says number: nothing is written
    assert info.value.code == "JD2003"
    assert prices.to_list() == before
    assert code_of(lambda: prices.query().update("close=1")) == "JD2009"


def test_delete_by_query(lab: Any) -> None:
    store = lab()
    prices = store["prices"]
    assert prices.where(it.symbol == "AAPL").delete() == 2
    assert prices.count() == 2 and prices.where(it.symbol == "AAPL").delete() == 0
    with store.transaction():
        assert prices.where(it.close < 0).delete() == 1
    assert prices.count() == 1


def test_by_query_calls_take_only_where_chains_and_are_checked(lab: Any) -> None:
    prices = lab()["prices"]
    for q in (
        prices.where(it.close > 1).take(1),
        prices.where(it.close > 1).select(it.symbol),
        prices.order_by(it.close),
    ):
        assert code_of(q.delete) == "JQ0034"
    assert code_of(lambda: prices.where(it.close > "1").delete()) == "JQ0031"
    assert prices.count() == 4
