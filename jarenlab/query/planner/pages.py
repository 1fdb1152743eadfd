"""Keyset pagination: ``query.page(limit, after=None, **externals)`` reads one page of an ordered query.

A page is found by *where the last one ended*, not by counting rows: its statement asks for rows
after the previous page's last row in the query's ordering, with the collection key appended as
the tie-breaker, ``(a > ? OR (a = ? AND key > ?))``, and a missing ordering member (SQL's NULL)
placed where the engine places an empty key. So pages stay correct while other writers insert and
delete: a row that exists throughout is neither skipped nor repeated (if its ordering members do
not change). Ties break by key here (plain queries break them by storage order).

The continuation is opaque text: the position (the last row's ordering values and key) and the
ordering it belongs to, signed with the store's secret. Replayed against another ordering or
collection, altered, or made by another store, it is refused with JD0035. A page needs the query's
conditions and ordering in SQL (schema-typed ordering paths), and ``take``/``skip`` beside ``page``
are refused with JD0032.

>>> import jarenlab as jl
>>> from jarenlab import it
>>> model = {"$model": "0.1", "collections": {"t": {"schema": {"type": "object", "required": ["id"],
...     "properties": {"id": {"type": "integer"}, "n": {"type": "integer"}}}, "key": "/id"}}}
>>> with jl.open(model=model) as store:
...     _ = store["t"].insert_many([{"id": i, "n": i % 3} for i in range(7)])
...     q = store["t"].order_by(it.n.desc()).select(it.id)
...     first = q.page(3)
...     second = q.page(3, after=first.continuation)
...     first.items, second.items, second.has_more
([2, 5, 1], [4, 0, 3], True)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import secrets
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

import orjson

from jarenlab.arguments import is_count
from jarenlab.errors import PlanError
from jarenlab.query.lang.document import parse, unparse
from jarenlab.query.lang.engine import compile_query
from jarenlab.query.lang.nodes import Flwor
from jarenlab.query.planner.plan import checks_values, conjoin
from jarenlab.query.planner.preds import Const, OrderKey, Ranking
from jarenlab.query.planner.run import check_externals, divert_reason, prepare, register_functions
from jarenlab.query.planner.shape import peel
from jarenlab.query.planner.sql import Emitter, Statement

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.query.planner.source import Host, Readable


class PageKeys:
    """The store's secret for signing continuations (made on first use, kept in the store): the
    ``pages`` subsystem (:mod:`jarenlab.assembly` registers it)."""

    def __init__(self, store: Host) -> None:
        self.store = store
        self._secret: bytes | None = None

    @property
    def secret(self) -> bytes:
        if self._secret is None:
            db = self.store.db
            text = db.value("pages.get_key")
            if text is None:
                db.write("pages.put_key", {"secret": secrets.token_hex(32)})
                text = db.value("pages.get_key")
            self._secret = str(text).encode()
        return self._secret


@dataclass
class Page:
    """One page: ``items``, ``has_more`` and the ``continuation`` to pass as ``after`` (None at the end)."""

    items: list[Any]
    has_more: bool
    continuation: str | None

    def __iter__(self) -> Any:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def to_pandas(self, *, flatten: bool = False) -> pd.DataFrame:
        """The page's items as a DataFrame (non-dict items become a ``value`` column)."""
        from jarenlab.frames import check_flags, records_to_frame

        check_flags("to_pandas", flatten=flatten)
        return records_to_frame(self.items, flatten=flatten)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(orjson.dumps(i).decode()[:300])}</code></td></tr>"
            for i in self.items[:20]
        )
        more = "more pages follow" if self.has_more else "the last page"
        return f"<div><b>page</b> of {len(self.items)} items, {more}<table>{rows}</table></div>"


# -- the continuation ------------------------------------------------------------------------------
def _ordering(coll: Readable, order: tuple[OrderKey, ...]) -> list[Any]:
    return [coll.name, [[list(k.field.steps) if k.field else [], k.desc, k.empty_greatest] for k in order]]


def _value(v: Any) -> Any:
    return {"decimal": str(v)} if isinstance(v, Decimal) else v


def _unvalue(v: Any) -> Any:
    return Decimal(v["decimal"]) if isinstance(v, dict) else v


def _sign(secret: bytes, body: bytes) -> str:
    return hmac.new(secret, body, hashlib.sha256).hexdigest()[:32]


