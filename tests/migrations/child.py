"""A process the migration tests start: it migrates (and is killed midway) or writes meanwhile.

``python child.py migrate TARGET READY`` migrates the store at ``TARGET`` (a JSON object of
``jl.open`` arguments) with a transform that touches the file ``READY`` after a few documents and
then sleeps (the test SIGKILLs it there). ``python child.py write TARGET READY N`` inserts ``N``
documents one transaction each, retrying what is retryable (a busy store, JD2110), touches
``READY`` after the first, and prints how many retries it needed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import jarenlab as jl
from tests.migrations.conftest import BASE, evolve

#: The migration both tests run: a new optional member, filled in by the transform, and an index on it.
WITH_MARK = evolve(
    BASE,
    lambda m: (
        m["collections"]["notes"]["schema"]["properties"].update(mark={"type": "boolean"}),
        m["collections"]["notes"]["indexes"].append({"name": "by_mark", "path": "$.mark"}),
    ),
)


def migrate(target: dict[str, Any], ready: Path) -> None:
    store = jl.open(target.pop("path"), **target)
    seen = 0

    def mark(doc: dict[str, Any]) -> dict[str, Any]:
        nonlocal seen
        seen += 1
        if seen == 50:
            ready.touch()
            time.sleep(120)  # killed here
        return {**doc, "mark": True}

    store.migrate(WITH_MARK, transforms={"notes": mark}, progress=False)


def write(target: dict[str, Any], ready: Path, count: int) -> None:
    store = jl.open(target.pop("path"), busy_timeout=30.0, **target)
    retries = 0
    for i in range(count):
        while True:
            try:
                store["notes"].insert({"id": f"w{i}", "n": i})
                break
            except jl.JarenlabError as err:
                if not err.retryable:
                    raise
                retries += 1
        if i == 0:
            ready.touch()
        time.sleep(0.002)
    store.close()
    print(json.dumps({"retries": retries}))


if __name__ == "__main__":
    mode, target, ready = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
    if mode == "migrate":
        migrate(target, ready)
    else:
        write(target, ready, int(sys.argv[4]))
