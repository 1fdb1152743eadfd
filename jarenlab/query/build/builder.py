"""The Python builder: the immutable :class:`Query` chain and the :class:`Queryable` mixin.

Expressions (``it``, ``param``, ``agg``, ``key``) live in :mod:`jarenlab.query.build.expr`;
nothing runs until a terminal method (``to_list``, ``count``, iteration, ...) hands the
document to the source.

>>> _Docs([{"a": 1}, {"a": 3}]).where(it.a > param("lo")).select(it.a).to_list(lo=2)
[3]
"""

from __future__ import annotations

import html
import json
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Protocol, cast

from jarenlab import pointer
from jarenlab.arguments import is_count
from jarenlab.errors import JarenlabError, QueryError, QueryWarning
from jarenlab.query.build.expr import (
    AGGREGATES,
    Aggregate,
    Expr,
    GroupKey,
    OrderKey,
    agg,
    it,
    key,
    lit,
    param,
    refuse_item_aggregate,
    win,
)
from jarenlab.query.build.joins import JoinQuery, asof, start

__all__ = [
    "Expr",
    "OrderKey",
    "Query",
    "Queryable",
    "Source",
    "agg",
    "it",
    "key",
    "lit",
    "param",
    "value_doc",
    "win",
]


#: How many rows a query's notebook display previews.
PREVIEW_ROWS = 10


class Source(Protocol):
    """What a :class:`Query` runs against: a name and ``_run_query(document, externals)``.

    A collection is one, and more: it pages (``_page``), reads and changes the documents a ``where``
    chain keeps (``_matching``, ``_update_where``, ``_delete_where``), explains and goes live. The
    builder asks the source for each, so it never imports the planner or a subsystem.
    """

    name: str

    def _run_query(self, document: Any, externals: dict[str, Any]) -> list[Any]: ...


class Stored(Source, Protocol):
    """A source of stored documents (a collection, an owner's view of one): pages and keyed changes."""

    def _page(self, document: Any, limit: int, after: str | None, externals: dict[str, Any]) -> Any: ...

    def _matching(self, conditions: tuple[Any, ...], externals: dict[str, Any]) -> list[tuple[Any, Any]]: ...

    def _update_where(
        self,
        conditions: tuple[Any, ...],
        ops: Any,
        externals: dict[str, Any],
        assign: dict[str, Any] | None = None,
    ) -> int: ...

    def _delete_where(self, conditions: tuple[Any, ...], externals: dict[str, Any]) -> int: ...


