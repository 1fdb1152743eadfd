"""The builder across collections: ``join``, ``group_join`` and ``select_many`` compile to
store-level documents (``$.flights[*]``), which ``store.execute`` runs.

A chain starts on a collection (its item is ``it``); ``join(other, "a", on=...)`` adds a binding
``a`` over another collection, reached in expressions with ``var("a")``. ``on`` is a condition; an
equality between two bindings' typed members is pushed to SQL as the join. ``group_join`` keeps
every left item with the list of its matches (possibly empty: the outer join), and
``select_many`` binds each item of an array member.

>>> from jarenlab.query import it
>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {
...     "f": {"schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"},
...           "c": {"type": "string"}}}, "key": "/id"},
...     "a": {"schema": {"type": "object", "required": ["c"], "properties": {"c": {"type": "string"},
...           "name": {"type": "string"}}}, "key": "/c"}}}
>>> a = var("a")
>>> with jl.open(model=model) as store:
...     _ = store["f"].insert_many([{"id": 1, "c": "AA"}, {"id": 2, "c": "ZZ"}])
...     _ = store["a"].insert({"c": "AA", "name": "American"})
...     q = store["f"].where(it.id > 0).join(store["a"], "a", on=it.c == a.c).select({"id": it.id, "name": a.name})
...     q.to_list(), store["f"].query().group_join(store["a"], "a", on=it.c == a.c).select({"id": it.id, "a": a}).to_list()
([{'id': 1, 'name': 'American'}], [{'id': 1, 'a': [{'c': 'AA', 'name': 'American'}]}, {'id': 2, 'a': []}])
>>> q.document[0]["$for"]
{'it': '$.f[*]', 'a': '$.a[*]'}
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Protocol

from jarenlab.errors import QueryError
from jarenlab.query.build.expr import Expr, OrderKey, lit, refuse_item_aggregate
from jarenlab.query.lang.path import VAR_NAME


def var(name: str) -> Expr:
    """A binding of a join (``var("a").name`` is ``$a.name``): the name given to ``join``.

    >>> var("a").carrier.document
    '$a.carrier'
    """
    _check_name(name)
    return Expr("$" + name)


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not VAR_NAME.match(name) or name == "it":
        raise QueryError("JQ0006", f"a join binding is named like a variable (not 'it'), not {name!r}")


def _collection_name(other: Any, store: Any, what: str) -> str:
    """The name of ``other``, a collection of ``store`` (JQ2010 for anything else: a collection of
    another store would be read by its name from this one)."""
    name = getattr(other, "name", None)
    if not isinstance(name, str) or getattr(other, "store", None) is not store:
        raise QueryError("JQ2010", f"{what} with a collection of the same store, not {other!r}")
    return name


def _condition(on: Any, what: str) -> Any:
    if not isinstance(on, Expr):
        raise QueryError("JQ2010", f"{what} takes on=<condition> built from it/var(...), not {on!r}")
    return on.document


class Runner(Protocol):
    """What a join chain runs on: a store, which executes, explains and goes live on a document."""

    def execute(self, document: Any, externals: dict[str, Any] | None = None) -> Any: ...

    def explain(
        self, document: Any, externals: dict[str, Any] | None = None, *, analyze: bool = False
    ) -> Any: ...

    def live(self, document: Any, **externals: Any) -> Any: ...


@dataclass(frozen=True)
class JoinQuery:
    """An immutable chain over several collections; each method returns a new one."""

    store: Runner
    shape_value: Callable[[Any], Any]
    fors: tuple[tuple[str, Any], ...]
    labels: tuple[tuple[str, str], ...]
    where_: tuple[Any, ...] = ()
    lets: tuple[tuple[str, Any], ...] = ()
    order: tuple[dict[str, Any], ...] = ()
    ret: Any = None
    window: tuple[int, int | None] | None = None
    group: tuple[tuple[str, Any], ...] | None = None
    #: What a tuple gives with no ``select`` (an as-of chain: the left item with its match).
    plain: Any = None

    def _names(self) -> set[str]:
        return {n for n, _ in self.fors} | {n for n, _ in self.lets}

    def _add(self, name: str) -> None:
        _check_name(name)
        if name in self._names():
            raise QueryError("JQ0006", f"the chain already binds {name!r}")
        if self.ret is not None or self.window is not None or self.order or self.group is not None:
            raise QueryError(
                "JQ0007",
                "join, group_join and select_many come before group_by, order_by, select, skip and take",
            )

    def join(self, other: Any, name: str, *, on: Any) -> JoinQuery:
        """Add a binding ``name`` over collection ``other``; keep tuples where ``on`` holds (inner join)."""
        self._add(name)
        cond = _condition(on, "join()")
        other_name = _collection_name(other, self.store, "join() joins")
        return replace(
            self,
            fors=(*self.fors, (name, f"$.{other_name}[*]")),
            labels=(*self.labels, (name, name)),
            where_=(*self.where_, cond),
        )

    def group_join(self, other: Any, name: str, *, on: Any) -> JoinQuery:
        """Bind ``name`` to the list of ``other``'s items where ``on`` holds (empty when none: the outer join)."""
        self._add(name)
        cond = _condition(on, "group_join()")
        other_name = _collection_name(other, self.store, "group_join() joins")
        matches = [{"$for": {name: f"$.{other_name}[*]"}, "$where": cond, "$return": "$" + name}]
        return replace(self, lets=(*self.lets, (name, matches)), labels=(*self.labels, (name, name)))

    def select_many(self, items: Any, name: str) -> JoinQuery:
        """Bind ``name`` to each item of an array (``select_many(it.tags, "t")``): one tuple per item."""
        self._add(name)
        if not isinstance(items, Expr):
            raise QueryError("JQ2010", f"select_many takes an expression such as it.tags, not {items!r}")
        return replace(self, fors=(*self.fors, (name, items.document)), labels=(*self.labels, (name, name)))

    def where(self, predicate: Any) -> JoinQuery:
        """Keep tuples where the condition holds; several calls AND together."""
        if self.ret is not None or self.window is not None or self.group is not None:
            raise QueryError("JQ0007", "where comes before group_by, select, skip and take in a join")
        refuse_item_aggregate(predicate, "where()")
        return replace(self, where_=(*self.where_, _condition(predicate, "where()")))

    def group_by(self, *exprs: Any, **named: Any) -> JoinQuery:
        """Group the joined tuples: ``group_by(carrier=it.carrier)`` binds ``key("carrier")``
        (``group_by(expr)`` names it ``key``); afterwards each binding (``it``, ``var("a")``) stands
        for its items in the group, so ``agg.count()`` counts the group's tuples and
        ``agg.avg(var("a").delay)`` averages over them. Comes after the joins and ``where``.
        """
        if len(exprs) > 1 or (exprs and named) or not (exprs or named):
            raise QueryError("JQ0006", "group_by takes one expression or named expressions")
        if self.group is not None or self.order or self.ret is not None or self.window is not None:
            raise QueryError(
                "JQ0007", "group_by comes once, before order_by, select, skip and take in a join"
            )
        keys = {"key": exprs[0]} if exprs else named
        for name, e in keys.items():
            _check_name(name)
            if name in self._names():
                raise QueryError("JQ0006", f"the chain already binds {name!r}")
            if not isinstance(e, Expr) or isinstance(e, OrderKey):
                raise QueryError("JQ0006", f"group_by takes expressions built from it/var(...), not {e!r}")
        return replace(self, group=tuple((n, lit(e)) for n, e in keys.items()))

    def order_by(self, *keys: Any) -> JoinQuery:
        """Order tuples by keys (``it.x``, ``var("a").y.desc()``); replaces any order."""
        if not keys or not all(isinstance(k, Expr | OrderKey) for k in keys):
            raise QueryError("JQ0007", "order_by takes expressions or ordering keys")
        if self.window is not None:
            raise QueryError("JQ0007", "order_by comes before skip and take in a join")
        specs = tuple(k.spec() if isinstance(k, OrderKey) else {"$key": lit(k)} for k in keys)
        return replace(self, order=specs)

    def select(self, value: Any) -> JoinQuery:
        """Shape each tuple: an expression, a dict (map constructor) or a list."""
        return replace(self, ret=self.shape_value(value))

    def skip(self, n: int) -> JoinQuery:
        """Drop the first ``n`` results."""
        start, length = self.window or (0, None)
        return replace(self, window=(start + n, None if length is None else max(length - n, 0)))

    def take(self, n: int) -> JoinQuery:
        """Keep at most ``n`` results."""
        start, length = self.window or (0, None)
        return replace(self, window=(start, n if length is None else min(length, n)))

    def _flwor(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"$for": dict(self.fors)}
        if self.lets:
            doc["$let"] = dict(self.lets)
        if self.where_:
            doc["$where"] = self.where_[0] if len(self.where_) == 1 else {"$and": list(self.where_)}
        if self.group is not None:
            doc["$groupby"] = dict(self.group)
        if self.order:
            doc["$orderby"] = list(self.order)
        if self.ret is not None:
            doc["$return"] = self.ret
        elif self.plain is not None and self.group is None:
            doc["$return"] = self.plain
        elif self.group is not None:  # each key, and each binding's items in the group as a list
            keys = {n: {"$default": ["$" + n, None]} for n, _ in self.group}
            doc["$return"] = {**keys, **{label: ["$" + n] for n, label in self.labels}}
        else:
            doc["$return"] = {label: "$" + n for n, label in self.labels}
        return doc

    def _expr(self) -> Any:
        if self.window is None:
            return self._flwor()
        start, length = self.window
        return {"$subsequence": [self._flwor(), start] + ([length] if length is not None else [])}

    @property
    def document(self) -> Any:
        """The store-level document: the chain wrapped in an array constructor (one list result)."""
        return [self._expr()]

    def to_list(self, **externals: Any) -> list[Any]:
        """Run the chain (``store.execute``); externals as keyword arguments."""
        out = self.store.execute(self.document, externals)
        return out if isinstance(out, list) else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.to_list())

    def count(self, **externals: Any) -> int:
        """The number of results (a SQL ``count(*)`` when the join is pushed)."""
        return int(self.store.execute({"$count": [self._expr()]}, externals))

    def first(self, **externals: Any) -> Any:
        """The first result, or None."""
        rows = self.take(1).to_list(**externals)
        return rows[0] if rows else None

    def to_pandas(self, *, flatten: bool = True, **externals: Any) -> Any:
        """The results as a DataFrame, nested members as dotted columns (``flights.carrier``)."""
        from jarenlab.frames import check_flags, records_to_frame

        check_flags("to_pandas", flatten=flatten)
        return records_to_frame(self.to_list(**externals), flatten=flatten)

    def to_arrow(self, *, flatten: bool = True, **externals: Any) -> Any:
        """The results as a pyarrow Table, nested members as dotted columns."""
        from jarenlab.frames import check_flags, records_to_arrow

        check_flags("to_arrow", flatten=flatten)
        return records_to_arrow(self.to_list(**externals), flatten=flatten)

    def explain(self, *, analyze: bool = False, **externals: Any) -> Any:
        """How the store runs this chain (join order, join indexes, SQL, residual)."""
        return self.store.explain(self.document, externals, analyze=analyze)

    def live(self, **externals: Any) -> Any:
        """A live query of this chain (re-run after each commit to a collection it reads)."""
        return self.store.live(self._expr(), **externals)

    def __repr__(self) -> str:
        return f"JoinQuery {json.dumps(self.document, ensure_ascii=False)}"

    def _repr_html_(self) -> str:
        body = html.escape(json.dumps(self.document, indent=2, ensure_ascii=False))
        return f"<div><b>query</b> over several collections<pre>{body}</pre></div>"


