"""Pure data shaping for the live table widget: columns, row HTML, row messages, freshness.

The widget (:mod:`jarenlab.widgets.live`) only moves these strings into ipywidgets; everything
it shows is computed here and tested without a kernel.

>>> columns([{"a": 1}, {"a": 2, "b": "x"}])
['a', 'b']
>>> row_messages([{"op": "remove", "path": "/rows/2"}, {"op": "replace", "path": "/rows/0", "value": 1}])
[('delete', 2, None), ('set', 0, 1)]
>>> freshness_text(seq=7, updated_at=100.0, now=102.5, strategy="window", rows=3)
'live · 3 rows · seq 7 · updated 2.5 s ago · window'
"""

from __future__ import annotations

import html
from typing import Any

import orjson

CELL = "overflow:hidden;text-overflow:ellipsis;white-space:nowrap;padding:1px 6px"


def columns(rows: list[Any]) -> list[str]:
    """The table's columns: dict members in first-seen order; ``value`` for scalar rows."""
    out: dict[str, None] = {}
    for r in rows:
        if type(r) is dict:
            out.update(dict.fromkeys(r))
        else:
            out["value"] = None
    return list(out)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if type(value) is str:
        return html.escape(value)
    return html.escape(orjson.dumps(value).decode())


def _grid(cols: int) -> str:
    return f"display:grid;grid-template-columns:repeat({max(cols, 1)},minmax(6em,1fr));font-family:monospace"


def row_html(row: Any, cols: list[str]) -> str:
    """One row as a small HTML grid line (the unit a one-row change sends).

    >>> row_html({"a": 1, "b": "<x>"}, ["a", "b"]).count("<div")
    3
    """
    values = [row.get(c) for c in cols] if type(row) is dict else [row]
    cells = "".join(f"<div style='{CELL}'>{_cell(v)}</div>" for v in values)
    return f"<div style='{_grid(len(cols))}'>{cells}</div>"


def header_html(cols: list[str]) -> str:
    """The header line, aligned with :func:`row_html`."""
    cells = "".join(f"<div style='{CELL};font-weight:bold'>{html.escape(c)}</div>" for c in cols)
    return f"<div style='{_grid(len(cols))};border-bottom:1px solid #999'>{cells}</div>"


def row_messages(patch: list[dict[str, Any]]) -> list[tuple[str, int, Any]]:
    """RFC 6902 ops on ``/rows/i`` as row-level messages ``(insert|delete|set, index, value)``."""
    kinds = {"add": "insert", "remove": "delete", "replace": "set"}
    return [(kinds[op["op"]], int(op["path"].rsplit("/", 1)[1]), op.get("value")) for op in patch]


def freshness_text(
    *, seq: int, updated_at: float | None, now: float, strategy: str, rows: int, error: str | None = None
) -> str:
    """How fresh the table is, for its status line (``now`` and ``updated_at`` from one clock)."""
    if error:
        return f"closed · {error}"
    if updated_at is None:
        age = "no change yet"
    else:
        secs = max(now - updated_at, 0.0)
        age = f"updated {secs:.1f} s ago" if secs < 120 else f"updated {secs / 60:.0f} min ago"
    return f"live · {rows} rows · seq {seq} · {age} · {strategy}"
