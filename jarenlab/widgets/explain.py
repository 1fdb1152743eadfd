"""A thin ipywidgets view of an :class:`~jarenlab.query.planner.explain.Explain` (data shaping lives there)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jarenlab.query.planner.explain import Explain


def explain_widget(ex: Explain) -> Any:
    """Tabs: SQL and params, pushed vs residual, the database's plan tree, counts (after analyze)."""
    import ipywidgets as w

    from jarenlab.backends import title as backend_title

    def table(pairs: list[tuple[str, str]]) -> Any:
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td><code>{html.escape(v)}</code></td></tr>"
            for k, v in pairs
        )
        return w.HTML(f"<table>{body}</table>")

    rows = ex.rows()
    sql = [
        (k, v) for k, v in rows if k in ("mode", "cache", "sql", "params", "indexes") or k.startswith("join")
    ]
    residual = [(k, v) for k, v in rows if k.startswith(("residual", "diverted", "fallback"))]
    plan = [(k, v) for k, v in rows if k == ex.plan_label]
    counts = [(k, v) for k, v in rows if k.startswith(("rows", "time"))] or [
        ("counts", "run explain(analyze=True)")
    ]
    tabs = w.Tab(children=[table(sql), table(residual), table(plan), table(counts)])
    for i, title in enumerate(("SQL", "residual", f"{backend_title(ex.database)} plan", "counts")):
        tabs.set_title(i, title)
    return tabs
