"""Run a query document over a collection: prepare (cached), bind, divert, execute, decode.

This is the one place the planner's pieces meet: :mod:`plan` decides, :mod:`sql` emits through
the store's dialect (``store.backend.dialect``), the database answers what it can
(``store.db.query``), :mod:`residual` runs the engine for the rest, and a :class:`Trace`
records what happened for ``explain(analyze=True)`` and ``store.stats()``.

Host operators may be marked pure and scalar so a condition over them runs inside the
database's WHERE as a registered deterministic function (the UDF hatch):

>>> import math
>>> op = operator(math.sqrt, pure=True)
>>> op(16.0), op.pure
(4.0, True)
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.errors import PlanError, QueryError, StoreError
from jarenlab.query.lang.document import canonical, parse, walk
from jarenlab.query.lang.engine import CompiledQuery, compile_query
from jarenlab.query.lang.functions import FUNCTIONS, exact_sum
from jarenlab.query.lang.nodes import Call
from jarenlab.query.lang.values import ebv
from jarenlab.query.planner.decode import Fallback, decode
from jarenlab.query.planner.diagnose import Diagnostic, diagnose, refuse_non_query, report
from jarenlab.query.planner.plan import Plan, analyze, column_traits, conjoin, touched_fields
from jarenlab.query.planner.preds import (
    EXTERNAL_SLOTS,
    AggOut,
    And,
    Const,
    DocOut,
    Exists,
    FieldOut,
    Matches,
    Pred,
    Ranking,
    Reason,
    Slot,
    atoms,
    fields_of,
)
from jarenlab.query.planner.profile import Profile
from jarenlab.query.planner.residual import run_rows, run_set
from jarenlab.query.planner.sql import (
    Layout,
    Statement,
    select_aggregate,
    select_candidates,
    select_groups,
    select_keyed,
    select_ranked,
    select_rows,
)
from jarenlab.query.planner.temporal import Alignment, align
from jarenlab.query.planner.translate import Context, beyond, list_item_reason, translate
from jarenlab.values import query_value

_PLAIN_EXTERNAL = frozenset({str, int, type(None), bool})

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect
    from jarenlab.database import Database
    from jarenlab.query.planner.source import ColumnPath, PlannerState, Readable


class PureOperator:
    """A host operator marked pure and scalar: same arguments, same result, one item."""

    def __init__(self, fn: Callable[..., Any], *, pure: bool) -> None:
        self.fn = fn
        self.pure = pure
        self.__name__ = getattr(fn, "__name__", "operator")

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


def operator(fn: Callable[..., Any], *, pure: bool = False) -> PureOperator:
    """Wrap a host operator; ``pure=True`` lets the planner run conditions over it in the database.

    ``jl.open(..., operators={"haversine": operator(haversine, pure=True)})``. A pure operator
    must be deterministic and return one JSON item; it never runs inside an index.
    """
    return PureOperator(fn, pure=pure)


@dataclass
class Prepared:
    """Everything a run needs that does not depend on external values (the cache entry)."""

    dialect: Dialect
    plan: Plan
    compiled: CompiledQuery
    row_compiled: CompiledQuery | None
    main: Statement | None
    layout: Layout | None
    candidates: Statement
    divert: Statement
    externals_in_sql: tuple[str, ...]
    lists_in_sql: tuple[str, ...]
    indexes: tuple[str, ...]
    mandatory: Pred | None
    profile: Profile | None
    float_sums: bool = False
    #: Whether its statements call the engine's I-Regexp matchers (``jl_match``, ``jl_search``).
    matchers: bool = False
    scans: dict[str, list[str]] = field(default_factory=dict)
    #: Schema-aware findings, found once when the statement is prepared (:mod:`diagnose`).
    diagnostics: tuple[Diagnostic, ...] = ()
    #: The plan the columnar path evaluates: :attr:`plan` when SQL answers it natively, else the
    #: document planned with the columns' capabilities (:func:`~.plan.column_traits`), which may be
    #: native where SQL's is not (number projections and float sums on PostgreSQL, date parts).
    columnar: Plan | None = None
    #: The document as planned, its dates compared as the schema declares them (:mod:`temporal`);
    #: ``aligned.bind(externals)`` rewrites the externals' values the same way.
    aligned: Alignment = field(default_factory=lambda: Alignment(None))


@dataclass
class Trace:
    """What one run did (``explain(analyze=True)``)."""

    mode: str = ""
    cache: str = "miss"
    diverted: str | None = None
    fallback: str | None = None
    rows_read: int = 0
    rows_returned: int = 0
    phases: dict[str, float] = field(default_factory=dict)
    statement: Statement | None = None
    params: list[Any] = field(default_factory=list)
    #: What the columnar path did: ``{"used": True, "read": [members], "warm", "rows", "seq"}``, or
    #: ``{"used": False, "reason": ...}`` when it was asked and SQL answered (None: not asked).
    columns: dict[str, Any] | None = None

    def finish(self, items: list[Any], wrap: bool, state: PlannerState) -> None:
        """Count the rows a finished run returns (a document wrapped in an array constructor, as
        every builder query is, returns one list: its rows) and tally the run in ``state``."""
        wrapped = wrap and len(items) == 1 and isinstance(items[0], list)
        self.rows_returned = len(items[0]) if wrapped else len(items)
        state.count(
            **{self.mode: 1},
            diverted=int(self.diverted is not None),
            fallbacks=int(self.fallback is not None),
            rows_read=self.rows_read,
            rows_returned=self.rows_returned,
        )


# -- preparing -----------------------------------------------------------------------------------
def check_externals(externals: Any) -> dict[str, Any]:
    """A copy of the externals mapping, Python values converted as writes convert them (a ``datetime``,
    a numpy scalar or array); JQ2011 when it is not a dict or a value has no JSON form."""
    if externals is None:
        return {}
    if not isinstance(externals, dict):
        raise QueryError(
            "JQ2011", f"externals are a dict of name to JSON value, not {type(externals).__name__}"
        )
    return {k: external_value(k, v) for k, v in externals.items()}


def external_value(name: Any, value: Any) -> Any:
    """One external's value as JSON (the write conversions), or JQ2011 naming it."""
    if type(value) in _PLAIN_EXTERNAL:
        return value
    return query_value(value, "JQ2011", f"external ${name} is not a JSON value")


