"""Emit the SQL of a join plan, only through the backend's dialect. Values are always bound.

Each binding reads its collection through a derived table that selects what the outer statement
needs under fixed names: ``p`` (the storage order), ``d`` (the document), ``l<n>``/``r<n>`` (the
two sides of join condition ``n``) and ``o<n>`` (ordering key ``n``), filtered by the binding's own
pushed conditions. Inside a derived table every member is written exactly as the collection
planner writes it (typed columns, expression indexes, guards); the outer statement only compares
and orders those names. Both SQLite and PostgreSQL fold such derived tables into one join, so
the indexes on the join keys (a collection's key, a declared index's column or expression) serve
the join:

>>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
>>> from jarenlab.model import load_model
>>> from jarenlab.query.joins.plan import analyze
>>> m = load_model({"$model": "0.1", "collections": {
...     "f": {"schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"},
...           "c": {"type": "string"}}}, "key": "/id"},
...     "a": {"schema": {"type": "object", "required": ["c"], "properties": {"c": {"type": "string"}}},
...           "key": "/c"}}})
>>> p = analyze({"$for": {"x": "$.f[*]", "y": "$.a[*]"}, "$where": {"$eq": ["$x.c", "$y.c"]},
...              "$return": "$y"}, m.collections, dialect=SQLiteDialect())
>>> print(select_join(SQLiteDialect(), p, m.collections).sql)
SELECT t0.d, t1.d FROM (SELECT rowid AS p, doc AS d, json_extract(doc, ?) AS l0 FROM "f") AS t0, (SELECT rowid AS p, doc AS d, key AS r0 FROM "a") AS t1 WHERE (t0.l0 = t1.r0) ORDER BY t0.p, t1.p
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from jarenlab.query.planner.preds import Field
from jarenlab.query.planner.sql import Emitter, Statement

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect
    from jarenlab.model import CollectionSpec
    from jarenlab.query.joins.asof import AsofPush, AsofSide
    from jarenlab.query.joins.plan import JoinPlan


def is_key(f: Field, spec: CollectionSpec) -> bool:
    """Whether a field is the collection's key member (then the key column, and its index, serve)."""
    return spec.key is not None and len(f.steps) == 1 and spec.key == f"/{f.steps[0]}"


def _member(e: Emitter, f: Field, spec: CollectionSpec, family: str) -> str:
    if is_key(f, spec):
        return e.dialect.key()
    return e.value(f, family)


def select_join(
    dialect: Dialect, plan: JoinPlan, specs: Mapping[str, CollectionSpec], *, count: bool = False
) -> Statement:
    """The joined documents (one column per binding) in the engine's order, or their count."""
    d = dialect
    e = Emitter(dialect)
    sources = []
    for i, (b, where) in enumerate(zip(plan.bindings, plan.filters)):
        spec = specs[b.collection]
        cols = [d.aliased(d.storage_order(), "p"), d.aliased(d.document(), "d")]
        for n, edge in enumerate(plan.edges):
            if edge.left == i:
                cols.append(d.aliased(_member(e, edge.left_field, spec, edge.family), f"l{n}"))
            if edge.right == i:
                cols.append(d.aliased(_member(e, edge.right_field, spec, edge.family), f"r{n}"))
        for n, proj in enumerate(plan.projected):
            if proj.binding == i:
                if proj.kind == "string":
                    cols.append(d.aliased(e.value(proj.field, "string"), f"v{n}"))
                elif proj.kind == "number":
                    cols.append(d.aliased(d.json_value(e.path(proj.field)), f"v{n}"))
                else:
                    cols.append(d.aliased(e.jtype(proj.field), f"v{n}"))
                    cols.append(d.aliased(d.json_value(e.path(proj.field)), f"w{n}"))
        for n, (at, key) in enumerate(plan.order):
            if at == i and not count:
                assert key.field is not None
                family = "string" if key.field.family == "string" else "number"
                cols.append(d.aliased(_member(e, key.field, spec, family), f"o{n}"))
        inner = d.select(cols, b.collection) + e.where(where)
        sources.append(d.derived(inner, f"t{i}"))
    conds = [
        d.compare(d.qualified(f"t{edge.left}", f"l{n}"), "eq", d.qualified(f"t{edge.right}", f"r{n}"))
        for n, edge in enumerate(plan.edges)
    ]
    if count:
        columns = [d.count_rows()]
    elif plan.output is not None:
        columns = []
        for n, proj in enumerate(plan.projected):
            columns.append(d.qualified(f"t{proj.binding}", f"v{n}"))
            if proj.kind == "pair":
                columns.append(d.qualified(f"t{proj.binding}", f"w{n}"))
        columns = columns or [d.truth(True)]
    else:
        columns = [d.qualified(f"t{i}", "d") for i in range(len(plan.bindings))]
    text = d.select_from(columns, sources) + (d.where(d.all_of(conds)) if conds else "")
    if not count:
        terms = []
        for n, (at, key) in enumerate(plan.order):
            empty_first = (not key.desc and not key.empty_greatest) or (key.desc and key.empty_greatest)
            terms.append(d.order_term(d.qualified(f"t{at}", f"o{n}"), key.desc, empty_first))
        terms += [d.qualified(f"t{i}", "p") for i in range(len(plan.bindings))]
        text += d.order_by(terms) + e.window(plan.offset, plan.limit)
    return e.statement(text)


