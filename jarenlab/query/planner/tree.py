"""``explain()`` drawn as a tree: what the engine runs on top, the database's plan below it.

Pure shaping, tested without a browser. :func:`plan_tree` turns an explain's fields into nested
nodes (the result, the residual the reference engine runs with its reasons, a diversion, the SQL
statement with the indexes it may use, then the database's own plan nodes, each marked as a full
``scan``, an ``index`` use or another step); :func:`tree_html` draws them as nested boxes joined by
lines, top-down as DuckDB draws ``EXPLAIN ANALYZE`` (without styles, as on GitHub, it reads as an
indented list).

>>> tree = plan_tree(mode="row", database="sqlite", indexes=["t_a"], residual={"mode": "row",
...     "reasons": [{"construct": "$upper", "reason": "no SQL equivalent"}]}, diverted=None,
...     engine_plan=[{"id": 2, "parent": 0, "depth": 0, "detail": "SEARCH t USING INDEX t_a (gx_a=?)"}])
>>> [(n["kind"], n["title"]) for n in _walk(tree)]
[('result', 'result · row'), ('residual', 'residual · row'), ('sql', 'sqlite statement'), ('index', 'SEARCH t USING INDEX t_a (gx_a=?)')]
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

#: A plan step that reads a table whole (SQLite ``SCAN t`` without an index, PostgreSQL ``Seq Scan``).
_SCAN = re.compile(r"^(SCAN |Seq Scan)")
#: A plan step that uses an index.
_INDEX = re.compile(
    r"USING (COVERING |PRIMARY KEY|INTEGER PRIMARY KEY)?\s*INDEX|Index (Only )?Scan|Bitmap Index"
)


def step_kind(detail: str) -> str:
    """``scan`` (the whole table), ``index`` (an index search or walk) or ``step`` (anything else).

    >>> step_kind("SCAN flights"), step_kind("SEARCH flights USING INDEX f_o (gx_o=?)"), step_kind("Sort")
    ('scan', 'index', 'step')
    >>> step_kind("Seq Scan on flights (Filter: (x > 1))"), step_kind("Index Scan using f_o on flights")
    ('scan', 'index')
    """
    if _INDEX.search(detail):
        return "index"
    if _SCAN.match(detail):
        return "scan"
    return "step"


def _node(
    kind: str, title: str, lines: list[str], children: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"kind": kind, "title": title, "lines": lines, "children": children or []}


def plan_tree(
    *,
    mode: str,
    database: str,
    indexes: list[str],
    residual: dict[str, Any] | None,
    diverted: str | None,
    engine_plan: list[dict[str, Any]],
    rows_read: int | None = None,
    rows_returned: int | None = None,
    phases: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The explain as nested nodes ``{kind, title, lines, children}``, the result at the root."""
    by_parent: dict[int, list[dict[str, Any]]] = {}
    ids = {p["id"] for p in engine_plan}
    for p in engine_plan:
        by_parent.setdefault(p["parent"] if p["parent"] in ids else 0, []).append(p)

    def steps(parent: int) -> list[dict[str, Any]]:
        return [
            _node(step_kind(p["detail"]), p["detail"], [], steps(p["id"])) for p in by_parent.get(parent, [])
        ]

    times = phases or {}

    def ms(phase: str) -> list[str]:
        return [f"{phase} {times[phase] * 1000:.3f} ms"] if phase in times else []

    sql_lines = [f"indexes: {', '.join(indexes) or 'none'}"]
    if rows_read is not None:
        sql_lines.append(f"rows read: {rows_read:,}")
    node = _node("sql", f"{database} statement", sql_lines + ms("sql"), steps(0))
    if diverted:
        node = _node("diverted", "diverted", [diverted], [node])
    if residual is not None:
        reasons = [f"{r['construct']}: {r['reason']}" for r in residual["reasons"]]
        node = _node("residual", f"residual · {residual['mode']}", reasons, [node])
    top = [] if rows_returned is None else [f"rows returned: {rows_returned:,}"]
    return _node("result", f"result · {mode}", top + ms("plan") + ms("decode"), [node])


def _walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node["children"]:
        yield from _walk(child)


#: Boxes joined by lines, in JupyterLab's theme variables (light and dark): every box has the theme's
#: text colour (titles bold) on the theme's background (a kind tints it, so it stays light on the light theme and
#: dark on the dark one), and the lists have no markers. The selectors outweigh JupyterLab's rules for
#: lists in rendered HTML (``.jp-RenderedHTMLCommon ul:not(.list-inline)``), which put a bullet on
#: the root item and indent it.
TREE_STYLE = (
    "<style>ul.jl-tree:not(.list-inline),ul.jl-tree ul:not(.list-inline){list-style:none;margin:0;padding:0}"
    "ul.jl-tree li{list-style:none;position:relative;margin:6px 0}"
    "ul.jl-tree ul:not(.list-inline){margin-left:18px;padding-left:14px;"
    "border-left:1px solid var(--jp-border-color1,#bdbdbd)}"
    "ul.jl-tree ul>li::before{content:'';position:absolute;left:-14px;top:12px;width:12px;"
    "border-top:1px solid var(--jp-border-color1,#bdbdbd)}.jl-node{display:inline-block;padding:3px 8px;"
    "border:1px solid var(--jp-border-color1,#bdbdbd);border-radius:4px;"
    "color:var(--jp-content-font-color1,#1f1f1f);background:var(--jp-layout-color1,#fff);"
    "font-family:var(--jp-code-font-family,monospace);font-size:var(--jp-code-font-size,12px)}"
    ".jl-node b{font-weight:600}.jl-node div{white-space:pre-wrap}"
    ".jl-k-scan{border-color:var(--jp-warn-color1,#e67e22);"
    "background:color-mix(in srgb,var(--jp-warn-color1,#e67e22) 12%,var(--jp-layout-color1,#fff))}"
    ".jl-k-index{border-color:var(--jp-success-color1,#27ae60);"
    "background:color-mix(in srgb,var(--jp-success-color1,#27ae60) 12%,var(--jp-layout-color1,#fff))}"
    ".jl-k-residual,.jl-k-diverted{border-color:var(--jp-brand-color1,#2980b9);border-style:dashed}"
    ".jl-k-result{background:var(--jp-layout-color2,#eee)}</style>"
)
_BADGES = {"scan": "full scan", "index": "index", "residual": "engine", "diverted": "engine"}


def tree_html(node: dict[str, Any]) -> str:
    """Nested boxes (a ``ul``/``li`` tree), each titled, with its lines and a badge for its kind."""

    def item(n: dict[str, Any]) -> str:
        badge = _BADGES.get(n["kind"])
        mark = f" <small>[{badge}]</small>" if badge else ""
        lines = "".join(f"<div>{html.escape(line)}</div>" for line in n["lines"])
        kids = "".join(item(c) for c in n["children"])
        sub = f"<ul>{kids}</ul>" if kids else ""
        return (
            f"<li><span class='jl-node jl-k-{n['kind']}'><b>{html.escape(n['title'])}</b>{mark}{lines}</span>"
            f"{sub}</li>"
        )

    return f"{TREE_STYLE}<ul class='jl-tree'>{item(node)}</ul>"