def _options_key(coll: Readable, pushdown: bool, strict: bool, profile: Profile | None, hatch: bool) -> str:
    if profile is not None and not isinstance(profile, Profile):
        raise StoreError(
            "JD0006", f"profile is a jarenlab.query.planner.profile.Profile, not {type(profile).__name__}"
        )
    scope = scope_of(coll)
    # repr of str/bool/None is exact and cheaper than json.dumps on the cache-hit path.
    return repr(
        (
            coll.name,
            pushdown,
            strict,
            hatch,
            None if profile is None else profile.key(),
            None if scope is None else canonical(scope),
        )
    )


def scope_of(coll: Any) -> Any:
    """The predicate document a source confines every query to (an owner view's owner test), or None.

    A collection has none; an owner's view of one (:class:`jarenlab.owner.OwnedCollection`) names
    its ``scope``: ANDed, natively, into every statement a query runs (native, residual candidates,
    diverted runs, ``pushdown=False``, live seeds), so no other row is ever read.
    """
    return getattr(coll, "scope", None)


def prepare(
    coll: Readable, document: Any, *, pushdown: bool, strict: bool, profile: Profile | None
) -> tuple[Prepared, bool]:
    """The cached preparation of a document (True when it came from the cache)."""
    state: PlannerState = coll.store.planner
    opts = _options_key(coll, pushdown, strict, profile, state.udf_hatch)
    try:
        alias = opts + "\n" + repr(document)
    except RecursionError:  # far deeper than the engine takes: let it refuse with JQ0011
        compile_query(document, operators=coll.store.operators, limits=profile.limits if profile else None)
        raise
    entry = state.cache.lookup_alias(alias)
    if entry is not None:
        return entry, True
    aligned = align(document, coll.spec.schema)
    compiled = compile_query(
        aligned.document, operators=coll.store.operators, limits=profile.limits if profile else None
    )
    key = opts + "\n" + canonical(document)
    entry = state.cache.get(key)
    if entry is None:
        entry = _build(
            coll, aligned.document, compiled, pushdown=pushdown, profile=profile, hatch=state.udf_hatch
        )
        entry.aligned = aligned
        state.cache.put(key, entry, alias)
        return entry, False
    state.cache.put(key, entry, alias)
    return entry, True


