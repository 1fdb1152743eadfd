"""Property tests: coded errors only, canonical fixed point, builder vs comprehension."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from jarenlab.errors import JarenlabError
from jarenlab.query import Query, canonical, compile_query, evaluate, it

SETTINGS = settings(
    max_examples=150, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck)
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-10, 10, allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "a", "b", "Ab", "😀", "$x"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abk"), inner, max_size=3)
    ),
    max_leaves=8,
)
documents = st.lists(
    st.dictionaries(st.sampled_from(["a", "b", "k", "id"]), json_values, max_size=4), max_size=6
)

OPS = [
    "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "seq", "exists", "empty", "if", "coalesce", "default",
    "add", "sub", "mul", "div", "idiv", "mod", "neg", "concat", "string-join", "substring", "contains",
    "starts-with", "ends-with", "upper", "lower", "string-length", "normalize-space", "match", "search",
    "replace", "count", "sum", "avg", "min", "max", "distinct", "reverse", "sort", "head", "tail", "subsequence",
    "range", "get", "index-of", "entries", "from-entries", "is-string", "is-number", "is-boolean", "is-null",
    "is-array", "is-object", "string", "number", "boolean", "nope",
]  # fmt: skip
leaves = st.one_of(
    scalars,
    st.sampled_from(
        ["$it", "$it.a", "$it.b", "$it.k[*]", "$it.a[0]", "$", "$[*]", "$[*].a", "$ext", "$..a", "$ bad"]
    ),
)


def _exprs(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    op = st.builds(
        lambda name, args: {f"${name}": args}, st.sampled_from(OPS), st.lists(children, max_size=3)
    )
    flwor = st.builds(
        lambda where, ret, order: {
            "$for": {"it": "$[*]"},
            "$where": where,
            "$orderby": order,
            "$return": ret,
        },
        children,
        children,
        children,
    )
    group = st.builds(
        lambda key, ret: {"$for": {"it": "$[*]"}, "$groupby": {"g": key}, "$return": ret}, children, children
    )
    mapc = st.dictionaries(st.sampled_from(["x", "y"]), children, max_size=2)
    return st.one_of(op, flwor, group, mapc, st.lists(children, max_size=3))


queries = st.recursive(leaves, _exprs, max_leaves=12)


@SETTINGS
@seed(20261129)
@given(query=queries, docs=documents, ext=json_values)
def test_only_coded_errors(query: Any, docs: list[Any], ext: Any) -> None:
    try:
        result = compile_query(query, limits={"sequence_items": 10_000, "steps": 100_000}).run(
            docs, {"ext": ext}
        )
    except JarenlabError as err:
        assert err.code.startswith("JQ")
    else:
        assert isinstance(result, list)


@SETTINGS
@seed(20261129)
@given(query=queries)
def test_canonical_is_a_fixed_point(query: Any) -> None:
    try:
        text = canonical(query)
    except JarenlabError:
        return
    assert canonical(json.loads(text)) == text


def test_canonical_ignores_key_order() -> None:
    a = {
        "$return": "$n",
        "$orderby": {"$dir": "asc", "$key": "$n.x"},
        "$for": {"n": "$[*]"},
        "$where": {"$not": "$n.a"},
    }
    b = {
        "$for": {"n": "$[*]"},
        "$where": {"$not": ["$n['a']"]},
        "$orderby": [{"$key": "$n.x"}],
        "$return": "$n",
    }
    assert canonical(a) == canonical(b)
    assert canonical({"$groupby": {"b": 1, "a": 2}, "$let": {"x": 1}, "$return": 1}) == canonical(
        {"$let": {"x": 1}, "$groupby": {"a": 2, "b": 1}, "$return": 1}
    )
    assert canonical({"a": 1, "b": 2}) != canonical({"b": 2, "a": 1}), "map members keep their order"


class Docs:
    name = "docs"

    def __init__(self, docs: list[Any]) -> None:
        self.docs = docs

    def _run_query(self, document: Any, externals: dict[str, Any]) -> list[Any]:
        return evaluate(document, self.docs, externals)


def _num(x: Any) -> bool:
    return type(x) in (int, float)


@SETTINGS
@seed(20261129)
@given(docs=documents, threshold=st.integers(-5, 5), word=st.sampled_from(["a", "b", "Ab"]))
def test_builder_filters_match_comprehensions(docs: list[dict[str, Any]], threshold: int, word: str) -> None:
    q = Query(Docs(docs))
    cases = [
        (it.a > threshold, lambda d: _num(d.get("a")) and d["a"] > threshold),
        (it.a == threshold, lambda d: _num(d.get("a")) and d["a"] == threshold),
        (it.b == word, lambda d: type(d.get("b")) is str and d["b"] == word),
        (~(it.a == threshold), lambda d: not (_num(d.get("a")) and d["a"] == threshold)),
        (it.a != threshold, lambda d: "a" in d and not (_num(d["a"]) and d["a"] == threshold)),
        (
            it.k.exists() & (it.a <= threshold),
            lambda d: "k" in d and _num(d.get("a")) and d["a"] <= threshold,
        ),
        (it.b.is_empty() | (it.b < word), lambda d: "b" not in d or (type(d["b"]) is str and d["b"] < word)),
    ]
    for expr, keep in cases:
        assert q.where(expr).to_list() == [d for d in docs if keep(d)], expr


member_leaves = st.sampled_from(["$it.a", "$it.b", "$it.k"])
operands = st.one_of(scalars, st.just("$ext"))
comparisons = st.builds(
    lambda op, m, y, flip: {f"${op}": [y, m] if flip else [m, y]},
    st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge"]),
    member_leaves,
    operands,
    st.booleans(),
)
item_wheres = st.recursive(
    st.one_of(
        comparisons,
        st.builds(lambda op, m: {f"${op}": m}, st.sampled_from(["exists", "empty"]), member_leaves),
    ),
    lambda inner: st.one_of(
        st.builds(lambda xs: {"$and": xs}, st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda xs: {"$or": xs}, st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda x: {"$not": x}, inner),
    ),
    max_leaves=4,
)
order_keys = st.builds(
    lambda key, desc, greatest: {
        "$key": key,
        "$dir": "desc" if desc else "asc",
        "$empty": "greatest" if greatest else "least",
    },
    st.sampled_from(["$it.a", "$it.b", "$it.k", {"$neg": "$it.a"}, {"$div": ["$it.a", "$it.a"]}, "$it.k[*]"]),
    st.booleans(),
    st.booleans(),
)
item_scalars = st.one_of(scalars, st.just(float("nan")))
items = st.lists(
    st.one_of(
        st.dictionaries(
            st.sampled_from(["a", "b", "k"]),
            st.one_of(item_scalars, st.lists(item_scalars, max_size=2)),
            max_size=3,
        ),
        item_scalars,
    ),
    max_size=8,
)


@SETTINGS
@seed(20261130)
@given(
    where=st.one_of(st.none(), item_wheres),
    order=st.lists(order_keys, max_size=2),
    ret=st.sampled_from(["$it", "$it.a", {"x": "$it.b"}]),
    window=st.one_of(st.none(), st.tuples(st.integers(0, 3), st.integers(0, 3))),
    docs=items,
    ext=json_values,
)
def test_fast_paths_agree_with_the_general_evaluation(
    where: Any, order: list[Any], ret: Any, window: Any, docs: list[Any], ext: Any
) -> None:
    """One ``$for`` with ``$where``/``$orderby`` takes the item fast path; limits turn it off."""
    query: dict[str, Any] = {"$for": {"it": "$[*]"}, "$return": ret}
    if where is not None:
        query["$where"] = where
    if order:
        query["$orderby"] = order
    doc = {"$subsequence": [query, *window]} if window else query

    def outcome(limits: dict[str, int]) -> Any:
        try:
            return compile_query(doc, limits=limits).run(docs, {"ext": ext})
        except JarenlabError as err:
            return err.code, err.doc_path

    fast = outcome({})
    assert json.dumps(fast) == json.dumps(outcome({"steps": 10**9}))


numbers = st.one_of(
    st.integers(-(2**62), 2**62),
    st.sampled_from([0.1, 0.2, 0.3, -0.0, 1e16, -1e16, 1e308, -1e308, 5e-324]),
    st.floats(allow_nan=True, allow_infinity=True),
)


@SETTINGS
@seed(20261202)
@given(values=st.lists(numbers, max_size=12))
def test_a_running_sum_is_the_sum_of_each_prefix(values: list[Any]) -> None:
    """The running frame (one pass) and the same rows as an explicit frame (each frame summed
    alone) give the same numbers: each is ``$sum`` of the rows so far, correctly rounded."""
    rows = [{"i": i, "v": v} for i, v in enumerate(values)]

    def window(frame: list[Any]) -> list[Any]:
        fns = {fn: {f"${fn}": "$r.v", "$frame": frame} for fn in ("sum", "avg")}
        doc = {"$window": {"r": "$[*]", "$orderby": ["$r.i"], "$compute": fns}}
        return [(r["sum"], r.get("avg")) for r in evaluate(doc, rows)]

    running, framed = window([None, 0]), window([-len(rows), 0])
    assert json.dumps(running) == json.dumps(framed)  # NaN, infinities and -0.0 spelled alike
    assert [type(s) for s, _ in running] == [type(s) for s, _ in framed]