def value_doc(value: Any) -> Any:
    """The document for a ``select``: a dict is a map constructor, a list an array constructor.

    >>> value_doc({"c": it.carrier, "$x": 1})
    {'c': '$it.carrier', '$$x': 1}
    """
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):
                raise QueryError("JQ0010", f"select() member names are strings, not {type(k).__name__} {k!r}")
        return {("$" + k if k.startswith("$") else k): value_doc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [value_doc(v) for v in value]
    return lit(value)


def select_doc(value: Any) -> Any:
    """:func:`value_doc` of a whole ``select``: a bare name or constant (pandas' ``df["x"]``) would
    repeat once per item, so it is refused (JQ2010) with the spelling that picks the member.

    >>> select_doc("close")
    Traceback (most recent call last):
    ...
    jarenlab.errors.QueryError: JQ2010 bad_argument: select() takes an expression, a dict or a list, ...
    """
    if value is None or isinstance(value, str | int | float):
        name = value if isinstance(value, str) and value.isidentifier() else "x"
        raise QueryError(
            "JQ2010",
            f"select() takes an expression, a dict or a list, not {type(value).__name__} {value!r}, which "
            f"would be the result once per item: a member is select(it.{name}) (or it[{name!r}]), "
            f"members by name select([{name!r}, ...])",
        )
    return value_doc(value)


def _aggregates(value: Any) -> bool:
    """Whether a ``select`` value holds an :class:`~jarenlab.query.build.expr.Aggregate`."""
    if isinstance(value, dict):
        return any(_aggregates(v) for v in value.values())
    if isinstance(value, list):
        return any(_aggregates(v) for v in value)
    return isinstance(value, Aggregate)


def _directed(keys: tuple[Any, ...], ascending: Any) -> tuple[Any, ...]:
    """``order_by``'s keys with pandas' ``ascending`` applied (JQ0007 when it does not fit them)."""
    if ascending is True:
        return keys
    flags = [ascending] * len(keys) if type(ascending) is bool else ascending
    if (
        not isinstance(flags, list | tuple)
        or len(flags) != len(keys)
        or any(type(f) is not bool for f in flags)
    ):
        raise QueryError("JQ0007", f"ascending is True, False or one of them per key, not {ascending!r}")
    out = []
    for k, up in zip(keys, flags, strict=True):
        if isinstance(k, OrderKey) and not up:
            raise QueryError(
                "JQ0007",
                "a key that says its direction (.asc()/.desc()) takes no ascending=False; give it once",
            )
        out.append(k.desc() if not up and isinstance(k, Expr) else k)
    return tuple(out)


def _group_keys(value: Any, what: str, bound: tuple[str, ...] = ()) -> None:
    """Refuse ``key(...)`` naming no key the chain's ``group_by`` binds (``bound``: none without
    one) with JQ0006, before it reads as an external without a value (JQ2006).

    >>> _group_keys({"n": key("key")}, "select", ("key",))
    >>> _group_keys({"c": key("zz")}, "select", ("key",))
    Traceback (most recent call last):
    ...
    jarenlab.errors.QueryError: JQ0006 bad_flwor: select(): key('zz') names no key this group_by binds: it binds key('key') (group_by(expr) binds key('key'), group_by(name=expr) key('name'))
    """
    if isinstance(value, dict):
        for v in value.values():
            _group_keys(v, what, bound)
    elif isinstance(value, list | tuple):
        for v in value:
            _group_keys(v, what, bound)
    elif isinstance(value, GroupKey) and value.name not in bound:
        if not bound:
            raise QueryError(
                "JQ0006",
                f"{what}(): key({value.name!r}) names a group-by key, and this chain has no group_by binding "
                f"it: group_by({value.name}=...) first (param({value.name!r}) names an external value)",
            )
        raise QueryError(
            "JQ0006",
            f"{what}(): key({value.name!r}) names no key this group_by binds: it binds "
            f"{', '.join(f'key({b!r})' for b in bound)} (group_by(expr) binds key('key'), "
            "group_by(name=expr) key('name'))",
        )


def _over_rows(doc: Any) -> Any:
    """A select document with each aggregate reading the bound rows instead of the group.

    >>> _over_rows({"n": {"$count": ["$it"]}, "s": {"$sum": ["$it.x"]}})
    {'n': {'$count': [{'$for': {'it': '$jl_rows'}, '$return': '$it'}]}, 's': {'$sum': [{'$for': {'it': '$jl_rows'}, '$return': '$it.x'}]}}
    """
    if isinstance(doc, list):
        return [_over_rows(d) for d in doc]
    if not isinstance(doc, dict):
        return doc
    if len(doc) == 1:
        ((name, args),) = doc.items()
        if name[1:] in AGGREGATES and isinstance(args, list) and args:
            return {name: [_each_row(args[0]), *args[1:]]}
        if name == "$const":
            return doc
    return {k: _over_rows(v) for k, v in doc.items()}


def _each_row(arg: Any) -> Any:
    """An aggregate's argument over the bound rows: ``arg`` of each row; of ``$distinct [x]``,
    the distinct values of ``x`` over the rows.

    >>> _each_row({"$distinct": ["$it.x"]})
    {'$distinct': [{'$for': {'it': '$jl_rows'}, '$return': '$it.x'}]}
    """
    inner = arg.get("$distinct") if isinstance(arg, dict) and len(arg) == 1 else None
    if isinstance(inner, list) and len(inner) == 1:
        return {"$distinct": [_each_row(inner[0])]}
    return {"$for": {"it": "$jl_rows"}, "$return": arg}


def _reads_it(doc: Any) -> bool:
    """Whether a document reads ``$it`` outside the aggregates' own FLWORs."""
    return any(s == "$it" or s.startswith(("$it.", "$it[", "$it'")) for s in _strings(doc, ("$for", "$const")))


def _strings(doc: Any, skip: tuple[str, ...]) -> Iterator[str]:
    """Every string of a document, outside the objects holding one of the ``skip`` keys."""
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, list):
        for d in doc:
            yield from _strings(d, skip)
    elif isinstance(doc, dict) and not any(k in doc for k in skip):
        for v in doc.values():
            yield from _strings(v, skip)


@dataclass(frozen=True)
class _Stage:
    source: Any = "$[*]"
    where: tuple[Any, ...] = ()
    group: tuple[tuple[str, Any], ...] | None = None
    order: tuple[dict[str, Any], ...] = ()
    ret: Any = None
    post: tuple[tuple[Any, ...], ...] = ()


