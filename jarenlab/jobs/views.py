"""Pure shaping of job rows for people: records, counts, DataFrames, and the dashboard's content.

Nothing here touches the database or a widget, so it is tested directly.

>>> counts_by_state([("done", 3), ("dead", 1)])["pending"]
0
>>> throughput((0.0, 10), (2.0, 30))
10.0
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
import pandas as pd

from jarenlab.jobs.schema import STATES
from jarenlab.reprs import table

#: The columns of a job record: what the ``jobs.get``, ``jobs.list`` and ``jobs.failures`` statements
#: return, in this order (the lease token is never shown).
COLUMNS = (
    "id", "kind", "state", "attempts", "max_attempts", "run_at", "partition_key", "coalescing_key",
    "lease_until", "lease_owner", "lease_generation", "last_error", "payload", "result",
    "created_at", "updated_at", "settled_at", "source_event", "timeout",
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


def failures_html(failures: list[dict[str, Any]]) -> str:
    """Recent failures (failed or dead), newest first, with their last error."""
    if not failures:
        return "<small>no recent failures</small>"
    rows = "".join(
        f"<tr><td><code>{html.escape(str(f['id']))}</code></td><td>{html.escape(str(f['kind']))}</td>"
        f"<td>{html.escape(str(f['state']))}</td><td>{f['attempts']}/{f['max_attempts']}</td>"
        f"<td>{html.escape(str(f['last_error'] or ''))[:200]}</td></tr>"
        for f in failures
    )
    return table(["id", "kind", "state", "attempts", "last error"], rows)
