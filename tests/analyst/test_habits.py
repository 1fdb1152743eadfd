"""pandas habits: understood where the language has them, refused with a coded error that says what to write."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jarenlab as jl
from jarenlab import agg, it, key, param, var


def refused(call: Any) -> jl.QueryError:
    with pytest.raises(jl.QueryError) as info:
        call()
    return info.value


def test_str_accessor_is_the_languages_string_functions(lab: Any) -> None:
    prices = lab()["prices"]
    assert prices.where(it.name.str.contains("Apple")).count() == 2
    assert prices.where(it.name.str.contains("apple", case=False)).count() == 2
    with pytest.warns(jl.QueryWarning, match="JQ0037"):
        assert prices.where(it.name.str.contains("^Apple")).count() == 0  # a regex: I-Regexp $search
    assert prices.where(it.name.str.contains("p+l")).count() == 2
    assert prices.where(it.symbol.str.startswith("MS")).select(it.symbol).to_list() == ["MSFT"]
    assert prices.where(it.symbol.str.endswith("OM")).count() == 1
    assert prices.where(it.symbol.str.len() == 3).count() == 1
    assert prices.where(it.symbol.str.lower() == "xom").count() == 1
    assert prices.where(it.symbol.str.upper() == "XOM").count() == 1
    assert prices.where(it.symbol.str.fullmatch("A.*")).count() == 2
    err = refused(lambda: it.name.str.replace("a", "b"))
    assert err.code == "JQ0034" and "contains, startswith" in err.reason


def test_pandas_method_names_never_become_member_paths() -> None:
    for build, advice in (
        (lambda: it.close.mean(), "q.avg(it.x)"),
        (lambda: it.close.median(), "q.median(it.x)"),
        (lambda: it.close.std(), "q.std(it.x)"),
        (lambda: it.close.var(), "agg.std(it.x) * agg.std(it.x)"),
        (lambda: it.note.isna(), "is_empty()"),
        (lambda: it.note.notnull(), "exists()"),
        (lambda: it.symbol.unique(), "distinct()"),
        (lambda: it.symbol.value_counts(), "group_by"),
        (lambda: it.close.astype(int), "$number"),
    ):
        err = refused(build)
        assert err.code == "JQ0034" and advice in err.reason
    # The date accessor is the language's date functions, not a member path.
    assert it.date.dt.year.document != "$it.date.dt.year"
    # A member with such a name is still reachable.
    assert it["dt"].year.document == "$it.dt.year" and it["mean"].document == "$it.mean"


def test_calling_a_member_names_the_method_instead_of_not_callable() -> None:
    err = refused(lambda: it.close.count())
    assert err.code == "JQ0034" and "no method 'count'" in err.reason and "q.count()" in err.reason
    assert refused(lambda: it.a.b.upper_case()).code == "JQ0034"
    assert refused(lambda: it["odd key"].whatever()).code == "JQ0034"


def test_select_a_list_of_member_names(lab: Any) -> None:
    prices = lab()["prices"]
    q = prices.where(it.symbol == "MSFT").select(["symbol", "close"])
    assert q.to_list() == [{"symbol": "MSFT", "close": 160.62}]
    assert list(q.to_pandas().columns) == ["symbol", "close"]
    assert prices.where(it.symbol == "MSFT").select([it.symbol, 1]).to_list() == [["MSFT", 1]]


def test_select_of_a_bare_name_or_constant_is_refused_not_repeated_per_row(lab: Any) -> None:
    """``select("close")`` (pandas' ``df["close"]``) would give the text ``"close"`` once per row,
    and ``select(1)`` the number: refused, saying how to pick the member."""
    store = lab()
    prices = store["prices"]
    for value in ("close", "$close", 1, 2.5, True, None):
        for build in (
            lambda v=value: prices.select(v),
            lambda v=value: prices.where(it.close > 0).order_by(it.close).select(v),
            lambda v=value: prices.group_by(s=it.symbol).select(v),
            lambda v=value: prices.join(store["closed"], "c", on=it.symbol == param("s")).select(v),
        ):
            err = refused(build)
            assert err.code == "JQ2010" and "once per item" in err.reason and "select(['" in err.reason
            assert ("select(it.close)" in err.reason) == (value == "close")
    # Inside a dict or a list a constant is a value like any other.
    assert prices.where(it.symbol == "MSFT").select({"s": it.symbol, "one": 1}).to_list() == [
        {"s": "MSFT", "one": 1}
    ]


def test_abs_between_round_median_std(lab: Any) -> None:
    prices = lab()["prices"]
    assert prices.where(it.close.abs() == 1.5).select(it.symbol).to_list() == ["XOM"]
    assert prices.select(it.close.round(1)).to_list() == [300.4, 297.4, 160.6, -1.5]
    assert prices.select(it.close.round()).to_list() == [300.0, 297.0, 161.0, -2.0]  # halves away from 0
    assert prices.select(it.volume.round(-1)).to_list() == [10, 10, 10, 0]  # an integer stays one
    assert prices.where(it.close.round() == 300).count() == 1
    hundreds = prices.select(it.close.round(-2)).to_list()
    assert hundreds == [300.0, 300.0, 200.0, 0.0] and str(hundreds[3]) == "0.0"  # never -0.0
    assert refused(lambda: prices.select(it.symbol.round()).to_list()).code == "JQ2004"
    assert prices.where(it.close.between(160.62, 297.43)).count() == 2
    closes = [300.35, 297.43, 160.62, -1.5]
    assert prices.median(it.close) == pytest.approx(float(np.median(closes)))
    assert prices.std(it.close) == pytest.approx(float(pd.Series(closes).std()))
    assert prices.where(it.symbol == "MSFT").std(it.close) is None
    assert prices.where(it.symbol == "none").median(it.close) is None
    assert refused(lambda: prices.median(it.symbol)).code == "JQ2004"
    assert prices.group_by(it.symbol).select({"s": key("key"), "n": agg.count()}).count() == 3
    per = (
        prices.group_by(it.symbol)
        .order_by(key("key"))
        .select(
            {
                "s": key("key"),
                "m": agg.median(it.close),
                "sd": agg.std(it.close),
                "pop": agg.std(it.close, ddof=0),
            }
        )
    )
    aapl = pd.Series([300.35, 297.43])
    assert per.to_list()[0] == {"s": "AAPL", "m": 298.89, "sd": aapl.std(), "pop": aapl.std(ddof=0)}
    assert per.to_list()[1] == {"s": "MSFT", "m": 160.62, "pop": 0.0}  # one value: no sample std


def test_python_values_are_literals_and_parameters_as_writes_convert_them(lab: Any) -> None:
    store = lab()
    prices = store["prices"]
    utc = dt.UTC
    prices.insert_many(
        [
            {
                "symbol": "T",
                "date": dt.date(2021, 5, 1),
                "close": np.float64(1.0),
                "at": dt.datetime(2021, 5, 1, 9, tzinfo=utc),
            },
            {
                "symbol": "T",
                "date": pd.Timestamp("2021-05-02"),
                "close": np.int64(2),
                "at": pd.Timestamp("2021-05-02 11:00", tz="Europe/Paris"),
            },
        ]
    )
    t = prices.where(it.symbol == "T")
    assert t.where(it.date == dt.date(2021, 5, 1)).count() == 1
    assert t.where(it.at > pd.Timestamp("2021-05-02 08:30", tz="UTC")).count() == 1
    assert t.where(it.at >= param("since")).count(since=dt.datetime(2021, 5, 1, 9, tzinfo=utc)) == 2
    assert t.where(it.close > np.float64(1.5)).count() == 1
    assert t.where(it.close == param("c")).count(c=np.int64(2)) == 1
    assert t.where(it.close.isin(np.array([1, 2]))).count() == 2
    assert t.where(it.close.isin(pd.Series([2.0]))).count() == 1
    assert t.where(it.close.isin(param("cs"))).count(cs=np.array([1.0, 2.0])) == 2
    doc = {"$for": {"d": "$[*]"}, "$where": {"$eq": ["$d.date", "$day"]}, "$return": "$d.close"}
    assert prices.execute(doc, {"day": pd.Timestamp("2021-05-02").date()}) == 2
    # A midnight timestamp written to a "format": "date" member is its date, and as a query value it
    # is that date too; one with a time of day never equals a date: a checked mistake.
    assert prices.get(6)["date"] == "2021-05-02"
    assert t.where(it.date == pd.Timestamp("2021-05-02")).count() == 1
    assert refused(lambda: t.where(it.date == pd.Timestamp("2021-05-02 10:00")).count()).code == "JQ0031"
    assert refused(lambda: t.count(c=float("nan"))).code == "JQ0005"  # (the query reads no $c)
    assert refused(lambda: t.where(it.close == param("c")).count(c=float("nan"))).code == "JQ2011"
    assert refused(lambda: it.close == {1, 2}).code == "JQ0010"


def test_live_groups_keep_median_and_std_equal_to_a_fresh_run(lab: Any) -> None:
    store = lab()
    prices = store["prices"]
    q = prices.group_by(it.symbol).select(
        {"s": key("key"), "m": agg.median(it.close), "sd": agg.std(it.close), "r": agg.avg(it.close).round(1)}
    )
    live = q.live()
    try:
        for close in (1.0, 2.675, -0.5, 400.25):
            prices.insert({"symbol": "AAPL", "date": "2020-01-06", "close": close})
            assert live.rows == q.to_list()
        prices.where(it.symbol == "XOM").delete()
        assert live.rows == q.to_list() and [r["s"] for r in live.rows] == ["AAPL", "MSFT"]
    finally:
        live.close()


def test_round_is_half_away_from_zero_on_the_decimal_where_numpy_rounds_halves_to_even(lab: Any) -> None:
    prices = lab()["prices"]
    ties = [0.125, -1.005, 2.675, 2.5, -0.5]
    prices.insert_many([{"symbol": "T", "date": "2021-01-01", "close": x} for x in ties])
    got = prices.where(it.symbol == "T").select(it.close.round(2)).to_list()
    assert got == [0.13, -1.01, 2.68, 2.5, -0.5]
    assert prices.where(it.symbol == "T").select(it.close.round()).to_list() == [0.0, -1.0, 3.0, 3.0, -1.0]
    assert pd.Series(ties).round(2).tolist() == [0.12, -1.0, 2.68, 2.5, -0.5]  # the documented difference


def test_a_join_takes_a_collection_of_the_same_store(lab: Any, open_store: Any) -> None:
    """``join``/``group_join`` of something that is not this store's collection is JQ2010 (a number
    was an AttributeError; another store's collection was read by its name from this store)."""
    from .conftest import MODEL

    store = lab()
    prices = store["prices"]
    other = open_store(MODEL, name="other")["closed"]  # empty, and not this store's
    for bad in (5, "closed", other, store["closed"].where(it.close > 0)):
        for build in (
            lambda b=bad: prices.join(b, "c", on=it.symbol == var("c").symbol),
            lambda b=bad: prices.group_join(b, "c", on=it.symbol == var("c").symbol),
        ):
            err = refused(build)
            assert err.code == "JQ2010" and "a collection of the same store" in err.reason
    joined = prices.join(store["closed"], "c", on=it.symbol == var("c").symbol).select(var("c").symbol)
    assert sorted(joined.to_list()) == ["AAPL", "AAPL", "AAPL", "AAPL", "MSFT", "XOM"]