def encode(secret: bytes, ordering: list[Any], values: list[Any], key: Any) -> str:
    """An opaque, signed continuation for the position (values, key) in ``ordering``."""
    body = orjson.dumps({"o": ordering, "v": [_value(v) for v in values], "k": key})
    return base64.urlsafe_b64encode(body).decode().rstrip("=") + "." + _sign(secret, body)


def decode(secret: bytes, token: Any, ordering: list[Any]) -> tuple[list[Any], Any]:
    """The position a continuation holds; JD0035 when it is altered, foreign or of another ordering."""
    if not isinstance(token, str) or token.count(".") != 1:
        raise PlanError("JD0035", "a continuation is the text a page gave as .continuation")
    data, mac = token.split(".")
    try:
        body = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    except ValueError:
        raise PlanError("JD0035", "the continuation is not one a page gave (it does not decode)") from None
    if not hmac.compare_digest(mac, _sign(secret, body)):
        raise PlanError("JD0035", "the continuation was altered, or another store made it")
    got = orjson.loads(body)
    if got["o"] != ordering:
        raise PlanError(
            "JD0035",
            f"the continuation belongs to another ordering ({json.dumps(got['o'])}, not {json.dumps(ordering)})",
        )
    return [_unvalue(v) for v in got["v"]], got["k"]


# -- the statements --------------------------------------------------------------------------------
def _empty_first(k: OrderKey) -> bool:
    """Whether a missing member (SQL's NULL) comes before every value in this key's direction."""
    return k.empty_greatest == k.desc


def _after(
    e: Emitter, exprs: list[str], order: tuple[OrderKey, ...], values: list[Any], key: Any
) -> list[str]:
    """The rows after (values, key), as conditions each an index can seek, in the order their rows come.

    The lexicographic "after" is a union of parts: rows equal on the first i ordering members and
    after the position on member i (deepest first, the key last of all). Each part is a seek
    (equalities, then one range), while the one disjunction that spells them all is not. Where the
    deepest members ascend with their values present, their parts are one row-value comparison
    ``(a, key) > (?, ?)``; a missing member sorts where the engine places an empty key, so when it
    sorts after every value its rows are a part of their own (``a IS NULL``).

    >>> from jarenlab.backends.sqlite.dialect import SQLiteDialect
    >>> from jarenlab.query.planner.preds import Field
    >>> e = Emitter(SQLiteDialect())
    >>> def parts(desc):
    ...     key = OrderKey(Field(("a",), "integer", "gx_a"), "field", desc, False)
    ...     return [e.statement(p).sql for p in _after(e, ["gx_a"], (key,), [3], 7)]
    >>> parts(False)
    ['((gx_a, key) > (?, ?))']
    >>> parts(True)
    ['(gx_a = ? AND key > ?)', '(gx_a < ?)', '(gx_a IS NULL)']
    """
    d = e.dialect
    n = len(order)
    top = n  # the run of deepest members one row-value comparison covers: levels top .. n
    while top > 0:
        k, v = order[top - 1], values[top - 1]
        if k.desc or v is None or (top < n and not _empty_first(order[top])):
            break
        top -= 1

    def same(level: int) -> list[str]:
        out = []
        for expr, v in zip(exprs[:level], values[:level]):
            out.append(d.is_missing(expr) if v is None else d.compare(expr, "eq", e.literal(v)))
        return out

    parts: list[list[str]] = []
    if top < n:
        parts.append(
            [
                *same(top),
                d.compare(
                    d.row([*exprs[top:], d.key()]),
                    "gt",
                    d.row([*(e.literal(v) for v in values[top:]), e.literal(key)]),
                ),
            ]
        )
        if not _empty_first(order[top]):
            parts.append([*same(top), d.is_missing(exprs[top])])
    else:
        parts.append([*same(n), d.compare(d.key(), "gt", e.literal(key))])
    for level in range(min(top, n) - 1, -1, -1):
        expr, k, v = exprs[level], order[level], values[level]
        if v is None:
            if _empty_first(k):
                parts.append([*same(level), d.is_present(expr)])
            continue
        parts.append([*same(level), d.compare(expr, "lt" if k.desc else "gt", e.literal(v))])
        if not _empty_first(k):
            parts.append([*same(level), d.is_missing(expr)])
    return [d.all_of(p) for p in parts]


