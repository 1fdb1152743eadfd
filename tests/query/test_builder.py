"""The builder: expressions, the Query chain and its documents, run by the engine."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jarenlab.errors import QueryError
from jarenlab.query import Query, Queryable, agg, evaluate, it, key, param, win


class Docs(Queryable):
    """A tiny source: the reference engine over a list."""

    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self.name = "flights"
        self.docs = docs
        self.documents: list[Any] = []

    def _run_query(self, document: Any, externals: dict[str, Any]) -> list[Any]:
        self.documents.append(document)
        return evaluate(document, self.docs, externals)


FLIGHTS = [
    {"flight": 1, "origin": "JFK", "carrier": "AA", "dep_delay": 40},
    {"flight": 2, "origin": "LGA", "carrier": "AA", "dep_delay": 5},
    {"flight": 3, "origin": "JFK", "carrier": "B6", "dep_delay": 12},
    {"flight": 4, "origin": "JFK", "carrier": "AA"},
    {"flight": 5, "origin": "EWR", "carrier": "B6", "dep_delay": 40},
    {"flight": 6, "origin": "JFK", "carrier": "B6", "dep_delay": 55.5},
]


@pytest.fixture
def src() -> Docs:
    return Docs(FLIGHTS)


def test_design_example(src: Docs) -> None:
    q = (
        src.where((it.origin == "JFK") & (it.dep_delay > param("min_delay")))
        .order_by(it.dep_delay.desc(), it.flight)
        .take(20)
        .select({"carrier": it.carrier, "delay": it.dep_delay})
    )
    assert q.document == [
        {
            "$subsequence": [
                {
                    "$for": {"it": "$[*]"},
                    "$where": {
                        "$and": [{"$eq": ["$it.origin", "JFK"]}, {"$gt": ["$it.dep_delay", "$min_delay"]}]
                    },
                    "$orderby": [{"$key": "$it.dep_delay", "$dir": "desc"}, {"$key": "$it.flight"}],
                    "$return": {"carrier": "$it.carrier", "delay": "$it.dep_delay"},
                },
                0,
                20,
            ]
        }
    ]
    assert q.to_list(min_delay=10) == [
        {"carrier": "B6", "delay": 55.5},
        {"carrier": "AA", "delay": 40},
        {"carrier": "B6", "delay": 12},
    ]
    df = q.to_pandas(min_delay=30)
    assert list(df.columns) == ["carrier", "delay"] and len(df) == 2
    assert q.to_arrow(min_delay=30).num_rows == 2


def test_select_after_take(src: Docs) -> None:
    q = src.order_by(it.flight).take(2).select(it.dep_delay)
    assert q.to_list() == [40, 5]
    assert q.document[0]["$for"]["it"] != "$[*]", "an expression select after take runs over the window"
    flat = src.order_by(it.flight).take(2).select({"d": it.dep_delay})
    assert flat.document[0]["$subsequence"][0]["$return"] == {"d": "$it.dep_delay"}


def test_python_logic_refused() -> None:
    for bad in (
        lambda: (it.a == 1) and (it.b == 2),
        lambda: not it.a,
        lambda: bool(it.a),
        lambda: 1 in it.tags,
    ):
        with pytest.raises(QueryError) as info:
            bad()
        assert info.value.code == "JQ0008"
    with pytest.raises(QueryError, match=r"& \| ~"):
        if it.a > 1:
            pass


def test_and_or_take_conditions_and_there_is_no_xor(src: Docs) -> None:
    """``(it.dep_delay > 10) & 5`` kept every row with dep_delay > 10 (5 is a true value), and in
    ``~5 & (...)`` Python had made ~5 into -6 before the builder saw it: a Python value beside & or
    | that is not True/False is JQ0008 saying to compare it. ``a ^ b`` was Python's TypeError
    (unsupported operand): JQ0034 saying to write ``a != b``."""
    late = it.dep_delay > 10
    for bad in (
        lambda: late & 5,
        lambda: late | "AA",
        lambda: 5 & late,
        lambda: ~5 & late,
        lambda: None | late,
        lambda: late & [1],
    ):
        with pytest.raises(QueryError) as info:
            bad()
        assert info.value.code == "JQ0008" and "combines conditions" in info.value.reason
    assert src.where(late & True).count() == src.where(True & late).count() == 4
    assert src.where(False | late).count() == 4
    for bad in (lambda: late ^ (it.origin == "JFK"), lambda: True ^ late):
        with pytest.raises(QueryError) as info:
            bad()
        assert info.value.code == "JQ0034" and "!=" in info.value.reason
    assert src.where(late != (it.origin == "JFK")).count() == 2


def test_expressions() -> None:
    assert (~(it.a == 1)).document == {"$not": [{"$eq": ["$it.a", 1]}]}
    assert ((it.a == 1) | (it.b == 2) | (it.c == 3)).document == {
        "$or": [{"$eq": ["$it.a", 1]}, {"$eq": ["$it.b", 2]}, {"$eq": ["$it.c", 3]}]
    }
    assert (-it.a * 2 + 1).document == {"$add": [{"$mul": [{"$neg": ["$it.a"]}, 2]}, 1]}
    assert (1 - it.a).document == {"$sub": [1, "$it.a"]}
    assert (it.a / it.b // 2 % 3).document == {"$mod": [{"$idiv": [{"$div": ["$it.a", "$it.b"]}, 2]}, 3]}
    assert it["odd key"].document == "$it['odd key']"
    assert it.tags[0].document == "$it.tags[0]"
    assert it["desc"].document == "$it.desc"
    assert (it.name == "$x").document == {"$eq": ["$it.name", "$$x"]}
    assert it.name.startswith("A").document == {"$starts-with": ["$it.name", "A"]}
    assert (it.a + 1)["b"].document == {"$get": [{"$add": ["$it.a", 1]}, "b"]}
    assert it.x.isin(param("ids")).document == {"$eq": ["$it.x", "$ids[*]"]}
    with pytest.raises(QueryError):
        param("it")
    with pytest.raises(QueryError):
        it.a == float("nan")  # noqa: B015


def test_string_helpers(src: Docs) -> None:
    docs = Docs([{"name": "Ann"}, {"name": "bob"}, {"name": "Abe"}, {}])
    assert docs.where(it.name.startswith("A")).select(it.name.upper()).to_list() == ["ANN", "ABE"]
    assert docs.where(it.name.contains("b")).count() == 2
    assert docs.where(it.name.matches("[A-Z].*")).select(it.name.length()).to_list() == [3, 3]
    assert docs.where(it.name.is_empty()).count() == 1
    assert docs.where(it.name.exists()).count() == 3


def test_where_chains_and_missing(src: Docs) -> None:
    q = src.where(it.origin == "JFK").where(it.dep_delay > 20)
    assert [r["flight"] for r in q] == [1, 6]
    assert src.where(~(it.dep_delay > 20)).select(it.flight).to_list() == [2, 3, 4]
    assert src.where(it.carrier.isin(["B6"])).count() == 3


def test_order_then_by_empty(src: Docs) -> None:
    q = src.order_by(it.dep_delay.desc(empty="greatest")).then_by(it.flight.desc()).select(it.flight)
    assert q.to_list() == [4, 6, 5, 1, 3, 2]
    assert src.order_by(it.dep_delay).select(it.flight).to_list() == [4, 2, 3, 1, 5, 6]
    with pytest.raises(QueryError):
        src.where(it.a == 1).then_by(it.b)


def test_skip_take(src: Docs) -> None:
    base = src.order_by(it.flight).select(it.flight)
    assert base.skip(1).take(2).to_list() == [2, 3]
    assert base.take(4).skip(1).to_list() == [2, 3, 4]
    assert base.take(4).take(2).to_list() == [1, 2]
    assert base.skip(10).to_list() == []
    with pytest.raises(QueryError):
        base.take(-1)


def test_aggregates(src: Docs) -> None:
    assert src.count() == 6
    assert src.where(it.origin == "JFK").sum(it.dep_delay) == 107.5
    assert src.where(it.origin == "XXX").sum(it.dep_delay) == 0
    assert src.where(it.origin == "XXX").avg(it.dep_delay) is None
    assert src.avg(it.dep_delay) == pytest.approx(152.5 / 5)
    assert src.min(it.dep_delay) == 5 and src.max(it.flight) == 6
    assert src.where(it.dep_delay > param("d")).count(d=30) == 3
    assert src.first() == FLIGHTS[0]
    assert src.where(it.origin == "XXX").first() is None


def test_group_by(src: Docs) -> None:
    q = (
        src.group_by(carrier=it.carrier)
        .order_by(agg.count().desc())
        .select(
            {
                "carrier": key("carrier"),
                "n": agg.count(),
                "avg": agg.avg(it.dep_delay),
                "max": agg.max(it.dep_delay),
            }
        )
    )
    assert q.to_list() == [
        {"carrier": "AA", "n": 3, "avg": 22.5, "max": 40},
        {"carrier": "B6", "n": 3, "avg": 107.5 / 3, "max": 55.5},
    ]
    by_max = src.group_by(c=it.carrier).order_by(agg.max(it.dep_delay).desc()).select({"c": key("c")})
    assert by_max.to_list() == [{"c": "B6"}, {"c": "AA"}]
    plain = src.group_by(it.origin).to_list()
    assert [g["key"] for g in plain] == ["JFK", "LGA", "EWR"]
    assert [f["flight"] for f in plain[0]["items"]] == [1, 3, 4, 6]
    assert src.where(it.dep_delay > 10).group_by(o=it.origin).select(
        {"o": key("o"), "n": agg.count()}
    ).to_list() == [
        {"o": "JFK", "n": 3},
        {"o": "EWR", "n": 1},
    ]


def test_order_before_group_nests(src: Docs) -> None:
    q = (
        src.order_by(it.flight.desc())
        .group_by(c=it.carrier)
        .select({"c": key("c"), "first": agg.max(it.flight)})
    )
    assert q.to_list() == [{"c": "B6", "first": 6}, {"c": "AA", "first": 4}]


def test_distinct_and_select_shapes(src: Docs) -> None:
    assert src.select(it.carrier).distinct().to_list() == ["AA", "B6"]
    assert src.select([it.flight, it.carrier]).take(1).to_list() == [[1, "AA"]]
    assert src.select(it.origin).distinct().count() == 3
    assert src.select(it.carrier).distinct().to_pandas()["value"].tolist() == ["AA", "B6"]


def test_repr_and_query_source(src: Docs) -> None:
    q = Query(src).where(it.flight == 1)
    assert "flights" in repr(q) and '"$where"' in repr(q)
    assert "<pre>" in q._repr_html_() and "&quot;$where&quot;" in q._repr_html_()
    assert src.query().where(it.flight == 1).to_list() == [FLIGHTS[0]]


def test_power_and_len_of_an_expression_say_what_to_write() -> None:
    """``it.x ** 2`` and ``len(it.x)`` were plain TypeErrors."""
    for call, advice in (
        (lambda: it.x**2, "it.x * it.x"),
        (lambda: 2**it.x, "it.x * it.x"),
        (lambda: len(it.x), "it.x.length()"),
    ):
        with pytest.raises(QueryError) as info:
            call()
        assert info.value.code == "JQ0034" and advice in info.value.reason


def test_pandas_string_and_date_habits_say_what_to_write(src: Docs) -> None:
    """``it.x.str[0]`` was a TypeError, ``.dt.strftime``/``.dt.date``/``.dt.floor`` AttributeErrors,
    and ``it.t.dt.year()`` named a garbled method: each is JQ0034 with what to write instead. An
    external without a value says how to give one and that a stray key() reads as one."""
    for call, advice in (
        (lambda: it.carrier.str[0], "$substring"),
        (lambda: it.carrier.str[1:3], "$substring"),
        (lambda: it.time_hour.dt.strftime("%Y"), "q.to_pandas()"),
        (lambda: it.time_hour.dt.date, ".dt.trunc('day')"),
        (lambda: it.time_hour.dt.floor("D"), ".dt.bucket('PT15M')"),
        (lambda: it.time_hour.dt.dayofweek, ".dt.weekday"),
        (lambda: it.time_hour.dt.nanosecond, "epoch, part, trunc"),
        (lambda: it.time_hour.dt.year(), "drop the ()"),
    ):
        with pytest.raises(QueryError) as info:
            call()
        assert info.value.code == "JQ0034" and advice in info.value.reason, info.value.reason
    assert "it.time_hour.dt.strftime" in _reason(lambda: it.time_hour.dt.strftime("%Y"))
    with pytest.raises(QueryError) as info:
        src.where(key("zz") == 1).to_list()
    assert info.value.code == "JQ2006" and "q.to_list(zz=...)" in info.value.reason
    assert "key('zz')" in info.value.reason
    want = sum(f.get("carrier") == "AA" for f in FLIGHTS)
    assert want and src.where(it.carrier == param("zz")).count(zz="AA") == want  # given, it runs


def test_a_name_agg_or_win_does_not_have_is_coded_with_what_to_write() -> None:
    """``agg.mean(it.x)`` and ``win.ntile(4)`` were Python's AttributeError ("type object 'agg' has
    no attribute 'mean'"): each is JQ0034 naming what to write and listing what there is; names
    with an underscore stay AttributeErrors (Python and IPython probe those)."""
    for call, advice in (
        (lambda: agg.mean(it.x), "agg.avg(it.x)"),
        (lambda: agg.nunique(it.x), "agg.count_distinct(it.x)"),
        (lambda: agg.size(), "agg.count()"),
        (lambda: agg.quantile(it.x, 0.9), "agg.median(it.x)"),
        (lambda: agg.mode(it.x), "agg.count, count_distinct, sum"),
        (lambda: win.shift(it.x, 1), "win.lag(it.x, n)"),
        (lambda: win.ntile(4), "win.row_number, rank"),
    ):
        with pytest.raises(QueryError) as info:
            call()
        assert info.value.code == "JQ0034" and advice in info.value.reason, info.value.reason
    with pytest.raises(AttributeError):
        agg._repr_html_  # noqa: B018
    assert agg.avg(it.x).document == {"$avg": ["$it.x"]}


@pytest.mark.parametrize("flag", ["case", "regex"])
def test_str_contains_takes_case_and_regex_as_booleans(src: Docs, flag: str) -> None:
    """``str.contains("aa", case="no")`` was read as case=True (any non-empty text is truthy) and
    matched case-sensitively without a word: ``case`` and ``regex`` are True or False, else JQ2010."""
    for given in ("no", 0, None):
        with pytest.raises(QueryError) as info:
            it.carrier.str.contains("aa", **{flag: given})
        assert info.value.code == "JQ2010" and f"{flag}=" in info.value.reason
    assert src.where(it.carrier.str.contains("aa", case=False)).count() == 3


def _reason(call: Any) -> str:
    with pytest.raises(QueryError) as info:
        call()
    return str(info.value.reason)


def test_python_conversions_and_operators_of_an_expression_are_coded() -> None:
    """``int(it.x)``, ``float(it.x)``, ``divmod``, ``@``, ``<<`` and ``>>`` were Python TypeErrors,
    and ``win.lag(it.x, True)`` read as one row: each is now coded, saying what to write."""
    for call, advice in (
        (lambda: int(it.x), "{'$number': '$it.x'}"),
        (lambda: float(it.x), "{'$number': '$it.x'}"),
        (lambda: divmod(it.x, 2), "it.x // n and it.x % n"),
        (lambda: divmod(7, it.x), "n // it.x and n % it.x"),
        (lambda: it.x @ it.y, "no matrix product"),
        (lambda: it.x << 1, "no bit shifts"),
        (lambda: 1 >> it.x, "no bit shifts"),
    ):
        with pytest.raises(QueryError) as info:
            call()
        assert info.value.code == "JQ0034" and advice in info.value.reason, info.value.reason
    with pytest.raises(QueryError) as info:
        win.lag(it.x, True)
    assert info.value.code == "JQ2010" and "offset" in info.value.reason
    assert win.lag(it.x, 2).document == {"$lag": ["$it.x", 2]}


def test_an_aggregate_of_a_member_name_says_its_own_name(src: Docs) -> None:
    """``q.sum("flight")`` said ``select() takes an expression``: it names sum() now."""
    calls = ((lambda: src.sum("flight"), "sum"), (lambda: src.query().std("flight"), "std"))
    for call, name in calls:
        with pytest.raises(QueryError) as info:
            call()
        assert info.value.code == "JQ2010" and info.value.reason.startswith(f"{name}() takes")
        assert f"{name}(it['flight'])" in info.value.reason
    assert src.sum(it.flight) == sum(f["flight"] for f in FLIGHTS)


@pytest.fixture
def stored() -> Iterator[Any]:
    """A collection of two stored documents, ``{"x": 1}`` and ``{"x": 2}``."""
    import jarenlab as jl

    model = {
        "$model": "0.1",
        "collections": {"t": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
    }
    with jl.open(model=model) as store:
        store["t"].insert_many([{"x": 1}, {"x": 2}])
        yield store["t"]


def test_a_keyword_the_query_reads_as_no_external_is_refused(stored: Any) -> None:
    """``q.explain(analyse=True)``, ``q.count(min_dela=30)``, ``q.to_pandas(flaten=True)`` were
    ignored (every keyword is an external, and an external the query does not read was dropped):
    each is JQ0005 naming it and the externals the query reads, and nothing runs or is deleted."""
    q = stored.where(it.x > param("lo"))
    assert q.count(lo=1) == 1 and q.keys(lo=0) == [1, 2] and len(q.to_pandas(lo=0)) == 2
    calls = (
        lambda: q.explain(analyse=True, lo=1),
        lambda: q.count(lo=1, min_dela=30),
        lambda: q.to_list(lox=1),
        lambda: q.to_pandas(flaten=True, lo=1),
        lambda: list(q.iter_batches(lo=1, hi=2)),
        lambda: q.page(1, lo=1, after_=None),
        lambda: q.keys(l=1),
        lambda: q.delete(lo=0, everything=True),
        lambda: q.update(set={"y": param("v")}, lo=0, w=1),
    )
    for call in calls:
        with pytest.raises(QueryError) as info:
            call()
        assert info.value.code == "JQ0005" and "(it reads $lo" in info.value.reason, info.value.reason
    assert "(it reads none)" in _reason(lambda: stored.where(it.x > 0).count(lo=1))
    assert stored.count() == 2 and q.update(set={"y": param("v")}, lo=1, v=7) == 1
    assert stored.where(it.y == 7).count() == 1


def test_an_ordering_key_given_a_second_direction_says_to_give_one() -> None:
    """``it.x.desc().desc()`` was a TypeError ('bool' object is not callable) and
    ``.desc().asc()`` an AttributeError."""
    for call in (lambda: it.x.desc().desc(), lambda: it.x.desc().asc(), lambda: agg.count().asc().desc()):
        with pytest.raises(QueryError) as info:
            call()
        assert info.value.code == "JQ0034" and "takes one direction" in info.value.reason
    assert it.x.desc(empty="greatest").spec() == {"$key": "$it.x", "$dir": "desc", "$empty": "greatest"}


def test_isin_of_a_param_bound_to_one_value_says_to_give_a_list(stored: Any) -> None:
    """``isin(param("xs"))`` run with ``xs=5`` read ``$xs[*]``, the items of a number: none, so it
    matched nothing, silently. A value that is no list is JQ2010; lists, tuples and arrays match."""
    import datetime as dt

    import numpy as np

    q = stored.where(it.x.isin(param("xs")))
    assert (q.count(xs=[1]), q.count(xs=(1, 2)), q.count(xs=np.array([2]))) == (1, 2, 1)
    for value in (5, "ab", None, True, {"a": 1}, dt.date(2024, 1, 1)):
        with pytest.raises(QueryError) as info:
            q.count(xs=value)
        assert info.value.code == "JQ2010" and "xs=[" in info.value.reason


def test_the_text_of_an_expression_is_refused_where_it_would_be_a_constant(src: Docs) -> None:
    """``select({"s": str(it.x)})`` and ``f"{it.x} km"`` gave every row the constant text
    'Expr("$it.x")': JQ0034 naming $string."""
    for call in (
        lambda: src.select({"s": str(it.carrier)}),
        lambda: src.select({"s": f"{it.carrier} km"}),
        lambda: src.where(it.carrier == str(it.origin)),
    ):
        with pytest.raises(QueryError) as info:
            call().to_list()
        assert info.value.code == "JQ0034" and "$string" in info.value.reason
    assert src.select({"s": "Expr is a word"}).take(1).to_list() == [{"s": "Expr is a word"}]
