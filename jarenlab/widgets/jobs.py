"""The jobs dashboard: counts by state, throughput and recent failures, refreshing itself.

What it shows comes from :mod:`jarenlab.jobs.views`; this module only holds widgets and a timer.

Example::

    dash = store.jobs.widget(refresh=2.0)   # display it in a cell
    dash.refresh()                          # or refresh by hand (refresh=None turns the timer off)
    dash.close()
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import ipywidgets as widgets

from jarenlab.jobs.views import counts_html, failures_html, throughput

if TYPE_CHECKING:
    from jarenlab.jobs.api import Jobs


class JobsDashboard(widgets.VBox):
    """Counts by state, settled-per-second and the latest failures of one store's job queue.

    Args:
        jobs: the queue to watch. refresh: seconds between refreshes (None: only by hand or button).
        failures: how many recent failures to list.
    """

    def __init__(self, jobs: Jobs, *, refresh: float | None = 2.0, failures: int = 5) -> None:
        self.jobs = jobs
        self.failures_shown = failures
        self.counts_view = widgets.HTML()
        self.failures_view = widgets.HTML()
        self.status = widgets.HTML()
        self.button = widgets.Button(description="Refresh", icon="refresh", layout={"width": "110px"})
        self.button.on_click(lambda _: self.refresh())
        title = widgets.HTML(
            f"<b>jobs</b> <small>{', '.join(jobs.handlers.kinds) or 'no handlers here'}</small>"
        )
        super().__init__(
            [widgets.HBox([title, self.button]), self.counts_view, self.failures_view, self.status]
        )
        self.counts: dict[str, int] = {}
        self.rate: float | None = None
        self._sample: tuple[float, int] | None = None
        self._stop = threading.Event()
        self.refresh()
        if refresh:
            threading.Thread(
                target=self._tick, args=(refresh,), name="jarenlab-jobs-widget", daemon=True
            ).start()
            jobs.store.on_close(self.close)

    def refresh(self) -> None:
        """Read the queue once and update every view."""
        counts = self.jobs.counts()
        sample = (self.jobs.clock(), counts["done"] + counts["dead"])
        self.rate = throughput(self._sample, sample)
        self._sample = sample
        self.counts = counts
        self.counts_view.value = counts_html(counts, self.rate)
        self.failures_view.value = failures_html(self.jobs.recent_failures(self.failures_shown))
        self.status.value = f"<small>updated {time.strftime('%H:%M:%S')}</small>"

    def _tick(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self.refresh()
            except Exception:  # the store closed: stop refreshing
                return

    def close(self) -> None:
        """Stop refreshing and close the widgets."""
        self._stop.set()
        super().close()

    def __repr__(self) -> str:
        return f"<JobsDashboard {self.counts}>"


__all__ = ["JobsDashboard"]
