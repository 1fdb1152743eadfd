"""Small shared helpers for jarenlab benchmarks: timing, machine facts, a ratio table.

A benchmark times each contender with :func:`measure` (the median of several runs, each run with
its own untimed setup), collects :class:`Row` objects, and prints them with :func:`print_table`,
which shows each contender's median and its ratio to the floor, and whether jarenlab meets a bar.

>>> r = [Row("floor", [1.0, 1.2, 1.1], floor=True), Row("jarenlab", [1.5, 1.4, 1.6], bar=2.0)]
>>> r[1].ratio(r[0])  # doctest: +ELLIPSIS
1.3636...
"""

from __future__ import annotations

import datetime as dt
import gc
import os
import platform
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def machine_info() -> dict[str, Any]:
    """Where the numbers come from: architecture, cores, CPU model, versions, date."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "load": load,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "date": dt.date.today().isoformat(),
    }


def print_machine() -> None:
    """Print :func:`machine_info` on one line."""
    info = machine_info()
    print(
        f"machine {info['machine']}, {info['cpus']} cpus ({info['cpu']}), Python {info['python']}, "
        f"SQLite {info['sqlite']}, {info['date']}, load average {info['load'][0]:.2f}"
    )


def measure(
    fn: Callable[[Any], Any], *, runs: int, setup: Callable[[], Any] | None = None, loops: int = 1
) -> list[float]:
    """Seconds taken by ``fn(setup())`` in each of ``runs`` runs (``setup`` is not timed).

    The garbage collector runs before each timed run, so garbage left by an earlier contender
    is not charged to this one; it stays enabled during the call, as it is for a user. Collecting
    walks every object, so each call starts with the processor's caches cold: a cell run once.
    With ``loops`` > 1 a run is that many calls back to back with the collector paused, as
    ``timeit`` times, and its time is per call: the steady state of a function called often.
    """
    times = []
    for _ in range(runs):
        arg = setup() if setup is not None else None
        gc.collect()
        if loops == 1:
            started = time.perf_counter()
            fn(arg)
            times.append(time.perf_counter() - started)
            continue
        gc.disable()
        try:
            started = time.perf_counter()
            for _ in range(loops):
                fn(arg)
            times.append((time.perf_counter() - started) / loops)
        finally:
            gc.enable()
    return times


def measure_rounds(
    contenders: dict[str, tuple[Callable[[Any], Any], Callable[[], Any] | None]],
    *,
    runs: int,
    loops: dict[str, int] | None = None,
) -> dict[str, list[float]]:
    """Like :func:`measure` for several ``{name: (fn, setup)}``, taken in turns: one run of each per round
    (``loops``: calls per run by name, 1 where not given).

    On a shared machine, load that comes and goes then hits every contender alike, so ratios
    stay fair even when the absolute times move.
    """
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, (fn, setup) in contenders.items():
            times[name] += measure(fn, runs=1, setup=setup, loops=(loops or {}).get(name, 1))
    return times


@dataclass
class Row:
    """One contender's timings; ``floor=True`` marks the baseline, ``bar`` the allowed ratio."""

    name: str
    times: list[float]
    floor: bool = False
    bar: float | None = None
    note: str = ""
    scale: float = 1.0  # multiply the measured median by this (extrapolated rows say so in ``note``)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.times) * self.scale

    def ratio(self, floor: Row) -> float:
        return self.median / floor.median


def _fmt(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def print_table(title: str, rows: list[Row], *, floors: list[Row] | None = None) -> list[dict[str, Any]]:
    """Print medians, runs and ratios to each floor; return the rows as dicts (for Markdown).

    ``floors`` defaults to the rows marked ``floor=True``. A row with a ``bar`` gets PASS/FAIL
    against every floor (ratio <= bar).
    """
    floors = floors if floors is not None else [r for r in rows if r.floor]
    print(f"\n== {title}")
    head = f"{'':46} {'median':>10} {'runs':>5}" + "".join(
        f"  {'vs ' + f.name.split(':')[0]:>18}" for f in floors
    )
    print(head)
    out = []
    for r in rows:
        line = f"{r.name:46} {_fmt(r.median):>10} {len(r.times):>5}"
        record: dict[str, Any] = {"name": r.name, "median": r.median, "runs": len(r.times), "note": r.note}
        for f in floors:
            ratio = r.ratio(f)
            verdict = ""
            if r.bar is not None:
                verdict = " PASS" if ratio <= r.bar else " FAIL"
            line += f"  {f'{ratio:.2f}x{verdict}':>18}"
            record[f"vs {f.name.split(':')[0]}"] = (ratio, verdict.strip())
        print(line + (f"  ({r.note})" if r.note else ""))
        out.append(record)
    bars = {r.bar for r in rows if r.bar is not None}
    if bars:
        print(f"bar: jarenlab <= {', '.join(f'{b:g}x' for b in sorted(bars))} the floor")
    sys.stdout.flush()
    return out
