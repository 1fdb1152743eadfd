"""Pure data shaping for the live table: columns, cell text, column layout, the columnar snapshot,
encoded patches, the status line and the static HTML a saved notebook shows.

The widget (:mod:`jarenlab.widgets.live`) only moves these values to its front end; everything it
shows is computed here (the front end formats visible cells by the same rules as :func:`cell`)
and tested without a kernel or a browser.

A row is a dict (one column per member, in first-seen order) or a scalar (one ``value`` column).
A member a row lacks is **missing**, which is not ``null``: the snapshot lists missing cells per
column, a patched row lists its missing column indexes, and both render differently.

>>> columns([{"a": 1}, {"a": 2, "b": "x"}])
['a', 'b']
>>> cell("2013-01-09T14:00:00Z")
('2013-01-09 14:00 UTC', 'date', '2013-01-09T14:00:00Z')
>>> encode_row({"a": None, "c": 3}, ["a", "b", "c"])
([None, None, 3], [1])
>>> row_messages([{"op": "remove", "path": "/rows/2"}, {"op": "replace", "path": "/rows/0", "value": 1}])
[('delete', 2, None), ('set', 0, 1)]
>>> status_text({"state": "live", "rows": 3, "seq": 7, "age_s": 2.5, "strategy": "window"})
'live · 3 rows · seq 7 · updated 2.5 s ago · window'
"""

from __future__ import annotations

import datetime as dt
import html
import re
from typing import Any

import orjson