def _mandatory(
    coll: Readable, profile: Profile | None, columns: dict[tuple[str | int, ...], str], dialect: Dialect
) -> Pred | None:
    """The conjuncts every statement carries: the profile's mandatory predicate and the source's scope."""
    docs = [profile.mandatory[coll.name]] if profile is not None and coll.name in profile.mandatory else []
    scope = scope_of(coll)
    if scope is not None:
        docs.append(scope)
    preds = []
    for doc in docs:
        parsed = parse(doc)
        if len(parsed.externals) != 1:
            raise PlanError(
                "JD0011",
                "a mandatory predicate reads exactly one variable (the document)",
                collection=coll.name,
            )
        (binding,) = parsed.externals
        pred = translate(parsed.node, Context(binding, coll.spec.schema, columns, {}, dialect=dialect))
        if isinstance(pred, Reason):
            raise PlanError(
                "JD0011",
                f"the mandatory predicate does not translate natively: {pred.construct}: {pred.reason}",
                collection=coll.name,
            )
        preds.append(pred)
    return conjoin(preds) if preds else None


def _build(
    coll: Readable,
    document: Any,
    compiled: CompiledQuery,
    *,
    pushdown: bool,
    profile: Profile | None,
    hatch: bool,
) -> Prepared:
    spec = coll.spec
    ops = coll.store.operators
    dialect: Dialect = coll.store.backend.dialect
    refuse_non_query(document)
    found = diagnose(document, spec.schema, operators=frozenset(ops))
    if profile is not None:
        used = {
            n.name
            for n in walk(parse(document, operators=frozenset(ops)).node)
            if isinstance(n, Call) and n.host
        }
        profile.check(coll.name, compiled.externals, used)
    columns = {c.segments: c.name for c in spec.columns}
    mandatory = _mandatory(coll, profile, columns, dialect)
    if not pushdown:
        plan = Plan(
            coll.name,
            "set",
            reasons=(Reason("pushdown", "pushdown=False runs the engine over every document"),),
        )
    else:
        # No host function runs inside the database under a profile or a scope: it would see rows
        # the caller may not.
        scoped = profile is not None or scope_of(coll) is not None
        pure = {k: v for k, v in ops.items() if getattr(v, "pure", False)} if hatch and not scoped else {}
        plan = analyze(
            document, coll.name, spec.schema, columns, pure, operators=frozenset(ops), dialect=dialect
        )
        if profile is not None and plan.mode == "row":
            why = Reason(
                "$return", "the profile's engine limits count the whole run, so the projection runs as a set"
            )
            plan = Plan(coll.name, "set", plan.where, plan.divert_where, reasons=(why,), binding=plan.binding)
    bound = profile.max_rows + 1 if profile is not None else None
    extra = [mandatory] if mandatory is not None else []
    where = conjoin([plan.where, *extra])
    main: Statement | None = None
    layout: Layout | None = None
    limit = plan.limit
    if bound is not None:
        limit = bound if limit is None else min(limit, bound)
    if plan.mode in ("native", "row") and plan.aggregate is not None:
        fn, f = plan.aggregate
        main, layout = select_aggregate(dialect, coll.name, where, AggOut(fn, f), plan.real_checks)
    elif plan.mode == "native" and plan.group is not None:
        assert plan.output is not None
        main, layout = select_groups(
            dialect,
            coll.name,
            where,
            plan.group,
            plan.output,
            plan.order,
            plan.offset,
            limit,
            plan.real_checks,
            plan.date_checks,
            plan.order_aggregates,
            plan.having,
            plan.key_checks,
        )
    elif plan.mode in ("native", "row") and isinstance(plan.output, Ranking):
        main, layout = select_ranked(
            dialect, coll.name, where, plan.output, plan.offset, limit, plan.real_checks, plan.date_checks
        )
    elif plan.mode in ("native", "row"):
        out = plan.output if plan.mode == "native" else None
        main, layout = select_rows(dialect, coll.name, where, plan.order, plan.offset, limit, out)
    candidates = select_candidates(dialect, coll.name, where, bound)
    divert = select_candidates(dialect, coll.name, conjoin([plan.divert_where, *extra]), bound)
    limits = profile.limits if profile else None
    row_compiled = (
        compile_query(plan.row_document, operators=ops, limits=limits) if plan.mode == "row" else None
    )
    used_stmt = main if main is not None else candidates
    ext, lists = bound_externals(used_stmt.slots)
    touched = {f.column for f in touched_fields(plan) if f.column}
    indexes = tuple(
        f"{spec.name}_{ix.name}" for ix in spec.indexes if ix.columns and ix.columns[0] in touched
    )
    columnar = plan
    if pushdown and plan.mode != "native" and profile is None and scope_of(coll) is None:
        traits = column_traits(dialect)
        columnar = analyze(
            document, coll.name, spec.schema, columns, {}, operators=frozenset(ops), dialect=traits
        )
    float_sums = layout is not None and any(
        a.fn in ("sum", "avg") and a.field is not None and a.field.family == "number"
        for a in layout.aggregates
    )
    matchers = dialect.regexes == "engine" and any(
        isinstance(a, Matches) for p in (where, plan.divert_where) for a in atoms(p)
    )
    return Prepared(
        dialect,
        plan,
        compiled,
        row_compiled,
        main,
        layout,
        candidates,
        divert,
        ext,
        lists,
        indexes,
        mandatory,
        profile,
        diagnostics=found,
        float_sums=float_sums,
        matchers=matchers,
        columnar=columnar,
    )


