"""``explain()``: what the database answers, what the engine runs, and why, as data, HTML and a widget.

Fields: ``mode`` (native/row/set), ``sql``, ``params`` (bound slots in order), ``indexes``,
``residual`` (``None`` or ``{"mode", "reasons": [{"construct", "reason"}]}``), ``diverted``
(why these externals ran the set residual, or None), ``cache`` (hit/miss), ``engine_plan``
(the database's own plan as ``[{id, parent, depth, detail}]``: SQLite's ``EXPLAIN QUERY PLAN``,
PostgreSQL's ``EXPLAIN (FORMAT JSON)``; also readable under its first name, ``sqlite_plan``),
``database`` (whose plan it is: the backend's name, :data:`jarenlab.backends.REGISTERED`), ``suggested_indexes`` (when the database scans the whole
table for a condition or order on members no index covers, or for a group-by no index covers
whole: the declarations to add to the model).
``analyze=True`` runs the query and adds ``rows_read`` (the rows the database read: every row of a
scan; the rows an index search found otherwise), ``rows_fetched`` (handed over by SQL),
``rows_returned`` (after the residual) and ``phases`` (seconds per phase).
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jarenlab.backends import DEFAULT
from jarenlab.query.planner.diagnose import bound, covering_suggestion, index_suggestions
from jarenlab.query.planner.plan import covered_fields
from jarenlab.query.planner.preds import EXTERNAL_SLOTS, Reason, fields_of
from jarenlab.query.planner.profile import Profile
from jarenlab.query.planner.run import (
    Trace,
    check_externals,
    divert_reason,
    prepare,
    preview_columns,
    register_functions,
    run_query,
)
from jarenlab.query.planner.tree import plan_tree, tree_html

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.query.planner.source import Readable


@dataclass
class Explain:
    """The planner's account of one document over one collection."""

    collection: str
    mode: str
    sql: str
    params: list[dict[str, Any]]
    indexes: list[str]
    residual: dict[str, Any] | None
    diverted: str | None
    cache: str
    engine_plan: list[dict[str, Any]]
    externals: list[str]
    analyzed: bool = False
    rows_read: int | None = None
    rows_returned: int | None = None
    phases: dict[str, float] = field(default_factory=dict)
    fallback: str | None = None
    #: Whose plan it is: the backend's name (``backend.name``; the default backend's when not given).
    database: str = DEFAULT.name
    #: Index declarations that would serve the scan (add them to the model's ``indexes``): one per
    #: member a condition scans for, one over an order's keys in their directions, or for a group-by
    #: over the whole collection one over every member it reads, so the database answers from the
    #: index alone.
    suggested_indexes: list[dict[str, Any]] = field(default_factory=list)
    #: Rows the SQL handed over (``rows_read`` counts the rows the database read: all of them in a scan).
    rows_fetched: int | None = None
    #: Schema-aware findings (:mod:`jarenlab.query.planner.diagnose`): ``[{code, severity, reason, doc_path}]``.
    diagnostics: list[dict[str, str]] = field(default_factory=list)
    #: The columnar path (:mod:`jarenlab.query.columnar`): ``{"used": True, "read": [members], "warm":
    #: bool}`` (with ``analyze``, also ``rows`` scanned and the change-log ``seq`` the columns reflect),
    #: or ``{"used": False, "reason": ...}`` when SQL answers a plan it was asked about; None when the
    #: plan was not one to ask about (not native, diverted, ``columns=False``).
    columns: dict[str, Any] | None = None

    @property
    def sqlite_plan(self) -> list[dict[str, Any]]:
        """The database's own plan of the statement: an alias of ``engine_plan`` (the same rows, on
        every backend), kept from when SQLite was the only one."""
        return self.engine_plan

    @property
    def plan_label(self) -> str:
        """The name of the plan's rows in :meth:`rows`: ``sqlite plan``, ``postgresql plan``."""
        return f"{self.database} plan"

    def as_dict(self) -> dict[str, Any]:
        """Every field as plain data."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def rows(self) -> list[tuple[str, str]]:
        """(field, text) pairs: the data behind ``to_frame()``, the HTML and the widget."""
        out = [("collection", self.collection), ("mode", self.mode), ("cache", self.cache), ("sql", self.sql)]
        out.append(("params", json.dumps(self.params, ensure_ascii=False, default=str)))
        out.append(("indexes", ", ".join(self.indexes) or "none"))
        if self.residual is not None:
            for r in self.residual["reasons"]:
                out.append((f"residual ({self.residual['mode']})", f"{r['construct']}: {r['reason']}"))
        else:
            out.append(("residual", "none"))
        out.append(("diverted", self.diverted or "no"))
        if self.columns is not None:
            out.append(("columns", _columns_text(self.columns)))
        for d in self.diagnostics:
            out.append(
                (f"check ({d['severity']})", f"{d['code']}: {d['reason']} (at {d['doc_path'] or '/'})")
            )
        for p in self.engine_plan:
            out.append((self.plan_label, "  " * p["depth"] + p["detail"]))
        for ix in self.suggested_indexes:
            out.append(("suggested index", json.dumps(ix, ensure_ascii=False)))
        if self.analyzed:
            out.append(("rows read", str(self.rows_read)))
            out.append(("rows fetched by SQL", str(self.rows_fetched)))
            out.append(("rows returned", str(self.rows_returned)))
            for k, v in self.phases.items():
                out.append((f"time {k}", f"{v * 1000:.3f} ms"))
            if self.fallback:
                out.append(("fallback", self.fallback))
        return out

    def to_frame(self) -> pd.DataFrame:
        """A two-column DataFrame (field, value)."""
        import pandas as pd

        return pd.DataFrame(self.rows(), columns=["field", "value"])

    def tree(self) -> dict[str, Any]:
        """The plan as nested nodes, the result at the root (:func:`jarenlab.query.planner.tree.plan_tree`)."""
        return plan_tree(
            mode=self.mode,
            database=self.database,
            indexes=self.indexes,
            residual=self.residual,
            diverted=self.diverted,
            engine_plan=self.engine_plan,
            rows_read=self.rows_read,
            rows_returned=self.rows_returned,
            phases=self.phases,
        )

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th style='text-align:left;vertical-align:top'>{html.escape(k)}</th>"
            f"<td style='text-align:left'><code style='white-space:pre-wrap'>{html.escape(v)}</code></td></tr>"
            for k, v in self.rows()
        )
        return (
            f"<div class='jarenlab-explain'><b>explain</b> <i>{html.escape(self.mode)}</i>{tree_html(self.tree())}"
            f"<details><summary>SQL, parameters and every field</summary><table>{body}</table></details></div>"
        )

    def __repr__(self) -> str:
        return "\n".join(f"{k}: {v}" for k, v in self.rows())

    def widget(self) -> Any:
        """An ipywidgets view: SQL, pushed vs residual parts, the database's plan tree, the counts."""
        from jarenlab.widgets.explain import explain_widget

        return explain_widget(self)