#: Missing, as opposed to ``null`` (a cell of a row that lacks the member).
MISSING: Any = object()
#: Column widths, in characters, are the longest cell text clamped to this range.
MIN_WIDTH, MAX_WIDTH = 3, 40
#: An ISO 8601 date-time, shown as ``YYYY-MM-DD HH:MM[:SS] [UTC|±hh:mm]``.
_DATETIME = re.compile(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(:\d\d(?:\.\d+)?)?(Z|[+-]\d\d:\d\d)?")


def columns(rows: list[Any]) -> list[str]:
    """The table's columns: dict members in first-seen order; ``value`` for scalar rows."""
    out: dict[str, None] = {}
    for r in rows:
        if type(r) is dict:
            out.update(dict.fromkeys(r))
        else:
            out["value"] = None
    return list(out)


def grow_columns(cols: list[str], rows: list[Any]) -> list[str]:
    """``cols`` with the members of ``rows`` it lacks appended (columns only grow between snapshots).

    >>> grow_columns(["a"], [{"b": 1, "a": 2}])
    ['a', 'b']
    """
    extra = [c for c in columns(rows) if c not in cols]
    return cols + extra if extra else cols


def cells(row: Any, cols: list[str]) -> list[Any]:
    """A row's cells in column order; a member it lacks is :data:`MISSING`."""
    if type(row) is dict:
        return [row.get(c, MISSING) for c in cols]
    return [row if c == "value" else MISSING for c in cols]


def column(rows: list[Any], name: str) -> list[Any]:
    """One column's cells, a member a row lacks as :data:`MISSING`.

    >>> column([{"a": 1}, {"b": 2}, 3], "a") == [1, MISSING, MISSING]
    True
    """
    return [
        row.get(name, MISSING) if type(row) is dict else (row if name == "value" else MISSING) for row in rows
    ]


def encode_row(row: Any, cols: list[str]) -> tuple[list[Any], list[int]]:
    """A row for the front end: cell values (missing as ``None``) and the missing column indexes."""
    values = cells(row, cols)
    missing = [i for i, v in enumerate(values) if v is MISSING]
    return [None if v is MISSING else v for v in values], missing


def _number(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return f"{value:.4f}".rstrip("0").rstrip(".")


def cell(value: Any) -> tuple[str, str, str | None]:
    """``(text, kind, title)`` of one cell: what it shows, its kind (``number``, ``date``, ``text``,
    ``bool``, ``json``, ``null``, ``missing``) and the full value as a tooltip where the text is not it.

    >>> cell(3.14159265), cell(None)[1], cell(MISSING)[1], cell({"a": [1]})
    (('3.1416', 'number', '3.14159265'), 'null', 'missing', ('{"a":[1]}', 'json', None))
    """
    if value is MISSING:
        return "", "missing", "missing"
    if value is None:
        return "null", "null", None
    kind = type(value)
    if kind is bool:
        return ("true" if value else "false"), "bool", None
    if kind is int:
        return str(value), "number", None
    if kind is float:
        text = _number(value)
        return text, "number", (None if text == repr(value) else repr(value))
    if kind is str:
        m = _DATETIME.fullmatch(value)
        if m is None:
            return value, "text", None
        day, hm, secs, zone = m.groups()
        shown = f"{day} {hm}{'' if secs in (None, ':00') else secs}"
        if zone:
            shown += " UTC" if zone == "Z" else f" {zone}"
        return shown, "date", value
    return orjson.dumps(value).decode(), "json", None


def layout(
    cols: list[str], rows: list[Any], previous: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Per column ``{"name", "numeric", "width"}``: right-aligned when every value is a number,
    ``width`` the longest cell text in characters (header included, clamped to 3..40).

    With ``previous`` (the layout so far) only ``rows`` are measured and widths only grow, so a
    patch never narrows a column under the reader's eyes.

    >>> layout(["id", "n"], [{"id": "abcdef", "n": 5}, {"id": "x", "n": 12345}])
    [{'name': 'id', 'numeric': False, 'width': 6}, {'name': 'n', 'numeric': True, 'width': 5}]
    """
    known = {c["name"]: c for c in previous or []}
    out = []
    for name in cols:
        prior = known.get(name)
        width = prior["width"] if prior else min(max(len(name), MIN_WIDTH), MAX_WIDTH)
        numeric = prior["numeric"] if prior else None
        longest, numbers, others = _measure(column(rows, name))
        if numbers or others:
            numeric = numeric is not False and not others
        out.append({"name": name, "numeric": bool(numeric), "width": max(width, min(longest, MAX_WIDTH))})
    return out


def _measure(values: list[Any]) -> tuple[int, bool, bool]:
    """``(longest cell text, any number, any other shown value)`` of one column's values, as
    :func:`cell` shows them (``null`` and missing cells do not count). A window repeats values
    and a 10,000-row window is measured before its first render: each distinct text is measured
    once, and integers by their extremes."""
    ints = [v for v in values if type(v) is int]
    longest = max(len(str(max(ints))), len(str(min(ints)))) if ints else 0
    numbers, others = bool(ints), False
    texts: set[str] = set()
    for v in values:
        kind = type(v)
        if kind is int or v is None or v is MISSING:
            continue
        if kind is str:
            texts.add(v)
            continue
        text, shown, _ = cell(v)
        longest = max(longest, len(text))
        if shown == "number":
            numbers = True
        else:
            others = True
    for v in texts:
        # only a text with a "T" after its date can be a date-time, which shows shorter
        longest = max(longest, len(cell(v)[0]) if len(v) >= 16 and v[10] == "T" else len(v))
    return longest, numbers, others or bool(texts)


def snapshot(rows: list[Any], keys: list[int], cols: list[str]) -> dict[str, Any]:
    """The window in compact columnar form: one value list per column, missing cells listed apart.

    >>> snapshot([{"a": 1}, {"a": 2, "b": None}], [7, 8], ["a", "b"])
    {'columns': ['a', 'b'], 'keys': [7, 8], 'data': [[1, 2], [None, None]], 'missing': [[], [0]]}
    """
    data, missing = [], []
    for name in cols:
        values = column(rows, name)
        gone = [r for r, v in enumerate(values) if v is MISSING]
        for r in gone:
            values[r] = None
        data.append(values)
        missing.append(gone)
    return {"columns": cols, "keys": keys, "data": data, "missing": missing}


def row_messages(patch: list[dict[str, Any]]) -> list[tuple[str, int, Any]]:
    """RFC 6902 ops on ``/rows/i`` as row-level messages ``(insert|delete|set, index, value)``."""
    kinds = {"add": "insert", "remove": "delete", "replace": "set"}
    return [(kinds[op["op"]], int(op["path"].rsplit("/", 1)[1]), op.get("value")) for op in patch]


def status_text(status: dict[str, Any]) -> str:
    """The status line: state, rows, seq, age of the last change, strategy (or the closing error).

    >>> status_text({"state": "closed", "rows": 2, "seq": 9, "age_s": 200, "strategy": "rows"})
    'closed · 2 rows · seq 9 · updated 3 min ago · rows'
    """
    age = status.get("age_s")
    if age is None:
        when = "no change yet"
    else:
        secs = max(float(age), 0.0)
        when = f"updated {secs:.1f} s ago" if secs < 120 else f"updated {secs / 60:.0f} min ago"
    parts = [status["state"], f"{status['rows']:,} rows", f"seq {status['seq']}", when, status["strategy"]]
    if status.get("error"):
        parts.append(status["error"])
    return " · ".join(parts)


def copy_status_text(status: dict[str, Any], taken: float) -> str:
    """The status line of a static copy (what a reader without a kernel sees): never ``live``, but
    when it was taken (``taken``: seconds since the epoch, shown in UTC), then the rows it holds.

    >>> copy_status_text({"state": "live", "rows": 2, "seq": 9, "age_s": 1.0, "strategy": "rows"}, 0)
    'not live · snapshot of 1970-01-01 00:00:00 UTC · 2 rows · seq 9 · rows'
    >>> copy_status_text({"state": "closed", "rows": 0, "seq": 3, "age_s": 1.0, "strategy": "rows",
    ...     "error": "JD2060"}, 0).split(" · ")[2:]
    ['closed', '0 rows', 'seq 3', 'rows', 'JD2060']
    """
    parts = ["not live", f"snapshot of {taken_text(taken)}"]
    if status["state"] != "live":
        parts.append(status["state"])
    parts += [f"{status['rows']:,} rows", f"seq {status['seq']}", status["strategy"]]
    if status.get("error"):
        parts.append(status["error"])
    return " · ".join(parts)


def taken_text(taken: float) -> str:
    """A wall-clock time in UTC, to the second: ``2026-12-04 20:31:05 UTC``."""
    return _utc(taken).strftime("%Y-%m-%d %H:%M:%S UTC")


def _utc(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.UTC)


#: The static table's look, the same look as the live front end's (``live_table.css``), as inline
#: styles: a ``<style>`` element would be a new style sheet for the whole page at every refresh of a
#: widget's static copy (a page-wide style recalculation once a second while a table changes), and
#: inline styles also hold where a notebook viewer drops style elements.
_CELL = (
    "padding:1px 8px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;"
    "border-bottom:1px solid var(--jp-border-color2,#e0e0e0);text-align:"
)
STYLES = {
    None: _CELL + "left",
    "jl-num": _CELL + "right",
    "jl-null": _CELL + "left;color:var(--jp-content-font-color3,#999);font-style:italic",
    "jl-missing": _CELL + "left;background:var(--jp-layout-color2,#f3f3f3)",
    "table": "border-collapse:collapse;font-family:var(--jp-code-font-family,monospace);"
    "font-size:var(--jp-code-font-size,12px)",
    "jl-status": "color:var(--jp-ui-font-color2,#666);font-size:90%",
}


def _header(column: dict[str, Any]) -> str:
    name = column["name"]
    cls = "jl-num" if column["numeric"] else None
    tip = f" title='{html.escape(name, quote=True)}'" if len(name) > column["width"] else ""
    return f"<th{f' class={cls!r}' if cls else ''}{tip} style='{STYLES[cls]}'>{html.escape(name)}</th>"


def static_html(
    rows: list[Any],
    status: dict[str, Any],
    *,
    limit: int = 50,
    title: str | None = None,
    taken: float | None = None,
) -> str:
    """The table as plain HTML (at most ``limit`` rows, then a count of the rest): what a saved
    notebook, GitHub, nbviewer or an HTML export shows without a kernel, and a live query's repr.

    Columns are sized as the live front end sizes them (:func:`layout`; a fixed table layout with
    one width per column, so a notebook's equal-width default never applies), a cut value has
    its whole text as a tooltip, numbers and their headers are right-aligned. ``title`` (HTML)
    goes above the status line. ``taken`` (seconds since the epoch) makes it a widget's static
    copy: its status line says it is not live and when it was taken (:func:`copy_status_text`),
    and the root carries that time as ``data-jl-taken`` (ISO 8601). The root is marked for
    notebooks' LaTeX typesetters to skip: a value with dollar signs is data, not mathematics.

    >>> page = static_html([{"a": 1, "b": "x" * 60}], {"state": "live", "rows": 1, "seq": 0,
    ...     "age_s": None, "strategy": "rows"})
    >>> "<col style='width:calc(4ch + 16px)'>" in page, "<th class='jl-num' style='" in page
    (True, True)
    >>> f"<td title='{'x' * 60}' style='{STYLES[None]}'>{'x' * 60}</td>" in page
    True
    """
    shown = rows[:limit]
    cols = columns(shown)
    grid = layout(cols, shown)
    chars = sum(c["width"] + 1 for c in grid)
    colgroup = "".join(f"<col style='width:calc({c['width'] + 1}ch + 16px)'>" for c in grid)
    head = "".join(_header(c) for c in grid)
    body = []
    for key, row in enumerate(shown):
        tds = []
        for c, value in zip(grid, cells(row, cols)):
            text, kind, tip = cell(value)
            cls = {"number": "jl-num", "null": "jl-null", "missing": "jl-missing"}.get(kind)
            if tip is None and len(text) > c["width"]:
                tip = text
            attrs = (f" class='{cls}'" if cls else "") + (
                f" title='{html.escape(tip, quote=True)}'" if tip else ""
            )
            tds.append(f"<td{attrs} style='{STYLES[cls]}'>{html.escape(text)}</td>")
        body.append(f"<tr data-key='{key}'>{''.join(tds)}</tr>")
    more = len(rows) - limit
    line = f"<div class='jl-status' style='{STYLES['jl-status']}'>"
    tail = f"{line}… {more:,} more rows</div>" if more > 0 else ""
    caption = f"<div class='jl-title'>{title}</div>" if title else ""
    said = status_text(status) if taken is None else copy_status_text(status, taken)
    when = "" if taken is None else f" data-jl-taken='{_utc(taken).isoformat()}'"
    return (
        f"<div class='jl-live tex2jax_ignore mathjax_ignore' data-jl-static='live-table'{when}>{caption}"
        f"{line}{html.escape(said)}</div>"
        f"<table class='jl-grid' style='table-layout:fixed;width:calc({chars}ch + {16 * len(grid)}px);"
        f"{STYLES['table']}'>"
        f"<colgroup>{colgroup}</colgroup><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
        f"</table>{tail}</div>"
    )


def live_html(name: str, rows: list[Any], status: dict[str, Any], *, limit: int = 20) -> str:
    """A live query's repr: which collection it follows, its status line and its first rows.

    >>> page = live_html("t<1>", [1, 2], {"state": "closed", "rows": 2, "seq": 4, "age_s": 3.0,
    ...     "strategy": "rows"})
    >>> "<b>live query</b> on <code>t&lt;1&gt;</code>" in page, "closed · 2 rows · seq 4 · updated 3.0 s ago" in page
    (True, True)
    """
    return static_html(
        rows, status, limit=limit, title=f"<b>live query</b> on <code>{html.escape(name)}</code>"
    )
