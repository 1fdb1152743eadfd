"""``store.explain()``: how a store-level document runs, with the join order and the join indexes.

A document over one collection is explained by that collection's planner (:class:`Explain`). A
join adds ``join`` (per binding, in the written nested-loop order: its collection, the equalities
joining it and the index serving each join key) and ``join_order`` (the collections in the order
the database's own plan reads them), to the fields, the frame, the HTML and the widget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from jarenlab.query.joins.run import check_flags, prepare, run
from jarenlab.query.planner.explain import Explain, traced
from jarenlab.query.planner.explain import explain as explain_collection
from jarenlab.query.planner.preds import EXTERNAL_SLOTS
from jarenlab.query.planner.run import Trace, check_externals, divert_reason

if TYPE_CHECKING:
    from jarenlab.query.planner.run import Prepared
    from jarenlab.query.planner.source import Host


@dataclass
class JoinExplain(Explain):
    """:class:`Explain` of a query over several collections, with the join."""

    join: list[dict[str, Any]] = field(default_factory=list)
    join_order: list[str] = field(default_factory=list)

    def rows(self) -> list[tuple[str, str]]:
        """(field, text) pairs; the join's bindings and order follow the mode."""
        out = super().rows()
        extra = []
        for j in self.join:
            on = "; ".join(f"{c} (index: {ix})" for c, ix in zip(j["on"], j["indexes"])) or "no join key"
            filt = ", filtered in SQL" if j["filtered"] else ""
            extra.append((f"join {j['binding']}", f"{j['collection']}: {on}{filt}"))
        if self.join_order:
            extra.append(("join order", " -> ".join(self.join_order)))
        return out[:3] + extra + out[3:]


def explain(
    store: Host,
    document: Any,
    externals: dict[str, Any] | None = None,
    *,
    analyze: bool = False,
    pushdown: bool = True,
    strict: bool = False,
) -> Explain:
    """Plan (and with ``analyze`` run) a store-level document and describe it."""
    check_flags(analyze=analyze, pushdown=pushdown, strict=strict)
    ext = check_externals(externals)
    prepared, hit = prepare(store, document, pushdown=pushdown, strict=strict)
    plan = prepared.plan
    if plan.single is not None:
        name, rewritten = plan.single
        return explain_collection(
            store[name],
            rewritten,
            externals,
            analyze=analyze,
            pushdown=pushdown,
            strict=strict,
            profile=store.profile,
        )
    if analyze:
        _, trace, _ = run(store, document, ext, pushdown=pushdown, strict=strict)
    else:
        trace = Trace(mode=plan.mode, cache="hit" if hit else "miss")
        if externals is not None:
            trace.diverted = divert_reason(cast("Prepared", prepared), ext)
            if trace.diverted is not None:
                trace.mode = "set"
    if trace.mode == "set":
        chosen = (
            prepared.whole if trace.diverted or trace.fallback else {**prepared.whole, **prepared.candidates}
        )
        stmts = list(chosen.values())
    else:
        assert prepared.main is not None
        stmts = [prepared.main]
    db = store.db
    engine_plan: list[dict[str, Any]] = []
    for stmt in stmts:
        values = stmt.bind({s.value: ext.get(s.value) for s in stmt.slots if s.kind in EXTERNAL_SLOTS})
        with db.translating():
            engine_plan += prepared.dialect.plan_tree(db.explain(stmt.sql, values))
    indexes = sorted({ix for j in prepared.join for ix in j["indexes"] if ix != "none"})
    return JoinExplain(
        collection=", ".join(plan.reads),
        sql=";\n".join(s.sql for s in stmts),
        params=[s.describe() for stmt in stmts for s in stmt.slots],
        indexes=indexes,
        engine_plan=engine_plan,
        externals=sorted(prepared.compiled.externals),
        database=prepared.dialect.name,
        **traced(trace, plan.reasons, analyze),
        join=prepared.join if trace.mode != "set" else [],
        join_order=_order(engine_plan, [j["collection"] for j in prepared.join])
        if trace.mode != "set"
        else [],
    )


def _order(engine_plan: list[dict[str, Any]], collections: list[str]) -> list[str]:
    """The collections in the order the database's plan reads them (outer loop first)."""
    seen: list[str] = []
    for row in engine_plan:
        words = str(row["detail"]).replace('"', " ").split()
        for name in collections:
            if name in words and name not in seen:
                seen.append(name)
    return seen
