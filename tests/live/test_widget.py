"""The live table without a browser: its messages, a front end's row model rebuilt from them,
throttling, serialized flushes under a burst of writes from threads, closing, and the static HTML."""

from __future__ import annotations

import json
import threading
import time
import warnings
from typing import Any

import ipywidgets
import pytest

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


class Front:
    """What the front end (``live_table.js``) does with the messages, in Python: a row model."""

    def __init__(self) -> None:
        self.v: int | None = None
        self.columns: list[str] = []
        self.rows: list[list[Any]] = []
        self.missing: list[set[int]] = []
        self.keys: list[int] = []
        self.status: dict[str, Any] = {}
        self.resyncs = 0

    def receive(self, msg: dict[str, Any]) -> None:
        if msg.get("method") != "custom":
            return
        m = msg["content"]
        if m["type"] == "snapshot":
            self.v, self.columns, self.keys = m["v"], m["columns"], list(m["keys"])
            self.rows = [[col[r] for col in m["data"]] for r in range(len(m["keys"]))]
            self.missing = [set() for _ in self.rows]
            for c, rows in enumerate(m["missing"]):
                for r in rows:
                    self.missing[r].add(c)
        elif m["type"] == "patch":
            if self.v is None or m["v"] <= self.v:
                return
            if m["v"] != self.v + 1:
                self.v, self.resyncs = None, self.resyncs + 1
                return
            self.columns = m.get("columns", self.columns)
            for op in m["ops"]:
                if op[0] == "+":
                    self.rows.insert(op[1], op[3])
                    self.keys.insert(op[1], op[2])
                    self.missing.insert(op[1], set(op[4]))
                elif op[0] == "-":
                    del self.rows[op[1]], self.keys[op[1]], self.missing[op[1]]
                else:
                    self.rows[op[1]], self.missing[op[1]] = op[2], set(op[3])
            self.v = m["v"]
        self.status = m.get("status", self.status)

    def dicts(self) -> list[dict[str, Any]]:
        """The rows as the kernel has them (a missing member is absent, null is None)."""
        return [
            {c: v for i, (c, v) in enumerate(zip(self.columns, row)) if i not in miss}
            for row, miss in zip(self.rows, self.missing)
        ]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    monkeypatch.setattr(ipywidgets.Widget, "_send", lambda self, msg, buffers=None: messages.append(msg))
    return messages


def _front(table: LiveTable, sent: list[dict[str, Any]]) -> Front:
    front = Front()
    sent.clear()
    table._on_message(table, {"type": "sync"}, [])
    for msg in sent:
        front.receive(msg)
    return front


def test_the_front_end_follows_the_query_from_one_snapshot_and_small_patches(
    store: Any, sent: list[dict[str, Any]]
) -> None:
    coll = store["items"]
    coll.insert_many([{"id": f"k{i:03}", "n": i, "s": "x" * 40} for i in range(200)])
    live = coll.live(ROWS)
    table = LiveTable(live, clock=Clock(), min_interval=0.0, schedule=lambda d, fn: None)
    front = _front(table, sent)
    assert [m["content"]["type"] for m in sent] == ["snapshot"]  # the window goes over once
    whole = len(json.dumps(sent[0]))
    assert front.dicts() == live.rows and front.keys == table.row_keys
    sent.clear()
    coll.patch("k100", {"s": "changed"})
    one_row = sum(len(json.dumps(m)) for m in sent)
    assert 0 < one_row < whole / 50, (one_row, whole)
    for m in sent:
        front.receive(m)
    coll.delete("k000")
    coll.insert({"id": "new", "n": 500})  # no "s": a missing member, not null
    for m in sent:
        front.receive(m)
    assert front.dicts() == live.rows and front.keys == table.row_keys and front.resyncs == 0
    assert front.missing[-1] == {2} and front.missing[-2] == set()
    assert front.status["state"] == "live" and front.status["rows"] == 200 and front.status["seq"] == live.seq


