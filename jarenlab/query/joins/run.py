"""Run and explain store-level query documents (``store.execute``, ``store.explain``).

:mod:`join_plan` decides, :mod:`join_sql` emits through the store's dialect, the database answers
what it can (``store.db.query``), and the reference engine computes the rest: each joined tuple's
``$return`` (row mode), the rest of a document whose ``$asof`` SQL paired (asof mode) or the whole
document over the narrowed collections (set mode). A
document over one collection goes to that collection's planner. Preparations are cached in the
store's statement cache, keyed by the complete canonical document and every option.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {
...     "f": {"schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"},
...           "c": {"type": "string"}}}, "key": "/id"},
...     "a": {"schema": {"type": "object", "required": ["c"], "properties": {"c": {"type": "string"},
...           "name": {"type": "string"}}}, "key": "/c"}}}
>>> with jl.open(model=model) as store:
...     _ = store["f"].insert_many([{"id": 1, "c": "AA"}, {"id": 2, "c": "UA"}, {"id": 3, "c": "AA"}])
...     _ = store["a"].insert_many([{"c": "AA", "name": "American"}, {"c": "UA", "name": "United"}])
...     store.execute({"$for": {"x": "$.f[*]", "y": "$.a[*]"}, "$where": {"$eq": ["$x.c", "$y.c"]},
...                    "$return": {"id": "$x.id", "airline": "$y.name"}})
[{'id': 1, 'airline': 'American'}, {'id': 2, 'airline': 'United'}, {'id': 3, 'airline': 'American'}]
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import orjson

from jarenlab.errors import PlanError, QueryError, StoreError
from jarenlab.query.joins.asof import AsofPush
from jarenlab.query.joins.plan import JoinPlan, analyze
from jarenlab.query.joins.sql import is_key, select_asof, select_join
from jarenlab.query.lang.document import canonical
from jarenlab.query.lang.engine import CompiledQuery, compile_query, shape
from jarenlab.query.planner.decode import Fallback, decode
from jarenlab.query.planner.plan import Plan
from jarenlab.query.planner.preds import Const, Reason
from jarenlab.query.planner.run import Trace, bound_externals, check_externals, divert_reason, run_query
from jarenlab.query.planner.sql import Layout, Statement, select_candidates

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect
    from jarenlab.query.planner.run import Prepared
    from jarenlab.query.planner.source import Host


@dataclass
class JoinPrepared:
    """Everything a run needs that does not depend on external values (the cache entry)."""

    dialect: Dialect
    plan: JoinPlan
    compiled: CompiledQuery
    ret: CompiledQuery | None
    rest: CompiledQuery | None
    main: Statement | None
    candidates: dict[str, Statement]
    whole: dict[str, Statement]
    externals_in_sql: tuple[str, ...]
    lists_in_sql: tuple[str, ...]
    join: list[dict[str, Any]]


def check_flags(**flags: Any) -> None:
    """Refuse a switch that is not a bool (JD0006)."""
    for name, value in flags.items():
        if type(value) is not bool:
            raise StoreError("JD0006", f"{name} must be True or False, not {value!r}")


def prepare(store: Host, document: Any, *, pushdown: bool, strict: bool) -> tuple[JoinPrepared, bool]:
    """The cached preparation of a store-level document (True when it came from the cache)."""
    cache = store.planner.cache
    opts = repr(("store", pushdown, strict, store.planner.udf_hatch))
    try:
        alias = opts + "\n" + repr(document)
    except RecursionError:
        compile_query(document, operators=store.operators)
        raise
    entry = cache.lookup_alias(alias)
    if entry is not None:
        return entry, True
    compiled = compile_query(document, operators=store.operators)
    key = opts + "\n" + canonical(document)
    entry = cache.get(key)
    hit = entry is not None
    if entry is None:
        entry = _build(store, document, compiled, pushdown=pushdown)
    cache.put(key, entry, alias)
    return entry, hit


def _build(store: Host, document: Any, compiled: CompiledQuery, *, pushdown: bool) -> JoinPrepared:
    dialect: Dialect = store.backend.dialect
    specs = store.model.collections
    plan = analyze(document, specs, dialect=dialect, operators=frozenset(store.operators))
    if not pushdown and plan.mode != "single":
        why = Reason("pushdown", "pushdown=False runs the engine over every collection it reads")
        plan = JoinPlan("set", plan.reads, plan.whole, plan.bindings, reasons=(why,))
    main = None
    if plan.mode in ("row", "native"):
        main = select_join(dialect, plan, specs, count=plan.count)
    rest = None
    if plan.asof is not None:
        main = select_asof(dialect, plan.asof, specs)
        rest = compile_query(plan.asof.document, operators=store.operators)
    names = list(specs) if plan.whole else list(plan.reads)
    whole = {n: select_candidates(dialect, n, Const(True), None) for n in names}
    candidates = {n: select_candidates(dialect, n, p, None) for n, p in plan.narrow.items()}
    used = [s for stmt in ([main] if main is not None else list(candidates.values())) for s in stmt.slots]
    ext, lists = bound_externals(used)
    ret = (
        compile_query(row_document(plan, compiled), operators=store.operators) if plan.mode == "row" else None
    )
    return JoinPrepared(
        dialect, plan, compiled, ret, rest, main, candidates, whole, ext, lists, _join_rows(store, plan)
    )


def row_document(plan: JoinPlan, compiled: CompiledQuery) -> Any:
    """The ``$return`` over joined tuples, each tuple an object of its bindings' documents:
    ``{"$for": {"_jl_t": "$[*]"}, "$let": {"f": "$_jl_t.f", ...}, "$return": ...}``, so the engine
    runs once over all tuples (and checks the externals once, not per tuple)."""
    taken = {b.name for b in plan.bindings} | set(compiled.externals)
    var = "_jl_t"
    while var in taken:
        var += "_"
    return {
        "$for": {var: "$[*]"},
        "$let": {b.name: f"${var}.{b.name}" for b in plan.bindings},
        "$return": plan.ret,
    }


def _join_rows(store: Host, plan: JoinPlan) -> list[dict[str, Any]]:
    """Per binding, in the written (nested-loop) order: its collection, the conditions joining it
    and the index that serves each of its join keys."""
    specs = store.model.collections
    if plan.asof is not None:
        return _asof_rows(store, plan.asof)
    out = []
    for i, b in enumerate(plan.bindings):
        spec = specs[b.collection]
        on, indexes = [], []
        for edge in plan.edges:
            if i not in (edge.left, edge.right):
                continue
            on.append(edge.text)
            f = edge.left_field if edge.left == i else edge.right_field
            if is_key(f, spec):
                indexes.append(f"{b.collection} key")
            else:
                col = f.column or next((c.name for c in spec.columns if c.segments == f.steps), None)
                ix = next((ix for ix in spec.indexes if col is not None and ix.columns[:1] == (col,)), None)
                indexes.append(f"{b.collection}_{ix.name}" if ix is not None else "none")
        filtered = i < len(plan.filters) and plan.filters[i] != Const(True)
        out.append(
            {
                "binding": b.name,
                "collection": b.collection,
                "on": on,
                "indexes": indexes,
                "filtered": filtered,
            }
        )
    return out


def _asof_rows(store: Host, push: AsofPush) -> list[dict[str, Any]]:
    """The two sides of a pushed ``$asof``: the right side's ``$by`` and ``$on`` keys, and the
    declared index serving its subquery (the first leading with a ``$by`` column, or with the
    ``$on`` column when there is no ``$by``)."""
    spec = store.model.collections[push.right.collection]
    named = {c.segments: c.name for c in spec.columns}
    leads = {named.get(f.steps) for f in push.right.by} or {named.get(push.right.on.steps)}
    index = next(
        (
            f"{push.right.collection}_{ix.name}"
            for ix in spec.indexes
            if ix.columns[:1] and ix.columns[0] in leads
        ),
        "none",
    )
    return [
        {
            "binding": side.var,
            "collection": side.collection,
            "on": [push.text] if side is push.right else [],
            "indexes": [index] if side is push.right else [],
            "filtered": side.where != Const(True),
        }
        for side in (push.left, push.right)
    ]


def _refuse_profile(store: Host, plan: JoinPlan) -> None:
    if store.profile is not None and plan.mode != "single":
        raise PlanError(
            "JD0011", "the safe profile covers queries over one collection; this document reads several"
        )


def run(
    store: Host, document: Any, externals: Any = None, *, pushdown: bool = True, strict: bool = False
) -> tuple[list[Any], Trace, JoinPrepared]:
    """The flat result of a store-level document, what happened, and the prepared plan."""
    check_flags(pushdown=pushdown, strict=strict)
    ext = check_externals(externals)
    t0 = time.perf_counter()
    prepared, hit = prepare(store, document, pushdown=pushdown, strict=strict)
    plan = prepared.plan
    if plan.single is not None:
        name, rewritten = plan.single
        result = run_query(
            store[name], rewritten, ext, pushdown=pushdown, strict=strict, profile=store.profile
        )
        return result[0], result[1], prepared
    _refuse_profile(store, plan)
    trace = Trace(mode=plan.mode, cache="hit" if hit else "miss")
    trace.phases["plan"] = time.perf_counter() - t0
    state = store.planner
    if strict and plan.mode == "set":
        first = plan.reasons[0] if plan.reasons else Reason("document", "needs the engine")
        state.count(refused=1)
        raise PlanError("JD0010", f"strict: {first.construct} needs the residual ({first.reason})")
    trace.diverted = divert_reason(cast("Prepared", prepared), ext)
    if trace.diverted is not None and strict:
        state.count(refused=1)
        raise PlanError("JD0010", f"strict: {trace.diverted}, which diverts to the residual")
    items: list[Any]
    if trace.diverted is not None or plan.mode == "set":
        items = _set(store, prepared, ext, trace, narrowed=trace.diverted is None)
        trace.mode = "set"
    else:
        try:
            items = (
                _paired(store, prepared, ext, trace) if plan.asof else _joined(store, prepared, ext, trace)
            )
        except (StoreError, Fallback) as err:
            if isinstance(err, StoreError) and err.condition not in ("overflow", "function_failed"):
                raise
            why = err.reason if isinstance(err, StoreError) else str(err)
            if strict:
                state.count(refused=1)
                raise PlanError("JD0010", f"strict: {why}; the engine must decide") from None
            trace.fallback = why
            items = _set(store, prepared, ext, trace, narrowed=False)
            trace.mode = "set"
    trace.finish(items, plan.wrap, state)
    return items, trace, prepared


def _joined(store: Host, prepared: JoinPrepared, ext: dict[str, Any], trace: Trace) -> list[Any]:
    """Row or native mode: SQL joins, filters, orders and windows; the engine computes each return."""
    plan = prepared.plan
    assert prepared.main is not None
    params = prepared.main.bind(ext)
    trace.statement, trace.params = prepared.main, params
    t = time.perf_counter()
    with store.db.translating():
        rows = store.db.query(prepared.main.sql, params)
    trace.rows_read += len(rows)
    t2 = time.perf_counter()
    trace.phases["sql"] = t2 - t
    if plan.count:
        items: list[Any] = [int(rows[0][0])]
    elif plan.output is not None:
        fields = tuple((p.key, p.kind) for p in plan.projected)
        items = decode(Plan("", "native", output=plan.output), Layout(fields=fields), rows, prepared.dialect)
        trace.phases["decode"] = time.perf_counter() - t2
    else:
        assert prepared.ret is not None
        loads = orjson.loads
        names = [b.name for b in plan.bindings]
        tuples = [dict(zip(names, map(loads, row))) for row in rows]
        try:
            items = prepared.ret.run(tuples, ext)
        except QueryError as err:
            if err.doc_path is not None and err.doc_path.startswith("/$return"):
                err.doc_path = plan.return_path + err.doc_path  # from the tuple document to the original
            raise
        trace.phases["residual"] = time.perf_counter() - t2
    return [items] if plan.wrap else items


def _paired(store: Host, prepared: JoinPrepared, ext: dict[str, Any], trace: Trace) -> list[Any]:
    """Asof mode: SQL pairs each left document with its match, built as the engine builds it (the
    left object with member ``$as`` set to the match, left as it is without one); the engine runs the
    rest of the document with the paired items as the external in the ``$asof`` node's place."""
    push = prepared.plan.asof
    assert prepared.main is not None and prepared.rest is not None and push is not None
    params = prepared.main.bind(ext)
    trace.statement, trace.params = prepared.main, params
    t = time.perf_counter()
    with store.db.translating():
        rows = store.db.query(prepared.main.sql, params)
    loads = orjson.loads
    matches: dict[Any, Any] = {}  # one object per matched document, shared as the engine shares it
    paired = []
    for left, right in rows:
        item = loads(left)
        if right is not None:
            match = matches.get(right)
            if match is None:
                match = matches[right] = loads(right)
            item[push.name] = match
        paired.append(item)
    trace.rows_read += len(rows)
    names = store.model.collections if push.whole else push.reads
    root = _read(store, prepared, names, ext, trace)
    t2 = time.perf_counter()
    trace.phases["sql"] = t2 - t
    out = prepared.rest.run(root, {**ext, push.var: paired})
    trace.phases["residual"] = time.perf_counter() - t2
    return out


