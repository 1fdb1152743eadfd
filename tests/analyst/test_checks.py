"""Schema-aware checking: each mistake of the first hour gets its error or warning, on both backends."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import jarenlab as jl
from jarenlab import it, param
from jarenlab.query.planner.diagnose import diagnose


def code_of(call: Any) -> str:
    with pytest.raises(jl.JarenlabError) as info:
        call()
    return info.value.code


def warned(call: Any) -> tuple[Any, list[jl.QueryWarning]]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = call()
    return out, [w.message for w in got if isinstance(w.message, jl.QueryWarning)]


def test_a_misspelled_member_warns_with_did_you_mean_where_the_schema_is_open(lab: Any) -> None:
    prices = lab()["prices"]
    rows, found = warned(lambda: prices.where(it.Symbol == "AAPL").to_list())
    assert rows == []  # the answer is the engine's: no document has Symbol
    assert [w.code for w in found] == ["JQ0036"]
    assert "did you mean symbol?" in str(found[0]) and found[0].doc_path == "/0/$where/$eq/0"


def test_a_misspelled_member_is_an_error_where_the_schema_is_closed(lab: Any) -> None:
    store = lab()
    with pytest.raises(jl.QueryError) as info:
        store["closed"].where(it.Symbol == "AAPL").to_list()
    assert info.value.code == "JQ0030" and "did you mean symbol?" in info.value.reason
    assert info.value.doc_path == "/0/$where/$eq/0" and info.value.collection == "closed"
    assert code_of(lambda: store["prices"].where(it.meta.sectr == "tech").to_list()) == "JQ0030"


def test_the_switch_turns_warnings_into_errors_and_off_silences_both(lab: Any) -> None:
    strict = lab(checks="strict")
    assert code_of(lambda: strict["prices"].where(it.Symbol == "AAPL").to_list()) == "JQ0036"
    off = lab(checks="off")
    rows, found = warned(lambda: off["prices"].where(it.close > "100").to_list())
    assert rows == [] and found == []
    assert code_of(lambda: lab(checks="loud")) == "JD0006"


def test_a_member_under_a_scalar_is_an_error_with_the_date_part_advice(lab: Any) -> None:
    prices = lab()["prices"]
    with pytest.raises(jl.QueryError) as info:
        prices.where(it.date.year == 2020).to_list()
    assert info.value.code == "JQ0030" and "it.date.dt.year" in info.value.reason
    assert code_of(lambda: prices.where(it.symbol[0] == "A").to_list()) == "JQ0030"


def test_comparisons_that_can_never_be_true_are_errors(lab: Any) -> None:
    prices = lab()["prices"]
    with pytest.raises(jl.QueryError) as info:
        prices.where(it.close > "100").to_list()
    assert info.value.code == "JQ0031" and "it.close > 100" in info.value.reason
    with pytest.raises(jl.QueryError) as info:
        prices.where(it.name == None).to_list()  # noqa: E711
    assert info.value.code == "JQ0031" and "is_empty()" in info.value.reason
    assert code_of(lambda: prices.where(it.symbol == 5).to_list()) == "JQ0031"
    # Allowed types pass: a declared null, an integer against a number, a number against an integer.
    assert prices.where(it.note == None).count() == 1  # noqa: E711
    assert prices.where(it.close > 200).count() == 2 and prices.where(it.volume > 9.5).count() == 2


def test_raw_documents_are_checked_too_and_explain_lists_the_findings(lab: Any) -> None:
    prices = lab(checks="off")["prices"]
    doc = {"$for": {"d": "$[*]"}, "$where": {"$gt": ["$d.close", "100"]}, "$return": "$d.symbol"}
    assert prices.execute(doc) is None  # off: the engine's answer (nothing)
    found = prices.explain(doc).diagnostics
    assert [d["code"] for d in found] == ["JQ0031"] and found[0]["doc_path"] == "/$where"
    assert "check (error)" in prices.explain(doc).to_frame()["field"].tolist()


def test_regex_anchors_and_always_true_not_equal_warn(lab: Any) -> None:
    prices = lab()["prices"]
    rows, found = warned(lambda: prices.where(it.name.search("^Apple")).to_list())
    assert rows == [] and [w.code for w in found] == ["JQ0037"]
    assert "startswith" in found[0].reason
    # ^ is an ordinary character: it finds itself.
    rows, _ = warned(lambda: prices.where(it.name.search("^Mobil")).select(it.symbol).to_list())
    assert rows == ["XOM"]
    rows, found = warned(lambda: prices.where(it.close != "1").count())
    assert rows == 4 and [w.code for w in found] == ["JQ0037"]


def test_execute_refuses_a_bare_string_or_number_with_advice(lab: Any) -> None:
    prices = lab()["prices"]
    with pytest.raises(jl.QueryError) as info:
        prices.execute("SELECT * FROM prices")
    assert info.value.code == "JQ0033" and "does not run SQL" in info.value.reason
    for doc in ("prices", 5, 2.5, None, True):
        assert code_of(lambda d=doc: prices.execute(d)) == "JQ0033"
    assert prices.execute("$[*].symbol")[:2] == ["AAPL", "AAPL"]  # a path is a query


def test_checking_runs_once_per_statement_and_a_cache_hit_reports_again(lab: Any) -> None:
    store = lab()
    q = store["prices"].where(it.Symbol == "x")
    _, first = warned(q.to_list)
    hits = store.planner.cache.stats()["hits"]
    _, again = warned(q.to_list)
    assert store.planner.cache.stats()["hits"] == hits + 1 and len(first) == len(again) == 1


def test_diagnosis_follows_scopes_groups_and_nested_queries() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    # $x is bound by $let, not a stored document: nothing to say about $x.b.
    doc = {
        "$for": {"d": "$[*]"},
        "$let": {"x": {"$const": {"b": 1}}},
        "$where": {"$eq": ["$x.b", 1]},
        "$return": "$d",
    }
    assert diagnose(doc, schema) == ()
    # The builder's nested shape: the outer `it` is the inner result, not a stored document.
    q = jl.Query(_NoSource()).select({"z": it.a}).where(it.z > 1)
    assert diagnose(q.document, schema) == ()
    assert [d.code for d in diagnose({"$count": "$[*].c"}, schema)] == ["JQ0030"]
    # Unknown shapes ($ref, anyOf) and untyped members say nothing.
    assert diagnose({"$eq": ["$[*].a", "x"]}, {"anyOf": [schema]}) == ()


class _NoSource:
    name = "none"

    def _run_query(self, document: Any, externals: dict[str, Any]) -> list[Any]:
        return []


def test_isin_of_values_none_of_which_can_match_is_an_error(lab: Any) -> None:
    prices = lab()["prices"]
    with pytest.raises(jl.QueryError) as info:
        prices.where(it.close.isin(["1", "2"])).to_list()
    assert info.value.code == "JQ0031" and "it.close.isin(['1', '2']) is never true" in info.value.reason
    assert "compare with a number" in info.value.reason and info.value.doc_path == "/0/$where"
    assert prices.where(it.close.isin(["1", 160.62])).count() == 1  # one value can match: no finding
    assert prices.where(it.symbol.isin(["AAPL", "XOM"])).count() == 3
    assert code_of(lambda: prices.where(it.volume.isin([1.5, 2.5])).count()) == "JQ0031"


def test_an_integer_member_never_equals_a_fraction(lab: Any) -> None:
    prices = lab()["prices"]
    with pytest.raises(jl.QueryError) as info:
        prices.where(it.volume == 1.5).to_list()
    assert info.value.code == "JQ0031" and info.value.reason.startswith(
        "it.volume == 1.5 is never true: it.volume is an integer; an integer never equals 1.5"
    )
    rows, found = warned(lambda: prices.where(it.volume != 7.5).count())
    assert rows == 4 and [w.code for w in found] == ["JQ0037"]
    assert prices.where(it.volume == 12.0).count() == 1 and prices.where(it.volume < 7.5).count() == 2


def test_an_external_of_a_kind_the_member_never_holds_is_refused_when_bound(lab: Any) -> None:
    prices = lab()["prices"]
    q = prices.where(it.close > param("c"))
    with pytest.raises(jl.QueryError) as info:
        q.count(c="100")
    assert info.value.code == "JQ0031"
    assert (
        "it.close > c='100' is never true: it.close is a number; compare with a number" in info.value.reason
    )
    assert q.count(c=100) == 3 and q.count(c=200.5) == 2  # the same cached statement, values that fit
    assert code_of(lambda: prices.where(param("s") < it.volume).count(s="5")) == "JQ0031"
    with pytest.raises(jl.QueryError) as info:
        prices.where(param("s") < it.volume).count(s="5")
    assert "it.volume > s='5'" in info.value.reason  # flipped, as the member's side reads it
    assert code_of(lambda: prices.where(it.volume == param("v")).count(v=1.5)) == "JQ0031"
    rows, found = warned(lambda: prices.where(it.symbol != param("s")).count(s=5))
    assert rows == 4 and [w.code for w in found] == ["JQ0037"]
    # None and booleans divert to the engine at bind time, as documented: no finding.
    assert prices.where(it.note == param("n")).count(n=None) == 1
    assert prices.where(it.close > param("c")).explain(c="100").diagnostics[0]["code"] == "JQ0031"
    assert prices.where(it.close > param("c")).explain(c=5).diagnostics == []
    assert code_of(lambda: prices.where(it.close > param("c")).delete(c="1")) == "JQ0031"
    assert prices.count() == 4
    off = lab(checks="off", name="off")["prices"]
    assert off.where(it.close > param("c")).count(c="100") == 0  # off: the engine's answer
