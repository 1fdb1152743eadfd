"""LiveTable: an ipywidgets table over a live query that applies row-level changes.

Each row is its own ``HTML`` widget, so a one-row change sends one small message (that row's
HTML), never the table. Redraws are throttled: patches arriving within ``min_interval`` seconds
of the last redraw are queued and applied together by one scheduled flush. The status line
shows the freshness text of :func:`jarenlab.live.render.freshness_text`. The clock and the
scheduler are injectable, so tests run without a kernel, a browser or sleeping.

>>> # live.widget() in a notebook; LiveTable(live, clock=..., schedule=...) in tests
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from jarenlab.live.render import columns, freshness_text, header_html, row_html, row_messages

if TYPE_CHECKING:
    from jarenlab.live.live import LiveQuery

Schedule = Callable[[float, Callable[[], None]], Any]


def _timer(delay: float, fn: Callable[[], None]) -> Any:
    t = threading.Timer(delay, fn)
    t.daemon = True
    t.start()
    return t


class LiveTable(w.VBox):
    """A table widget bound to ``live``; ``close()`` unsubscribes (the query stays open)."""

    def __init__(
        self,
        live: LiveQuery,
        *,
        min_interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        schedule: Schedule = _timer,
    ) -> None:
        self.live = live
        self.min_interval = min_interval
        self.clock = clock
        self.schedule = schedule
        self.status = w.HTML()
        self.header = w.HTML()
        self.body = w.VBox()
        super().__init__([self.status, self.header, self.body])
        self._lock = threading.Lock()
        self._queued: list[tuple[str, int, Any]] = []
        self._scheduled = False
        self._last_flush = float("-inf")
        self._updated_at: float | None = None
        self.redraws = 0
        self._render_all()
        self._unsubscribe = live.subscribe(self._on_patch, on_error=lambda err: self._refresh_status())

    def _render_all(self) -> None:
        rows = self.live.rows
        self._cols = columns(rows)
        self.header.value = header_html(self._cols)
        self.body.children = tuple(w.HTML(row_html(r, self._cols)) for r in rows)
        self._refresh_status()

    def _refresh_status(self) -> None:
        err = self.live.error
        self.status.value = freshness_text(
            seq=self.live.seq,
            updated_at=self._updated_at,
            now=self.clock(),
            strategy=str(self.live.mode),
            rows=len(self.body.children),
            error=f"{err.code} {err.name}" if err else None,
        )

    def _on_patch(self, patch: list[dict[str, Any]], seq: int) -> None:
        now = self.clock()
        with self._lock:
            self._queued.extend(row_messages(patch))
            self._updated_at = now
            due = now - self._last_flush >= self.min_interval
            if not due and not self._scheduled:
                self._scheduled = True
                self.schedule(self.min_interval - (now - self._last_flush), self.flush)
        if due:
            self.flush()

    def flush(self) -> None:
        """Apply every queued row message (one redraw)."""
        with self._lock:
            queued, self._queued, self._scheduled = self._queued, [], False
            self._last_flush = self.clock()
        if not queued:
            return
        self.redraws += 1
        if columns(self.live.rows) != self._cols:
            self._render_all()  # a new member: the header and every row change anyway
            return
        children = list(self.body.children)
        structural = False
        for kind, i, value in queued:
            if kind == "set":
                children[i].value = row_html(value, self._cols)
            elif kind == "insert":
                children.insert(i, w.HTML(row_html(value, self._cols)))
                structural = True
            else:
                children.pop(i).close()
                structural = True
        if structural:
            self.body.children = tuple(children)
        self._refresh_status()

    def close(self) -> None:
        """Unsubscribe and close the row widgets (the live query stays open)."""
        self._unsubscribe()
        for child in self.body.children:
            child.close()
        super().close()
