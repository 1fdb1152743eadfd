"""The Python builder: ``it``, ``param`` and the immutable :class:`Query` chain.

Expressions record a query document; nothing runs until a terminal method
(``to_list``, ``count``, iteration, ...) hands the document to the source.

>>> ((it.origin == "JFK") & (it.dep_delay > param("min_delay"))).document
{'$and': [{'$eq': ['$it.origin', 'JFK']}, {'$gt': ['$it.dep_delay', '$min_delay']}]}
>>> it["odd key"].tags[0].document
"$it['odd key'].tags[0]"
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, NoReturn, Protocol

from jarenlab.errors import QueryError
from jarenlab.query.path import VAR_NAME, parse_path, path_text
from jarenlab.query.values import check_json

_LOGIC_HINT = "use & | ~ (with parentheses) instead of and / or / not, which Python cannot overload"


def lit(value: Any) -> Any:
    """The document form of a Python value or :class:`Expr`.

    >>> lit("$5"), lit(it.a), lit([1, 2])
    ('$$5', '$it.a', {'$const': [1, 2]})
    """
    if isinstance(value, Expr):
        return value.document
    why = check_json(value)
    if why:
        raise QueryError("JQ0010", f"cannot use {value!r} in a query: {why}")
    if isinstance(value, str):
        return "$" + value if value.startswith("$") else value
    if isinstance(value, list | dict):
        return {"$const": value}
    return value


def _op(name: str, *args: Any) -> Expr:
    return Expr({f"${name}": [lit(a) for a in args]})


class Expr:
    """A query expression; Python operators build operator phrases.

    ``== != < <= > >=`` build comparisons, ``& | ~`` build ``$and $or $not``,
    ``+ - * / // %`` and unary ``-`` build arithmetic. Member access records a path;
    a member whose name is also a method here (``desc``, ``exists``, ...) is reached
    with ``it["desc"]``.

    >>> (it.a + 1).document
    {'$add': ['$it.a', 1]}
    """

    __slots__ = ("_doc",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, document: Any) -> None:
        self._doc = document

    @property
    def document(self) -> Any:
        """The JSON document of this expression."""
        return self._doc

    def _step(self, step: tuple[str, object]) -> Expr:
        doc = self._doc
        if isinstance(doc, str) and doc.startswith("$") and not doc.startswith("$$"):
            p = parse_path(doc, "")
            return Expr(path_text(p.var, (*p.steps, step)))
        return _op("get", self, step[1])

    def __getattr__(self, name: str) -> Expr:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._step(("member", name))

    def __getitem__(self, key: str | int) -> Expr:
        if isinstance(key, bool) or not isinstance(key, str | int):
            raise QueryError("JQ0004", f"a member name or integer index is needed, got {key!r}")
        return self._step(("member", key) if isinstance(key, str) else ("index", key))

    def __iter__(self) -> NoReturn:
        raise QueryError(
            "JQ0008", "an expression cannot be iterated in Python; use it.tags[0] or '$it.tags[*]'"
        )

    def __contains__(self, item: object) -> NoReturn:
        raise QueryError("JQ0008", "`in` cannot build a query; use expr.isin([...])")

    def __bool__(self) -> NoReturn:
        raise QueryError("JQ0008", f"an expression has no Python truth value; {_LOGIC_HINT}")

    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        return _op("eq", self, other)

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        return _op("ne", self, other)

    def __lt__(self, other: Any) -> Expr:
        return _op("lt", self, other)

    def __le__(self, other: Any) -> Expr:
        return _op("le", self, other)

    def __gt__(self, other: Any) -> Expr:
        return _op("gt", self, other)

    def __ge__(self, other: Any) -> Expr:
        return _op("ge", self, other)

    def _logic(self, name: str, other: Any) -> Expr:
        parts: list[Any] = []
        for e in (self, other):
            doc = lit(e)
            if isinstance(doc, dict) and list(doc) == [f"${name}"]:
                parts.extend(doc[f"${name}"])
            else:
                parts.append(doc)
        return Expr({f"${name}": parts})

    def __and__(self, other: Any) -> Expr:
        return self._logic("and", other)

    def __rand__(self, other: Any) -> Expr:
        return Expr(lit(other))._logic("and", self)

    def __or__(self, other: Any) -> Expr:
        return self._logic("or", other)

    def __ror__(self, other: Any) -> Expr:
        return Expr(lit(other))._logic("or", self)

    def __invert__(self) -> Expr:
        return _op("not", self)

    def __add__(self, other: Any) -> Expr:
        return _op("add", self, other)

    def __radd__(self, other: Any) -> Expr:
        return _op("add", other, self)

    def __sub__(self, other: Any) -> Expr:
        return _op("sub", self, other)

    def __rsub__(self, other: Any) -> Expr:
        return _op("sub", other, self)

    def __mul__(self, other: Any) -> Expr:
        return _op("mul", self, other)

    def __rmul__(self, other: Any) -> Expr:
        return _op("mul", other, self)

    def __truediv__(self, other: Any) -> Expr:
        return _op("div", self, other)

    def __rtruediv__(self, other: Any) -> Expr:
        return _op("div", other, self)

    def __floordiv__(self, other: Any) -> Expr:
        return _op("idiv", self, other)

    def __mod__(self, other: Any) -> Expr:
        return _op("mod", self, other)

    def __neg__(self) -> Expr:
        return _op("neg", self)

    def asc(self, *, empty: str = "least") -> OrderKey:
        """An ascending ordering key (``empty``: where missing values go)."""
        return OrderKey(self._doc, False, empty)

    def desc(self, *, empty: str = "least") -> OrderKey:
        """A descending ordering key.

        >>> it.dep_delay.desc().spec()
        {'$key': '$it.dep_delay', '$dir': 'desc'}
        """
        return OrderKey(self._doc, True, empty)

    def exists(self) -> Expr:
        """True when the value is present (a stored ``null`` is present)."""
        return _op("exists", self)

    def is_empty(self) -> Expr:
        """True when the value is missing."""
        return _op("empty", self)

    def startswith(self, prefix: Any) -> Expr:
        """``$starts-with``."""
        return _op("starts-with", self, prefix)

    def endswith(self, suffix: Any) -> Expr:
        """``$ends-with``."""
        return _op("ends-with", self, suffix)

    def contains(self, part: Any) -> Expr:
        """``$contains`` (substring)."""
        return _op("contains", self, part)

    def matches(self, pattern: str) -> Expr:
        """``$match``: the whole string matches the I-Regexp pattern."""
        return _op("match", self, pattern)

    def search(self, pattern: str) -> Expr:
        """``$search``: the I-Regexp pattern matches somewhere in the string."""
        return _op("search", self, pattern)

    def upper(self) -> Expr:
        """``$upper``."""
        return _op("upper", self)

    def lower(self) -> Expr:
        """``$lower``."""
        return _op("lower", self)

    def length(self) -> Expr:
        """``$string-length`` in code points."""
        return _op("string-length", self)

    def isin(self, values: Any) -> Expr:
        """Membership: ``$or`` of ``$eq`` for a Python list, ``$eq`` against ``$p[*]`` for a param.

        >>> it.x.isin([1, 2]).document
        {'$or': [{'$eq': ['$it.x', 1]}, {'$eq': ['$it.x', 2]}]}
        """
        if isinstance(values, Expr):
            doc = values.document
            is_path = isinstance(doc, str) and doc.startswith("$") and not doc.startswith("$$")
            return _op("eq", self, Expr(doc + "[*]") if is_path else values)
        items = list(values)
        if not items:
            return Expr(False)
        return Expr({"$or": [_op("eq", self, v).document for v in items]})

    def __repr__(self) -> str:
        return f"Expr({json.dumps(self._doc, ensure_ascii=False)})"


@dataclass(frozen=True)
class OrderKey:
    """An ``$orderby`` spec made by :meth:`Expr.asc` / :meth:`Expr.desc`."""

    key: Any
    desc: bool
    empty: str = "least"

    def spec(self) -> dict[str, Any]:
        """The ``$orderby`` spec document."""
        if self.empty not in ("least", "greatest"):
            raise QueryError("JQ0007", "empty= is 'least' or 'greatest'")
        out: dict[str, Any] = {"$key": self.key}
        if self.desc:
            out["$dir"] = "desc"
        if self.empty == "greatest":
            out["$empty"] = "greatest"
        return out


it = Expr("$it")


def param(name: str) -> Expr:
    """An external parameter ``$name``, bound at run time (``to_list(name=...)``).

    >>> param("min_delay").document
    '$min_delay'
    """
    if not VAR_NAME.match(name) or name == "it":
        raise QueryError("JQ0004", f"{name!r} is not a usable parameter name")
    return Expr("$" + name)


def key(name: str) -> Expr:
    """A group key bound by ``group_by(name=...)`` (``group_by(expr)`` names it ``key``)."""
    return param(name)


class agg:
    """Aggregates over the current group (after ``group_by``), e.g. ``agg.avg(it.dep_delay)``."""

    @staticmethod
    def count(expr: Any = None) -> Expr:
        """The number of items (``agg.count()`` counts the group)."""
        return _op("count", it if expr is None else expr)

    @staticmethod
    def sum(expr: Any) -> Expr:
        """``$sum`` (0 when empty)."""
        return _op("sum", expr)

    @staticmethod
    def avg(expr: Any) -> Expr:
        """``$avg`` (missing when empty)."""
        return _op("avg", expr)

    @staticmethod
    def min(expr: Any) -> Expr:
        """``$min``."""
        return _op("min", expr)

    @staticmethod
    def max(expr: Any) -> Expr:
        """``$max``."""
        return _op("max", expr)


class Source(Protocol):
    """What a :class:`Query` runs against: a name and ``_run_query(document, externals)``."""

    name: str

    def _run_query(self, document: Any, externals: dict[str, Any]) -> list[Any]: ...


def value_doc(value: Any) -> Any:
    """The document for a ``select``: a dict is a map constructor, a list an array constructor.

    >>> value_doc({"c": it.carrier, "$x": 1})
    {'c': '$it.carrier', '$$x': 1}
    """
    if isinstance(value, dict):
        return {("$" + k if k.startswith("$") else k): value_doc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [value_doc(v) for v in value]
    return lit(value)


@dataclass(frozen=True)
class _Stage:
    source: Any = "$[*]"
    where: tuple[Any, ...] = ()
    group: tuple[tuple[str, Any], ...] | None = None
    order: tuple[dict[str, Any], ...] = ()
    ret: Any = None
    post: tuple[tuple[Any, ...], ...] = ()


def _order_specs(keys: tuple[Any, ...]) -> tuple[dict[str, Any], ...]:
    if not keys:
        raise QueryError("JQ0007", "order_by needs at least one key")
    return tuple(k.spec() if isinstance(k, OrderKey) else OrderKey(lit(k), False).spec() for k in keys)


class Query:
    """An immutable query chain over a source; each method returns a new Query.

    >>> q = Query(_Docs([{"a": 2}, {"a": 1}])).where(it.a > 0).order_by(it.a).select(it.a)
    >>> q.to_list(), q.count(), q.first()
    ([1, 2], 2, 1)
    >>> q.document
    [{'$for': {'it': '$[*]'}, '$where': {'$gt': ['$it.a', 0]}, '$orderby': [{'$key': '$it.a'}], '$return': '$it.a'}]
    """

    __slots__ = ("_source", "_stage")

    def __init__(self, source: Source, _stage: _Stage | None = None) -> None:
        self._source = source
        self._stage = _stage or _Stage()

    def _with(self, **changes: Any) -> Query:
        return Query(self._source, replace(self._stage, **changes))

    def _nested(self) -> Query:
        return Query(self._source, _Stage(source=[self._expr()]))

    def where(self, predicate: Any) -> Query:
        """Keep items whose predicate is true; several ``where`` calls AND together."""
        st = self._stage
        q = self._nested() if st.group is not None or st.ret is not None or st.post else self
        return q._with(where=(*q._stage.where, lit(predicate)))

    def order_by(self, *keys: Any) -> Query:
        """Order by keys (``it.x``, ``it.x.desc()``, ``it.x.asc(empty="greatest")``); replaces any order."""
        st = self._stage
        q = self._nested() if st.ret is not None or st.post else self
        return q._with(order=_order_specs(keys))

    def then_by(self, *keys: Any) -> Query:
        """Add tie-breaking keys after ``order_by``."""
        if not self._stage.order or self._stage.ret is not None or self._stage.post:
            raise QueryError("JQ0007", "then_by follows order_by directly")
        return self._with(order=self._stage.order + _order_specs(keys))

    def group_by(self, *exprs: Any, **named: Any) -> Query:
        """Group items: ``group_by(it.carrier)`` binds ``key("key")``; ``group_by(c=it.carrier)`` binds ``key("c")``.

        After grouping, ``it`` stands for the group's items, so ``agg.count()`` and
        ``agg.avg(it.dep_delay)`` aggregate per group inside ``select``.
        """
        if len(exprs) > 1 or (exprs and named) or not (exprs or named):
            raise QueryError("JQ0006", "group_by takes one expression or named expressions")
        keys = {"key": exprs[0]} if exprs else named
        for name in keys:
            param(name)
        st = self._stage
        busy = st.group is not None or st.ret is not None or st.post or st.order
        q = self._nested() if busy else self
        return q._with(group=tuple((n, lit(e)) for n, e in keys.items()))

    def select(self, value: Any) -> Query:
        """Shape each result: an expression, a dict (map constructor) or a list (array constructor)."""
        st = self._stage
        # A dict or list makes exactly one item per input, so it commutes with skip/take
        # and the document stays one flat FLWOR (what the planner pushes down).
        one_each = isinstance(value, dict | list) and all(op[0] == "window" for op in st.post)
        q = self._nested() if st.ret is not None or (st.post and not one_each) else self
        return q._with(ret=value_doc(value))

    def _window(self, start: int, length: int | None) -> Query:
        post = self._stage.post
        if post and post[-1][0] == "window":
            _, s0, l0 = post[-1]
            length = l0 if length is None else length if l0 is None else min(l0, length)
            return self._with(post=(*post[:-1], ("window", s0, length)))
        return self._with(post=(*post, ("window", start, length)))

    def skip(self, n: int) -> Query:
        """Drop the first ``n`` results."""
        _check_count(n, "skip")
        post = self._stage.post
        if post and post[-1][0] == "window":
            _, s0, l0 = post[-1]
            return self._with(post=(*post[:-1], ("window", s0 + n, None if l0 is None else max(l0 - n, 0))))
        return self._with(post=(*post, ("window", n, None)))

    def take(self, n: int) -> Query:
        """Keep at most ``n`` results."""
        _check_count(n, "take")
        return self._window(0, n)

    def distinct(self) -> Query:
        """Drop repeated results (deep equality, first occurrence kept)."""
        return self._with(post=(*self._stage.post, ("distinct",)))

    def _flwor(self) -> dict[str, Any]:
        st = self._stage
        doc: dict[str, Any] = {"$for": {"it": st.source}}
        if st.where:
            doc["$where"] = st.where[0] if len(st.where) == 1 else {"$and": list(st.where)}
        if st.group is not None:
            doc["$groupby"] = dict(st.group)
        if st.order:
            doc["$orderby"] = list(st.order)
        if st.ret is not None:
            doc["$return"] = st.ret
        elif st.group is not None:
            doc["$return"] = {**{n: {"$default": ["$" + n, None]} for n, _ in st.group}, "items": ["$it"]}
        else:
            doc["$return"] = "$it"
        return doc

    def _expr(self) -> Any:
        expr: Any = self._flwor()
        for op in self._stage.post:
            if op[0] == "distinct":
                expr = {"$distinct": [expr]}
            else:
                expr = {"$subsequence": [expr, op[1]] + ([op[2]] if op[2] is not None else [])}
        return expr

    @property
    def document(self) -> Any:
        """The query document: the chain wrapped in an array constructor (one list result)."""
        return [self._expr()]

    def _run(self, document: Any, externals: dict[str, Any]) -> list[Any]:
        return self._source._run_query(document, externals)

    def to_list(self, **externals: Any) -> list[Any]:
        """Run the query; externals are keyword arguments (``min_delay=30``)."""
        out = self._run(self.document, externals)
        return out[0] if len(out) == 1 and isinstance(out[0], list) else out

    def __iter__(self) -> Iterator[Any]:
        return iter(self.to_list())

    def _aggregate(self, name: str, expr: Any, externals: dict[str, Any]) -> Any:
        q = self if expr is None else self.select(expr)
        out = self._run({f"${name}": [q._expr()]}, externals)
        return out[0] if out else None

    def count(self, **externals: Any) -> int:
        """The number of results."""
        return int(self._aggregate("count", None, externals))

    def sum(self, expr: Any = None, **externals: Any) -> Any:
        """The sum of ``expr`` over the results (0 when there are none)."""
        return self._aggregate("sum", expr, externals)

    def avg(self, expr: Any = None, **externals: Any) -> Any:
        """The mean of ``expr`` (None when there are no results)."""
        return self._aggregate("avg", expr, externals)

    def min(self, expr: Any = None, **externals: Any) -> Any:
        """The least ``expr`` (None when there are no results)."""
        return self._aggregate("min", expr, externals)

    def max(self, expr: Any = None, **externals: Any) -> Any:
        """The greatest ``expr`` (None when there are no results)."""
        return self._aggregate("max", expr, externals)

    def first(self, **externals: Any) -> Any:
        """The first result, or None."""
        rows = self.take(1).to_list(**externals)
        return rows[0] if rows else None

    def to_pandas(self, **externals: Any) -> Any:
        """The results as a pandas DataFrame (non-dict results become a ``value`` column)."""
        import pandas as pd

        rows = self.to_list(**externals)
        if all(isinstance(r, dict) for r in rows):
            return pd.DataFrame.from_records(rows)
        return pd.DataFrame({"value": rows})

    def to_arrow(self, **externals: Any) -> Any:
        """The results as a pyarrow Table (non-dict results become a ``value`` column)."""
        import pyarrow as pa

        rows = self.to_list(**externals)
        if all(isinstance(r, dict) for r in rows):
            return pa.Table.from_pylist(rows)
        return pa.table({"value": rows})

    def live(self, **externals: Any) -> Any:
        """A live query of this chain over a collection (:class:`jarenlab.live.LiveQuery`)."""
        from jarenlab.live.live import LiveQuery

        return LiveQuery(self._source, self._expr(), externals)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        name = getattr(self._source, "name", "?")
        return f"Query({name}):\n{json.dumps(self.document, indent=2, ensure_ascii=False)}"

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(repr(self))}</pre>"


def _check_count(n: Any, what: str) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise QueryError("JQ2010", f"{what}() takes an integer >= 0, got {n!r}")


class Queryable:
    """Mixin giving a source (``name`` + ``_run_query``) the chain methods of :class:`Query`."""

    name: str

    def _run_query(self, document: Any, externals: dict[str, Any]) -> list[Any]:
        """The flat result sequence of ``document`` over this source (each source defines it)."""
        raise TypeError(f"{type(self).__name__} does not define _run_query")

    def query(self) -> Query:
        """A :class:`Query` over every document."""
        return Query(self)

    def where(self, predicate: Any) -> Query:
        """See :meth:`Query.where`."""
        return Query(self).where(predicate)

    def order_by(self, *keys: Any) -> Query:
        """See :meth:`Query.order_by`."""
        return Query(self).order_by(*keys)

    def group_by(self, *exprs: Any, **named: Any) -> Query:
        """See :meth:`Query.group_by`."""
        return Query(self).group_by(*exprs, **named)

    def select(self, value: Any) -> Query:
        """See :meth:`Query.select`."""
        return Query(self).select(value)

    def skip(self, n: int) -> Query:
        """See :meth:`Query.skip`."""
        return Query(self).skip(n)

    def take(self, n: int) -> Query:
        """See :meth:`Query.take`."""
        return Query(self).take(n)

    def distinct(self) -> Query:
        """See :meth:`Query.distinct`."""
        return Query(self).distinct()

    def count(self, **externals: Any) -> int:
        """See :meth:`Query.count`."""
        return Query(self).count(**externals)

    def sum(self, expr: Any = None, **externals: Any) -> Any:
        """See :meth:`Query.sum`."""
        return Query(self).sum(expr, **externals)

    def avg(self, expr: Any = None, **externals: Any) -> Any:
        """See :meth:`Query.avg`."""
        return Query(self).avg(expr, **externals)

    def min(self, expr: Any = None, **externals: Any) -> Any:
        """See :meth:`Query.min`."""
        return Query(self).min(expr, **externals)

    def max(self, expr: Any = None, **externals: Any) -> Any:
        """See :meth:`Query.max`."""
        return Query(self).max(expr, **externals)

    def first(self, **externals: Any) -> Any:
        """See :meth:`Query.first`."""
        return Query(self).first(**externals)

    def to_list(self, **externals: Any) -> list[Any]:
        """See :meth:`Query.to_list`."""
        return Query(self).to_list(**externals)


class _Docs(Queryable):
    """A list of documents as a source (doctests and quick experiments).

    >>> _Docs([{"a": 1}, {"a": 5}]).where(it.a > param("lo")).count(lo=2)
    1
    """

    def __init__(self, docs: list[Any], name: str = "docs") -> None:
        self.docs = docs
        self.name = name

    def _run_query(self, document: Any, externals: dict[str, Any]) -> list[Any]:
        from jarenlab.query.engine import evaluate

        return evaluate(document, self.docs, externals)