def _expression(value: Any, what: str) -> Any:
    """Refuse a plain Python value where only an expression makes sense (it would be a constant:
    ``where("n > 1")`` would keep every row, ``order_by("n")`` would not order at all)."""
    if not isinstance(value, Expr | OrderKey):
        raise QueryError(
            "JQ2010",
            f"{what} takes an expression built from it/param/agg (e.g. it.n > 1), not "
            f"{type(value).__name__} {value!r}; run a raw query document with collection.execute()",
        )
    return value


def _order_specs(keys: tuple[Any, ...]) -> tuple[dict[str, Any], ...]:
    if not keys:
        raise QueryError("JQ0007", "order_by needs at least one key")
    for k in keys:
        _expression(k, "order_by()")
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
        if not isinstance(predicate, bool) or isinstance(predicate, Expr):
            _expression(predicate, "where()")
        refuse_item_aggregate(predicate, "where()")
        q = self._nested() if st.group is not None or st.ret is not None or st.post else self
        return q._with(where=(*q._stage.where, lit(predicate)))

    def order_by(self, *keys: Any, ascending: bool | list[bool] = True) -> Query:
        """Order by keys (``it.x``, ``it.x.desc()``, ``it.x.asc(empty="greatest")``); replaces any order.

        ``ascending=False`` (pandas' ``sort_values``) orders every key descending; a list gives each
        key's direction. A key that already says its direction (``.desc()``) takes no ``ascending``.
        """
        keys = _directed(keys, ascending)
        st = self._stage
        nests = st.ret is not None or st.post
        if nests or st.group is None:
            _group_keys(keys, "order_by")
            for k in keys:
                refuse_item_aggregate(k, "order_by() without group_by")
        else:
            _group_keys(keys, "order_by", tuple(n for n, _ in st.group))
        q = self._nested() if nests else self
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
        for name, e in keys.items():
            param(name)
            if isinstance(e, OrderKey):
                raise QueryError("JQ0006", "group_by takes expressions, not ordering keys (.asc()/.desc())")
            _expression(e, "group_by()")
        st = self._stage
        busy = st.group is not None or st.ret is not None or st.post or st.order
        q = self._nested() if busy else self
        return q._with(group=tuple((n, lit(e)) for n, e in keys.items()))

    def select(self, value: Any) -> Query:
        """Shape each result: an expression, a dict (map constructor) or a list (array constructor).

        A list of plain member names (pandas' ``df[["a", "b"]]``) keeps those members:
        ``select(["a", "b"])`` is ``select({"a": it.a, "b": it.b})``.
        """
        if isinstance(value, list) and value and all(type(v) is str for v in value):
            value = {name: it[name] for name in value}
        st = self._stage
        # A dict or list makes exactly one item per input, so it commutes with skip/take
        # and the document stays one flat FLWOR (what the planner pushes down).
        one_each = isinstance(value, dict | list) and all(op[0] == "window" for op in st.post)
        nests = st.ret is not None or (st.post and not one_each)
        if nests or st.group is None:
            _group_keys(value, "select")
            if _aggregates(value):
                return self._whole(value)
        else:
            _group_keys(value, "select", tuple(n for n, _ in st.group))
        q = self._nested() if nests else self
        return q._with(ret=select_doc(value))

    def _whole(self, value: Any) -> Query:
        """``select`` of aggregates without ``group_by``: one row over every item so far (the items
        bound once to ``$jl_rows``, each aggregate reading them), as SQL and pandas aggregate."""
        if self._stage.ret is not None:
            return self._nested()._whole(value)
        rows = self._with(ret=None)._expr()
        ret = _over_rows(select_doc(value))
        if _reads_it(ret):
            raise QueryError(
                "JQ0006",
                "select() without group_by aggregates every item into one row, so each member is an "
                "aggregate (agg.count(), agg.sum(it.x), ...); to keep per-item values, group_by(...) first",
            )
        return Query(self._source, _Stage(source=[{"$let": {"jl_rows": rows}, "$return": ret}]))

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

    def head(self, n: int = 5) -> Query:
        """pandas' ``head``: the first ``n`` results (``take(n)``)."""
        return self.take(n)

    def window(self, *, partition: Any = None, order_by: Any = None, **compute: Any) -> Query:
        """Add computed members to each result (``$window``): ``partition`` (an expression or a
        list), ``order_by`` (keys as for :meth:`order_by`) and ``name=win.fn(...)``; the results
        keep their order, and the chain goes on over them (``it`` is one result).

        >>> src = _Docs([{"c": "a", "d": 5}, {"c": "a", "d": 9}, {"c": "b", "d": 1}])
        >>> top = src.window(partition=it.c, order_by=it.d.desc(), rk=win.row_number()).where(it.rk <= 1)
        >>> top.select(it.d).to_list()
        [9, 1]
        """
        if not compute:
            raise QueryError("JQ0021", "window() computes at least one member: window(rank=win.rank(), ...)")
        spec: dict[str, Any] = {"it": self._expr()}
        if partition is not None:
            parts = partition if isinstance(partition, list | tuple) else [partition]
            spec["$partition"] = [lit(_expression(p, "window(partition=)")) for p in parts]
        if order_by is not None:
            keys = order_by if isinstance(order_by, list | tuple) else (order_by,)
            spec["$orderby"] = list(_order_specs(tuple(keys)))
        out = {}
        for name, fn in compute.items():
            doc = lit(fn)
            if not isinstance(fn, Expr) or not isinstance(doc, dict):
                raise QueryError("JQ0021", f"window({name}=...) takes a window function such as win.rank()")
            out[name] = doc
        spec["$compute"] = out
        return Query(self._source, _Stage(source={"$window": spec}))

    def rolling(self, time: Any, width: str, *, partition: Any = None, **compute: Any) -> Query:
        """Add time-based moving aggregates to each result (``$rolling``): for a result at time
        ``t``, ``name=agg.fn(...)`` over the results of its ``partition`` whose ``time`` is in
        ``(t - width, t]`` (``width`` an ISO 8601 duration such as ``"P7D"``). Results keep their
        order and the chain goes on over them; a result without a time gets no members.

        >>> src = _Docs([{"t": "2013-01-01T00:00:00Z", "x": 1}, {"t": "2013-01-01T05:00:00Z", "x": 3}])
        >>> src.rolling(it.t, "PT6H", s=agg.sum(it.x)).select(it.s).to_list()
        [1, 4]
        """
        from jarenlab.query.build.rolling import rolling_spec

        return Query(self._source, _Stage(source=rolling_spec(self._expr(), time, width, partition, compute)))

    def resample(
        self,
        time: Any,
        width: str,
        *,
        by: Any = None,
        origin: str | None = None,
        fill: Any = "drop",
        **compute: Any,
    ) -> Query:
        """One result per interval of ``width`` (a fixed ISO 8601 duration such as ``"PT1H"``, from
        ``origin``) per ``by`` group (``it.origin``, a list, or ``{"name": expr}``), with
        ``name=agg.fn(...)`` over the interval's results (``$resample``). An interval with no results
        is dropped (``fill="drop"``), repeats the interval before it (``"previous"``) or takes a
        constant (``fill=0``). Each result holds the ``by`` members, the interval's start (named
        after the time member, e.g. ``time_hour``) and the computed members.

        >>> src = _Docs([{"t": "2013-01-01T00:10:00Z"}, {"t": "2013-01-01T02:20:00Z"}])
        >>> src.resample(it.t, "PT1H", n=agg.count(), fill=0).select(it.n).to_list()
        [1, 0, 1]
        """
        from jarenlab.query.build.rolling import resample_spec

        spec = resample_spec(self._expr(), time, width, by, origin, fill, compute)
        return Query(self._source, _Stage(source=spec))

    def distinct(self) -> Query:
        """Drop repeated results (deep equality, first occurrence kept)."""
        return self._with(post=(*self._stage.post, ("distinct",)))

    def _joinable(self) -> JoinQuery:
        st = self._stage
        if st.source != "$[*]" or st.group is not None or st.order or st.ret is not None or st.post:
            raise QueryError("JQ0007", "join, group_join and select_many follow where() directly")
        return start(self._source, st.where, select_doc)

    def join(self, other: Any, name: str, *, on: Any) -> JoinQuery:
        """Join another collection as binding ``name`` where ``on`` holds (``var(name)`` reaches it).

        See :mod:`jarenlab.query.build.joins`; equalities of typed members join in SQL.
        """
        return self._joinable().join(other, name, on=on)

    def group_join(self, other: Any, name: str, *, on: Any) -> JoinQuery:
        """Bind ``name`` to the list of ``other``'s matches per item (empty when none: the outer join)."""
        return self._joinable().group_join(other, name, on=on)

    def select_many(self, items: Any, name: str) -> JoinQuery:
        """One tuple per item of an array member: ``select_many(it.tags, "t")`` binds ``t``."""
        return self._joinable().select_many(items, name)

    def asof(self, other: Any, name: str, *, on: Any, by: Any = None) -> JoinQuery:
        """Each document, in storage order, with member ``name`` holding ``other``'s latest document
        at or before it (pandas' ``merge_asof``, direction backward): ``on`` is the ordering key,
        ``by`` keys that must be equal, each a member of ``it`` (the same member on both sides) or a
        pair ``(it.x, var(name).y)``. ``other`` is a collection or its ``where()`` chain. Afterwards
        ``var(name)`` is the match; a document with none keeps no member ``name``. SQL pairs them
        where the keys are schema-typed members (``explain()`` mode ``asof``)::

            flights.asof(store["weather"], "w", on=it.time_hour, by=it.origin).select(
                {"flight": it.flight, "temp": var("w").temp})
        """
        self._joinable()  # a chain of where() calls over a collection
        if isinstance(other, Query):
            right, right_where = other._source, other._where_only("asof")
        else:
            right, right_where = other, ()
        return asof(self._source, self._stage.where, select_doc, right, right_where, name, on, by)

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
        _read(document, externals)
        return self._source._run_query(document, externals)

    def to_list(self, **externals: Any) -> list[Any]:
        """Run the query; externals are keyword arguments (``min_delay=30``)."""
        out = self._run(self.document, externals)
        return out[0] if len(out) == 1 and isinstance(out[0], list) else out

    def __iter__(self) -> Iterator[Any]:
        return iter(self.to_list())

    def __len__(self) -> int:
        """``len(q)``: the number of results (``q.count()``, one query; ``list(q)`` asks it first, as
        Python does of anything with a length, so ``q.to_list()`` reads once)."""
        return self.count()

    def page(self, limit: int, after: str | None = None, **externals: Any) -> Any:
        """One keyset page of this ordered query (:class:`jarenlab.query.planner.pages.Page`: ``items``,
        ``has_more``, ``continuation``); pass ``after=page.continuation`` for the next one.

        Pages stay correct while others write; see :mod:`jarenlab.query.planner.pages`. JD0032 beside
        ``take``/``skip``, JD0035 for a continuation of another ordering or an altered one.
        """
        _read(self.document, externals)
        return self._stored("page")._page(self.document, limit, after, externals)

    def _aggregate(self, name: str, expr: Any, externals: dict[str, Any], *more: Any) -> Any:
        if isinstance(expr, str):  # (pandas' df["x"].sum(): select() would say its own name)
            method = "std" if name == "stddev" else name
            raise QueryError(
                "JQ2010", f"{method}() takes an expression, not the text {expr!r}: {method}(it[{expr!r}])"
            )
        q = self if expr is None else self.select(expr)
        out = self._run({f"${name}": [q._expr(), *more]}, externals)
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

    def median(self, expr: Any = None, **externals: Any) -> Any:
        """The median of ``expr`` (``$median``: a float; None when there are no results)."""
        return self._aggregate("median", expr, externals)

    def std(self, expr: Any = None, *, ddof: int = 1, **externals: Any) -> Any:
        """The standard deviation of ``expr`` (``$stddev``; pandas' default ``ddof=1``, the sample
        one; None with ``ddof`` results or fewer)."""
        return self._aggregate("stddev", expr, externals, ddof)

    def first(self, **externals: Any) -> Any:
        """The first result, or None."""
        rows = self.take(1).to_list(**externals)
        return rows[0] if rows else None

    def _where_only(self, what: str) -> tuple[Any, ...]:
        """The chain's ``where`` conditions, for a call that needs stored documents with their keys."""
        st = self._stage
        if st.source != "$[*]" or st.group is not None or st.ret is not None or st.post or st.order:
            raise QueryError(
                "JQ0034",
                f"{what}() works on a chain of where() calls over a collection (no select, group_by, "
                "order_by, skip, take or distinct): it acts on stored documents",
            )
        return st.where

    def _stored(self, what: str) -> Stored:
        """The source as a source of stored documents, or JQ0008 naming the call that needs one."""
        if not hasattr(self._source, "_matching"):
            raise QueryError("JQ0008", f"{what}() needs a collection, not {type(self._source).__name__}")
        return cast(Stored, self._source)

    def keys(self, **externals: Any) -> list[Any]:
        """The keys of the stored documents this ``where`` chain keeps, in storage order."""
        _read(self.document, externals)
        return [k for k, _ in self._stored("keys")._matching(self._where_only("keys"), externals)]

    def items(self, **externals: Any) -> list[tuple[Any, Any]]:
        """``(key, document)`` pairs of the stored documents this ``where`` chain keeps (an
        identity-keyed collection's keys are not members of its documents: here they are)."""
        _read(self.document, externals)
        return self._stored("items")._matching(self._where_only("items"), externals)

    def update(self, ops: Any = None, *, set: dict[str, Any] | None = None, **externals: Any) -> int:  # noqa: A002
        """Patch every document this ``where`` chain keeps, in ONE transaction; return how many.

        ``ops`` is an RFC 6902 list or a merge-patch dict (as :meth:`Collection.patch`). Or
        ``set={member: value}``: each value an expression over the document as stored (``it``) or a
        constant, computed by the reference engine for each document (``set={"n": it.n + 1}``);
        a member is a top-level name or a JSON Pointer (``"/a/b"``); an expression that gives
        nothing removes the member, several values are JQ2001. Every result is validated, and a
        failure anywhere writes nothing.
        """
        assign = None
        if set is not None:
            if not isinstance(set, dict):
                raise QueryError("JQ2010", f"update(set=...) takes {{member: value}}, not {set!r}")
            assign = {
                (m if not isinstance(m, str) or m.startswith("/") else pointer.join("", m)): lit(v)
                for m, v in set.items()
            }
        _read([self.document, *(assign or {}).values()], externals)  # (the set= values may read them)
        return self._stored("update")._update_where(self._where_only("update"), ops, externals, assign)

    def delete(self, **externals: Any) -> int:
        """Delete every document this ``where`` chain keeps, in ONE transaction; return how many."""
        _read(self.document, externals)
        return self._stored("delete")._delete_where(self._where_only("delete"), externals)

    def _columns(self) -> list[str] | None:
        """The member names of a final ``select({...})`` (its map constructor), in order."""
        ret = self._stage.ret
        if not isinstance(ret, dict) or any(k.startswith("$") and not k.startswith("$$") for k in ret):
            return None
        return [k[1:] if k.startswith("$$") else k for k in ret]

    def iter_batches(self, size: int = 65_536, **externals: Any) -> Iterator[Any]:
        """The results as pyarrow ``RecordBatch`` es of at most ``size`` rows, without holding every
        result as a Python object at once (where the plan's SQL yields one result per row: whole
        documents, native projections and the row residual; groups, aggregates and the set
        residual run whole first). Whole documents are decoded by Arrow's JSON reader, typed by
        the collection's schema. A batch's schema covers its own rows (a member missing from a
        whole batch has no column there); :meth:`to_arrow` unifies them.

        >>> [b.num_rows for b in _Docs([{"a": i} for i in range(5)]).query().iter_batches(2)]
        [2, 2, 1]
        """
        from jarenlab.frames import chunk_to_arrow

        _check_count(size, "iter_batches")
        if size < 1:
            raise QueryError("JQ2010", "iter_batches() takes a size of at least 1")
        columns = self._columns()
        stream = getattr(self._source, "_stream_batches", None)
        if stream is not None:
            _read(self.document, externals)
            yield from stream(self.document, externals, size, columns)
            return
        rows = self.to_list(**externals)
        for i in range(0, len(rows), size):
            yield from chunk_to_arrow("items", rows[i : i + size], None, columns).to_batches()

    def to_pandas(self, *, flatten: bool = False, keys: bool = False, **externals: Any) -> Any:
        """The results as a pandas DataFrame (non-dict results become a ``value`` column), built
        from :meth:`iter_batches`; integer columns with gaps are pandas' nullable ``Int64``.

        ``flatten=True`` gives nested members as dotted columns. After ``select({...})`` the
        columns follow the select's order, also when there are no results. ``keys=True`` (a
        ``where`` chain over a collection) indexes the frame by the documents' keys, named ``key``
        as in ``collection.to_pandas()``.
        """
        import pandas as pd

        from jarenlab.frames import arrow_to_frame, check_flags, records_to_arrow, with_utc_columns

        check_flags("to_pandas", flatten=flatten, keys=keys)
        if not keys:
            return arrow_to_frame(self.to_arrow(flatten=flatten, **externals))
        pairs = self.items(**externals)
        table = with_utc_columns(records_to_arrow([d for _, d in pairs], flatten=flatten), self._utc_names())
        frame = arrow_to_frame(table)
        frame.index = pd.Index([k for k, _ in pairs], name="key")
        return frame

    def _utc_names(self) -> set[str]:
        """The result columns that hold a ``"format": "date-time"`` member of the source's schema
        (exported as UTC timestamps): whole documents' such members, or members selected by name."""
        from jarenlab.frames import date_time_members

        spec = getattr(self._source, "spec", None)
        members = date_time_members(getattr(spec, "schema", None))
        st = self._stage
        if not members or st.group is not None:
            return set()
        if st.ret is None:
            return members
        if isinstance(st.ret, dict):
            return {
                k for k, v in st.ret.items() if isinstance(v, str) and v[4:] in members and v[:4] == "$it."
            }
        return set()

    def to_arrow(self, *, flatten: bool = False, **externals: Any) -> Any:
        """The results as a pyarrow Table (non-dict results become a ``value`` column), built from
        :meth:`iter_batches`."""
        from jarenlab.frames import check_flags, concat_batches, flatten_table, with_utc_columns

        check_flags("to_arrow", flatten=flatten)
        table = concat_batches(self.iter_batches(**externals), self._columns())
        table = with_utc_columns(table, self._utc_names())
        return flatten_table(table) if flatten else table

    def explain(self, *, analyze: bool = False, **externals: Any) -> Any:
        """How the planner runs this query (:class:`jarenlab.query.planner.explain.Explain`).

        ``analyze=True`` runs it and adds row counts and time per phase. Externals as keywords.
        """
        planned = getattr(self._source, "explain", None)
        if planned is None:
            raise QueryError("JQ0008", f"{type(self._source).__name__} has no planner to explain")
        _read(self.document, externals)
        return planned(self.document, externals, analyze=analyze)

    def live(self, *, columns: bool | None = None, **externals: Any) -> Any:
        """A live query of this chain over a collection (:class:`jarenlab.live.LiveQuery`);
        ``columns`` as for :meth:`jarenlab.collection.Collection.live` (where its seed may come from
        the columns)."""
        live = getattr(self._source, "live", None)
        if live is None:
            raise QueryError("JQ0008", f"{type(self._source).__name__} has no live queries")
        return (
            live(self._expr(), **externals)
            if columns is None
            else live(self._expr(), columns=columns, **externals)
        )

    def __repr__(self) -> str:
        name = getattr(self._source, "name", "?")
        return f"Query({name}) {json.dumps(self.document, ensure_ascii=False)}"

    def _repr_html_(self) -> str:
        """A preview of the first rows (run when shown, at most :data:`PREVIEW_ROWS`), then the document."""
        name = html.escape(str(getattr(self._source, "name", "?")))
        body = html.escape(json.dumps(self.document, indent=2, ensure_ascii=False))
        doc = f"<details><summary>query document</summary><pre>{body}</pre></details>"
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", QueryWarning)  # shown here every time, not once per place
                rows = self.take(PREVIEW_ROWS + 1).to_list()
        except (
            JarenlabError
        ) as err:  # an external not bound yet, a checked mistake: say so, show the document
            note = f"<p>no preview: <code>{html.escape(err.message)}</code></p>"
            return f"<div><b>query</b> over <code>{name}</code>{note}<pre>{body}</pre></div>"
        more = len(rows) > PREVIEW_ROWS
        if rows and all(type(r) is dict for r in rows):
            from jarenlab.frames import arrow_to_frame, records_to_arrow, with_utc_columns

            preview = with_utc_columns(records_to_arrow(rows[:PREVIEW_ROWS]), self._utc_names())
            table = arrow_to_frame(preview).to_html(border=0)
        else:
            items = "".join(
                f"<li><code>{html.escape(json.dumps(r, ensure_ascii=False))}</code></li>"
                for r in rows[:PREVIEW_ROWS]
            )
            table = f"<ul>{items}</ul>" if rows else "<p>no rows</p>"
        head = f"first {PREVIEW_ROWS} rows" if more else f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
        found = ""
        for w in caught:
            if isinstance(w.message, QueryWarning):
                found += f"<p>&#9888; warning <code>{html.escape(str(w.message))}</code></p>"
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return f"<div><b>query</b> over <code>{name}</code> ({head})</div>{found}{table}{doc}"