def _columns_text(c: dict[str, Any]) -> str:
    """``explain()``'s columns row: what the columnar path read, or why SQL answered."""
    if not c["used"]:
        return f"not used ({c['reason']})"
    text = f"{', '.join(c['read'])} ({'warm' if c['warm'] else 'cold: built by this run'})"
    if "rows" in c:
        text += f", {c['rows']:,} rows scanned, as of change {c['seq']}"
    return text


#: The schema families whose members the planner reads through a typed column (so an index serves).
_INDEXED = ("string", "integer")


def explain(
    coll: Readable,
    document: Any,
    externals: dict[str, Any] | None = None,
    *,
    analyze: bool = False,
    pushdown: bool = True,
    strict: bool = False,
    profile: Profile | None = None,
    columns: bool | None = None,
) -> Explain:
    """Plan (and with ``analyze`` run) a document and describe it; see :class:`Explain`."""
    ext = check_externals(externals)
    if analyze:
        _, trace, prepared = run_query(
            coll, document, ext, pushdown=pushdown, strict=strict, profile=profile, columns=columns
        )
    else:
        prepared, hit = prepare(coll, document, pushdown=pushdown, strict=strict, profile=profile)
        trace = Trace(
            mode=prepared.plan.mode, cache="hit" if hit else "miss", diverted=divert_reason(prepared, ext)
        )
        if externals is None:
            trace.diverted = None  # externals are bound at run time; pass them to see a diversion
        if trace.diverted is not None:
            trace.mode = "set"
        elif pushdown and columns is not False:
            trace.columns = preview_columns(coll, prepared, force=columns is True)
            if trace.columns is not None and trace.columns["used"]:
                trace.mode = "columnar"
    plan = prepared.plan
    if trace.diverted is not None or trace.fallback is not None:
        stmt = prepared.divert
    else:
        stmt = prepared.main if prepared.main is not None else prepared.candidates
    # Bound as a run binds them (an external not given reads as NULL: the plan does not need it).
    values = stmt.bind({s.value: ext.get(s.value) for s in stmt.slots if s.kind in EXTERNAL_SLOTS})
    db = coll.store.db
    register_functions(coll, prepared)
    with db.translating(collection=coll.name):
        raw_plan = db.explain(stmt.sql, values)
    engine_plan = prepared.dialect.plan_tree(raw_plan)
    scans = prepared.dialect.full_scans(raw_plan, coll.name)
    suggested: list[dict[str, Any]] = []
    if scans:
        indexed = {c.segments for c in coll.spec.columns}
        fields = fields_of(plan.where)
        # Only what the planner reads through a typed column (strings, integers): a number member
        # is compared and ordered through its JSON value, which an index on it would not serve.
        if fields:
            suggested = index_suggestions([f.steps for f in fields if f.family in _INDEXED], indexed)
        else:  # an order index, each path in the direction of its key
            keys = [
                (k.field.steps, k.desc)
                for k in plan.order
                if k.field is not None and k.field.family in _INDEXED
            ]
            suggested = index_suggestions([s for s, _ in keys], indexed, [d for _, d in keys])
        covered = (
            covered_fields(plan) if prepared.dialect.indexes_cover and prepared.mandatory is None else None
        )
        if covered:
            held = [{path for path, _ in ix} for ix in coll.spec.index_paths()]
            covering = covering_suggestion([f.steps for f in covered], held)
            suggested += [covering] if covering is not None else []
    fetched = trace.rows_read
    if analyze and scans and trace.fallback is None:
        trace.rows_read = coll.count()  # a scan reads every row, whatever it hands over
    return Explain(
        collection=coll.name,
        sql=stmt.sql,
        params=[s.describe() for s in stmt.slots],
        indexes=list(prepared.indexes),
        engine_plan=engine_plan,
        externals=sorted(prepared.compiled.externals),
        database=prepared.dialect.name,
        diagnostics=[d.as_dict() for d in bound(prepared.diagnostics, ext)],
        suggested_indexes=suggested,
        rows_fetched=fetched if analyze else None,
        columns=trace.columns,
        **traced(trace, plan.reasons, analyze),
    )


def traced(trace: Trace, reasons: Sequence[Reason], analyze: bool) -> dict[str, Any]:
    """The fields of an :class:`Explain` a run (or a plan) decides: mode, cache, the residual with its
    reasons (the diversion and the fallback first), and the counts and times when analyzed."""
    why = [r.as_dict() for r in reasons]
    if trace.diverted:
        why = [{"construct": "externals", "reason": trace.diverted}, *why]
    if trace.fallback:
        why = [{"construct": "data", "reason": trace.fallback}, *why]
    return {
        "mode": trace.mode,
        "residual": None if trace.mode in ("native", "columnar") else {"mode": trace.mode, "reasons": why},
        "diverted": trace.diverted,
        "cache": trace.cache,
        "analyzed": analyze,
        "rows_read": trace.rows_read if analyze else None,
        "rows_returned": trace.rows_returned if analyze else None,
        "phases": dict(trace.phases) if analyze else {},
        "fallback": trace.fallback,
    }