def asof(
    source: Any,
    where: tuple[Any, ...],
    shape_value: Callable[[Any], Any],
    other: Any,
    other_where: tuple[Any, ...],
    name: str,
    on: Any,
    by: Any,
) -> JoinQuery:
    """An as-of chain: each item of ``source`` (filtered by ``where``), in storage order, with member
    ``name`` holding ``other``'s (filtered by ``other_where``) latest item at or before it (``$asof``; see ``docs/query.md``).
    ``on``: one member path (the same member on both sides) or a pair ``(left, right)``, the left
    over ``it`` and the right over ``var(name)``; ``by``: such keys (one or a list) that must be equal.
    Afterwards ``var(name)`` is the match (nothing where there is none)."""
    _check_name(name)
    chain = start(source, (), shape_value)
    right_name = _collection_name(other, chain.store, "asof() pairs")
    spec: dict[str, Any] = {
        "it": _side(source.name, where),
        name: _side(right_name, other_where),
        "$on": list(_pair(on, name, "on")),
    }
    if by is not None:
        keys = by if isinstance(by, list | tuple) and not _is_pair(by) else [by]
        spec["$by"] = [list(_pair(k, name, "by")) for k in keys]
    spec["$as"] = name
    return replace(
        chain,
        fors=(("it", {"$asof": spec}),),
        lets=((name, f"$it.{name}"),),
        labels=(("it", source.name), (name, name)),
        plain="$it",
    )


