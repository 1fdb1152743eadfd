"""The dashboard without a browser: its HTML after the queue changes, the store closing, its
static copy (what a saved notebook shows) following the view, and the pure views (failures laid
out and clipped before escaping, the throughput and failures chart)."""

from __future__ import annotations

import re

import pytest
from IPython.testing.globalipapp import get_ipython
from IPython.utils.capture import capture_output

import jarenlab as jl
from jarenlab.jobs import Jobs, VirtualClock, views
from jarenlab.widgets.display import VIEW
from jarenlab.widgets.jobs import JobsDashboard
from tests.live.test_widget import Clock
from tests.widgets.test_static_copy import Timers, copies


def test_the_dashboard_shows_counts_throughput_and_failures(jobs: Jobs, clock: VirtualClock) -> None:
    jobs.handler("ok")(lambda p, c: p)
    jobs.handler("bad", max_attempts=1)(lambda p, c: (_ for _ in ()).throw(ValueError(f"bad <{p}>")))
    dash = jobs.widget(refresh=None)
    assert dash.counts["pending"] == 0 and "no recent failures" in dash.html
    jobs.enqueue_many(
        [{"kind": "ok", "payload": n} for n in range(8)] + [{"kind": "bad", "payload": 1, "id": "b1"}]
    )
    jobs.enqueue("ok", None, delay=100)
    clock.advance(1)
    dash.refresh()
    assert dash.counts["pending"] == 10 and "<b>10</b>" in dash.html
    jobs.run_until_idle(progress=False)
    clock.advance(3)
    dash.refresh()
    assert dash.counts == {"pending": 1, "leased": 0, "failed": 0, "done": 8, "dead": 1, "cancelled": 0}
    assert dash.rate == 3.0 and "3.0/s" in dash.html
    assert "b1" in dash.html and "bad &lt;1&gt;" in dash.html
    assert "<svg" in dash.html and "1 failure over 3 s" in dash.html  # the chart: 2 intervals
    dash._on_message(dash, {"type": "refresh"}, [])  # the front end's refresh button
    assert dash.rate is None  # no virtual time passed between the two samples
    bundle, _ = dash._repr_mimebundle_()
    assert bundle["text/html"] == f'<div data-jl-static-for="{dash.anchor}">{dash.html}</div>'
    assert VIEW in bundle
    dash.close()


def shown(page: str) -> dict[str, int]:
    """The counts a dashboard's HTML shows, by state."""
    return {state: int(n) for n, state in re.findall(r"<b>([0-9,]+)</b><br><small>(\w+)</small>", page)}


def test_the_static_copy_follows_the_view_throttled_and_ends_with_the_last_view(
    store: jl.Store, jobs: Jobs
) -> None:
    get_ipython()  # IPython's test shell: capture_output puts its capturing publisher in place
    jobs.handler("ok")(lambda p, c: p)
    t, timers = Clock(), Timers()
    dash = JobsDashboard(jobs, refresh=None, clock=t, schedule=timers)
    with capture_output() as cap:
        dash._ipython_display_()
    view, copy = cap.outputs  # the view, then the copy that follows it
    assert set(view.data) == {VIEW} and set(copy.data) == {"text/html", "text/plain"}
    assert copy.data["text/html"] == f'<div data-jl-static-for="{dash.anchor}">{dash.html}</div>'
    display_id = copy.transient["display_id"]

    with capture_output() as cap:
        t.t += 5.0
        jobs.enqueue_many([{"kind": "ok", "payload": n} for n in range(3)])
        dash.refresh()  # a second since the last refresh: the copy is refreshed at once
        jobs.run_until_idle(progress=False)
        t.t += 0.2
        dash.refresh()  # within the second: one refresh later
    (first,) = copies(cap.outputs)
    assert first.update and first.transient["display_id"] == display_id
    assert shown(first.data["text/html"])["pending"] == 3
    assert len(timers.pending) == 1 and timers.pending[0][0] == pytest.approx(0.8)

    with capture_output() as cap:
        t.t += 0.8
        timers.run()  # the trailing refresh: the view as it is now
    (trailing,) = copies(cap.outputs)
    assert shown(trailing.data["text/html"]) == shown(dash.html) and shown(dash.html)["done"] == 3
    assert dash.static.refreshes == 2

    with capture_output() as cap:
        t.t += 0.1
        store.close()  # the last view: published at once, whatever the throttle says
    (closed,) = copies(cap.outputs)
    assert "store closed" in closed.data["text/html"] and shown(closed.data["text/html"])["done"] == 3
    assert closed.data["text/plain"] == repr(dash)
    with capture_output() as cap:
        dash.close()  # the view goes: its copy shows again, with the same last view
    assert copies(cap.outputs)[-1].data["text/html"] == closed.data["text/html"]
    assert dash.comm is None


def test_the_dashboard_keeps_its_last_view_when_the_store_closes(store: jl.Store) -> None:
    store.jobs.handler("ok")(lambda p, c: p)
    store.jobs.enqueue("ok", 1)
    dash = store.jobs.widget(refresh=None)
    store.jobs.enqueue("ok", 2)  # after the last refresh: the store closing reads the queue once more
    store.close()
    assert dash._stop.is_set() and not dash.live
    assert dash.comm is not None and dash.counts["pending"] == 2 and "<b>2</b>" in dash.html
    assert "store closed" in dash.html
    dash.refresh()  # nothing to read any more: the view stays
    assert "store closed" in dash.html
    dash.close()


def test_failures_clip_before_escaping_and_keep_ids_on_one_line() -> None:
    html = views.failures_html([{"id": "<x>", "kind": "k", "state": "dead", "attempts": 5, "max_attempts": 5,
                                 "last_error": "E: <script>"}])  # fmt: skip
    assert "&lt;x&gt;" in html and "<script>" not in html and "5/5" in html
    long_id, error = "job-" + "9" * 80, "Traceback: " + "<&>" * 200
    html = views.failures_html(
        [
            {
                "id": long_id,
                "kind": "k",
                "state": "failed",
                "attempts": 1,
                "max_attempts": 3,
                "last_error": error,
            }
        ]
    )
    shown = html.split("<td class='jl-err'>")[1].split("</span>")[0]
    assert shown.endswith("…") and "&lt;&amp;&gt;" in shown
    for cut in ("&l…", "&am…", "&a…", "&g…", "&…"):
        assert cut not in shown  # an entity is never cut in half
    assert f"title='{long_id}'" in html and "class='jl-id'" in html  # the whole id as a tooltip
    assert (
        "<th>id</th><th>kind</th><th>state</th><th>attempts</th><th>priority</th><th>last error</th>" in html
    )


def test_views_are_pure() -> None:
    assert views.throughput(None, (1.0, 5)) is None
    assert views.throughput((1.0, 5), (1.0, 9)) is None
    assert views.throughput((0.0, 5), (4.0, 13)) == 2.0
    assert list(views.counts_by_state([])) == ["pending", "leased", "failed", "done", "dead", "cancelled"]
    assert views.clip("x" * 10, 5) == "xxxx…" and views.clip("xx", 5) == "xx"
    samples = [(0.0, 0, 0), (1.0, 10, 0), (2.0, 10, 2), (3.0, 30, 2)]
    assert views.history_rates(samples) == [(1.0, 10.0, 0), (2.0, 0.0, 2), (3.0, 20.0, 0)]
    svg = views.history_svg(samples)
    assert svg.count("<rect") == 1 and "peak 20.0/s · 2 failures over 2 s" in svg
    assert "appear after" in views.history_svg(samples[:2])
