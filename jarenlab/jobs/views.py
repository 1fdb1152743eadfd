"""Pure shaping of job rows for people: records, counts, DataFrames, and the dashboard's content.

Nothing here touches the database or a widget, so it is tested directly.

>>> counts_by_state([("done", 3), ("dead", 1)])["pending"]
0
>>> throughput((0.0, 10), (2.0, 30))
10.0
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.jobs.schema import STATES

if TYPE_CHECKING:
    import pandas as pd

#: The columns of a job record: what the ``jobs.get``, ``jobs.list`` and ``jobs.failures`` statements
#: return, in this order (the lease token is never shown).
COLUMNS = (
    "id", "kind", "state", "attempts", "max_attempts", "run_at", "partition_key", "coalescing_key",
    "lease_until", "lease_owner", "lease_generation", "last_error", "payload", "result",
    "created_at", "updated_at", "settled_at", "source_event", "timeout", "last_traceback", "priority",
)  # fmt: skip
_TIMES = ("run_at", "lease_until", "created_at", "updated_at", "settled_at")


def job_record(row: Sequence[Any]) -> dict[str, Any]:
    """A job as a plain dict (payload and result decoded) from a row in :data:`COLUMNS` order."""
    record = dict(zip(COLUMNS, row))
    for name in ("payload", "result"):
        if record[name] is not None:
            record[name] = orjson.loads(record[name])
    return record


def counts_by_state(rows: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Every state with its count (zero when absent), in lifecycle order."""
    counts = dict.fromkeys(STATES, 0)
    for state, n in rows:
        counts[state] = int(n)
    return counts


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Job records as a DataFrame indexed by id, times as UTC datetimes."""
    import pandas as pd  # loaded on first use: opening a store does not load it

    frame = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    for name in _TIMES:
        frame[name] = pd.to_datetime(frame[name], unit="s", utc=True)
    return frame.set_index("id")


def throughput(previous: tuple[float, int] | None, current: tuple[float, int]) -> float | None:
    """Jobs settled per second between two ``(time, settled count)`` samples; None without a span."""
    if previous is None or current[0] <= previous[0]:
        return None
    return max(0, current[1] - previous[1]) / (current[0] - previous[0])


def counts_html(counts: dict[str, int], rate: float | None) -> str:
    """The dashboard's counts strip: one cell per state, then the throughput."""
    colours = {"failed": "#e67e22", "dead": "#c0392b", "leased": "#2980b9", "done": "#27ae60"}
    cells = "".join(
        f"<td style='padding:2px 10px;color:{colours.get(state, 'inherit')}'>"
        f"<b>{n:,}</b><br><small>{state}</small></td>"
        for state, n in counts.items()
    )
    speed = "&mdash;" if rate is None else f"{rate:,.1f}/s"
    return f"<table><tr>{cells}<td style='padding:2px 10px'><b>{speed}</b><br><small>settled</small></td></tr></table>"


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters (an ellipsis marks the cut), BEFORE any escaping,
    so an HTML entity is never cut in half.

    >>> clip("abcdef", 4), clip("abc", 4)
    ('abc…', 'abc')
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut(text: str, limit: int, *, tag: str = "span") -> str:
    """Escaped ``text`` clipped to ``limit`` characters, the whole (clipped to 2,000) as a tooltip."""
    shown = html.escape(clip(text, limit))
    if len(text) <= limit:
        return f"<{tag}>{shown}</{tag}>"
    return f"<{tag} title='{html.escape(clip(text, 2000), quote=True)}'>{shown}</{tag}>"


#: The failures table's look: ids and kinds on one line, cut with an ellipsis; errors wrap.
FAILURES_STYLE = (
    "<style>.jl-failures{border-collapse:collapse;font-size:var(--jp-ui-font-size1,13px)}"
    ".jl-failures th,.jl-failures td{padding:2px 10px;text-align:left;vertical-align:top;"
    "border-bottom:1px solid var(--jp-border-color2,#e0e0e0)}.jl-failures th{white-space:nowrap}"
    ".jl-failures td.jl-id{white-space:nowrap;max-width:22ch;overflow:hidden;text-overflow:ellipsis;"
    "font-family:var(--jp-code-font-family,monospace)}.jl-failures td.jl-err{max-width:60ch;"
    "white-space:pre-wrap;overflow-wrap:anywhere;font-family:var(--jp-code-font-family,monospace)}</style>"
)