def _side(collection: str, where: tuple[Any, ...]) -> Any:
    """One side of an as-of pairing: a collection, or its documents where its conditions hold."""
    if not where:
        return f"$.{collection}[*]"
    cond = where[0] if len(where) == 1 else {"$and": list(where)}
    return {"$for": {"it": f"$.{collection}[*]"}, "$where": cond, "$return": "$it"}


def _is_pair(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, Expr) for v in value)


def _pair(key: Any, name: str, what: str) -> tuple[Any, Any]:
    """A key of both sides: ``(left over it, right over var(name))``, or one member path of ``it``
    read on both sides."""
    if _is_pair(key):
        return key[0].document, key[1].document
    if isinstance(key, Expr) and not isinstance(key, OrderKey) and isinstance(key.document, str):
        path = key.document
        if path == "$it" or path.startswith(("$it.", "$it[")):
            return path, "$" + name + path[3:]
    raise QueryError(
        "JQ2010",
        f"asof() takes {what}= as a member of it (the same member on both sides, e.g. it.time_hour) "
        f"or a pair (left over it, right over var({name!r})), not {key!r}",
    )


def start(source: Any, where: tuple[Any, ...], shape_value: Callable[[Any], Any]) -> JoinQuery:
    """A join chain whose first binding, ``it``, ranges over collection ``source`` filtered by ``where``."""
    store = getattr(source, "store", None)
    if store is None:
        raise QueryError("JQ2010", f"joins start from a collection of a store, not {type(source).__name__}")
    return JoinQuery(store, shape_value, (("it", f"$.{source.name}[*]"),), (("it", source.name),), where)
