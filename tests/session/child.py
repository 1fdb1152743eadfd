"""A process the crash test starts: it saves a session and is SIGKILLed in the middle of the save.

``python child.py TARGET READY`` opens the store at ``TARGET`` (a JSON object of ``jl.open``
arguments), stages 300 new flights, an update of every stored flight and the delete of one, and
saves; a write check on ``flights`` touches ``READY`` after 450 rows were written inside the save's
transaction (the 300 new ones and 150 updates) and sleeps there (the test kills it).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import jarenlab as jl


def main(target: dict[str, Any], ready: Path) -> None:
    store = jl.open(target.pop("path"), **target)
    written = 0

    def pause(key: Any, doc: Any) -> None:
        nonlocal written
        written += 1
        if written == 450:
            ready.touch()
            time.sleep(120)  # killed here, inside the save's transaction

    with store.session() as s:
        for doc in s.all("flights"):
            s.put("flights", {**doc, "delay": 99})
        s.remove("flights", 0)
        for i in range(1000, 1300):
            s.add("flights", {"id": i, "carrier": "AA"})
        store["flights"].write_checks.append(pause)
        s.save()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]), Path(sys.argv[2]))
