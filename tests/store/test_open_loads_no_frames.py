"""Opening a store, writing and querying load neither pandas nor pyarrow: they load on first use
(a frame, an Arrow table), in a fresh interpreter where nothing else imported them."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import jarenlab as jl
from jarenlab import it
model = {"$model": "0.1", "collections": {"t": {"schema": {"type": "object",
    "properties": {"n": {"type": "integer"}}}, "key": None, "identity": "integer"}}}
with jl.open(sys.argv[1], model) as store:
    store["t"].insert_many([{"n": 1}, {"n": 2}])
    store["t"].insert_many({"n": i} for i in range(3))
    assert store["t"].where(it.n > 1).count() == 2
    assert [d["n"] for d in store["t"].order_by(it.n).page(2).items] == [0, 1]
    store.jobs.enqueue("noop", {})
    print(sorted(m for m in ("pandas", "pyarrow", "numpy") if m in sys.modules))
    frame = store["t"].to_pandas()
    print(sorted(m for m in ("pandas", "pyarrow") if m in sys.modules), len(frame))
"""


def test_open_write_and_query_load_no_frame_library(tmp_path: object) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path) + "/lab.db"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[]", "['pandas', 'pyarrow'] 5"]
