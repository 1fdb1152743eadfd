"""``store.stats()``: planner, statement cache, collections and subsystems in one table.

Sections: ``statement_cache`` (hits, misses, evictions, size, capacity), ``queries`` (by mode:
native/row/set/asof; diversions; fallbacks; refusals; rows read by SQL vs rows returned),
``collections`` (rows, index sizes), and a section per subsystem that declares one
(``store.stats_sections()``: live queries, jobs). Index sizes are the backend's ``stats.index_bytes``
statement: SQLite's ``dbstat`` table when the build has it (otherwise the size says ``"dbstat
unavailable"``), PostgreSQL's ``pg_relation_size`` of each index.

>>> flat_rows({"queries": {"native": 2}, "jobs": {"by_state": {"done": 1}}})
[('queries', 'native', 2), ('jobs', 'by_state.done', 1)]
"""

from __future__ import annotations

import functools
import html
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jarenlab.errors import StoreError
from jarenlab.model import index_name
from jarenlab.store import Subsystem

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.store import Store


def flat_rows(data: dict[str, Any], prefix: str = "") -> list[tuple[str, str, Any]]:
    """(section, metric, value) rows; nested dicts become dotted metric names."""
    out: list[tuple[str, str, Any]] = []

    def visit(section: str, name: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                visit(section, f"{name}.{k}" if name else str(k), v)
        else:
            out.append((section, name, value))

    for section, value in data.items():
        visit(section, "", value)
    return out


@dataclass
class Stats:
    """A snapshot of ``store.stats()``: ``data`` (nested dict), ``to_frame()``, HTML, ``widget()``."""

    data: dict[str, Any]
    store: Store | None = field(default=None, repr=False, compare=False)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def to_frame(self) -> pd.DataFrame:
        """A DataFrame with columns section, metric, value."""
        import pandas as pd

        return pd.DataFrame(flat_rows(self.data), columns=["section", "metric", "value"])

    def _repr_html_(self) -> str:
        return stats_html(self.data)

    def widget(self, *, interval: float = 2.0) -> Any:
        """A widget that re-reads ``store.stats()`` every ``interval`` seconds (and on demand)."""
        if self.store is None:
            raise StoreError("JD2010", "this Stats snapshot has no store to refresh from")
        from jarenlab.widgets.stats import stats_widget  # ipywidgets loads only when a widget is asked for

        store = self.store
        return stats_widget(
            lambda: stats_html(store.stats().data),
            closed=lambda: store.closed,
            on_close=store.on_close,
            interval=interval,
        )


def shown(value: Any) -> tuple[str, bool]:
    """A metric's value as text, and whether it is a number (right-aligned, digits grouped).

    >>> shown(1234567), shown(0.5), shown(2.0), shown(True), shown(None), shown("dbstat unavailable")
    (('1,234,567', True), ('0.5', True), ('2', True), ('true', False), ('—', False), ('dbstat unavailable', False))
    """
    if isinstance(value, bool):
        return ("true" if value else "false"), False
    if isinstance(value, int):
        return f"{value:,}", True
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip("."), True
    if value is None:
        return "—", False
    if isinstance(value, str):
        return value, False
    return json.dumps(value, default=str), False


def stats_sections(data: dict[str, Any]) -> list[tuple[str, list[tuple[str, str, bool]]]]:
    """The stats grouped for display: per section, ``(metric, shown value, numeric)`` rows.

    >>> stats_sections({"queries": {"native": 1200, "rows_read": 0}, "jobs": {"by_state": {"done": 1}}})
    [('queries', [('native', '1,200', True), ('rows_read', '0', True)]), ('jobs', [('by_state.done', '1', True)])]
    """
    out: list[tuple[str, list[tuple[str, str, bool]]]] = []
    for section, metric, value in flat_rows(data):
        if not out or out[-1][0] != section:
            out.append((section, []))
        out[-1][1].append((metric, *shown(value)))
    return out


#: The stats table's look: left-aligned names, right-aligned numbers, a section per row group,
#: whatever the page's default table style (a notebook centres tables and right-aligns every cell).
STATS_STYLE = (
    "<style>table.jl-stats{border-collapse:collapse;table-layout:auto;margin:0;"
    "font-size:var(--jp-ui-font-size1,13px)}table.jl-stats th,table.jl-stats td{text-align:left;"
    "vertical-align:top;padding:1px 10px;white-space:nowrap;border-bottom:1px solid "
    "var(--jp-border-color2,#e0e0e0)}table.jl-stats .jl-num{text-align:right;"
    "font-variant-numeric:tabular-nums}table.jl-stats tbody th{font-weight:600}</style>"
)


def stats_html(data: dict[str, Any]) -> str:
    """The stats as an HTML table: one row group per section (its name once), one row per metric.

    >>> page = stats_html({"statement_cache": {"hits": 12000, "misses": 3}})
    >>> "<th scope='rowgroup' rowspan='2'>statement_cache</th><td><code>hits</code></td><td class='jl-num'>12,000</td>" in page
    True
    """
    groups = []
    for section, metrics in stats_sections(data):
        rows = []
        for metric, text, numeric in metrics:
            cls = " class='jl-num'" if numeric else ""
            rows.append(f"<td><code>{html.escape(metric)}</code></td><td{cls}>{html.escape(text)}</td></tr>")
        head = f"<tr><th scope='rowgroup' rowspan='{len(rows)}'>{html.escape(section)}</th>"
        groups.append(f"<tbody>{head}{'<tr>'.join(rows)}</tbody>")
    return (
        f"<div class='jarenlab-stats tex2jax_ignore mathjax_ignore'>{STATS_STYLE}<b>store stats</b><table class='jl-stats'><thead><tr>"
        f"<th>section</th><th>metric</th><th class='jl-num'>value</th></tr></thead>{''.join(groups)}</table></div>"
    )


def _index_sizes(store: Store, names: list[str]) -> dict[str, Any]:
    try:
        rows = store.db.all("stats.index_bytes", {"names": json.dumps(names)})
    except StoreError:  # a build without SQLITE_ENABLE_DBSTAT_VTAB: sizes are optional, not an error
        return dict.fromkeys(names, "dbstat unavailable")
    found = {n: int(b) for n, b in rows}
    return {n: found.get(n, 0) for n in names}


def collect(store: Store) -> Stats:
    """Read every source once and return a :class:`Stats` snapshot."""
    planner = store.planner
    with planner.lock:
        counters = dict(planner.counters)
    queries = {k: counters[k] for k in ("native", "row", "set", "asof", "diverted", "fallbacks", "refused")}
    queries["rows_read"] = counters["rows_read"]
    queries["rows_returned"] = counters["rows_returned"]
    collections: dict[str, Any] = {}
    for name, coll in store.collections.items():
        names = [index_name(name, ix.name) for ix in coll.spec.indexes]
        collections[name] = {"rows": coll.count(), "index_bytes": _index_sizes(store, names)}
    data: dict[str, Any] = {
        "statement_cache": planner.cache.stats(),
        "queries": queries,
        "collections": collections,
    }
    for source, fn in sorted(store.stats_sections().items()):
        try:
            data[source] = fn()
        except Exception as exc:  # a broken source must not hide the others
            data[source] = {"error": repr(exc)}
    return Stats(data, store)


#: ``store.stats()`` calls the function this makes.
SUBSYSTEM = Subsystem("stats", create=lambda store: functools.partial(collect, store))
