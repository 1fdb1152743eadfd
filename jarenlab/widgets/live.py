"""LiveTable: one anywidget per live query, whose front end applies the query's patches itself.

The rows go to the browser once, in compact columnar form (:func:`jarenlab.live.render.snapshot`),
when a view asks for them (a view's first render, a page reload, a missed message); after that each
flush sends one message with the row-level changes since the last one. The front end
(``static/live_table.js``, an ES module shipped in the package: no build step) keeps the row model,
renders only the visible rows once a table is large (virtual scrolling: the DOM stays bounded
whatever the row count), sizes columns to their content, right-aligns numbers, shows dates
readably, tells ``null`` from missing, keeps the header in view, follows JupyterLab's theme and
sorts by a header click. The status line ticks the real age of the last change, says ``stale``
while the query cannot reach the store (its rows are the last known ones) and ``closed`` when the
query closes. Every widget mutation (a flush, a snapshot, the status, closing)
runs under one lock, so concurrent patches never interleave.

Without a kernel behind the page (an HTML export, nbviewer) the view draws no table and says so,
and the copy stays shown; when the kernel dies, restarts or its connection drops, the status line says
``kernel disconnected`` with the time of the last update and the age stops; after a reload the saved
copy shows, marked stale, until the kernel has sent the rows (``static_copy.js``). Outside a kernel
(GitHub, nbviewer, an HTML export, a dead kernel) the display's static copy
shows the rows (bounded; :func:`jarenlab.live.render.static_html`): a ``text/html`` output beside
the view, hidden while the widget's model lives in the page, refreshed as the rows change (at most once a second,
always after the last change, and at once when the query closes;
:class:`jarenlab.widgets.display.StaticCopy`), so a saved notebook shows the last state.

DOM contract (what browser tests read):

- the root element has ``data-jl-widget="live-table"`` and a property ``root.jlState``:
  ``{columns: [...], rows: [[...], ...], keys: [...], status: "live" | "stale" | "closed" |
  "disconnected" | "no kernel", age_s: number, updated_at: null | ms, sort: null | {column, desc},
  seq: number}``; ``rows`` is the full row model in the current
  display order (the query's order, or the header sort the reader chose), cells as JSON values
  (a missing member reads as ``null`` there; the grid shows it differently); ``keys`` are the
  rows' identities in the same order (a row keeps its key while it stays in the table);
- rendered rows are ``tr[data-key]`` inside a ``table.jl-grid``; the status line is ``.jl-status``.

Messages (kernel to browser): ``{"type": "snapshot", "v", "columns", "layout", "keys", "data",
"missing", "status"}`` and ``{"type": "patch", "v", "ops", "columns"?, "layout"?, "status"}`` with ops
``["+", index, key, cells, missing]``, ``["-", index]``, ``["=", index, cells, missing]``;
``{"type": "status", "status"}``. Browser to kernel: ``{"type": "sync"}`` (send a snapshot).

>>> # live.widget() in a notebook; LiveTable(live, clock=..., schedule=...) in tests
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jarenlab.live.render import (
    columns,
    encode_row,
    grow_columns,
    layout,
    row_messages,
    snapshot,
    static_html,
)
from jarenlab.widgets.display import STATIC, CopiedWidget, Schedule, es_module, timer

if TYPE_CHECKING:
    from jarenlab.live.live import LiveQuery

#: How many rows the static HTML of a display shows.
STATIC_ROWS = 50


def _following_nothing() -> None:
    """What a table that follows no query yet unsubscribes."""


class LiveTable(CopiedWidget):
    """A table bound to ``live``; ``close()`` unsubscribes (the query stays open).

    Args:
        live: the live query. min_interval: seconds between flushes (patches in between are sent
        together). static_interval: seconds between refreshes of the display's static copy.
        clock: seconds, for ages and throttling. wall: seconds since the epoch, for the time a static
        copy says it was taken. schedule: ``schedule(delay, fn)`` runs ``fn``
        later (a daemon timer; tests pass their own).
    """

    _esm = es_module("live_table.js")
    _css = STATIC / "live_table.css"

    def __init__(
        self,
        live: LiveQuery,
        *,
        min_interval: float = 0.1,
        static_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        schedule: Schedule = timer,
    ) -> None:
        self.wall = wall
        super().__init__(self._static_content, interval=static_interval, clock=clock, schedule=schedule)
        self.live = live
        self.min_interval = min_interval
        self.clock = clock
        self.schedule = schedule
        self._queued: list[tuple[str, int, Any]] = []
        self._scheduled = False
        self._last_flush = float("-inf")
        self._updated_at = clock()
        self._ids = itertools.count()
        #: How many patch messages were sent (one per flush that changed something).
        self.redraws = 0
        self.version = 0
        self._unsubscribe: Callable[[], None] = _following_nothing
        with self._lock:
            self._reset([])
            try:
                rows, _, self._unsubscribe = live.follow(
                    self._on_patch, on_error=self._failed, on_close=self._ended, on_state=self._state_changed
                )
            except BaseException:
                # A closed query (JD2127): close the half-made view, so the widget registry does not
                # keep it open and its finalizer has nothing left to fail on under the cell.
                super().close()
                raise
            self._reset(rows)
        self.on_msg(self._on_message)

    # -- the row model (kernel side) -----------------------------------------------------------
    def _reset(self, rows: list[Any]) -> None:
        self.rows = list(rows)
        self.row_keys = [next(self._ids) for _ in self.rows]
        self.columns = columns(self.rows)
        self.grid = layout(self.columns, self.rows)

    def status(self) -> dict[str, Any]:
        """The status the front end shows (``age_s``: seconds since the last change or the start)."""
        status = self.live.status(age_s=round(max(self.clock() - self._updated_at, 0.0), 3))
        status["rows"] = len(self.rows)
        return status

    def snapshot_message(self) -> dict[str, Any]:
        """The whole table as the front end receives it first (columnar)."""
        with self._lock:
            return {
                "type": "snapshot",
                "v": self.version,
                **snapshot(self.rows, list(self.row_keys), self.columns),
                "layout": self.grid,
                "status": self.status(),
            }

    def _on_message(self, _: Any, content: Any, buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "sync":
            with self._lock:
                if not self._closed_widget():
                    self.send(self.snapshot_message())

    def _closed_widget(self) -> bool:
        return self.comm is None

    # -- patches -------------------------------------------------------------------------------
    def _on_patch(self, patch: list[dict[str, Any]], seq: int) -> None:
        with self._lock:
            now = self.clock()
            self._queued.extend(row_messages(patch))
            self._updated_at = now
            due = now - self._last_flush >= self.min_interval
            if not due and not self._scheduled:
                self._scheduled = True
                self.schedule(self.min_interval - (now - self._last_flush), self.flush)
            if due:
                self.flush()

    def flush(self) -> None:
        """Apply every queued change to the row model and send them as one message."""
        with self._lock:
            queued, self._queued, self._scheduled = self._queued, [], False
            self._last_flush = self.clock()
            if not queued:
                return
            message = self._apply(queued)
            self.version += 1
            self.redraws += 1
            if not self._closed_widget():
                self.send({"type": "patch", "v": self.version, **message, "status": self.status()})
            self.static.changed()

    def _apply(self, queued: list[tuple[str, int, Any]]) -> dict[str, Any]:
        touched = [value for kind, _, value in queued if kind != "delete"]
        cols = grow_columns(self.columns, touched)
        message: dict[str, Any] = {}
        if cols is not self.columns:
            self.columns = message["columns"] = cols
        wider = layout(cols, touched, self.grid)
        if wider != self.grid:
            self.grid = message["layout"] = wider
        ops: list[list[Any]] = []
        for kind, i, value in queued:
            if kind == "insert":
                key = next(self._ids)
                self.rows.insert(i, value)
                self.row_keys.insert(i, key)
                ops.append(["+", i, key, *encode_row(value, cols)])
            elif kind == "delete":
                del self.rows[i]
                del self.row_keys[i]
                ops.append(["-", i])
            else:
                self.rows[i] = value
                ops.append(["=", i, *encode_row(value, cols)])
        message["ops"] = ops
        return message

    def _failed(self, err: Any) -> None:
        """The error that closed the query shows in the status (``_ended`` runs as it closes)."""

    def _state_changed(self, state: str) -> None:
        """The query went ``stale`` or ``live`` again: the status line says so at once."""
        with self._lock:
            if not self._closed_widget():
                self.send({"type": "status", "status": self.status()})
            self.static.changed()

    def _ended(self) -> None:
        """The query closed (or failed): flush what is queued, say so, and leave the last rows."""
        with self._lock:
            self.flush()
            if not self._closed_widget():
                self.send({"type": "status", "status": self.status()})
            self.static.publish()

    # -- display -------------------------------------------------------------------------------
    def static_html(self) -> str:
        """The current rows as static HTML (bounded): what shows where no kernel runs."""
        return self.static.bundle()["text/html"]

    def _static_content(self) -> str:
        with self._lock:
            return static_html(self.rows, self.status(), limit=STATIC_ROWS, taken=self.wall())

    def close(self) -> None:
        """Unsubscribe and close the widget (the live query stays open)."""
        with self._lock:
            self._unsubscribe()
            self.static.publish()  # the copy shows again where the view was: with the last rows
            super().close()

    def __repr__(self) -> str:
        return f"<jarenlab.LiveTable {len(self.rows):,} rows × {len(self.columns)} columns>"


__all__ = ["LiveTable"]