def bound_externals(slots: Iterable[Slot]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The externals a statement binds: (compared as scalars, compared as one bound list)."""
    scalars = {s.value for s in slots if s.kind in EXTERNAL_SLOTS and s.kind != "list-external"}
    lists = {s.value for s in slots if s.kind == "list-external"}
    return tuple(sorted(scalars)), tuple(sorted(lists))


# -- running -------------------------------------------------------------------------------------
def divert_reason(prepared: Prepared, externals: dict[str, Any]) -> str | None:
    """Why the SQL cannot take these external values (bool, None, missing, non-finite, not a scalar,
    a number the dialect cannot compare exactly, or a string it cannot bind)."""
    dialect = prepared.dialect
    limit = dialect.integer_limit
    for name in prepared.lists_in_sql:
        if name not in externals:
            return f"external ${name} is missing"
        v = externals[name]
        if type(v) is not list:
            return f"external ${name} is not a list (its items are compared as one bound list)"
        why = next((r for r in (list_item_reason(x, dialect) for x in v) if r), None)
        if why:
            return f"external ${name} holds {why}"
    for name in prepared.externals_in_sql:
        if name not in externals:
            return f"external ${name} is missing"
        v = externals[name]
        t = type(v)
        if t is str:
            if dialect.binds_nul or "\x00" not in v:
                continue
            return f"external ${name} holds U+0000, which the database's text cannot hold"
        if (t is int or (t is float and math.isfinite(v))) and abs(v) < limit:
            continue
        what = (
            "None"
            if v is None
            else "a boolean"
            if t is bool
            else beyond(limit)
            if t is int or (t is float and math.isfinite(v))
            else "not finite"
            if t is float
            else t.__name__
        )
        return f"external ${name} is {what}"
    return None


def _fetch(
    coll: Readable, prepared: Prepared, stmt: Statement, externals: dict[str, Any], trace: Trace
) -> list[Any]:
    db = coll.store.db
    params = stmt.bind(externals)
    trace.statement, trace.params = stmt, params
    register_functions(coll, prepared)
    profile = prepared.profile
    if profile is not None and profile.refuse_full_scan:
        scans = prepared.scans.get(stmt.sql)
        if scans is None:
            with db.translating(collection=coll.name):
                scans = prepared.dialect.full_scans(db.explain(stmt.sql, params), coll.name)
            prepared.scans[stmt.sql] = scans
        if scans:
            coll.store.planner.count(refused=1)
            raise PlanError("JD0011", f"the profile refuses full scans ({scans[0]})", collection=coll.name)
    try:
        with db.translating(collection=coll.name):
            rows = db.query(stmt.sql, params)
    except StoreError as err:
        # Both mean SQL cannot give the engine's exact answer for this data (see Fallback).
        if err.condition in ("overflow", "function_failed"):
            raise Fallback(err.reason) from err
        raise
    trace.rows_read += len(rows)
    if profile is not None and prepared.plan.aggregate is None and len(rows) > profile.max_rows:
        coll.store.planner.count(refused=1)
        raise StoreError(
            "JD2007",
            f"the query reads more than the profile's {profile.max_rows} rows; refused whole",
            collection=coll.name,
        )
    return rows


class FloatSum:
    """The engine's ``$sum`` as a database aggregate (``jl_fsum(json type, value)``): it collects
    the group's numbers and sums them with :func:`~jarenlab.query.lang.functions.exact_sum`, correctly
    rounded, so the order the database feeds rows in does not matter. An integer the database read
    as a rounded real (beyond 64 bits) makes it fail, and the run falls back to the engine: with a
    ``ValueError``, which the driver reports as the aggregate's failure (an ``OverflowError`` it
    reports as "string or blob too big", which is no reason to fall back)."""

    def __init__(self, kinds: Mapping[Any, str]) -> None:
        self.kinds = kinds
        self.items: list[Any] = []

    def step(self, kind: Any, value: Any) -> None:
        if kind is None:
            return
        if self.kinds[kind] == "int" and type(value) is not int:
            raise ValueError("an integer beyond the database's range")
        self.items.append(value)

    def finalize(self) -> Any:
        return exact_sum(self.items, "")


def register_functions(coll: Readable, prepared: Prepared) -> None:
    """Register what the prepared statements call on this thread's connection: the UDF hatch's
    conditions and the exact float sum."""
    db = coll.store.db
    if prepared.plan.udfs:
        register_udfs(db, prepared.plan.udfs, coll.store.operators)
    if prepared.float_sums:
        kinds = prepared.dialect.type_kinds()
        db.register_aggregate("jl_fsum", 2, lambda: FloatSum(kinds))
    if prepared.matchers:
        # the names the dialect's ``matches`` calls, as ``jl_fsum`` is its ``float_sum``'s
        for name, fn in (("jl_match", "match"), ("jl_search", "search")):
            db.register_function(name, 2, _matcher(FUNCTIONS[fn]))


def _matcher(engine: Callable[[list[list[Any]], str], list[Any]]) -> Callable[[str | None, str], int]:
    """The engine's ``$match`` or ``$search`` as a SQL function of a member's value (NULL where it is
    missing, the engine's empty argument) and the pattern.

    >>> from jarenlab.query.lang.functions import FUNCTIONS
    >>> fn = _matcher(FUNCTIONS["match"])
    >>> fn("abba", "[ab]+"), fn(None, "a*"), fn("a\\nb", "a.b")
    (1, 1, 0)
    """
    return lambda value, pattern: int(engine([[] if value is None else [value], [pattern]], "/")[0])


def register_udfs(db: Database, udfs: dict[str, str], operators: dict[str, Any]) -> None:
    """Register the plan's conditions over pure host operators as functions on this thread's connection."""
    for name, text in udfs.items():
        binding, fragment = json.loads(text)
        cq = compile_query(fragment, operators=operators)

        def fn(doc_text: str, _cq: CompiledQuery = cq, _b: str = binding) -> int:
            return 1 if ebv(_cq.run(None, {_b: orjson.loads(doc_text)})) else 0

        db.register_function(name, 1, fn)


def run_query(
    coll: Readable,
    document: Any,
    externals: dict[str, Any] | None,
    *,
    pushdown: bool = True,
    strict: bool = False,
    profile: Profile | None = None,
    columns: bool | None = None,
) -> tuple[list[Any], Trace, Prepared]:
    """The flat result of a document over a collection, what happened, and the prepared plan.

    ``columns``: None lets the store's columnar path answer a native plan where it chooses to
    (:mod:`jarenlab.query.columnar`), True wherever it can, False never."""
    ext = check_externals(externals)
    t0 = time.perf_counter()
    prepared, hit = prepare(coll, document, pushdown=pushdown, strict=strict, profile=profile)
    ext = prepared.aligned.bind(ext)
    plan = prepared.plan
    state: PlannerState = coll.store.planner
    if prepared.diagnostics:
        report(prepared.diagnostics, state.checks, coll.name, ext)
    trace = Trace(mode=plan.mode, cache="hit" if hit else "miss")
    t1 = time.perf_counter()
    trace.phases["plan"] = t1 - t0
    if strict and plan.mode != "native":
        first = plan.reasons[0] if plan.reasons else Reason("document", "needs the engine")
        state.count(refused=1)
        raise PlanError(
            "JD0010", f"strict: {first.construct} needs the residual ({first.reason})", collection=coll.name
        )
    trace.diverted = divert_reason(prepared, ext)
    if trace.diverted is not None and strict:
        state.count(refused=1)
        raise PlanError(
            "JD0010", f"strict: {trace.diverted}, which diverts to the residual", collection=coll.name
        )
    items: list[Any]
    answered = None
    if trace.diverted is None and columns is not False and pushdown:
        answered = ask_columns(coll, prepared, ext, trace, force=columns is True, profile=profile)
    if answered is not None:
        items = [answered] if prepared.columnar is not None and prepared.columnar.wrap else answered
        trace.mode = "columnar"
    elif trace.diverted is not None:
        items = _set(coll, prepared, prepared.divert, ext, trace)
        trace.mode = "set"
    elif plan.mode == "set":
        try:
            items = _set(coll, prepared, prepared.candidates, ext, trace)
        except Fallback as why:  # a narrowing the database could not decide exactly (see Fallback)
            trace.fallback = str(why)
            trace.rows_read = 0
            items = _set(coll, prepared, prepared.divert, ext, trace)
    else:
        assert prepared.main is not None and prepared.layout is not None
        try:
            rows = _fetch(coll, prepared, prepared.main, ext, trace)
            t2 = time.perf_counter()
            trace.phases["sql"] = t2 - t1
            if plan.mode == "row":
                assert prepared.row_compiled is not None
                loads = orjson.loads
                docs = (
                    decode(plan, prepared.layout, rows, prepared.dialect)
                    if isinstance(plan.output, Ranking)
                    else (loads(r[0]) for r in rows)
                )
                items = list(run_rows(prepared.row_compiled, docs, ext, plan.return_path))
                trace.phases["residual"] = time.perf_counter() - t2
            else:
                items = decode(plan, prepared.layout, rows, prepared.dialect)
                trace.phases["decode"] = time.perf_counter() - t2
        except Fallback as why:
            if strict:
                state.count(refused=1)
                raise PlanError(
                    "JD0010", f"strict: {why}; the engine must decide", collection=coll.name
                ) from None
            trace.fallback = str(why)
            trace.rows_read = 0
            items = _set(coll, prepared, prepared.divert, ext, trace)
            trace.mode = "set"
        if plan.wrap and trace.mode != "set":
            items = [items]
    trace.finish(items, plan.wrap, state)
    return items, trace, prepared


def _column_path(coll: Readable) -> ColumnPath | None:
    """The store's columnar path (None for a store made without one)."""
    try:
        path: ColumnPath = coll.store.subsystem("columns")
    except StoreError:
        return None
    return path


def preview_columns(coll: Readable, prepared: Prepared, *, force: bool) -> dict[str, Any] | None:
    """What the columnar path would do with a native plan, reading nothing (``explain()``)."""
    path = _column_path(coll)
    if path is None:
        return None
    plan = prepared.columnar
    if plan is None or plan.mode != "native":
        return {"used": False, "reason": _not_native(plan)}
    scope = _scope_pred(coll, prepared)
    preview: dict[str, Any] = path.preview(
        coll, plan, force=force, indexed=index_serves(coll, prepared.plan, scope), scope=scope
    )
    return preview


def _scope_pred(coll: Readable, prepared: Prepared) -> Pred | None:
    """An owner's view's test as a predicate (its statements' mandatory conjunct; no profile runs
    through the columns, so it is the scope alone)."""
    return prepared.mandatory if scope_of(coll) is not None else None


def index_serves(coll: Readable, plan: Plan, scope: Pred | None = None) -> bool:
    """Whether a declared index serves the plan's filter (its first member is one the filter, or an
    owner's view's ``scope``, reads), or its order under a window (a top-N walks the index): then
    SQL's seek beats a scan of any kind. An index over a group-by's key alone does not: SQL still
    reads every document it aggregates."""
    read = {f.column for f in fields_of(plan.where) if f.column}
    if scope is not None:
        read |= {f.column for f in fields_of(scope) if f.column}
    if plan.limit is not None and plan.group is None:
        read |= {k.field.column for k in plan.order if k.field is not None and k.field.column}
    return any(ix.columns and ix.columns[0] in read for ix in coll.spec.indexes)


def _not_native(plan: Plan | None) -> str:
    """Why the columnar path cannot take a plan it would have to run partly in the engine."""
    if plan is None:
        return "plan: pushdown=False, a profile or a scope runs the engine or SQL"
    first = plan.reasons[0] if plan.reasons else Reason("plan", "needs the engine")
    return f"{first.construct}: {first.reason} (the columns answer only what they answer whole)"


def _warm_arrow(coll: Readable, prepared: Prepared, ext: dict[str, Any]) -> Any:
    """A row query's results as one Arrow table taken from the columns, where they answer it, no
    index serves it and every column it reads is held already (an export never pays a build SQL's
    stream avoids); else None. Deciding reads nothing from the database."""
    plan = prepared.columnar
    path = _column_path(coll)
    if path is None or plan is None or plan.mode != "native":
        return None
    scope = _scope_pred(coll, prepared)
    if index_serves(coll, prepared.plan, scope):
        return None
    if not path.preview(coll, plan, force=True, indexed=False, scope=scope).get("warm"):
        return None
    trace = Trace(mode=plan.mode, cache="")
    return ask_columns(coll, prepared, ext, trace, force=True, arrow=True)


def ask_columns(
    coll: Readable,
    prepared: Prepared,
    ext: dict[str, Any],
    trace: Trace,
    *,
    force: bool,
    profile: Profile | None = None,
    arrow: bool = False,
) -> Any:
    """The columnar path's items for a native plan (``arrow``: one Arrow table of them), or None when
    SQL is to answer (``trace.columns`` says why). A store without the columnar path answers in SQL;
    so does a run under a profile."""
    path = _column_path(coll)
    if path is None:
        return None
    got = _answer_columns(path, coll, prepared, ext, force=force, profile=profile, arrow=arrow)
    if isinstance(got, str):
        trace.columns = {"used": False, "reason": got}
        return None
    trace.columns = {"used": True, "read": got.columns, "warm": got.warm, "rows": got.rows, "seq": got.seq}
    trace.phases.update(got.phases)
    trace.rows_read = got.rows
    return got.items


def _answer_columns(
    path: ColumnPath,
    coll: Readable,
    prepared: Prepared,
    ext: dict[str, Any],
    *,
    force: bool,
    profile: Profile | None,
    arrow: bool = False,
    freeze: bool = False,
) -> Any:
    """The columnar path's answer for a prepared document, or why SQL answers it (a string)."""
    if profile is not None:
        return "profile: a profile's limits count the rows SQL reads"
    plan = prepared.columnar
    if plan is None or plan.mode != "native":
        return _not_native(plan)
    scope = _scope_pred(coll, prepared)
    indexed = index_serves(coll, prepared.plan, scope)
    got = path.answer(coll, plan, ext, force=force, indexed=indexed, scope=scope, arrow=arrow, freeze=freeze)
    if isinstance(got, Reason):
        return f"{got.construct}: {got.reason}"
    return got


@dataclass
class ColumnSeed:
    """A live query's seed answered by the columns (:func:`columnar_seed`): the flat ``items`` a
    fresh run gives, the columnar answer (``answered.seq`` is the change-log record it reflects,
    ``answered.table`` the table as of that record), the ``plan`` whose filter says which rows
    match (an owner's view's test ANDed first) and the externals as the plan binds them."""

    items: list[Any]
    answered: Any
    plan: Plan
    externals: dict[str, Any]


def columnar_seed(
    coll: Readable, document: Any, externals: dict[str, Any], *, columns: bool | None
) -> ColumnSeed | str:
    """The columns' answer to ``document``, with the table it was computed from, where the planner
    would let the columns answer the same run (``columns``: None as the planner chooses, True
    wherever they can, False never); else why not. Reads nothing from the database when it declines
    before asking the columns; never runs SQL's answer."""
    path = _column_path(coll)
    if path is None or columns is False:
        return "columns: the columnar path is off (columns=False)"
    ext = check_externals(externals)
    profile = coll.store.profile
    prepared, _ = prepare(coll, document, pushdown=True, strict=False, profile=profile)
    ext = prepared.aligned.bind(ext)
    diverted = divert_reason(prepared, ext)
    if diverted is not None:
        return f"diverted: {diverted}"
    got = _answer_columns(path, coll, prepared, ext, force=columns is True, profile=profile, freeze=True)
    if isinstance(got, str):
        return got
    plan = prepared.columnar
    assert plan is not None
    coll.store.planner.count(columnar=1, rows_read=got.rows)
    items = [got.items] if plan.wrap else got.items
    scope = _scope_pred(coll, prepared)  # ANDed first, as the columns answered it
    where = plan.where if scope is None else conjoin([scope, plan.where])
    return ColumnSeed(items, got, dataclasses.replace(plan, where=where), ext)


def stream_query(
    coll: Readable, document: Any, externals: dict[str, Any] | None, size: int
) -> Iterator[tuple[str, Any]]:
    """A document's results in chunks of at most ``size``: ``("texts", [document text, ...])`` when
    every result is a whole stored document (the caller decodes the text, e.g. with Arrow's JSON
    reader), ``("arrow", table)`` when warm columns hold every member a row query returns
    (:mod:`jarenlab.query.columnar.arrow`), else ``("items", [...])``.

    A plan whose SQL yields one result per row (native projections and whole documents, and the
    row residual) streams: rows are fetched, decoded and handed on ``size`` at a time, so only one
    chunk of Python objects exists at once. Anything else (groups, aggregates, the set residual,
    a diversion, a profile) needs every row first: it runs whole and is handed on in chunks.
    """
    ext = check_externals(externals)
    profile = coll.store.profile
    wrapped = type(document) is list and len(document) == 1  # one array constructor: its items
    prepared, _ = prepare(coll, document, pushdown=True, strict=False, profile=profile)
    ext = prepared.aligned.bind(ext)
    plan = prepared.plan
    streams = (
        plan.mode in ("native", "row")
        and plan.aggregate is None
        and plan.group is None
        and not (plan.mode == "row" and isinstance(plan.output, Ranking))
        and profile is None
        and divert_reason(prepared, ext) is None
    )
    table = (
        _warm_arrow(coll, prepared, ext) if profile is None and divert_reason(prepared, ext) is None else None
    )
    if table is not None:
        coll.store.planner.count(columnar=1, rows_returned=table.num_rows)
        from jarenlab.frames import slices  # pyarrow: only here

        for part in slices(table, size):
            yield "arrow", part
        return
    if not streams:
        yield from stream_chunks(run_query(coll, document, ext, profile=profile)[0], wrapped, size)
        return
    assert prepared.main is not None and prepared.layout is not None
    stmt = prepared.main
    db = coll.store.db
    register_functions(coll, prepared)
    state: PlannerState = coll.store.planner
    state.count(**{plan.mode: 1})
    loads = orjson.loads
    yielded = False
    with db.translating(collection=coll.name):
        for rows in db.stream(stmt.sql, stmt.bind(ext), size):
            kind = "items"
            if plan.mode == "row":
                assert prepared.row_compiled is not None
                docs = (loads(r[0]) for r in rows)
                chunk = list(run_rows(prepared.row_compiled, docs, ext, plan.return_path))
            elif isinstance(plan.output, DocOut):
                kind, chunk = "texts", [r[0] for r in rows]
            else:
                try:
                    chunk = decode(plan, prepared.layout, rows, prepared.dialect)
                except Fallback as why:
                    if yielded:
                        raise QueryError(
                            "JQ2023", f"the stream met {why} after it began; to_list() lets the engine decide"
                        ) from None
                    yield from stream_chunks(run_query(coll, document, ext)[0], wrapped, size)
                    return
            state.count(rows_read=len(rows), rows_returned=len(chunk))
            yield kind, chunk
            yielded = True


def stream_chunks(items: list[Any], wrapped: bool, size: int) -> Iterator[tuple[str, list[Any]]]:
    """A whole result handed on in chunks (the result of a document wrapped in an array
    constructor is its one list's items)."""
    if wrapped and len(items) == 1 and type(items[0]) is list:
        items = items[0]
    for i in range(0, len(items), size):
        yield "items", items[i : i + size]


def _set(coll: Readable, prepared: Prepared, stmt: Statement, ext: dict[str, Any], trace: Trace) -> list[Any]:
    t = time.perf_counter()
    rows = _fetch(coll, prepared, stmt, ext, trace)
    loads = orjson.loads
    docs = [loads(r[0]) for r in rows]
    t2 = time.perf_counter()
    trace.phases["sql"] = trace.phases.get("sql", 0.0) + (t2 - t)
    out = run_set(prepared.compiled, docs, ext)
    trace.phases["residual"] = time.perf_counter() - t2
    return out


def narrowed_rows(coll: Readable, document: Any, externals: dict[str, Any]) -> list[Any] | None:
    """``(key, doc text)`` rows, in storage order, that the pushed conjuncts of ``document`` keep.

    The set residual's narrowing, for a caller that runs the document itself over these rows
    (live queries re-seeding): a pushed conjunct skips a row only when no earlier residual
    condition (or ``$let``) could raise, so the document gives the same result, and the same
    errors, over these rows as over the whole collection. None when nothing narrows: no pushed
    conjunct, an external that would divert, or a registered function that fails in the database.
    No profile applies (the caller decides what a profile means for it).
    """
    prepared, _ = prepare(coll, document, pushdown=True, strict=False, profile=None)
    externals = prepared.aligned.bind(externals)
    plan = prepared.plan
    where = plan.where
    if plan.mode == "native" and isinstance(plan.output, FieldOut):
        # A window over one member also asks that the member exist: not part of the narrowing
        # (rows without it still match the FLWOR, they only yield no item).
        items = where.items if isinstance(where, And) else (where,)
        where = conjoin([p for p in items if p != Exists(plan.output.field)])
    if prepared.mandatory is not None:  # a source's scope (no profile applies here)
        if divert_reason(prepared, externals) is not None:
            where = prepared.mandatory
        else:
            where = conjoin([where, prepared.mandatory])
    elif where == Const(True) or divert_reason(prepared, externals) is not None:
        return None
    stmt = select_keyed(prepared.dialect, coll.name, where)
    try:
        return _fetch(coll, prepared, stmt, externals, Trace())
    except Fallback:
        return None
