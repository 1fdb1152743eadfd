"""A process the many-to-many race test starts: ``python links_child.py link TARGET GO SEED`` links
every student to every course in a seeded order (an even seed through the inverse relation,
``courses.students``); ``python links_child.py delete TARGET GO`` deletes
the first three students. Each waits for the file ``GO`` (the start line), retries what is
retryable (a busy store), and prints what it did as JSON."""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import jarenlab as jl

STUDENTS = [f"s{i}" for i in range(6)]
COURSES = [f"c{i}" for i in range(5)]


def retried(fn: object, *args: object) -> object:
    while True:
        try:
            return fn(*args)  # type: ignore[operator]
        except jl.JarenlabError as err:
            if not err.retryable:
                raise


def main() -> None:
    mode, target, go = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
    store = jl.open(target.pop("path"), busy_timeout=30.0, **target)
    while not go.exists():
        time.sleep(0.005)
    done = {"linked": 0, "missing": 0, "deleted": 0}
    if mode == "link":
        pairs = [(s, c) for s in STUDENTS for c in COURSES]
        random.Random(int(sys.argv[4])).shuffle(pairs)
        seed = int(sys.argv[4])
        inverse = store["courses"].relation("students")
        courses = store["students"].relation("courses")
        for s, c in pairs:
            try:
                if seed % 2:
                    retried(courses.link, s, c)
                else:
                    retried(inverse.link, c, s)
                done["linked"] += 1
            except jl.JarenlabError as err:
                assert err.code == "JD2190", err
                done["missing"] += 1
    else:
        for s in STUDENTS[:3]:
            time.sleep(0.01)
            done["deleted"] += bool(retried(store["students"].delete, s))
    store.close()
    print(json.dumps(done))


if __name__ == "__main__":
    main()