def _check_count(n: Any, what: str) -> None:
    if not is_count(n):
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

    def order_by(self, *keys: Any, ascending: bool | list[bool] = True) -> Query:
        """See :meth:`Query.order_by`."""
        return Query(self).order_by(*keys, ascending=ascending)

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

    def head(self, n: int = 5) -> Query:
        """See :meth:`Query.head`."""
        return Query(self).head(n)

    def distinct(self) -> Query:
        """See :meth:`Query.distinct`."""
        return Query(self).distinct()

    def window(self, *, partition: Any = None, order_by: Any = None, **compute: Any) -> Query:
        """See :meth:`Query.window`."""
        return Query(self).window(partition=partition, order_by=order_by, **compute)

    def rolling(self, time: Any, width: str, *, partition: Any = None, **compute: Any) -> Query:
        """See :meth:`Query.rolling`."""
        return Query(self).rolling(time, width, partition=partition, **compute)

    def resample(self, time: Any, width: str, **options: Any) -> Query:
        """See :meth:`Query.resample` (``by``, ``origin``, ``fill`` and the computed members)."""
        return Query(self).resample(time, width, **options)

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

    def median(self, expr: Any = None, **externals: Any) -> Any:
        """See :meth:`Query.median`."""
        return Query(self).median(expr, **externals)

    def std(self, expr: Any = None, *, ddof: int = 1, **externals: Any) -> Any:
        """See :meth:`Query.std`."""
        return Query(self).std(expr, ddof=ddof, **externals)

    def page(self, limit: int, after: str | None = None, **externals: Any) -> Any:
        """See :meth:`Query.page`."""
        return Query(self).page(limit, after, **externals)

    def join(self, other: Any, name: str, *, on: Any) -> JoinQuery:
        """See :meth:`Query.join`."""
        return Query(self).join(other, name, on=on)

    def group_join(self, other: Any, name: str, *, on: Any) -> JoinQuery:
        """See :meth:`Query.group_join`."""
        return Query(self).group_join(other, name, on=on)

    def select_many(self, items: Any, name: str) -> JoinQuery:
        """See :meth:`Query.select_many`."""
        return Query(self).select_many(items, name)

    def asof(self, other: Any, name: str, *, on: Any, by: Any = None) -> JoinQuery:
        """See :meth:`Query.asof`."""
        return Query(self).asof(other, name, on=on, by=by)

    def first(self, **externals: Any) -> Any:
        """See :meth:`Query.first`."""
        return Query(self).first(**externals)

    def to_list(self, **externals: Any) -> list[Any]:
        """See :meth:`Query.to_list`."""
        return Query(self).to_list(**externals)

    def iter_batches(self, size: int = 65_536, **externals: Any) -> Iterator[Any]:
        """See :meth:`Query.iter_batches`."""
        return Query(self).iter_batches(size, **externals)


