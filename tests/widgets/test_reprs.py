"""The HTML reprs of live queries and stats, as pure shaping functions (no kernel, no browser).

A notebook's default table style centres a table, gives every column the same width and
right-aligns every cell; these reprs size their columns, align names left and numbers right, and
group stats by section, whatever that default says.
"""

from __future__ import annotations

import random
import re
from typing import Any

from jarenlab.live.live import LiveQuery
from jarenlab.live.render import (
    MAX_WIDTH,
    MIN_WIDTH,
    MISSING,
    STYLES,
    cell,
    column,
    columns,
    layout,
    static_html,
)
from jarenlab.stats import stats_html, stats_sections

STATUS = {"state": "live", "rows": 0, "seq": 3, "age_s": 12.0, "strategy": "window"}


def rows_of(page: str) -> list[list[str]]:
    """Each body row's cells as ``class|title|text`` strings (empty parts when absent); every cell
    carries the inline style of its class."""
    out = []
    for tr in re.findall(r"<tr data-key='\d+'>(.*?)</tr>", page):
        cells = re.findall(r"<td(?: class='([^']*)')?(?: title='([^']*)')? style='([^']*)'>([^<]*)</td>", tr)
        assert all(style == STYLES[cls or None] for cls, _, style, _ in cells), tr
        out.append(["|".join((cls, title, text)) for cls, title, _, text in cells])
    return out


def unstyled(page: str) -> str:
    """``page`` without its cells' inline styles."""
    return re.sub(r"(<t[dh][^>]*?) style='[^']*'", r"\1", page)


def test_static_html_sizes_columns_and_shows_null_missing_numbers_and_cut_values() -> None:
    long = "y" * (MAX_WIDTH + 20)
    rows = [
        {"name": "a", "n": 5, "note": None, "time_hour": "2013-01-01T05:00:00Z"},
        {"name": long, "n": 12345, "time_hour": "2013-01-01T06:00:00Z"},  # no "note": missing
    ]
    page = static_html(rows, {**STATUS, "rows": 2})
    widths = [int(w) for w in re.findall(r"<col style='width:calc\((\d+)ch \+ 16px\)'>", page)]
    # name: the longest text clamped to 40; n: "12345"; note: its header; time_hour: the date as read
    assert widths == [MAX_WIDTH + 1, 6, 5, len("2013-01-01 05:00 UTC") + 1]
    assert f"width:calc({sum(widths)}ch + 64px)" in page and "table-layout:fixed" in page
    assert "<th>name</th><th class='jl-num'>n</th><th>note</th><th>time_hour</th>" in unstyled(page)
    assert f"<th class='jl-num' style='{STYLES['jl-num']}'>n</th>" in page  # numbers right, text left
    assert "text-align:right" in STYLES["jl-num"] and "text-align:left" in STYLES[None]
    assert "<style" not in page  # inline styles: no style sheet for the whole page to recalculate
    assert rows_of(page) == [
        ["||a", "jl-num||5", "jl-null||null", "|2013-01-01T05:00:00Z|2013-01-01 05:00 UTC"],
        [
            f"|{long}|{long}",
            "jl-num||12345",
            "jl-missing|missing|",
            "|2013-01-01T06:00:00Z|2013-01-01 06:00 UTC",
        ],
    ]


def test_static_html_is_bounded_escaped_and_titled() -> None:
    rows = [{"k": f"<{i}>", "v": "a'b&c"} for i in range(30)]
    page = static_html(rows, {**STATUS, "rows": 30}, limit=10, title="<b>live query</b>")
    assert len(rows_of(page)) == 10 and "… 20 more rows" in page
    assert "&lt;0&gt;" in page and "<0>" not in page and "a&#x27;b&amp;c" in page
    assert page.index("<b>live query</b>") < page.index("live · 30 rows · seq 3 · updated 12.0 s ago")


