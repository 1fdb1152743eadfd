"""Run a graph load (``collection.load(spec)``), explain it (``collection.explain_load(spec)``), and
its result: nested documents with a DataFrame and an Arrow form.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {
...     "a": {"schema": {"type": "object", "required": ["c"], "properties": {"c": {"type": "string"}}}, "key": "/c",
...           "relations": {"flights": {"to": "f", "many": True, "via": "/c"}}},
...     "f": {"schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"},
...           "c": {"type": "string"}, "d": {"type": "integer"}}}, "key": "/id"}}}
>>> with jl.open(model=model) as store:
...     _ = store["a"].insert_many([{"c": "AA"}, {"c": "UA"}])
...     _ = store["f"].insert_many([{"id": 1, "c": "AA", "d": 5}, {"id": 2, "c": "AA", "d": 9}])
...     store["a"].load({"include": {"flights": {"order_by": {"$key": "$it.d", "$dir": "desc"}, "take": 1}}})
[{'c': 'AA', 'flights': [{'id': 2, 'c': 'AA', 'd': 9}]}, {'c': 'UA', 'flights': []}]
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import orjson

from jarenlab.backends import DEFAULT
from jarenlab.errors import PlanError
from jarenlab.query.loads.plan import Level, levels, member_field, plan_load
from jarenlab.query.loads.sql import select_load
from jarenlab.query.planner.diagnose import window_suggestion
from jarenlab.query.planner.preds import EXTERNAL_SLOTS
from jarenlab.query.planner.run import bound_externals, check_externals, divert_reason

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from jarenlab.model import CollectionSpec
    from jarenlab.query.planner.run import Prepared
    from jarenlab.query.planner.source import Readable
    from jarenlab.query.planner.sql import Statement


@dataclass
class _Checked:
    """What :func:`~jarenlab.query.planner.run.divert_reason` reads: the dialect and the externals bound in SQL."""

    dialect: Any
    externals_in_sql: tuple[str, ...]
    lists_in_sql: tuple[str, ...]


@dataclass(frozen=True)
class _Prepared:
    """A planned load: its levels, its one statement, and the statement's values when it binds no
    external (then bound once, here, not on every call)."""

    root: Level
    stmt: Statement
    fixed: tuple[Any, ...] | None


def prepare(coll: Readable, spec: Any) -> _Prepared:
    """The checked plan and the one statement of a load spec (JD0032 when SQL cannot answer it),
    from the store's statement cache when the spec is plain JSON (keyed by its complete canonical
    text and the collection; its exact ``repr`` is remembered as an alias of that key)."""
    store = coll.store
    cache = store.planner.cache
    # A spec seen before is found by its exact repr (cheaper than the canonical text on every call).
    alias = "load\n" + coll.name + "\n" + repr(spec)
    hit = cache.lookup_alias(alias)
    if hit is not None:
        return cast("_Prepared", hit)
    try:
        key: str | None = "load\n" + coll.name + "\n" + json.dumps(spec, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # builder expressions in the spec: planned each time
        key = None
    if key is not None:
        hit = cache.get(key)
        if hit is not None:
            cache.put(key, hit, alias)
            return cast("_Prepared", hit)
    dialect = store.backend.dialect
    root = plan_load(coll.name, spec, store.model.collections, store.model.relations, dialect=dialect)
    stmt = select_load(dialect, root, store.model.collections)
    fixed = None if any(s.kind in EXTERNAL_SLOTS for s in stmt.slots) else tuple(stmt.bind({}))
    entry = _Prepared(root, stmt, fixed)
    if key is not None:
        cache.put(key, entry, alias)
    return entry


def _bind(coll: Readable, stmt: Statement, externals: Any) -> list[Any]:
    ext = check_externals(externals)
    why = divert_reason(
        cast("Prepared", _Checked(coll.store.backend.dialect, *bound_externals(stmt.slots))), ext
    )
    if why is not None:
        raise PlanError(
            "JD0032",
            f"{why}: a load runs as one SQL statement, which cannot compare it",
            collection=coll.name,
        )
    return stmt.bind(ext)


def load(coll: Readable, spec: Any, externals: Any = None) -> Loaded:
    """The root documents with their includes, from exactly one SQL statement."""
    prepared = prepare(coll, spec)
    stmt = prepared.stmt
    params = (
        prepared.fixed if externals is None and prepared.fixed is not None else _bind(coll, stmt, externals)
    )
    db = coll.store.db
    with db.translating(collection=coll.name):
        rows = db.query(stmt.sql, params)
    loads = orjson.loads  # the statement built each document whole: one parse, nothing to put in place
    return Loaded([loads(r[0]) for r in rows], collection=coll.name, spec=prepared.root)


class Loaded(list[dict[str, Any]]):
    """The documents of a graph load (a list of dicts, includes nested), with frames and HTML.

    ``to_pandas()`` gives one row per root document: its members as columns, each include as one
    column (a to-many include holds a list of dicts, a to-one a dict or None, a count an integer);
    ``flatten=True`` spreads dict members and to-one includes into dotted columns. ``to_arrow()``
    gives the same columns with Arrow's nested types (lists of structs).
    """

    def __init__(self, items: list[dict[str, Any]], *, collection: str, spec: Level) -> None:
        super().__init__(items)
        self.collection = collection
        self.spec = spec

    def to_list(self) -> list[dict[str, Any]]:
        """The documents as a plain list."""
        return list(self)

    def to_pandas(self, *, flatten: bool = False) -> pd.DataFrame:
        """One row per root document, includes as columns (nested values; see the class docstring)."""
        from jarenlab.frames import check_flags, records_to_frame

        check_flags("to_pandas", flatten=flatten)
        return records_to_frame(list(self), flatten=flatten)

    def to_arrow(self) -> pa.Table:
        """The documents as a pyarrow Table with nested columns (lists of structs)."""
        from jarenlab.frames import records_to_arrow

        return records_to_arrow(list(self))

    def _repr_html_(self) -> str:
        shown = "".join(
            f"<tr><td><code>{html.escape(orjson.dumps(d).decode()[:300])}</code></td></tr>" for d in self[:10]
        )
        more = f"<small>... {len(self) - 10:,} more</small>" if len(self) > 10 else ""
        includes = ", ".join(lv.path for lv in levels(self.spec)[1:]) or "none"
        return (
            f"<div><b>graph load</b> of <code>{html.escape(self.collection)}</code>: {len(self):,} documents, "
            f"includes {html.escape(includes)} (one statement)<table>{shown}</table>{more}</div>"
        )


@dataclass
class LoadExplain:
    """How a graph load runs: its one statement, the includes and the pagination mode."""

    collection: str
    sql: str
    params: list[dict[str, Any]]
    statements: int
    pagination: str
    includes: list[dict[str, Any]]
    engine_plan: list[dict[str, Any]] = field(default_factory=list)
    database: str = DEFAULT.name
    #: Per to-many or count include no declared index serves: ``{"collection", "index"}``, the
    #: index (relation member, then the include's order) that reads each parent's rows in order.
    suggested_indexes: list[dict[str, Any]] = field(default_factory=list)

    def rows(self) -> list[tuple[str, str]]:
        """(field, text) pairs behind the frame and the HTML."""
        out = [
            ("collection", self.collection),
            ("statements", str(self.statements)),
            ("pagination", self.pagination),
        ]
        for inc in self.includes:
            what = f"{inc['kind']} via {inc['via']} (depth {inc['depth']})"
            out.append((f"include {inc['path']}", what))
        for ix in self.suggested_indexes:
            out.append(
                (f"suggested index on {ix['collection']}", json.dumps(ix["index"], ensure_ascii=False))
            )
        out += [("sql", self.sql), ("params", json.dumps(self.params, default=str))]
        out += [(f"{self.database} plan", "  " * p["depth"] + p["detail"]) for p in self.engine_plan]
        return out

    def to_frame(self) -> pd.DataFrame:
        """A two-column DataFrame (field, value)."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=["field", "value"])

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th style='text-align:left;vertical-align:top'>{html.escape(k)}</th>"
            f"<td style='text-align:left'><code style='white-space:pre-wrap'>{html.escape(v)}</code></td></tr>"
            for k, v in self.rows()
        )
        return f"<div class='jarenlab-explain'><b>explain_load</b> <i>one statement</i><table>{body}</table></div>"

    def __repr__(self) -> str:
        return "\n".join(f"{k}: {v}" for k, v in self.rows())