def test_a_new_member_adds_a_column_and_the_layout_only_widens(
    store: Any, sent: list[dict[str, Any]]
) -> None:
    coll = store["items"]
    coll.insert({"id": "a", "n": 1})
    live = coll.live({"$for": {"r": "$[*]"}, "$return": "$r"})
    table = LiveTable(live, min_interval=0.0, schedule=lambda d, fn: None)
    front = _front(table, sent)
    sent.clear()
    coll.insert({"id": "b", "n": 2, "s": "a long text value"})
    patch = next(m["content"] for m in sent if m["content"].get("type") == "patch")
    assert patch["columns"] == ["id", "n", "s"]
    assert [c["width"] for c in patch["layout"]] == [3, 3, 17]
    for m in sent:
        front.receive(m)
    assert front.dicts() == live.rows


def test_redraws_are_throttled_and_coalesced(store: Any, sent: list[dict[str, Any]]) -> None:
    coll = store["items"]
    live = coll.live(ROWS)
    clock = Clock()
    pending: list[Any] = []
    table = LiveTable(live, clock=clock, min_interval=0.5, schedule=lambda d, fn: pending.append((d, fn)))
    front = _front(table, sent)
    coll.insert({"id": "a", "n": 1})  # first change: sent at once
    assert table.redraws == 1 and len(table.rows) == 1
    clock.t += 0.1
    for i in range(5):
        coll.insert({"id": f"b{i}", "n": 10 + i})
    assert table.redraws == 1 and len(table.rows) == 1 and len(pending) == 1
    assert pending[0][0] == pytest.approx(0.4)
    clock.t += 0.4
    pending.pop()[1]()
    assert table.redraws == 2 and table.rows == live.rows
    patches = [m for m in sent if m["content"]["type"] == "patch"]
    assert len(patches) == 2 and len(patches[1]["content"]["ops"]) == 5  # one message, five rows
    for m in sent:
        front.receive(m)
    assert front.dicts() == live.rows
    assert front.status["age_s"] == pytest.approx(0.4)  # the real age: the last change 0.4 s ago


