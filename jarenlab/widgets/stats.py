"""A thin, refreshing ipywidgets view of ``store.stats()`` (data shaping lives in :mod:`jarenlab.stats`)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from jarenlab.stats import stats_html

if TYPE_CHECKING:
    from jarenlab.store import Store


def stats_widget(store: Store, *, interval: float = 2.0) -> Any:
    """An HTML table refreshed every ``interval`` seconds by a daemon timer, plus a refresh button.

    The timer stops when the store closes (it registers a closer) or when ``widget.stop()`` is called.
    """
    import ipywidgets as w

    view = w.HTML(stats_html(store.stats().data))
    button = w.Button(description="refresh")
    box = w.VBox([button, view])
    stop = threading.Event()

    def refresh(*_: Any) -> None:
        if not store.closed:
            view.value = stats_html(store.stats().data)

    def loop() -> None:
        while not stop.wait(interval):
            if store.closed:
                return
            try:
                refresh()
            except Exception:  # a closed store between the check and the read ends the loop
                return

    button.on_click(refresh)
    box.refresh = refresh
    box.stop = stop.set
    store.on_close(stop.set)
    if interval > 0:
        threading.Thread(target=loop, name="jarenlab-stats-widget", daemon=True).start()
    return box