def select_asof(dialect: Dialect, push: AsofPush, specs: Mapping[str, CollectionSpec]) -> Statement:
    """Each left document in storage order with its ``$asof`` match (NULL for none): a correlated
    subquery over the right side, equal ``$by`` members, ``on`` at or before the left row's, the
    greatest ``on`` and of those the last in storage order. Both sides read their collection
    through a derived table (``p``, ``d``, ``k`` the ``$on`` member, ``b<n>`` the ``$by`` members),
    so an index on the right side's ``$by`` and ``$on`` members serves the subquery.

    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> from jarenlab.model import load_model
    >>> from jarenlab.query.lang.document import parse
    >>> from jarenlab.query.joins.asof import plan_asof
    >>> s = {"type": "object", "required": ["o"], "properties": {"o": {"type": "string"}, "t": {"type": "string"}}}
    >>> m = load_model({"$model": "0.1", "collections": {"f": {"schema": s, "key": None, "identity": "integer"},
    ...     "w": {"schema": s, "key": None, "identity": "integer"}}})
    >>> doc = {"$asof": {"a": "$.f[*]", "b": "$.w[*]", "$on": ["$a.t", "$b.t"], "$by": [["$a.o", "$b.o"]], "$as": "m"}}
    >>> push = plan_asof(parse(doc), doc, m.collections, SQLiteDialect())
    >>> print(select_asof(SQLiteDialect(), push, m.collections).sql)  # doctest: +NORMALIZE_WHITESPACE
    SELECT t0.d, (SELECT t1.d FROM (SELECT rowid AS p, doc AS d, json_extract(doc, ?) AS k, json_extract(doc, ?) AS b0 FROM "w") AS t1
     WHERE (t1.b0 = t0.b0 AND t1.k <= t0.k) ORDER BY t1.k DESC, t1.p DESC LIMIT ?)
     FROM (SELECT rowid AS p, doc AS d, json_extract(doc, ?) AS k, json_extract(doc, ?) AS b0 FROM "f") AS t0 ORDER BY t0.p
    """
    d = dialect
    e = Emitter(dialect)

    def source(side: AsofSide, alias: str) -> str:
        spec = specs[side.collection]
        cols = [
            d.aliased(d.storage_order(), "p"),
            d.aliased(d.document(), "d"),
            d.aliased(_member(e, side.on, spec, "string"), "k"),
        ]
        for n, (f, family) in enumerate(zip(side.by, push.families)):
            cols.append(d.aliased(_member(e, f, spec, family), f"b{n}"))
        return d.derived(d.select(cols, side.collection) + e.where(side.where), alias)

    conds = [
        d.compare(d.qualified("t1", f"b{n}"), "eq", d.qualified("t0", f"b{n}"))
        for n in range(len(push.families))
    ]
    conds.append(d.compare(d.qualified("t1", "k"), "le", d.qualified("t0", "k")))
    latest = [
        d.order_term(d.qualified("t1", "k"), True, False),
        d.order_term(d.qualified("t1", "p"), True, False),
    ]
    match = (
        d.select_from([d.qualified("t1", "d")], [source(push.right, "t1")])
        + d.where(d.all_of(conds))
        + d.order_by(latest)
        + e.window(0, 1)
    )
    text = d.select_from([d.qualified("t0", "d"), d.scalar(match)], [source(push.left, "t0")])
    return e.statement(text + d.order_by([d.qualified("t0", "p")]))