class _Docs(Queryable):
    """A list of documents as a source (doctests and quick experiments).

    >>> _Docs([{"a": 1}, {"a": 5}]).where(it.a > param("lo")).count(lo=2)
    1
    """

    def __init__(self, docs: list[Any], name: str = "docs") -> None:
        self.docs = docs
        self.name = name

    def _run_query(self, document: Any, externals: dict[str, Any]) -> list[Any]:
        from jarenlab.query.lang.engine import evaluate

        return evaluate(document, self.docs, externals)


def _read(document: Any, externals: dict[str, Any]) -> None:
    """Refuse (JQ0005) a keyword given to a run that the query reads as no external: a typo such
    as ``explain(analyse=True)`` or ``count(min_dela=30)`` would otherwise be ignored; and
    (JQ2010) a value that is not a list for an external ``isin(param(...))`` reads item by item
    (``$xs[*]`` of ``xs=5`` is no item at all: it would match nothing, silently)."""
    if not externals:
        return
    names, items = _externals(document)
    for name, value in externals.items():
        if name not in names:
            known = ", ".join(f"${n}" for n in sorted(names)) or "none"
            raise QueryError(
                "JQ0005", f"{name}= is not an external of this query (it reads {known}) nor an option of "
                "this call: check its spelling",
            )  # fmt: skip
        if name in items and not isinstance(value, list | tuple | set | frozenset) and not hasattr(value, "__array__"):
            raise QueryError(
                "JQ2010", f"{name}= is a list of the values isin(param({name!r})) matches, not "
                f"{value!r}: {name}=[{value!r}] for one",
            )  # fmt: skip


#: Per query document (by its ``repr``): the externals it reads, and those it reads item by
#: item (``$xs[*]``). A run with externals looks here, not at a parse of its document each time.
_READS: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def _externals(document: Any) -> tuple[frozenset[str], frozenset[str]]:
    key = repr(document)
    got = _READS.get(key)
    if got is None:
        from jarenlab.query.lang.document import parse

        names = parse(document).externals
        items = frozenset(n for n in names if f"${n}[*]" in _strings(document, ("$const",)))
        if len(_READS) >= 256:
            _READS.clear()
        got = _READS[key] = (names, items)
    return got
