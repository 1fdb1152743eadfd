"""What a saved notebook shows without a kernel: the live table's static copy follows the rows.

The table displays as two outputs (the view, then a ``text/html`` copy with a display id); as the
rows change the copy is refreshed with ``update_display``, throttled (at most once per interval,
always once after the last change) and bounded; closing the query or the view refreshes it at
once. Displays are captured by IPython's own capturing publisher (no browser, no kernel).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import ipywidgets
import pytest
from IPython.testing.globalipapp import get_ipython
from IPython.utils.capture import capture_output

from jarenlab.widgets.live import STATIC_ROWS, LiveTable
from tests.live.test_widget import Clock

VIEW = "application/vnd.jupyter.widget-view+json"
ROWS = {
    "$for": {"r": "$[*]"},
    "$orderby": {"$key": "$r.n", "$dir": "desc"},
    "$return": {"id": "$r.id", "n": "$r.n"},
}


class Timers:
    """``schedule(delay, fn)`` that keeps the calls, to run them when the test says time passed."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, Callable[[], None]]] = []

    def __call__(self, delay: float, fn: Callable[[], None]) -> None:
        self.pending.append((delay, fn))

    def run(self) -> None:
        pending, self.pending = self.pending, []
        for _, fn in pending:
            fn()


@pytest.fixture
def shell() -> Iterator[Any]:
    """IPython's test shell: ``capture_output`` puts its capturing display publisher in place."""
    yield get_ipython()


def ids_in(page: str) -> list[str]:
    """The row ids the static HTML shows, in order (the first cell of each row)."""
    return re.findall(r"<tr data-key='\d+'><td[^>]*>([^<]*)</td>", page)


def copies(outputs: list[Any]) -> list[Any]:
    return [o for o in outputs if "text/html" in o.data]


def test_the_copy_follows_the_rows_throttled_and_ends_with_the_last_state(
    live_store: Any, shell: Any
) -> None:
    coll = live_store["items"]
    coll.insert_many([{"id": f"k{i:03}", "n": i} for i in range(10)])
    live = coll.live(ROWS)
    clock, timers = Clock(), Timers()
    table = LiveTable(live, clock=clock, schedule=timers, min_interval=0.0, static_interval=1.0)
    with capture_output() as cap:
        table._ipython_display_()
    first = cap.outputs
    assert [set(o.data) for o in first] == [{VIEW}, {"text/html", "text/plain"}]  # view, then copy
    copy = first[1]
    display_id = copy.transient["display_id"]
    assert f'data-jl-static-for="{table.anchor}"' in copy.data["text/html"]
    assert ids_in(copy.data["text/html"])[:2] == ["k009", "k008"]

    with capture_output() as cap:
        clock.t += 5.0
        coll.insert({"id": "top", "n": 100})  # a second since the last refresh: refreshed at once
        for i in range(5):
            clock.t += 0.1
            coll.insert({"id": f"burst{i}", "n": 200 + i})  # within the second: one refresh later
    assert len(copies(cap.outputs)) == 1 and cap.outputs[0].update
    assert cap.outputs[0].transient["display_id"] == display_id
    assert ids_in(cap.outputs[0].data["text/html"])[0] == "top"
    assert len(timers.pending) == 1 and timers.pending[0][0] == pytest.approx(0.9)  # 1 s after the refresh

    with capture_output() as cap:
        clock.t += 0.5
        timers.run()  # the trailing refresh: the last state
    (last,) = copies(cap.outputs)
    assert last.update and ids_in(last.data["text/html"]) == [r["id"] for r in live.rows]
    assert ids_in(last.data["text/html"])[0] == "burst4"
    assert table.static.refreshes == 2

    with capture_output() as cap:
        clock.t += 0.01
        coll.delete("burst4")
        live.close()  # closing refreshes at once, whatever the throttle says
    final = copies(cap.outputs)[-1]
    assert final.update and "closed · 15 rows" in final.data["text/html"]
    assert ids_in(final.data["text/html"])[0] == "burst3"
    table.close()


