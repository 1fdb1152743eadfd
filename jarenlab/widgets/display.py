"""The static copy a widget's display carries for readers without a kernel, kept current.

A widget shows as two outputs: its view, and beside it a ``text/html`` output holding what the
widget shows, as plain HTML (bounded): what GitHub, nbviewer, an HTML export or a notebook whose
kernel is gone show. While a view of the widget is on the page it hides that copy (the copy is
marked ``data-jl-static-for="<anchor>"``, the anchor a synced trait of the widget, and the view adds
one style rule for it), so nobody sees the content twice. The copy is refreshed by
``update_display`` as the widget changes: at most once per ``interval`` seconds, and always once
after the last change (a trailing refresh), so a saved notebook shows the last state. Refreshing
the copy never touches the view's output, so the view is never rebuilt.

>>> copy = StaticCopy(lambda: "<b>3 rows</b>", lambda: "<3 rows>", anchor="a1")
>>> copy.bundle()["text/html"]
'<div data-jl-static-for="a1"><b>3 rows</b></div>'
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from IPython.display import display, update_display

#: ``schedule(delay, fn)`` runs ``fn`` once, ``delay`` seconds later.
Schedule = Callable[[float, Callable[[], None]], Any]


def timer(delay: float, fn: Callable[[], None]) -> Any:
    """Run ``fn`` on a daemon timer thread after ``delay`` seconds (the default ``Schedule``)."""
    t = threading.Timer(delay, fn)
    t.daemon = True
    t.start()
    return t


class StaticCopy:
    """The refreshed ``text/html`` output beside a widget's view.

    Args:
        render: the widget's content as HTML (called under ``lock``). plain: its ``text/plain``.
        anchor: what marks the copy for the view that hides it. interval: seconds between refreshes.
        clock, schedule: time and the timer (tests pass their own). lock: the widget's lock, held
        while the copy is rendered and published, so it never shows a half-applied change.
    """

    def __init__(
        self,
        render: Callable[[], str],
        plain: Callable[[], str],
        *,
        anchor: str,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        schedule: Schedule = timer,
        lock: threading.RLock | None = None,
    ) -> None:
        self.render = render
        self.plain = plain
        self.anchor = anchor
        self.interval = interval
        self.clock = clock
        self.schedule = schedule
        self.lock = lock or threading.RLock()
        #: The display ids of the copies on the page (one per ``show``).
        self.displays: list[str] = []
        #: How many times the copies were refreshed.
        self.refreshes = 0
        self._at = float("-inf")
        self._scheduled = False

    def bundle(self) -> dict[str, str]:
        """The copy's output: the content wrapped in its anchor, and the plain text."""
        with self.lock:
            return {
                "text/html": f'<div data-jl-static-for="{self.anchor}">{self.render()}</div>',
                "text/plain": self.plain(),
            }

    def show(self) -> None:
        """Display the copy (after the view); later refreshes update it in place."""
        handle = display(self.bundle(), raw=True, display_id=True)
        if handle is not None:
            with self.lock:
                self.displays.append(handle.display_id)

    def changed(self) -> None:
        """The content changed: refresh now, or once ``interval`` after the last refresh."""
        with self.lock:
            if not self.displays:
                return
            wait = self.interval - (self.clock() - self._at)
            if wait <= 0:
                self.publish()
            elif not self._scheduled:
                self._scheduled = True
                self.schedule(wait, self._due)

    def _due(self) -> None:
        with self.lock:
            self._scheduled = False
            self.publish()

    def publish(self) -> None:
        """Refresh every copy now (the last state: the widget closing calls this)."""
        with self.lock:
            if not self.displays:
                return
            self._at = self.clock()
            self.refreshes += 1
            bundle = self.bundle()
            for display_id in self.displays:
                update_display(bundle, raw=True, display_id=display_id)


__all__ = ["Schedule", "StaticCopy", "timer"]
