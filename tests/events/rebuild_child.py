"""A second process for the materialization tests: it rebuilds ``delays`` and is killed halfway, or it
reads ``delays`` while the test process rebuilds it.

``python rebuild_child.py <path> <schema> rebuild <version> <marker> <after>``: install the module at
``version``, whose handler, at the ``after``-th event replayed, creates ``marker`` and then waits
to be killed.
``python rebuild_child.py <path> <schema> read <version> <marker> <seconds>``: read the collection in
one statement every few milliseconds, print ``<time> <versions> <count>`` for every read, and stop
once every document is at ``version`` (or after ``seconds``); ``marker`` is created after the first
read.
"""

from __future__ import annotations

import pathlib
import sys
import time
from typing import Any

import jarenlab as jl
from jarenlab.events import Module


def module(version: int, *, marker: str | None = None, after: int = 0, pause: float = 0.0) -> Module:
    """The ``flight`` module whose ``delays`` materialization stamps each document with its version."""
    flight = Module("flight")
    delays = flight.materialization("delays", version=version)
    seen = [0]

    @delays.on("delayed")
    def project(event: Any, store: Any) -> None:
        seen[0] += 1
        if marker is not None and seen[0] == after:
            pathlib.Path(marker).touch()
            time.sleep(600)  # killed here, mid-rebuild
        if pause:
            time.sleep(pause)
        store["delays"].insert({"flight": event.payload["flight"], "minutes": version})

    return flight


def main() -> None:
    path, schema, mode, version, marker, arg = sys.argv[1:7]
    with jl.open(path, schema=schema or None) as store:
        if mode == "rebuild":
            store.events.install(module(int(version), marker=marker, after=int(arg)))
            return
        deadline = time.time() + float(arg)
        first = True
        while time.time() < deadline:
            docs = store["delays"].to_list()
            versions = sorted({d["minutes"] for d in docs})
            print(f"{time.time():.6f} {','.join(map(str, versions)) or '-'} {len(docs)}", flush=True)
            if first:
                pathlib.Path(marker).touch()
                first = False
            if versions == [int(version)]:
                return
            time.sleep(0.005)


if __name__ == "__main__":
    main()
