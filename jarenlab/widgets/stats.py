"""A thin, refreshing ipywidgets view of ``store.stats()`` (data shaping lives in :mod:`jarenlab.stats`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as w


def stats_widget(
    render: Callable[[], str],
    *,
    closed: Callable[[], bool],
    on_close: Callable[[Callable[[], None]], None],
    interval: float = 2.0,
) -> Any:
    """An HTML table refreshed every ``interval`` seconds by a daemon timer, plus a refresh button.

    ``render()`` reads the store's stats as HTML; ``closed()`` says whether the store is closed and
    ``on_close(fn)`` registers ``fn`` to run when it closes. The timer stops when the store closes or
    when ``widget.stop()`` is called.
    """
    view = w.HTML(render())
    button = w.Button(description="refresh")
    box = w.VBox([button, view])
    stop = threading.Event()

    def refresh(*_: Any) -> None:
        if not closed():
            view.value = render()

    def loop() -> None:
        while not stop.wait(interval):
            if closed():
                return
            try:
                refresh()
            except Exception:  # a closed store between the check and the read ends the loop
                return

    button.on_click(refresh)
    box.refresh = refresh
    box.stop = stop.set
    on_close(stop.set)
    if interval > 0:
        threading.Thread(target=loop, name="jarenlab-stats-widget", daemon=True).start()
    return box
