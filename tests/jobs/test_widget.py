"""The dashboard without a browser: its widget state after the queue changes, and the pure views."""

from __future__ import annotations

import jarenlab as jl
from jarenlab.jobs import Jobs, VirtualClock, views


def test_the_dashboard_shows_counts_throughput_and_failures(jobs: Jobs, clock: VirtualClock) -> None:
    jobs.handler("ok")(lambda p, c: p)
    jobs.handler("bad", max_attempts=1)(lambda p, c: (_ for _ in ()).throw(ValueError(f"bad <{p}>")))
    dash = jobs.widget(refresh=None)
    assert dash.counts["pending"] == 0 and "no recent failures" in dash.failures_view.value
    jobs.enqueue_many(
        [{"kind": "ok", "payload": n} for n in range(8)] + [{"kind": "bad", "payload": 1, "id": "b1"}]
    )
    jobs.enqueue("ok", None, delay=100)
    dash.refresh()
    assert dash.counts["pending"] == 10 and "<b>10</b>" in dash.counts_view.value
    jobs.run_until_idle(progress=False)
    clock.advance(3)
    dash.refresh()
    assert dash.counts == {"pending": 1, "leased": 0, "failed": 0, "done": 8, "dead": 1, "cancelled": 0}
    assert dash.rate == 3.0 and "3.0/s" in dash.counts_view.value
    assert "b1" in dash.failures_view.value and "bad &lt;1&gt;" in dash.failures_view.value
    dash.button.click()
    assert dash.rate is None  # no virtual time passed between the two samples
    dash.close()


def test_a_refreshing_dashboard_stops_with_the_store(store: jl.Store) -> None:
    dash = store.jobs.widget(refresh=0.01)
    store.close()
    assert dash._stop.is_set()


def test_views_are_pure() -> None:
    assert views.throughput(None, (1.0, 5)) is None
    assert views.throughput((1.0, 5), (1.0, 9)) is None
    assert views.throughput((0.0, 5), (4.0, 13)) == 2.0
    assert list(views.counts_by_state([])) == ["pending", "leased", "failed", "done", "dead", "cancelled"]
    html = views.failures_html([{"id": "<x>", "kind": "k", "state": "dead", "attempts": 5, "max_attempts": 5,
                                 "last_error": "E: <script>"}])  # fmt: skip
    assert "&lt;x&gt;" in html and "<script>" not in html and "5/5" in html
