"""explain() suggests the index that would serve a scan and counts the rows read; a query previews rows."""

from __future__ import annotations

import copy
from typing import Any

from jarenlab import agg, it, key, param

from .conftest import MODEL, ROWS


def test_explain_suggests_the_index_for_a_scan_and_counts_rows_read(lab: Any, open_store: Any) -> None:
    prices = lab()["prices"]
    q = prices.where(it.name == "Microsoft")
    ex = q.explain(analyze=True)
    assert ex.suggested_indexes == [{"name": "by_name", "path": "$.name"}]
    assert ("suggested index", '{"name": "by_name", "path": "$.name"}') in ex.rows()
    assert ex.rows_read == 4 and ex.rows_fetched == 1 and ex.rows_returned == 1
    # Adding the suggested declaration turns the scan into an index search.
    model = copy.deepcopy(MODEL)
    model["collections"]["prices"]["indexes"].append(ex.suggested_indexes[0])
    again = open_store(model, name="indexed")["prices"]
    again.insert_many(ROWS)
    ex2 = again.where(it.name == "Microsoft").explain(analyze=True)
    assert ex2.suggested_indexes == [] and ex2.indexes == ["prices_by_name"]
    assert ex2.rows_read == ex2.rows_fetched == 1


def test_explain_suggests_an_order_index_in_the_order_s_direction(lab: Any, open_store: Any) -> None:
    """A scan for a descending order is served by a descending index (its ties in storage order as
    it is read): that is the one suggested, and declaring it leaves no sort in the plan."""
    q = lab()["prices"].order_by(it.volume.desc()).take(2)
    suggested = q.explain().suggested_indexes
    assert suggested == [{"name": "by_volume_desc", "path": {"path": "$.volume", "dir": "desc"}}]
    model = copy.deepcopy(MODEL)
    model["collections"]["prices"]["indexes"].append(suggested[0])
    again = open_store(model, name="indexed")["prices"]
    again.insert_many(ROWS)
    ordered = again.order_by(it.volume.desc()).take(2)
    ex = ordered.explain()
    assert ex.suggested_indexes == [] and "prices_by_volume_desc" in ex.indexes
    if ex.database == "sqlite":
        details = [p["detail"] for p in ex.engine_plan]
        assert details == ["SCAN prices USING INDEX prices_by_volume_desc"], details
    assert ordered.to_list() == q.to_list()


def test_explain_suggests_nothing_where_an_index_serves(lab: Any) -> None:
    prices = lab()["prices"]
    assert prices.where(it.symbol == param("s")).explain(s="AAPL").suggested_indexes == []


def test_a_query_previews_its_first_rows_in_a_notebook(lab: Any) -> None:
    prices = lab()["prices"]
    shown = prices.where(it.symbol == "AAPL").select(["symbol", "close"])._repr_html_()
    assert "2 rows" in shown and "<table" in shown and "300.35" in shown and "query document" in shown
    assert "first 10 rows" in prices.query()._repr_html_() or "4 rows" in prices.query()._repr_html_()
    assert (
        "<li><code>&quot;AAPL&quot;</code></li>"
        in prices.where(it.symbol == "AAPL").select(it.symbol)._repr_html_()
    )
    waiting = prices.where(it.close > param("lo"))._repr_html_()
    assert "no preview" in waiting and "JQ2006" in waiting and "$where" in waiting
    assert "no rows" in prices.where(it.symbol == "none")._repr_html_()


def test_a_previewed_query_shows_its_warnings_every_time(lab: Any) -> None:
    prices = lab()["prices"]
    q = prices.where(it.Symbol == "AAPL")
    for _ in range(2):  # a warning is shown by each display, not once per place in the code
        shown = q._repr_html_()
        assert "no rows" in shown and "JQ0036" in shown and "did you mean symbol?" in shown
    assert "warning" not in prices.where(it.symbol == "AAPL")._repr_html_()


def test_explain_suggests_an_index_covering_a_group_by(lab: Any, open_store: Any) -> None:
    """A group-by over the whole collection reads its keys' members and the members it aggregates:
    on SQLite one index over them all answers it without reading a document, and explain() suggests
    that declaration (in its rows, its frame and its HTML), until one is declared. PostgreSQL's
    expression indexes never answer alone, so it suggests none there."""
    store = lab()
    prices = store["prices"]
    q = prices.group_by(s=it.symbol).select({"s": key("s"), "v": agg.avg(it.volume), "n": agg.count()})
    ex = q.explain()
    if store.backend.name == "postgresql":
        assert ex.suggested_indexes == []
        return
    want = {"name": "by_symbol_volume", "path": ["$.symbol", "$.volume"]}
    assert ex.suggested_indexes == [want]
    row = ("suggested index", '{"name": "by_symbol_volume", "path": ["$.symbol", "$.volume"]}')
    assert row in ex.rows() and list(ex.to_frame().iloc[-1]) == list(row)
    assert "by_symbol_volume" in ex._repr_html_()
    # Only where the index would answer alone: not for a filtered group-by, a float sum (it reads
    # each member's JSON type) or an integer sum (it checks each member for a written float).
    filtered = prices.where(it.volume > 3).group_by(s=it.symbol).select({"n": agg.count()}).explain()
    assert filtered.suggested_indexes == [{"name": "by_volume", "path": "$.volume"}]  # the filter's own
    for other in (agg.avg(it.close), agg.sum(it.volume)):
        assert (
            prices.group_by(s=it.symbol).select({"s": key("s"), "v": other}).explain().suggested_indexes == []
        )
    model = copy.deepcopy(MODEL)
    model["collections"]["prices"]["indexes"].append(ex.suggested_indexes[0])
    again = open_store(model, name="covered")["prices"]
    again.insert_many(ROWS)
    q2 = again.group_by(s=it.symbol).select({"s": key("s"), "v": agg.avg(it.volume), "n": agg.count()})
    ex2 = q2.explain()
    assert ex2.suggested_indexes == [] and ex2.mode == "native"
    assert any("prices_by_symbol_volume" in p["detail"] for p in ex2.engine_plan), ex2.engine_plan
    assert q2.to_list() == q.to_list() == prices._run_query(q.document, {}, pushdown=False)[0]


def test_explain_advises_only_indexes_the_planner_uses(lab: Any, open_store: Any) -> None:
    """A number member is compared and ordered through its JSON value, so an index on it would not
    serve a range or an order (it once was advised, and made such queries slower): no advice. An
    integer member's advice, once declared, is what the database's own plan searches with."""
    prices = lab()["prices"]
    assert prices.where(it.close > 100).explain().suggested_indexes == []
    assert prices.order_by(it.close.desc()).take(2).explain().suggested_indexes == []
    both = (it.close > 100) & it.volume.between(10, 12)
    mixed = prices.where(both).explain().suggested_indexes
    assert mixed == [{"name": "by_volume", "path": "$.volume"}]
    model = copy.deepcopy(MODEL)
    model["collections"]["prices"]["indexes"].append(mixed[0])
    again = open_store(model, name="indexed")["prices"]
    again.insert_many(ROWS)
    ex = again.where(both).explain()
    assert ex.suggested_indexes == [] and "prices_by_volume" in ex.indexes
    if ex.database == "sqlite":
        details = [p["detail"] for p in ex.engine_plan]
        assert any(d.startswith("SEARCH prices USING INDEX prices_by_volume") for d in details), details