def test_stats_are_grouped_by_section_with_grouped_digits() -> None:
    data = {
        "statement_cache": {"hits": 1234567, "misses": 3, "ratio": 0.998765},
        "collections": {"flights": {"rows": 336776, "index_bytes": {"by_<origin>": "dbstat unavailable"}}},
        "jobs": {"paused": True, "oldest": None},
    }
    assert stats_sections(data) == [
        ("statement_cache", [("hits", "1,234,567", True), ("misses", "3", True), ("ratio", "0.999", True)]),
        (
            "collections",
            [
                ("flights.rows", "336,776", True),
                ("flights.index_bytes.by_<origin>", "dbstat unavailable", False),
            ],
        ),
        ("jobs", [("paused", "true", False), ("oldest", "—", False)]),
    ]
    page = stats_html(data)
    groups = re.findall(r"<tbody>(.*?)</tbody>", page)
    assert len(groups) == 3
    for group, (section, metrics) in zip(groups, stats_sections(data)):
        assert group.startswith(f"<tr><th scope='rowgroup' rowspan='{len(metrics)}'>{section}</th>")
        assert group.count("<tr>") == len(metrics)  # the section's name once, one row per metric
    assert "<code>flights.index_bytes.by_&lt;origin&gt;</code>" in page
    assert "<td class='jl-num'>1,234,567</td>" in page and "<td>dbstat unavailable</td>" in page
    assert "table.jl-stats th,table.jl-stats td{text-align:left" in page  # not the page's default


def test_a_live_querys_repr_names_its_collection_and_the_real_age(live_store: Any) -> None:
    now = [100.0]
    coll = live_store["items"]
    live = LiveQuery(coll, {"$for": {"r": "$[*]"}, "$return": "$r.id"}, {}, clock=lambda: now[0])
    assert "no change yet" in live._repr_html_()
    coll.insert({"id": "a", "n": 1})
    now[0] += 42.5
    page = live._repr_html_()
    assert "<b>live query</b> on <code>items</code>" in page
    assert "live · 1 rows · seq" in page and "updated 42.5 s ago" in page
    live.close()
    assert "closed · 1 rows" in live._repr_html_()


def test_dollar_signs_in_values_are_data_not_mathematics() -> None:
    """A notebook runs its LaTeX typesetter over HTML outputs; these reprs ask it to skip them."""
    page = static_html([{"price": "$5 and $6"}], {**STATUS, "rows": 1})
    assert page.startswith("<div class='jl-live tex2jax_ignore mathjax_ignore'") and "$5 and $6" in page
    assert stats_html({"jobs": {"note": "$x$"}}).startswith("<div class='jarenlab-stats tex2jax_ignore")


def layout_by_cell(cols: list[str], rows: list[Any], previous: list[dict[str, Any]] | None = None) -> Any:
    """The column layout by its definition: every cell's text measured, one at a time."""
    start = {c["name"]: c for c in previous or []}

    def one(name: str) -> dict[str, Any]:
        first = start.get(name, {"width": min(max(len(name), MIN_WIDTH), MAX_WIDTH), "numeric": None})
        shown = [
            (text, kind) for text, kind, _ in map(cell, column(rows, name)) if kind not in ("null", "missing")
        ]
        numeric = first["numeric"]
        if shown:
            numeric = numeric is not False and all(kind == "number" for _, kind in shown)
        width = max([first["width"], *(min(len(text), MAX_WIDTH) for text, _ in shown)])
        return {"name": name, "numeric": bool(numeric), "width": width}

    return [one(name) for name in cols]


def test_the_layout_measures_every_cell_as_the_cell_rules_show_it() -> None:
    """The layout measures distinct texts once and integers by their extremes (a 10,000-row
    window is measured before its first render): the same widths as measuring every cell."""
    rng = random.Random(18)
    pool = [0, -7, 10**12, -(10**15), 2**70, 1.5, 3.14159265, float("nan"), True, False, None, "x", "a" * 60,
            "2013-01-09T14:00:00Z", "2013-01-09T14:00:00.123+05:30", "2013-01-09", "2013-01-09T1", {"a": [1]},
            [1, 2, 3], "T" * 20]  # fmt: skip
    for _ in range(200):
        rows: list[Any] = [
            {k: rng.choice(pool) for k in rng.sample(["a", "b", "c", "d"], rng.randrange(0, 5))}
            for _ in range(rng.randrange(0, 30))
        ]
        if rng.random() < 0.2:
            rows.append(rng.choice(pool))  # a scalar row: the "value" column
        cols = columns(rows)
        assert layout(cols, rows) == layout_by_cell(cols, rows), rows
        half = len(rows) // 2
        before = layout(cols, rows[:half])
        assert layout(cols, rows[half:], before) == layout_by_cell(cols, rows[half:], before), rows
    assert layout(["a"], [{"a": MISSING}, {"a": None}]) == [{"name": "a", "numeric": False, "width": 3}]
