"""The live table without a browser: its state after changes, throttling, and message sizes."""

from __future__ import annotations

import json
from typing import Any

import ipywidgets
import pytest

from jarenlab.live.render import freshness_text, row_html
from jarenlab.widgets.live import LiveTable

ROWS = {
    "$for": {"r": "$[*]"},
    "$orderby": {"$key": "$r.n"},
    "$return": {"id": "$r.id", "n": "$r.n", "s": "$r.s"},
}


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    monkeypatch.setattr(ipywidgets.Widget, "_send", lambda self, msg, buffers=None: messages.append(msg))
    return messages


def _texts(table: LiveTable) -> list[str]:
    return [c.value for c in table.body.children]


def test_state_follows_the_query_and_one_row_sends_one_row(store: Any, sent: list[dict[str, Any]]) -> None:
    coll = store["items"]
    coll.insert_many([{"id": f"k{i:03}", "n": i, "s": "x" * 40} for i in range(200)])
    live = coll.live(ROWS)
    clock = Clock()
    table = LiveTable(live, clock=clock, min_interval=0.0, schedule=lambda d, fn: None)
    assert _texts(table) == [row_html(r, ["id", "n", "s"]) for r in live.rows]
    whole = sum(len(json.dumps(c.get_state())) for c in table.body.children)
    sent.clear()
    clock.t += 1
    coll.patch("k100", {"s": "changed"})
    one_row = sum(len(json.dumps(m)) for m in sent)
    assert next(m["state"] for m in sent if "value" in m.get("state", {}))["value"] == row_html(
        live.rows[100], ["id", "n", "s"]
    )
    assert 0 < one_row < whole / 50, (one_row, whole)
    coll.delete("k000")
    coll.insert({"id": "new", "n": 500})
    assert _texts(table) == [row_html(r, ["id", "n", "s"]) for r in live.rows]
    assert (
        "seq" in table.status.value and "201" not in table.status.value and "200 rows" in table.status.value
    )


def test_redraws_are_throttled_and_coalesced(store: Any) -> None:
    coll = store["items"]
    live = coll.live(ROWS)
    clock = Clock()
    pending: list[Any] = []
    table = LiveTable(live, clock=clock, min_interval=0.5, schedule=lambda d, fn: pending.append((d, fn)))
    coll.insert({"id": "a", "n": 1})  # first change: drawn at once
    assert table.redraws == 1 and len(table.body.children) == 1
    clock.t += 0.1
    for i in range(5):
        coll.insert({"id": f"b{i}", "n": 10 + i})
    assert table.redraws == 1 and len(table.body.children) == 1 and len(pending) == 1
    assert pending[0][0] == pytest.approx(0.4)
    clock.t += 0.4
    pending.pop()[1]()
    assert table.redraws == 2 and _texts(table) == [row_html(r, ["id", "n"]) for r in live.rows]


def test_freshness_text() -> None:
    assert (
        freshness_text(seq=3, updated_at=None, now=5, strategy="rows", rows=0)
        == "live · 0 rows · seq 3 · no change yet · rows"
    )
    assert "updated 3 min ago" in freshness_text(seq=3, updated_at=0, now=180, strategy="rows", rows=1)
    assert (
        freshness_text(seq=3, updated_at=0, now=1, strategy="rows", rows=1, error="JD2060 live_bound")
        == "closed · JD2060 live_bound"
    )


def test_bind_drives_an_external(store: Any) -> None:
    coll = store["items"]
    coll.insert_many([{"id": f"k{i}", "n": i, "g": "ab"[i % 2]} for i in range(6)])
    live = coll.live({"$for": {"r": "$[*]"}, "$where": {"$eq": ["$r.g", "$g"]}, "$return": "$r.id"}, g="a")
    dropdown = ipywidgets.Dropdown(options=["a", "b"], value="a")
    patches: list[Any] = []
    live.bind(g=dropdown).subscribe(lambda p, s: patches.append(p))
    assert live.rows == ["k0", "k2", "k4"]
    dropdown.value = "b"
    assert live.rows == ["k1", "k3", "k5"] and len(patches) == 1
    coll.insert({"id": "k9", "n": 9, "g": "b"})
    assert live.rows[-1] == "k9"
    live.close()
    dropdown.value = "a"
    assert live.rows[-1] == "k9"