def test_a_burst_from_threads_never_overlaps_two_flushes(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """200 writes from 8 threads while scheduled flushes run on threads of their own (a timer
    whose delay has passed): every message goes out alone (a send that starts while another is
    in flight is an overlap), and the front end ends equal to the rows."""
    guard = threading.Lock()
    active, overlaps, messages = [0], [], []

    def send(self: Any, msg: dict[str, Any], buffers: Any = None) -> None:
        with guard:
            active[0] += 1
            if active[0] > 1:
                overlaps.append(active[0])
        time.sleep(0.001)  # a send takes time: a concurrent flush would land inside it
        messages.append(msg)
        with guard:
            active[0] -= 1

    monkeypatch.setattr(ipywidgets.Widget, "_send", send)
    coll = store["items"]
    coll.insert_many([{"id": f"k{i:02}", "n": i, "s": "x"} for i in range(50)])
    live = coll.live(ROWS)
    timers: list[threading.Thread] = []

    def at_once(delay: float, fn: Any) -> None:
        timers.append(threading.Thread(target=fn))
        timers[-1].start()

    table = live.widget(min_interval=0.05, schedule=at_once)
    front = Front()
    table._on_message(table, {"type": "sync"}, [])

    def write(w: int) -> None:
        for i in range(25):
            coll.patch(f"k{(i * 8 + w) % 50:02}", {"s": f"v{w}-{i}", "n": (i * 13 + w) % 50})

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for t in list(timers):
            t.join()
        table.flush()
    assert overlaps == []
    assert [w for w in caught if "subscriber" in str(w.message)] == []
    for msg in messages:
        front.receive(msg)
    assert len(live.rows) == 50 and front.dicts() == live.rows and front.resyncs == 0
    assert table.rows == live.rows
    table.close()


def test_closing_the_widget_during_a_burst_raises_nothing(store: Any) -> None:
    coll = store["items"]
    live = coll.live(ROWS)
    table = live.widget(min_interval=0.001)
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set() and i < 400:
            coll.insert({"id": f"c{i}", "n": i})
            i += 1

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(0.02)
        table.close()
        stop.set()
        writer.join()
        time.sleep(0.01)
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    assert not live.closed  # closing the view leaves the query open


def test_the_status_says_closed_when_the_query_closes(store: Any, sent: list[dict[str, Any]]) -> None:
    coll = store["items"]
    coll.insert({"id": "a", "n": 1})
    live = coll.live(ROWS)
    table = LiveTable(live, min_interval=0.0, schedule=lambda d, fn: None)
    front = _front(table, sent)
    live.close()
    for m in sent:
        front.receive(m)
    assert front.status["state"] == "closed" and front.dicts() == [{"id": "a", "n": 1}]
    assert "closed · 1 rows" in table.static_html()
    assert front.dicts() == _front(table, sent).dicts()  # a reload still shows the last rows


def test_the_status_says_stale_while_the_store_cannot_be_reached(
    store: Any, sent: list[dict[str, Any]]
) -> None:
    """What the hub does in an outage (``tests/live/test_outage.py`` makes a real one): the status
    line says ``stale`` at once, with the error, and ``live`` again once it caught up."""
    from jarenlab.errors import StoreError

    coll = store["items"]
    coll.insert({"id": "a", "n": 1})
    live = coll.live(ROWS)
    table = LiveTable(live, min_interval=0.0, schedule=lambda d, fn: None)
    front = _front(table, sent)
    sent.clear()
    down = StoreError(
        "JD2005", "the connection to the server was lost", retryable=True, condition="connection"
    )
    assert live.mark_stale(down) and not live.mark_stale(down)  # once per outage
    assert [m["content"]["type"] for m in sent] == ["status"]
    for m in sent:
        front.receive(m)
    assert front.status["state"] == "stale" and front.status["error"] == "JD2005 database_error"
    assert "stale · 1 rows" in table.static_html() and not live.closed
    sent.clear()
    live.mark_live()
    for m in sent:
        front.receive(m)
    assert front.status["state"] == "live" and front.status["error"] is None
    coll.insert({"id": "b", "n": 2})  # and it follows on
    for m in sent:
        front.receive(m)
    assert front.dicts() == [{"id": "a", "n": 1}, {"id": "b", "n": 2}]


def test_the_display_carries_static_html_beside_the_widget(store: Any) -> None:
    coll = store["items"]
    coll.insert_many([{"id": f"k{i:03}", "n": i, "s": "<b>&amp;</b>"} for i in range(80)])
    live = coll.live(ROWS)
    table = live.widget(wall=lambda: 1796416265.0)
    bundle, _ = table._repr_mimebundle_()
    assert set(bundle) == {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"}
    page = bundle["text/html"]
    assert page.count("<tr data-key=") == 50 and "30 more rows" in page  # bounded
    assert "&lt;b&gt;&amp;amp;&lt;/b&gt;" in page and "<b>&amp;</b>" not in page
    # what a reader without a kernel sees is never "live": a snapshot, and when it was taken
    assert "not live · snapshot of 2026-12-04 20:31:05 UTC · 80 rows" in page
    assert "data-jl-taken='2026-12-04T20:31:05+00:00'" in page and "updated" not in page
    table.close()


def test_one_widget_model_per_table(store: Any) -> None:
    coll = store["items"]
    coll.insert_many([{"id": f"k{i:04}", "n": i} for i in range(1000)])
    live = coll.live(ROWS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the registry of live models
        before = set(ipywidgets.Widget.widgets)
        table = live.widget()
        made = set(ipywidgets.Widget.widgets) - before
    assert 1 <= len(made) <= 2  # the table (and its layout), whatever the row count
    table.close()


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


def test_without_anywidget_the_table_says_what_to_install(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from jarenlab.errors import JarenlabError

    live = store["items"].live(ROWS)
    monkeypatch.setitem(sys.modules, "anywidget", None)  # what an install without the extra looks like
    with pytest.raises(JarenlabError) as err:
        live.widget()
    assert err.value.code == "JD2130" and "jarenlab[widgets]" in str(err.value)
    with pytest.raises(JarenlabError) as err:
        store.jobs.widget(refresh=None)
    assert err.value.code == "JD2130"
