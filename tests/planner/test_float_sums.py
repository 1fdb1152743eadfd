"""Float sums: the engine's correctly rounded ``$sum``, pushed on SQLite as a registered aggregate and kept in
the engine on PostgreSQL (with that reason), the same answers on both."""

from __future__ import annotations

from typing import Any

from jarenlab.query import agg, it, key

MODEL = {
    "$model": "0.1",
    "collections": {
        "m": {
            "schema": {"type": "object", "properties": {"g": {"type": "string"}, "x": {"type": "number"}}},
            "key": None,
            "identity": "integer",
        }
    },
}


def test_float_sums_are_correctly_rounded_on_both(open_store: Any) -> None:
    store = open_store(MODEL)
    m = store["m"]
    m.insert_many([{"g": "a", "x": 0.1}, {"g": "a", "x": 0.2}, {"g": "a", "x": 0.3}, {"g": "b", "x": 1e16}])
    m.insert_many(
        [{"g": "b", "x": 1.0}, {"g": "b", "x": -1e16}, {"g": "c", "x": 3}, {"g": "c", "x": 4}, {"g": "d"}]
    )
    q = (
        m.group_by(g=it.g)
        .order_by(agg.sum(it.x).desc())
        .select({"g": key("g"), "s": agg.sum(it.x), "a": agg.avg(it.x)})
    )
    want = [
        {"g": "c", "s": 7, "a": 3.5},
        {"g": "b", "s": 1.0, "a": 1 / 3},
        {"g": "a", "s": 0.6, "a": 0.19999999999999998},
        {"g": "d", "s": 0},
    ]
    assert q.to_list() == want == m._run_query(q.document, {}, pushdown=False)[0]
    assert m.sum(it.x) == 8.6
    ex = q.explain()
    if store.backend.dialect.sums_floats_exactly:
        assert ex.mode == "native" and "jl_fsum(" in ex.sql
    else:
        assert ex.mode == "set" and "correctly rounded" in ex.residual["reasons"][0]["reason"]


def test_an_integer_beyond_64_bits_in_a_float_sum_falls_back(open_store: Any) -> None:
    """SQLite reads 2^64 - 1 as a rounded real: the registered sum refuses it and the run falls back
    to the engine (it once ended in JD2005, "string or blob too big"), whole-query and per group."""
    store = open_store(MODEL)
    m = store["m"]
    m.insert_many([{"g": "a", "x": 2**64 - 1}, {"g": "a", "x": 0.5}, {"g": "b", "x": 2**53 + 1}])
    whole = m.select({"s": agg.sum(it.x), "n": agg.count()})
    per_g = m.group_by(g=it.g).select({"g": key("g"), "s": agg.sum(it.x)})
    for q in (whole, per_g):
        assert q.to_list() == m._run_query(q.document, {}, pushdown=False)[0]
    assert whole.to_list() == [{"s": float(2**64 - 1) + float(2**53 + 1), "n": 3}]
    if store.backend.dialect.sums_floats_exactly:
        assert whole.explain(analyze=True).fallback
