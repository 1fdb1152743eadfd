"""Engine API details the data-file corpus cannot express (the doctests run in ``test_docstrings``)."""

from __future__ import annotations

import math

import pytest

from jarenlab.errors import JarenlabError, QueryError
from jarenlab.query import compile_query, evaluate, shape


@pytest.mark.parametrize("bad", [math.nan, math.inf, b"x", {1: 2}, (1, 2), {"a": [math.nan]}])
def test_externals_must_be_json(bad: object) -> None:
    with pytest.raises(QueryError) as info:
        evaluate("$x", None, {"x": bad})
    assert info.value.code == "JQ2011"


def test_python_types() -> None:
    assert evaluate({"$eq": ["$b", 1]}, None, {"b": True}) == [False]
    assert evaluate({"$add": ["$x", 1]}, None, {"x": 1.5}) == [2.5]
    assert type(evaluate({"$add": [1, 1]}, None)[0]) is int
    assert math.isnan(evaluate({"$div": [0, 0]}, None)[0])


def test_compiled_query_reuse_and_externals() -> None:
    cq = compile_query({"$for": {"d": "$[*]"}, "$where": {"$gt": ["$d", "$lo"]}, "$return": "$d"})
    assert cq.externals == frozenset({"lo"})
    assert cq.run([1, 5, 9], {"lo": 4}) == [5, 9]
    assert cq.run([1, 5, 9], {"lo": 8}) == [9]


def test_results_do_not_share_constants() -> None:
    cq = compile_query({"$const": {"a": [1]}})
    first = cq.run(None)[0]
    first["a"].append(2)
    assert cq.run(None) == [{"a": [1]}]


def test_shape() -> None:
    assert shape(evaluate({"$seq": []}, None)) is None
    assert shape(evaluate([1, 2], None)) == [1, 2]
    assert shape(evaluate({"$seq": [1, 2]}, None)) == [1, 2]


def test_bad_options() -> None:
    for kwargs in (
        {"limits": {"nope": 1}},
        {"limits": {"steps": -1}},
        {"operators": {"count": len}},
        {"operators": {"x": 1}},
    ):
        with pytest.raises(JarenlabError) as info:
            compile_query(1, **kwargs)  # type: ignore[arg-type]
        assert info.value.code == "JD0006"


def test_host_error_keeps_cause() -> None:
    def fail(x: object) -> object:
        raise ValueError("bad input")

    with pytest.raises(QueryError) as info:
        evaluate({"$fail": 1}, None, operators={"fail": fail})
    assert info.value.code == "JQ2008" and isinstance(info.value.__cause__, ValueError)


def test_default_depth_guard() -> None:
    deep: object = 1
    for _ in range(500):
        deep = [deep]
    with pytest.raises(QueryError) as info:
        compile_query(deep)
    assert info.value.code == "JQ0011"


def test_item_filter_falls_back_for_non_objects() -> None:
    doc = {"$for": {"x": "$[*]"}, "$where": {"$eq": ["$x.a", 1]}, "$return": "$x"}
    assert evaluate(doc, [{"a": 1}, 3, "s", [1], {"a": 2}, {"a": 1.0}]) == [{"a": 1}, {"a": 1.0}]