def _statements(
    coll: Readable, where: Any, order: tuple[OrderKey, ...], limit: int, after: Any
) -> list[Statement]:
    """The statements of one page (one, or one per part of "after": see :func:`_after`), in order."""
    d = coll.store.backend.dialect
    e = Emitter(d)
    exprs = []
    for k in order:
        assert k.field is not None
        exprs.append(e.value(k.field, "string" if k.field.family == "string" else "number"))
    base = [] if where is None else [e.condition(where)]
    terms = [d.order_term(expr, k.desc, _empty_first(k)) for expr, k in zip(exprs, order)]
    head = d.select([d.key(), d.document(), *exprs], coll.name)
    tail = d.order_by([*terms, d.key()]) + e.window(0, limit + 1)
    parts: list[str | None] = [None] if after is None else list(_after(e, exprs, order, *after))
    out = []
    for part in parts:
        conds = base if part is None else [*base, part]
        text = head + (d.where(d.all_of(conds)) if conds else "") + tail
        out.append(e.statement(text))
    return out


@dataclass
class Planned:
    """What a page runs: its ``statements`` in order (the next one only while the page is short),
    the ``ordering`` its continuation names, and the query's return clause and externals."""

    statements: list[Statement]
    ordering: list[Any]
    ret: Any
    externals: dict[str, Any]


def planned(coll: Readable, document: Any, limit: Any, after: Any = None, externals: Any = None) -> Planned:
    """The statements of one page of a query document over a collection; the database's plan of
    each is ``store.db.explain(stmt.sql, stmt.bind(externals))``. JD0032 for a query a page cannot
    read, JD0035 for a continuation it did not give."""
    if not is_count(limit) or limit == 0:
        raise PlanError("JD0032", f"page(limit) takes an integer >= 1, not {limit!r}", collection=coll.name)
    ext = check_externals(externals)
    node = parse(document, operators=frozenset(coll.store.operators)).node
    layers, flwor = peel(node)
    if not layers.plain or not isinstance(flwor, Flwor):
        raise PlanError(
            "JD0032",
            "page() reads an ordered query without take/skip (the page is the window), distinct or aggregates",
            collection=coll.name,
        )
    prepared, _ = prepare(coll, document, pushdown=True, strict=False, profile=None)
    ext = prepared.aligned.bind(ext)
    plan = prepared.plan
    if plan.mode == "set" or plan.group is not None or plan.aggregate is not None:
        first = plan.reasons[0] if plan.reasons else None
        detail = f" ({first.construct}: {first.reason})" if first else ""
        raise PlanError(
            "JD0032", f"a page needs the query's conditions and ordering in SQL{detail}", collection=coll.name
        )
    if checks_values(plan.where):  # its statement may leave the answer to the engine
        raise PlanError(
            "JD0032",
            "a page needs the query's conditions in SQL, and a condition over a computed value "
            "(arithmetic, a date part) may hand a run to the engine",
            collection=coll.name,
        )
    register_functions(coll, prepared)  # the engine's matchers, where a condition calls them
    if isinstance(plan.output, Ranking):  # a page of ranked rows would rank only that page
        raise PlanError("JD0032", "a page cannot continue a window's ranks", collection=coll.name)
    diverted = divert_reason(prepared, ext)
    if diverted is not None:
        raise PlanError("JD0032", f"{diverted}, which a page cannot bind in SQL", collection=coll.name)
    order = plan.order
    ordering = _ordering(coll, order)
    keys = cast("PageKeys", coll.store.subsystem("pages"))
    position = None if after is None else decode(keys.secret, after, ordering)
    # An owner view's scope (prepared.mandatory) narrows every page: no other owner's row is read.
    where = plan.where if prepared.mandatory is None else conjoin([plan.where, prepared.mandatory])
    statements = _statements(coll, None if where == Const(True) else where, order, limit, position)
    ret = compile_query(
        {"$for": {flwor.fors[0][0]: "$[*]"}, "$return": unparse(flwor.ret)}, operators=coll.store.operators
    )
    return Planned(statements, ordering, ret, ext)


def page(coll: Readable, document: Any, limit: Any, after: Any = None, externals: Any = None) -> Page:
    """One page of a query document over a collection (see the module docstring)."""
    got = planned(coll, document, limit, after, externals)
    db = coll.store.db
    rows: list[Any] = []
    with db.translating(collection=coll.name):
        for stmt in got.statements:
            rows += db.query(stmt.sql, stmt.bind(got.externals))
            if len(rows) > limit:
                break
    more = len(rows) > limit
    rows = rows[:limit]
    items: list[Any] = []
    for r in rows:
        items.extend(got.ret.run([orjson.loads(r[1])], got.externals))
    keys = cast("PageKeys", coll.store.subsystem("pages"))
    token = encode(keys.secret, got.ordering, list(rows[-1][2:]), rows[-1][0]) if more and rows else None
    return Page(items, more, token)
