"""The README's main job (``make demo``) runs end to end on the real data and says what it did."""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab import demo


@pytest.mark.slow
def test_the_demo_runs_end_to_end(capsys: Any) -> None:
    report = demo.run(progress=False)
    assert report["loaded"] == {"airlines": 16, "airports": 1458, "planes": 3322, "flights": 336776}
    assert report["top_delay"] == 1301  # HA 51 to HNL, 2013-01-09: the longest JFK departure delay
    assert report["carriers"] == 16
    assert report["live_patches"] == 1
    assert report["jobs"]["done"] == 16 and report["jobs"]["dead"] == 0
    assert report["interval_refusal"] == "interval_conflict"
    out = capsys.readouterr().out
    assert "SEARCH flights USING INDEX flights_by_origin_delay" in out
    assert "== summary" in out and "done: the store was closed" in out
