"""A child process for the signal tests: claim one job of a kind and settle it at the same moment as
its peers (each waits until every peer has written its ready file), printing the outcome.

Arguments: path, schema ('' on SQLite), kind, ready folder, peers.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import jarenlab as jl

path, schema, kind, folder, peers = sys.argv[1:6]
ready = Path(folder)

with jl.open(path, schema=schema or None) as store:

    @store.jobs.handler(kind)
    def work(payload: Any, ctx: Any) -> str:
        (ready / kind).write_text("ready")
        deadline = time.monotonic() + 30
        while len(list(ready.iterdir())) < int(peers) and time.monotonic() < deadline:
            time.sleep(0.001)
        return kind

    lease = store.jobs.claim(kinds=[kind])
    print(None if lease is None else store.jobs.executor.execute(lease), flush=True)
