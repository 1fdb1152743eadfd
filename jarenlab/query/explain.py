"""``explain()``: what the database answers, what the engine runs, and why, as data, HTML and a widget.

Fields: ``mode`` (native/row/set), ``sql``, ``params`` (bound slots in order), ``indexes``,
``residual`` (``None`` or ``{"mode", "reasons": [{"construct", "reason"}]}``), ``diverted``
(why these externals ran the set residual, or None), ``cache`` (hit/miss), ``engine_plan``
(the database's own plan as ``[{id, parent, depth, detail}]``: SQLite's ``EXPLAIN QUERY PLAN``,
PostgreSQL's ``EXPLAIN (FORMAT JSON)``; also readable as ``sqlite_plan``), ``database`` (whose
plan it is: ``sqlite``, ``postgresql``). ``analyze=True`` runs the query and adds ``rows_read``
(by SQL), ``rows_returned`` (after the residual) and ``phases`` (seconds per phase).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jarenlab.query.plan_tree import plan_tree, tree_html
from jarenlab.query.preds import EXTERNAL_SLOTS
from jarenlab.query.profile import Profile
from jarenlab.query.run import Trace, check_externals, divert_reason, prepare, register_udfs, run_query

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.collection import Collection


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
    database: str = "sqlite"

    @property
    def sqlite_plan(self) -> list[dict[str, Any]]:
        """The database's own plan of the statement (the same rows as ``engine_plan``, on every backend)."""
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
        for p in self.engine_plan:
            out.append((self.plan_label, "  " * p["depth"] + p["detail"]))
        if self.analyzed:
            out.append(("rows read by SQL", str(self.rows_read)))
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
        """The plan as nested nodes, the result at the root (:func:`jarenlab.query.plan_tree.plan_tree`)."""
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


def explain(
    coll: Collection,
    document: Any,
    externals: dict[str, Any] | None = None,
    *,
    analyze: bool = False,
    pushdown: bool = True,
    strict: bool = False,
    profile: Profile | None = None,
) -> Explain:
    """Plan (and with ``analyze`` run) a document and describe it; see :class:`Explain`."""
    ext = check_externals(externals)
    if analyze:
        _, trace, prepared = run_query(coll, document, ext, pushdown=pushdown, strict=strict, profile=profile)
    else:
        prepared, hit = prepare(coll, document, pushdown=pushdown, strict=strict, profile=profile)
        trace = Trace(
            mode=prepared.plan.mode, cache="hit" if hit else "miss", diverted=divert_reason(prepared, ext)
        )
        if externals is None:
            trace.diverted = None  # externals are bound at run time; pass them to see a diversion
        if trace.diverted is not None:
            trace.mode = "set"
    plan = prepared.plan
    if trace.diverted is not None or trace.fallback is not None:
        stmt = prepared.divert
    else:
        stmt = prepared.main if prepared.main is not None else prepared.candidates
    # Bound as a run binds them (an external not given reads as NULL: the plan does not need it).
    values = stmt.bind({s.value: ext.get(s.value) for s in stmt.slots if s.kind in EXTERNAL_SLOTS})
    db = coll.store.db
    if plan.udfs:
        register_udfs(db, plan.udfs, coll.store.operators)
    with db.translating(collection=coll.name):
        engine_plan = prepared.dialect.plan_tree(db.explain(stmt.sql, values))
    reasons = [r.as_dict() for r in plan.reasons]
    if trace.diverted:
        reasons = [{"construct": "externals", "reason": trace.diverted}, *reasons]
    if trace.fallback:
        reasons = [{"construct": "data", "reason": trace.fallback}, *reasons]
    residual = None if trace.mode == "native" else {"mode": trace.mode, "reasons": reasons}
    return Explain(
        collection=coll.name,
        mode=trace.mode,
        sql=stmt.sql,
        params=[s.describe() for s in stmt.slots],
        indexes=list(prepared.indexes),
        residual=residual,
        diverted=trace.diverted,
        cache=trace.cache,
        engine_plan=engine_plan,
        externals=sorted(prepared.compiled.externals),
        analyzed=analyze,
        rows_read=trace.rows_read if analyze else None,
        rows_returned=trace.rows_returned if analyze else None,
        phases=dict(trace.phases) if analyze else {},
        fallback=trace.fallback,
        database=prepared.dialect.name,
    )