def explain_load(coll: Readable, spec: Any, externals: Any = None) -> LoadExplain:
    """The statement a load runs, its includes (kind, relation member, depth) and its pagination."""
    prepared = prepare(coll, spec)
    root, stmt = prepared.root, prepared.stmt
    ext = check_externals(externals)
    values = stmt.bind({s.value: ext.get(s.value) for s in stmt.slots if s.kind in EXTERNAL_SLOTS})
    db = coll.store.db
    with db.translating(collection=coll.name):
        plan = coll.store.backend.dialect.plan_tree(db.explain(stmt.sql, values))
    includes = []
    for lv in levels(root)[1:]:
        rel = lv.relation
        assert rel is not None
        kind = {
            "to-one": "to-one (left: a missing parent reads as None)",
            "to-many": "to-many",
            "many-to-many": f"many-to-many (through {rel.holder}: a document per link, in link order)",
            "count": "count",
        }[lv.kind]
        via = (
            f"{rel.holder}/"
            + ", /".join(rel.members or (rel.member,))
            + (" and /" + ", /".join(rel.others) if rel.others else "")
        )
        includes.append(
            {
                "path": lv.path,
                "kind": kind,
                "collection": lv.collection,
                "via": via,
                "depth": lv.path.count(".") + 1,
            }
        )
    specs = coll.store.model.collections
    suggested = []
    for lv in levels(root)[1:]:
        # A many-to-many include finds its links by the join collection's member, its documents by key.
        on = lv.relation.holder if lv.relation is not None and lv.relation.through else lv.collection
        index = _window_index(lv, specs[on], coll.store.backend.dialect)
        if index is not None and {"collection": on, "index": index} not in suggested:
            suggested.append({"collection": on, "index": index})
    return LoadExplain(
        collection=coll.name,
        sql=stmt.sql,
        params=[s.describe() for s in stmt.slots],
        statements=1,
        pagination="offset" if root.skip else "none",
        includes=includes,
        engine_plan=plan,
        database=coll.store.backend.dialect.name,
        suggested_indexes=suggested,
    )


def _window_index(level: Level, spec: CollectionSpec, dialect: Any) -> dict[str, Any] | None:
    """The index a to-many or count include would read each parent's rows through, in order, when
    no declared index begins with its relation member and then its ordering paths (None for a to-one
    include: it finds its parent by key)."""
    rel = level.relation
    if rel is None or not rel.many:
        return None
    if rel.through is not None:  # the order is the linked documents': the links are found by member
        steps = [member_field(spec, m, dialect).steps for m in rel.members]
        return window_suggestion(steps, [False] * len(steps), spec.index_paths())
    keys = [(k.field.steps, k.desc) for k in level.order if k.field is not None]
    members = [member_field(spec, m, dialect).steps for m in rel.members or (rel.member,)]
    return window_suggestion(
        [*members, *(s for s, _ in keys)], [False] * len(members) + [d for _, d in keys], spec.index_paths()
    )
