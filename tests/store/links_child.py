"""A process the many-to-many race tests start: ``python links_child.py SHAPE link TARGET GO SEED``
links every left document to every right one in a seeded order (an even seed through the inverse
relation); ``python links_child.py SHAPE delete TARGET GO`` deletes the first three left documents.
``SHAPE`` names the relation (:data:`SHAPES`): ``single`` (students and courses, single keys) or
``composite`` (slots keyed by ``(day, n)`` and crews). Each waits for the file ``GO`` (the start
line), retries what is retryable (a busy store), and prints what it did as JSON.

:func:`race` starts the three processes and returns their reports."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jarenlab as jl

#: Per shape: (left collection, its relation, right collection, the inverse relation, left keys,
#: right keys).
SHAPES: dict[str, tuple[str, str, str, str, list[Any], list[Any]]] = {
    "single": (
        "students",
        "courses",
        "courses",
        "students",
        [f"s{i}" for i in range(6)],
        [f"c{i}" for i in range(5)],
    ),
    "composite": (
        "slots",
        "crews",
        "crews",
        "slots",
        [("d\x01", i - 3) for i in range(6)],
        [f"c{i}" for i in range(5)],
    ),
}
ROOT = Path(__file__).resolve().parents[2]


def retried(fn: object, *args: object) -> object:
    while True:
        try:
            return fn(*args)  # type: ignore[operator]
        except jl.JarenlabError as err:
            if not err.retryable:
                raise


def race(target: dict[str, Any], go: Path, shape: str) -> list[dict[str, int]]:
    """Two processes link every pair (one through each side's handle) while a third deletes the
    first three left documents; their reports, in that order."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    text = json.dumps({k: str(v) for k, v in target.items()})
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, shape, *args[:1], text, str(go), *args[1:]],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in (("link", "1"), ("link", "2"), ("delete",))
    ]
    time.sleep(1.0)  # every child opened its store and waits at the start line
    go.touch()
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    return reports


def main() -> None:
    shape, mode, target, go = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), Path(sys.argv[4])
    left, name, right, inverse_name, lefts, rights = SHAPES[shape]
    store = jl.open(target.pop("path"), busy_timeout=30.0, **target)
    while not go.exists():
        time.sleep(0.005)
    done = {"linked": 0, "missing": 0, "deleted": 0}
    if mode == "link":
        pairs = [(a, b) for a in lefts for b in rights]
        seed = int(sys.argv[5])
        random.Random(seed).shuffle(pairs)
        inverse = store[right].relation(inverse_name)
        relation = store[left].relation(name)
        for a, b in pairs:
            try:
                if seed % 2:
                    retried(relation.link, a, b)
                else:
                    retried(inverse.link, b, a)
                done["linked"] += 1
            except jl.JarenlabError as err:
                assert err.code == "JD2190", err
                done["missing"] += 1
    else:
        for a in lefts[:3]:
            time.sleep(0.01)
            done["deleted"] += bool(retried(store[left].delete, a))
    store.close()
    print(json.dumps(done))


if __name__ == "__main__":
    main()
