"""The static copy a widget's display carries for readers without a kernel, kept current.

A widget shows as two outputs: its view, and beside it a ``text/html`` output holding what the
widget shows, as plain HTML (bounded): what GitHub, nbviewer, an HTML export or a notebook whose
kernel is gone show. While the widget's model lives in the page that copy is hidden (the copy is
marked ``data-jl-static-for="<anchor>"``, the anchor a synced trait of the widget, and the front
end adds one style rule for it when the model is created, before the view or the copy renders, so
the page never lays the copy out), so nobody sees the content twice. The copy is refreshed by
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
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets
from IPython.display import display, update_display

STATIC = Path(__file__).parent / "static"
VIEW = "application/vnd.jupyter.widget-view+json"

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
        anchor: what marks the copy for the front end that hides it. interval: seconds between refreshes.
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


def es_module(name: str) -> str:
    """The front end ``static/<name>`` for a widget with a static copy: the module's text after
    ``static_copy.js`` (its ``initialize``, which hides the copy while the model lives). A module
    is loaded from its text, so it cannot import a sibling file; the two are one text."""
    return (STATIC / "static_copy.js").read_text() + "\n" + (STATIC / name).read_text()


class CopiedWidget(anywidget.AnyWidget):
    """An anywidget displayed as two outputs: its view, then its static copy (``self.static``),
    hidden while the widget's model lives.

    Its front end starts with ``static_copy.js`` (:func:`es_module`) and exports its
    ``initialize``: the copy is hidden from the model's creation to its end (the widget closed).

    Args:
        render: the copy's HTML (called under ``self._lock``, the widget's lock for every mutation
        of it and its messages). interval, clock, schedule: as :class:`StaticCopy` takes them.
    """

    #: What marks this widget's static copy (its front end hides the copy of its own widget).
    anchor = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        render: Callable[[], str],
        *,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        schedule: Schedule = timer,
    ) -> None:
        super().__init__()
        self._lock = threading.RLock()
        self.static = StaticCopy(
            render,
            lambda: repr(self),
            anchor=self.anchor,
            interval=interval,
            clock=clock,
            schedule=schedule,
            lock=self._lock,
        )

    @traitlets.default("anchor")
    def _new_anchor(self) -> str:
        return uuid.uuid4().hex

    def _view(self) -> dict[str, Any] | None:
        """The widget-view output data, or None once the widget is closed."""
        view = super()._repr_mimebundle_() if self.comm is not None else None
        return None if view is None else {VIEW: view[0][VIEW]}

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The view and the static copy in one bundle, for front ends that ask for one (a
        notebook cell shows two outputs instead, see :meth:`_ipython_display_`)."""
        return {**self.static.bundle(), **(self._view() or {})}, {}

    def _ipython_display_(self) -> None:
        """Two outputs: the view, then the static copy that follows the widget."""
        view = self._view()
        if view is not None:
            display(view, raw=True)
        self.static.show()


__all__ = ["CopiedWidget", "Schedule", "StaticCopy", "es_module", "timer"]