def failures_html(failures: list[dict[str, Any]], *, id_chars: int = 40, error_chars: int = 300) -> str:
    """Recent failures (failed or dead), newest first, with their priority and last error.

    Long ids and errors are clipped before escaping (the whole value is the cell's tooltip), so a
    cut never splits an entity; ids stay on one line and errors wrap.

    >>> page = failures_html([{"id": "j" * 50, "kind": "k", "state": "dead", "attempts": 5,
    ...     "max_attempts": 5, "last_error": "E: " + "&" * 400}])
    >>> "j" * 39 + "…" in page and "&amp;" * 296 + "…" in page and "&am…" not in page
    True
    """
    if not failures:
        return "<small>no recent failures</small>"
    rows = "".join(
        f"<tr><td class='jl-id'>{_cut(str(f['id']), id_chars, tag='code')}</td>"
        f"<td>{html.escape(str(f['kind']))}</td><td>{html.escape(str(f['state']))}</td>"
        f"<td style='text-align:right'>{f['attempts']}/{f['max_attempts']}</td>"
        f"<td style='text-align:right'>{int(f.get('priority') or 0)}</td>"
        f"<td class='jl-err'>{_cut(str(f['last_error'] or ''), error_chars)}{_traceback(f)}</td></tr>"
        for f in failures
    )
    head = "".join(f"<th>{h}</th>" for h in ("id", "kind", "state", "attempts", "priority", "last error"))
    return f"{FAILURES_STYLE}<table class='jl-failures'><tr>{head}</tr>{rows}</table>"


def _traceback(failure: dict[str, Any]) -> str:
    """The failure's traceback, folded under its error (nothing when it has none)."""
    text = failure.get("last_traceback")
    if not text:
        return ""
    return f"<details><summary><small>traceback</small></summary><pre>{html.escape(text)}</pre></details>"


#: One sample of the queue for the dashboard's chart: (time, settled so far, failed + dead now);
#: a rise of the last between two samples counts as new failures.
Sample = tuple[float, int, int]


def history_rates(samples: list[Sample]) -> list[tuple[float, float, int]]:
    """Per interval between samples: ``(time, jobs settled per second, new failures)``.

    >>> history_rates([(0.0, 0, 0), (2.0, 10, 1), (4.0, 10, 3), (4.0, 12, 3)])
    [(2.0, 5.0, 1), (4.0, 0.0, 2)]
    """
    out = []
    for (t0, s0, f0), (t1, s1, f1) in itertools.pairwise(samples):
        if t1 > t0:
            out.append((t1, max(0, s1 - s0) / (t1 - t0), max(0, f1 - f0)))
    return out


def history_svg(samples: list[Sample], *, width: int = 240, height: int = 48) -> str:
    """A small chart of throughput (a line, settled per second) and failures (red bars) over time.

    >>> svg = history_svg([(0.0, 0, 0), (1.0, 4, 0), (2.0, 6, 2)])
    >>> svg.startswith("<svg") and "polyline" in svg and svg.count("<rect") == 1
    True
    """
    rates = history_rates(samples)
    if len(rates) < 2:
        return "<small>throughput and failures appear after a few refreshes</small>"
    t0, t1 = rates[0][0], rates[-1][0]
    span = (t1 - t0) or 1.0
    top = max(r for _, r, _ in rates) or 1.0
    worst = max(f for _, _, f in rates) or 1
    pad = 2
    x = [pad + (t - t0) / span * (width - 2 * pad) for t, _, _ in rates]
    points = " ".join(
        f"{xi:.1f},{height - pad - r / top * (height - 2 * pad):.1f}" for xi, (_, r, _) in zip(x, rates)
    )
    bar = max(1.0, (width - 2 * pad) / len(rates) / 2)
    bars = "".join(
        f"<rect x='{xi - bar / 2:.1f}' y='{height - pad - f / worst * (height / 2):.1f}' width='{bar:.1f}' "
        f"height='{f / worst * (height / 2):.1f}' fill='var(--jp-error-color1,#c0392b)'><title>{f} failed</title></rect>"
        for xi, (_, _, f) in zip(x, rates)
        if f
    )
    failed = sum(f for _, _, f in rates)
    label = f"peak {top:,.1f}/s · {failed} failure{'' if failed == 1 else 's'} over {span:,.0f} s"
    return (
        f"<svg width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img' "
        f"aria-label='{label}'><title>{label}</title>{bars}<polyline points='{points}' fill='none' "
        f"stroke='var(--jp-brand-color1,#2980b9)' stroke-width='1.5'/></svg>"
        f"<div><small>{label}</small></div>"
    )


def dashboard_html(
    *,
    kinds: list[str],
    counts: dict[str, int],
    rate: float | None,
    samples: list[Sample],
    failures: list[dict[str, Any]],
    status: str,
) -> str:
    """The whole dashboard as one HTML block (the widget shows it; so does a saved notebook)."""
    title = html.escape(", ".join(kinds) or "no handlers here")
    return (
        f"<div class='jl-jobs-view'><div><b>jobs</b> <small>{title}</small></div>"
        f"{counts_html(counts, rate)}{history_svg(samples)}{failures_html(failures)}"
        f"<div class='jl-status'><small>{html.escape(status)}</small></div></div>"
    )