def _read(
    store: Host,
    prepared: JoinPrepared,
    names: Iterable[str],
    ext: dict[str, Any],
    trace: Trace,
    *,
    narrowed: bool = False,
) -> dict[str, list[Any]]:
    """The documents of each named collection, in storage order (narrowed where the plan may)."""
    root: dict[str, list[Any]] = {}
    loads = orjson.loads
    for name in names:
        stmt = prepared.whole[name]
        chosen = prepared.candidates.get(name, stmt) if narrowed else stmt
        with store.db.translating(collection=name):
            rows = store.db.query(chosen.sql, chosen.bind(ext))
        trace.rows_read += len(rows)
        root[name] = [loads(r[0]) for r in rows]
    return root


def _set(
    store: Host, prepared: JoinPrepared, ext: dict[str, Any], trace: Trace, *, narrowed: bool
) -> list[Any]:
    """The whole document in the engine, over the collections it reads (narrowed where it may be)."""
    t = time.perf_counter()
    root = _read(store, prepared, prepared.whole, ext, trace, narrowed=narrowed)
    t2 = time.perf_counter()
    trace.phases["sql"] = trace.phases.get("sql", 0.0) + (t2 - t)
    out = prepared.compiled.run(root, ext)
    trace.phases["residual"] = time.perf_counter() - t2
    return out


def execute(
    store: Host, document: Any, externals: Any = None, *, pushdown: bool = True, strict: bool = False
) -> Any:
    """The engine's result shape of a store-level document: None, the one item, or a list."""
    return shape(run(store, document, externals, pushdown=pushdown, strict=strict)[0])