def test_the_copy_is_bounded_and_says_how_many_rows_it_leaves_out(live_store: Any, shell: Any) -> None:
    coll = live_store["items"]
    coll.insert_many([{"id": f"k{i:03}", "n": i, "s": "<&>"} for i in range(STATIC_ROWS + 30)])
    live = coll.live(ROWS)
    table = LiveTable(live, min_interval=0.0, static_interval=0.0, schedule=Timers())
    with capture_output() as cap:
        table._ipython_display_()
        coll.insert({"id": "new", "n": 10_000})
    page = copies(cap.outputs)[-1].data["text/html"]
    assert len(ids_in(page)) == STATIC_ROWS and ids_in(page)[0] == "new"
    assert f"{31:,} more rows" in page
    table.close()


def test_closing_the_view_leaves_the_copy_with_the_last_rows(live_store: Any, shell: Any) -> None:
    coll = live_store["items"]
    coll.insert({"id": "a", "n": 1})
    live = coll.live(ROWS)
    clock, timers = Clock(), Timers()
    table = LiveTable(live, clock=clock, schedule=timers, min_interval=0.0, static_interval=10.0)
    with capture_output() as cap:
        table._ipython_display_()
        clock.t += 20
        coll.insert({"id": "b", "n": 2})  # refreshed at once
        clock.t += 1
        coll.insert({"id": "c", "n": 3})  # throttled: waits for its timer
        table.close()  # the view goes: its copy shows again, with the last rows at once
    last = copies(cap.outputs)[-1]
    assert ids_in(last.data["text/html"]) == ["c", "b", "a"]
    assert not live.closed


def test_a_table_never_displayed_publishes_nothing(live_store: Any, shell: Any) -> None:
    coll = live_store["items"]
    live = coll.live(ROWS)
    table = LiveTable(live, min_interval=0.0, static_interval=0.0)
    with capture_output() as cap:
        coll.insert({"id": "a", "n": 1})
        live.close()
    assert cap.outputs == [] and table.static.refreshes == 0


def test_a_closed_query_disables_its_bound_controls_and_refuses_new_ones(live_store: Any) -> None:
    from jarenlab.errors import JarenlabError

    coll = live_store["items"]
    coll.insert_many([{"id": f"k{i}", "n": i} for i in range(4)])
    live = coll.live({"$for": {"r": "$[*]"}, "$where": {"$ge": ["$r.n", "$min"]}, "$return": "$r.id"}, min=0)
    slider = ipywidgets.IntSlider(value=0, min=0, max=3)
    live.bind(min=slider)
    slider.value = 2
    assert live.rows == ["k2", "k3"] and not slider.disabled
    live.close()
    assert slider.disabled  # the control says it no longer drives anything
    slider.value = 0
    assert live.rows == ["k2", "k3"]
    with pytest.raises(JarenlabError) as err:
        live.bind(min=ipywidgets.IntSlider())
    assert err.value.code == "JD2127"


def test_a_table_of_a_closed_query_is_refused_cleanly(live_store: Any) -> None:
    """``live.widget()`` after ``live.close()`` is JD2127, and the half-made view is closed (its comm
    gone), so the widget registry does not keep it open and closing it again (its finalizer does)
    prints no "Exception ignored in Widget.__del__" under the cell."""
    import gc

    from jarenlab.errors import JarenlabError

    def tables() -> dict[int, LiveTable]:
        gc.collect()
        return {id(o): o for o in gc.get_objects() if isinstance(o, LiveTable)}

    live = live_store["items"].live(ROWS)
    live.close()
    before = tables()
    with pytest.raises(JarenlabError) as err:
        LiveTable(live)
    assert err.value.code == "JD2127"
    made = [t for i, t in tables().items() if i not in before]
    assert len(made) == 1 and made[0].comm is None
    made[0].close()  # what its finalizer calls: nothing left to fail on
    assert made[0].rows == [] and "0 rows" in repr(made[0])
