"""The jobs dashboard: counts by state, throughput and failures over time, recent failures.

One anywidget whose content is HTML computed by :func:`jarenlab.jobs.views.dashboard_html` (pure,
tested without a browser); a daemon timer refreshes it. When the store closes the timer stops and
the dashboard keeps its last view, saying so. While the database cannot be reached (a PostgreSQL
server restarting) the view keeps its last counts and says since when the store is unreachable;
the timer keeps trying and the next good read clears it. Its display carries a static copy of the view
(:class:`jarenlab.widgets.display.StaticCopy`: the same HTML as ``text/html``, hidden while the
widget lives), refreshed as the view changes (at most once a second, always after the last change, and at
once when the store or the dashboard closes), so a saved notebook shows the last view without a
kernel.

DOM contract: the root element has ``data-jl-widget="jobs"``.

Example::

    dash = store.jobs.widget(refresh=2.0)   # display it in a cell
    dash.refresh()                          # or refresh by hand (refresh=None turns the timer off)
    dash.close()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import traitlets

from jarenlab.errors import JarenlabError, unreachable
from jarenlab.jobs.views import Sample, dashboard_html, throughput
from jarenlab.widgets.display import STATIC, CopiedWidget, Schedule, es_module, timer

if TYPE_CHECKING:
    from jarenlab.jobs.api import Jobs

#: Samples kept for the chart (at the default 2 s refresh: the last four minutes).
HISTORY = 120


class JobsDashboard(CopiedWidget):
    """Counts by state, settled-per-second, a chart of throughput and failures, the latest failures.

    Args:
        jobs: the queue to watch. refresh: seconds between refreshes (None: only by hand or button).
        failures: how many recent failures to list. static_interval: seconds between refreshes
        of the display's static copy. clock, schedule: time and the timer of those refreshes
        (tests pass their own).
    """

    _esm = es_module("jobs.js")
    _css = STATIC / "jobs.css"
    html = traitlets.Unicode("").tag(sync=True)
    live = traitlets.Bool(True).tag(sync=True)

    def __init__(
        self,
        jobs: Jobs,
        *,
        refresh: float | None = 2.0,
        failures: int = 5,
        static_interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        schedule: Schedule = timer,
    ) -> None:
        super().__init__(lambda: self.html, interval=static_interval, clock=clock, schedule=schedule)
        self.jobs = jobs
        self.failures_shown = failures
        self.counts: dict[str, int] = {}
        self.rate: float | None = None
        self.samples: list[Sample] = []
        self.failures: list[dict[str, Any]] = []
        #: Since when (``time.strftime('%H:%M:%S')``) the store cannot be reached; None while it can.
        self.unreachable_since: str | None = None
        self._stop = threading.Event()
        self.on_msg(self._on_message)
        self.refresh()
        jobs.store.on_close(self._store_closed)
        if refresh:
            threading.Thread(
                target=self._tick, args=(refresh,), name="jarenlab-jobs-widget", daemon=True
            ).start()

    def refresh(self) -> None:
        """Read the queue once and redraw (a closed store leaves the last view as it was)."""
        with self._lock:
            if not self.live:
                return
            counts = self.jobs.counts()
            failures = self.jobs.recent_failures(self.failures_shown)
            now = self.jobs.clock()
            sample = (now, counts["done"] + counts["dead"], counts["failed"] + counts["dead"])
            self.rate = throughput(self.samples[-1][:2] if self.samples else None, sample[:2])
            self.samples = [*self.samples, sample][-HISTORY:]
            self.counts, self.failures = counts, failures
            self._draw(f"updated {time.strftime('%H:%M:%S')}")

    def _draw(self, status: str, *, last: bool = False) -> None:
        """Redraw; the static copy follows (at once when this is the ``last`` view)."""
        self.html = dashboard_html(
            kinds=list(self.jobs.handlers.kinds),
            counts=self.counts,
            rate=self.rate,
            samples=self.samples,
            failures=self.failures,
            status=status,
        )
        if last:
            self.static.publish()
        else:
            self.static.changed()

    def _on_message(self, _: Any, content: Any, buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "refresh":
            self.refresh()

    def _tick(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self.refresh()
                self.unreachable_since = None
            except JarenlabError as exc:
                if not unreachable(exc):
                    return  # the store closed between the check and the read
                self._unreachable(exc)

    def _unreachable(self, exc: JarenlabError) -> None:
        """The last view stays, its status saying since when the store cannot be reached."""
        with self._lock:
            if not self.live:
                return
            if self.unreachable_since is None:
                self.unreachable_since = time.strftime("%H:%M:%S")
            self._draw(f"the store cannot be reached since {self.unreachable_since} ({exc.code}); retrying")

    def _store_closed(self) -> None:
        """Stop refreshing and keep the last view, saying the store closed.

        The store's closers run before its connections close, so the queue is read once more: the
        view kept (and saved with the notebook) is the queue as the store closed, not the last tick.
        """
        self._stop.set()
        with self._lock:
            if not self.live:
                return
            try:
                self.refresh()
            except JarenlabError:  # nothing can be read any more: the last tick's view stays
                pass
            self.live = False
            self._draw(f"store closed at {time.strftime('%H:%M:%S')}: the last view is kept", last=True)

    def close(self) -> None:
        """Stop refreshing and close the widget (its static copy shows again, with the last view)."""
        self._stop.set()
        with self._lock:
            self.static.publish()
            super().close()

    def __repr__(self) -> str:
        return f"<JobsDashboard {self.counts}>"


__all__ = ["JobsDashboard"]
