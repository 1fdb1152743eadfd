"""The live-windows tutorial in a real JupyterLab under a real headless Chromium.

One JupyterLab server and one browser for the whole file (all browser tests live in this file, so
``--dist loadfile`` keeps them on one worker, in order). The tutorial (a copy, in the server's own
root) runs cell by cell through JupyterLab's own commands; then the page's live table is compared
with the kernel's ``live.rows`` after a write from the kernel, after a write from another process
(a real subprocess writing to the same store file), after moving the bound dropdown and slider
in the page, and after saving and reloading the page; the closing cells run last and the table
must say ``closed``. Any console error or uncaught page error fails the test that caused it.

Without Playwright, JupyterLab or a Chromium binary the tests skip, saying which is missing;
with ``JARENLAB_REQUIRE_BROWSER=1`` (CI) they fail instead.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.jobs.test_widget import shown

from .lab import PAGE_HELPERS, Lab, Notebook, chromium, find_browser

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = "03_live_windows.ipynb"
TABLE_CELL = "table = live.widget()"  # the cell whose output holds the table and its controls
CLOSING = "## Closing"  # the tutorial's last section: it closes the query and the store

pytestmark = pytest.mark.slow


def _browser_or_skip() -> str:
    path, missing = find_browser()
    if path is None:
        if os.environ.get("JARENLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"JARENLAB_REQUIRE_BROWSER=1 and {missing}", pytrace=False)
        pytest.skip(f"no real browser here: {missing}")
    return path


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Any]]:
    """One JupyterLab server (over a copy of the tutorial) and one headless Chromium for the run."""
    path = _browser_or_skip()
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(REPO / "notebooks" / TUTORIAL, root / TUTORIAL)
    server = Lab(root)
    try:
        with chromium(path) as browser:
            yield server, browser
    finally:
        server.stop()


@pytest.fixture(scope="session")
def tutorial(lab: tuple[Lab, Any]) -> Iterator[Notebook]:
    """The tutorial open in JupyterLab, every cell above its closing section run."""
    server, browser = lab
    nb = Notebook(browser, server, TUTORIAL)
    nb.run_above(CLOSING)
    yield nb
    nb.close()


@pytest.fixture
def nb(tutorial: Notebook) -> Iterator[Notebook]:
    """The tutorial; the test fails if the page logged an error while it ran."""
    tutorial.console_errors.clear()
    yield tutorial
    assert tutorial.console_errors == []


def kernel_view(nb: Notebook) -> dict[str, Any]:
    return dict(nb.kernel_json('{"rows": live.rows, "externals": live.externals, "closed": live.closed}'))


def same_table(nb: Notebook) -> dict[str, Any] | None:
    """The kernel's view when the page's table shows exactly the kernel's rows, else None."""
    kernel = kernel_view(nb)
    page = nb.table(TABLE_CELL)
    if page is None or page["state"] is None:
        return None
    state = page["state"]
    cols = state["columns"]
    want = [[row.get(c) for c in cols] for row in kernel["rows"]]
    if state["rows"] != want or len(state["keys"]) != len(want):
        return None
    # every row is drawn (the window is small), in the model's order, with its values
    if [r["key"] for r in page["rendered"]] != [str(k) for k in state["keys"]]:
        return None
    for row, drawn in zip(kernel["rows"], page["rendered"]):
        if row["carrier"] not in drawn["cells"] or row["dest"] not in drawn["cells"]:
            return None
    return kernel


def wait_same(nb: Notebook, what: str) -> dict[str, Any]:
    return dict(
        nb.wait_for(lambda: same_table(nb), what=f"the page's table to show the kernel's rows {what}")
    )


def test_the_tutorial_runs_in_jupyterlab_and_its_table_shows_the_kernels_rows(nb: Notebook) -> None:
    assert nb.output_errors() == []
    kernel = wait_same(nb, "after running the tutorial")
    assert kernel["externals"] == {"origin": "LGA", "min_delay": 800}  # the cells set the controls
    assert 0 < len(kernel["rows"]) <= 8
    page = nb.table(TABLE_CELL)
    assert page is not None
    assert page["state"]["status"] == "live"
    assert page["status"].startswith("live")
    assert f"{len(kernel['rows'])} rows" in page["status"]
    # the static copy (for readers without a kernel) is in the cell's outputs, hidden by the view
    copy = static_copies(nb, TABLE_CELL)
    assert len(copy) == 1 and not copy[0]["shown"] and "rows" in copy[0]["text"]


def status_age(nb: Notebook) -> float:
    page = nb.table(TABLE_CELL)
    assert page is not None
    found = re.search(r"updated ([0-9.]+) s ago", page["status"])
    assert found, page["status"]
    return float(found.group(1))


def test_a_write_from_the_kernel_reaches_the_table(nb: Notebook) -> None:
    nb.exec(
        'late = flights.insert({**flights.get(1), "origin": "LGA", "carrier": "WN", "flight": 9101, '
        '"dest": "MDW", "dep_delay": 1290})'
    )
    kernel = wait_same(nb, "after an insert from the kernel")
    assert kernel["rows"][0]["flight"] == 9101
    # the status line tells the real age of the last change, and it ticks
    first = status_age(nb)
    time.sleep(2.2)
    assert status_age(nb) >= first + 1.0
    nb.exec("flights.delete(late)")
    kernel = wait_same(nb, "after a delete from the kernel")
    assert 9101 not in [r["flight"] for r in kernel["rows"]]


WRITER = """
import sys
import jarenlab as jl

store = jl.open(sys.argv[1])
flights = store["flights"]
key = flights.insert({**flights.get(1), "origin": "LGA", "carrier": "UA", "flight": 9202, "dest": "ORD",
                      "dep_delay": 1250})
print(key)
store.close()
"""


def test_a_write_from_another_process_reaches_the_table(nb: Notebook) -> None:
    path = nb.kernel_json("store.path")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", WRITER, path], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    key = json.loads(done.stdout)
    kernel = wait_same(nb, "after an insert from another process")
    assert kernel["rows"][0]["flight"] == 9202
    nb.exec(f"flights.delete({key!r})")
    kernel = wait_same(nb, "after deleting the other process's row")
    assert 9202 not in [r["flight"] for r in kernel["rows"]]


def test_the_bound_dropdown_and_slider_drive_the_table(nb: Notebook) -> None:
    cell = nb.page.locator(".jp-Cell", has_text=TABLE_CELL)
    before = kernel_view(nb)["rows"]

    cell.locator(".widget-dropdown select").select_option("JFK")
    kernel = wait_same(nb, "after choosing JFK in the dropdown")
    assert kernel["externals"]["origin"] == "JFK"
    assert kernel["rows"] != before

    handle = cell.locator(".widget-slider .noUi-handle")
    handle.focus()
    for _ in range(3):
        handle.press("ArrowLeft")
    nb.wait_for(lambda: kernel_view(nb)["externals"]["min_delay"] == 770, what="the slider's arrow keys")
    wait_same(nb, "after moving the slider by keyboard")

    box = handle.bounding_box()
    assert box is not None
    nb.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    nb.page.mouse.down()
    nb.page.mouse.move(box["x"] + box["width"] / 2 - 40, box["y"] + box["height"] / 2, steps=5)
    nb.page.mouse.up()
    dragged = nb.wait_for(
        lambda: (v := kernel_view(nb)["externals"]["min_delay"]) < 770 and v, what="the dragged slider"
    )
    kernel = wait_same(nb, "after dragging the slider")
    assert all(r["delay"] >= dragged for r in kernel["rows"])

    readout = cell.locator(".widget-slider .widget-readout")
    readout.click()
    nb.page.keyboard.press("Control+A")
    nb.page.keyboard.type("1000")
    nb.page.keyboard.press("Enter")
    nb.wait_for(lambda: kernel_view(nb)["externals"]["min_delay"] == 1000, what="the typed slider value")
    kernel = wait_same(nb, "after typing a slider value")
    assert all(r["delay"] >= 1000 for r in kernel["rows"])


def test_a_header_click_sorts_the_page_and_a_third_click_restores_the_querys_order(nb: Notebook) -> None:
    kernel = wait_same(nb, "before sorting")
    header = nb.page.locator(".jp-Cell", has_text=TABLE_CELL).locator("table.jl-grid th[data-column=dest]")
    want = sorted(r["dest"] for r in kernel["rows"])

    def sorted_by_dest() -> dict[str, Any] | None:
        t = nb.table(TABLE_CELL)
        if not t or t["state"]["sort"] != {"column": "dest", "desc": False}:
            return None
        at = t["state"]["columns"].index("dest")
        drawn = [r["cells"][at] for r in t["rendered"]]  # drawn at the next animation frame
        return t if [r[at] for r in t["state"]["rows"]] == want and drawn == want else None

    header.click()
    nb.wait_for(sorted_by_dest, what="the table's model and its drawn rows to sort by dest")
    header.click()
    nb.wait_for(
        lambda: nb.table(TABLE_CELL)["state"]["sort"] == {"column": "dest", "desc": True}, what="desc"
    )
    header.click()
    nb.wait_for(lambda: nb.table(TABLE_CELL)["state"]["sort"] is None, what="the query's order back")
    assert kernel_view(nb)["rows"] == kernel["rows"]  # sorting is the page's alone
    wait_same(nb, "after clearing the sort")


def saved_html(nb: Notebook, needle: str) -> str:
    """Save the notebook; the ``text/html`` its cell holding ``needle`` has on disk.

    (A widget whose copy is refreshing makes the notebook dirty again at once: the save is
    awaited and seen on disk, not read from the page's dirty flag.)"""
    path = nb.lab.root / nb.name
    before = path.stat().st_mtime_ns
    nb.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    nb.wait_for(lambda: path.stat().st_mtime_ns != before, what="the notebook to save")
    saved = nbformat.read(path, as_version=4)
    cell = next(c for c in saved.cells if needle in c.source)
    return "".join(o.data["text/html"] for o in cell.outputs if "text/html" in o.get("data", {}))


def static_copies(nb: Notebook, needle: str) -> list[dict[str, Any]]:
    """The static copies in the outputs of the cell holding ``needle``: shown or not, their text."""
    return list(
        nb.js(
            """(t, needle) => [...t.cellOf(needle).node.querySelectorAll('[data-jl-static-for]')].map(
                 (e) => ({shown: e.getClientRects().length > 0, text: e.textContent}))""",
            needle,
        )
    )


def saved_flights(nb: Notebook) -> list[int]:
    """Save the notebook; the flights its table cell's static copy shows, in order."""
    html = saved_html(nb, TABLE_CELL)
    # the columns are carrier, flight, ...: the second cell of each row
    return [
        int(f)
        for f in re.findall(r"<tr data-key='\d+'><td[^>]*>[^<]*</td><td class='jl-num'[^>]*>(\d+)</td>", html)
    ]


def test_after_save_and_reload_the_page_shows_the_current_rows(nb: Notebook) -> None:
    # the saved output carries the LAST rows as static HTML (refreshed at most once a second)
    nb.exec(
        'top = flights.insert({**flights.get(1), "origin": live.externals["origin"], "flight": 9304, "dep_delay": 1400})'
    )
    kernel = wait_same(nb, "after an insert before saving")
    want = [r["flight"] for r in kernel["rows"]]
    assert want[0] == 9304
    nb.wait_for(lambda: saved_flights(nb) == want, timeout=10, what="the saved static copy to show the rows")
    nb.exec("flights.delete(top)")
    kernel = wait_same(nb, "after deleting that row")
    want = [r["flight"] for r in kernel["rows"]]
    nb.wait_for(lambda: saved_flights(nb) == want, timeout=10, what="the saved copy to follow the delete")

    nb.open(reload=True)
    kernel = wait_same(nb, "after reloading the page")
    page = nb.table(TABLE_CELL)
    assert page is not None and page["state"]["status"] == "live"
    assert page["state"]["age_s"] >= 0
    nb.exec('late = flights.insert({**flights.get(1), "origin": "JFK", "flight": 9303, "dep_delay": 1350})')
    kernel = wait_same(nb, "after a write following the reload")
    assert kernel["rows"][0]["flight"] == 9303
    nb.exec("flights.delete(late)")
    wait_same(nb, "after deleting that row")


def test_the_closing_cells_leave_the_table_closed_with_its_last_rows(nb: Notebook) -> None:
    last = kernel_view(nb)["rows"]
    nb.run_from(CLOSING)
    assert nb.output_errors() == []
    page = nb.wait_for(
        lambda: (t := nb.table(TABLE_CELL)) and t["state"]["status"] == "closed" and t,
        what="the table to say closed",
    )
    assert page["status"].startswith("closed")
    cols = page["state"]["columns"]
    assert page["state"]["rows"] == [[r.get(c) for c in cols] for r in last]
    # its bound controls say they no longer drive anything
    cell = nb.page.locator(".jp-Cell", has_text=TABLE_CELL)
    nb.wait_for(
        lambda: (
            cell.locator(".widget-dropdown select").is_disabled()
            and cell.locator(".widget-slider .widget-readout").get_attribute("contenteditable") == "false"
        ),
        what="the bound dropdown and slider to be disabled",
    )


DASHBOARD_CELL = "dash = jobs.widget(refresh=0.2)\ndash"
DASHBOARD = [
    """\
import jarenlab as jl

store = jl.open(model={"$model": "0.1", "collections": {
    "notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}}})
jobs = store.jobs


@jobs.handler("echo", max_attempts=1)
def echo(payload, ctx):
    if payload.get("fail"):
        raise ValueError(payload["fail"])
    return payload["n"]
""",
    DASHBOARD_CELL,
]
LONG_ID = "nightly-report-" + "x" * 60
LONG_ERROR = "the upstream service answered 503 " * 20

#: The dashboard as the page shows it: its counts strip, the failures' id and error cells.
READ_DASHBOARD = """() => {
  const root = document.querySelector('[data-jl-widget="jobs"]');
  if (!root) return null;
  const counts = {};
  for (const td of root.querySelectorAll('td')) {
    const b = td.querySelector(':scope > b'), small = td.querySelector(':scope > small');
    if (b && small && small.textContent !== 'settled') counts[small.textContent] = Number(b.textContent.replace(/,/g, ''));
  }
  const idCell = root.querySelector('td.jl-id');
  const id = idCell && (idCell.querySelector('[title]') || idCell);
  const err = root.querySelector('td.jl-err');
  return {
    counts, text: root.textContent, live: !root.querySelector('button').disabled,
    id: id && {title: id.title || id.textContent,
          lines: new Set([...id.getClientRects()].map((r) => Math.round(r.top))).size},
    err: err && {text: err.textContent, title: err.querySelector('[title]') ? err.querySelector('[title]').title : '',
                 overflows: err.scrollWidth > err.clientWidth + 1, lines: err.getBoundingClientRect().height},
  };
}"""


def test_the_jobs_dashboard_follows_the_queue_and_keeps_its_last_view_when_the_store_closes(
    lab: tuple[Lab, Any],
) -> None:
    server, browser = lab
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    book.cells = [nbformat.v4.new_code_cell(src) for src in DASHBOARD]
    nbformat.write(book, server.root / "dashboard.ipynb")
    nb = Notebook(browser, server, "dashboard.ipynb")
    try:
        nb.run_from("import jarenlab")
        assert nb.output_errors() == []
        nb.wait_for(lambda: nb.page.evaluate(READ_DASHBOARD), what="the dashboard")

        nb.exec(
            "for n in range(5):\n    jobs.enqueue('echo', {'n': n})\n"
            f"jobs.enqueue('echo', {{'fail': {LONG_ERROR!r}}}, id={LONG_ID!r})\n"
            "jobs.run_until_idle(progress=False)"
        )
        kernel = nb.kernel_json("jobs.counts()")
        assert kernel["done"] == 5 and kernel["dead"] == 1
        page = nb.wait_for(
            lambda: (d := nb.page.evaluate(READ_DASHBOARD)) and d["counts"] == kernel and d["err"] and d,
            what="the dashboard to show the kernel's counts and the failure",
        )
        assert page["id"]["title"] == LONG_ID  # cut on screen, whole in its tooltip
        assert page["id"]["lines"] == 1  # the id stays on one line
        assert LONG_ERROR[:100] in page["err"]["text"]  # cut on screen, whole in its tooltip
        assert LONG_ERROR.strip() in page["err"]["title"]
        assert not page["err"]["overflows"]  # the error wraps instead of running out of its cell
        assert page["err"]["lines"] > 30  # over several lines
        # the static copy (for readers without a kernel) is hidden by the view, and the saved
        # notebook's copy shows the view as it is now (refreshed at most once a second)
        copy = static_copies(nb, DASHBOARD_CELL)
        assert len(copy) == 1 and not copy[0]["shown"]
        nb.wait_for(
            lambda: shown(saved_html(nb, DASHBOARD_CELL)) == kernel,
            timeout=10,
            what="the saved static copy to show the kernel's counts",
        )

        nb.exec("store.close()")
        closed = nb.wait_for(
            lambda: (d := nb.page.evaluate(READ_DASHBOARD)) and not d["live"] and d,
            what="the dashboard to say the store closed",
        )
        assert closed["counts"] == kernel  # the last view stays
        assert "store closed" in closed["text"]
        saved = saved_html(nb, DASHBOARD_CELL)
        assert "store closed" in saved and shown(saved) == kernel  # the last view is saved
        nb.exec("dash.close()")  # the widget goes: its copy shows again, with the last view
        copy = nb.wait_for(
            lambda: (c := static_copies(nb, DASHBOARD_CELL)) and c[0]["shown"] and c,
            what="the dashboard's copy to show once the widget closed",
        )
        assert "store closed" in copy[0]["text"]
        assert nb.console_errors == []
    finally:
        nb.close()


NOTES_CELL = "table = live.widget()\ntable"
NOTES = [
    """\
import os
import jarenlab as jl

store = jl.open(model={"$model": "0.1", "collections": {
    "notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}}})
notes = store["notes"]
for i in range(5):
    notes.insert({"n": i, "text": f"note {i}"})
live = notes.live({"$for": {"r": "$[*]"}, "$return": "$r"})
""",
    NOTES_CELL,
]

#: The widget view and the static copy of the notes table: shown or not, their text, the copy's cells.
READ_NOTES = """() => {
  const shown = (e) => !!e && e.getClientRects().length > 0;
  // The notebook on screen (a reload may restore other notebooks' tabs beside it); a page that is
  // not JupyterLab (an HTML export) is read whole.
  const root = [...document.querySelectorAll('.jp-NotebookPanel')]
    .find((p) => !p.classList.contains('lm-mod-hidden')) || document;
  const view = root.querySelector('[data-jl-widget="live-table"]');
  const copy = root.querySelector('[data-jl-static-for]');
  const inner = copy && copy.querySelector('[data-jl-static]');
  return {
    view: view && {shown: shown(view), status: view.querySelector('.jl-status').textContent,
                   state: view.jlState && JSON.parse(JSON.stringify(view.jlState))},
    copy: copy && {shown: shown(copy), text: copy.textContent, taken: inner && inner.dataset.jlTaken,
                   status: copy.querySelector('.jl-status').textContent,
                   columns: [...copy.querySelectorAll('th')].map((th) => th.textContent),
                   rows: [...copy.querySelectorAll('tbody tr')].map(
                     (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
                   outline: getComputedStyle(copy).outlineStyle,
                   mark: getComputedStyle(copy, '::before').content},
  };
}"""


def write_notebook(root: Path, name: str, cells: list[str]) -> Path:
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    book.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    nbformat.write(book, root / name)
    return root / name


@pytest.mark.parametrize("reachable", [True, False], ids=["scripts-reachable", "scripts-blocked"])
def test_an_html_export_shows_the_saved_snapshot_with_or_without_the_widget_scripts(
    lab: tuple[Lab, Any], tmp_path: Path, reachable: bool
) -> None:
    """nbconvert runs the notebook (saving the widget state) and exports it; opened with no kernel,
    the page shows the static snapshot (its columns, rows, the time it was taken, "not live"),
    whether the widget scripts load (the view then says there is no kernel and hides nothing) or not."""
    from .export import export_html, open_export, widget_scripts

    # The blocked page needs no scripts; the reachable one needs the npm packages, which come from
    # outside the Python registry: where they cannot be fetched the test says so and skips.
    scripts = widget_scripts(REPO / ".venv" / "widget-scripts") if reachable else {}
    if isinstance(scripts, str):
        _browser_or_skip()
        pytest.skip(scripts)
    _, browser = lab
    before = time.time()
    html = export_html(write_notebook(tmp_path, "notes.ipynb", NOTES))
    after = time.time()
    page, served = open_export(browser, html, scripts, reachable=reachable)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        if reachable:  # the widget manager and anywidget load, and the table's module runs
            seen = page.wait_for_function(
                f"() => ({READ_NOTES})().view && ({READ_NOTES})()", timeout=60_000
            ).json_value()
            assert any("/anywidget@" in url for url in served), served
            assert seen["view"]["status"].startswith("not live · no kernel")
            assert seen["view"]["state"]["status"] == "no kernel"
        else:
            page.wait_for_timeout(3000)  # time for scripts that would have come
            seen = page.evaluate(READ_NOTES)
            assert seen["view"] is None and served == []
        copy = seen["copy"]
        assert copy["shown"], copy  # the snapshot shows, whatever the scripts did
        assert copy["columns"] == ["n", "text"]
        assert copy["rows"] == [[str(i), f"note {i}"] for i in range(5)]
        assert copy["status"].startswith("not live · snapshot of ") and "5 rows" in copy["status"]
        taken = dt.datetime.fromisoformat(copy["taken"]).timestamp()
        assert before - 1 <= taken <= after + 1
        assert dt.datetime.fromtimestamp(taken, dt.UTC).strftime("%H:%M:%S UTC") in copy["status"]
        assert errors == []
        page.screenshot(path=str(tmp_path / f"export-{'reachable' if reachable else 'blocked'}.png"))
    finally:
        page.context.close()


def test_a_killed_kernel_leaves_the_table_saying_kernel_disconnected(lab: tuple[Lab, Any]) -> None:
    """The kernel process is killed (SIGKILL): the table says "kernel disconnected" with the time
    of its last update, keeps its last rows, and its age stops; it stays so after the kernel restarts."""
    server, browser = lab
    write_notebook(server.root, "killed.ipynb", NOTES)
    nb = Notebook(browser, server, "killed.ipynb")
    try:
        nb.run_from("import os")
        nb.exec('notes.insert({"n": 5, "text": "late"})')
        page = nb.wait_for(
            lambda: (t := nb.table(NOTES_CELL)) and len(t["state"]["rows"]) == 6 and t, what="the six notes"
        )
        updated = page["state"]["updated_at"] / 1000
        assert abs(updated - time.time()) < 30
        pid = nb.kernel_json("os.getpid()")
        os.kill(pid, signal.SIGKILL)
        lost = nb.wait_for(
            lambda: (t := nb.table(NOTES_CELL)) and t["state"]["status"] == "disconnected" and t,
            what="the table to say the kernel is gone",
        )
        stamp = dt.datetime.fromtimestamp(updated, dt.UTC).strftime("%H:%M:%S UTC")
        assert lost["status"].startswith(f"kernel disconnected · last update {stamp}"), lost["status"]
        assert "6 rows" in lost["status"] and len(lost["state"]["rows"]) == 6  # the last rows stay
        time.sleep(2.2)
        later = nb.table(NOTES_CELL)
        assert later is not None
        assert later["state"]["age_s"] == lost["state"]["age_s"]  # the age no longer ticks
        assert later["status"] == lost["status"]
        nb.wait_idle()  # the server restarted the kernel: a new one, which never had this table
        assert nb.table(NOTES_CELL)["state"]["status"] == "disconnected"
    finally:
        nb.close()


def test_after_a_reload_the_saved_copy_is_marked_stale_until_the_kernel_sends_the_rows(
    lab: tuple[Lab, Any],
) -> None:
    """Reloaded, the page first shows the copy saved with the notebook, marked stale; once the
    kernel has sent the view its rows (held back 4 s here), the view replaces it."""
    server, browser = lab
    write_notebook(server.root, "reload.ipynb", NOTES)
    nb = Notebook(browser, server, "reload.ipynb")
    try:
        nb.run_from("import os")
        nb.wait_for(lambda: (t := nb.table(NOTES_CELL)) and len(t["state"]["rows"]) == 5, what="the notes")
        saved_html(nb, NOTES_CELL)
        nb.exec('notes.insert({"n": 5, "text": "after saving"})')  # the kernel moves on
        nb.exec(
            "import time\n_snapshot = table.snapshot_message\n"
            "table.snapshot_message = lambda: (time.sleep(4), _snapshot())[1]"
        )
        # the notebook's own address again (resetting the layout: a plain reload restores the earlier
        # tests' notebooks beside it, and one of them may come up in front)
        nb.page.goto(nb.lab.notebook_url(nb.name))
        stale = nb.wait_for(
            lambda: (
                (s := nb.page.evaluate(READ_NOTES))
                and s["copy"]
                and s["view"]
                and s["copy"]["shown"]
                # a reload restores the earlier tests' notebooks too: wait for this one's table
                and "text" in s["copy"]["columns"]
                and s
            ),
            timeout=30,
            what="the restored table with its saved copy",
        )
        assert "stale" in stale["copy"]["mark"] and stale["copy"]["outline"] == "dashed", stale["copy"]
        assert len(stale["copy"]["rows"]) == 5  # the saved rows, not the kernel's
        assert stale["view"]["state"]["rows"] == []  # the view has nothing from the kernel yet
        current = nb.wait_for(
            lambda: (s := nb.page.evaluate(READ_NOTES)) and len(s["view"]["state"]["rows"]) == 6 and s,
            timeout=30,
            what="the kernel's rows after the reload",
        )
        assert not current["copy"]["shown"]  # replaced by the view
        assert current["view"]["state"]["status"] == "live"
        nb.page.evaluate(PAGE_HELPERS)
        nb.wait_idle()
        nb.exec("table.snapshot_message = _snapshot")
    finally:
        nb.close()


EXPLAIN_CELL = "plans = [t.where(it.a == 7).explain(), t.where(it.b == 'x').explain()]"
EXPLAIN = [
    """\
import jarenlab as jl
from IPython.display import display
from jarenlab import it

store = jl.open(model={"$model": "0.1", "collections": {"t": {
    "schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}},
    "key": None, "identity": "integer", "indexes": [{"name": "by_a", "path": "$.a"}]}}})
t = store["t"]
t.insert_many([{"a": i, "b": str(i)} for i in range(200)], progress=False)
""",
    EXPLAIN_CELL + "\nfor p in plans:\n    display(p)",
]

#: Every box of the explain trees: its kinds, the contrast of its title and lines against what is
#: behind them (WCAG), that background's luminance; and every list item's marker.
READ_TREES = r"""() => {
  // rgb(r, g, b), rgba(r, g, b, a), or color(srgb r g b / a) (what color-mix() computes to)
  const rgba = (s) => {
    const m = s.replace('srgb', '').match(/[\d.]+/g).map(Number);
    const k = s.startsWith('color(') ? 255 : 1;
    return [m[0] * k, m[1] * k, m[2] * k, m.length > 3 ? m[3] : 1];
  };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let out = [255, 255, 255];
    for (const [r, g, b, a] of layers.reverse()) out = [r * a + out[0] * (1 - a), g * a + out[1] * (1 - a), b * a + out[2] * (1 - a)];
    return out;
  };
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const contrast = (fg, bg) => { const a = lum(fg) + 0.05, b = lum(bg) + 0.05; return a > b ? a / b : b / a; };
  const blend = (el) => { const c = rgba(getComputedStyle(el).color), bg = background(el);
    return [c[0] * c[3] + bg[0] * (1 - c[3]), c[1] * c[3] + bg[1] * (1 - c[3]), c[2] * c[3] + bg[2] * (1 - c[3])]; };
  return {
    theme: document.body.dataset.jpThemeName,
    nodes: [...document.querySelectorAll('.jl-tree .jl-node')].map((n) => ({
      kind: n.className,
      title: contrast(blend(n.querySelector('b')), background(n)),
      lines: [...n.querySelectorAll('div, small')].map((d) => contrast(blend(d), background(d))),
      luminance: lum(background(n)),
    })),
    markers: [...document.querySelectorAll('.jl-tree li')].map((li) => getComputedStyle(li).listStyleType),
    bullets: [...document.querySelectorAll('.jl-tree')].map((ul) => getComputedStyle(ul).listStyleType),
  };
}"""


def test_the_explain_tree_reads_in_the_light_and_the_dark_theme(lab: tuple[Lab, Any], tmp_path: Path) -> None:
    """Two plans (an index search, a full scan) under each JupyterLab theme: every box's text has a
    contrast of at least 4.5 against its own background (WCAG AA), the boxes follow the theme (light
    boxes on the light theme, dark on the dark), and no list item shows a bullet. Screenshots of each
    theme are kept beside the test's files."""
    server, browser = lab
    write_notebook(server.root, "explain.ipynb", EXPLAIN)
    nb = Notebook(browser, server, "explain.ipynb")
    change = "(t, theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})"
    try:
        nb.run_from("import jarenlab")
        assert nb.output_errors() == []
        for theme, dark in (("JupyterLab Dark", True), ("JupyterLab Light", False)):
            nb.js(change, theme)
            nb.page.wait_for_function(
                f"() => document.body.dataset.jpThemeName === {theme!r} && document.body.dataset.jpThemeLight === {str(not dark).lower()!r}"
            )
            # the theme's style sheet applied: the page's own background is light or dark
            nb.page.wait_for_function(
                "(dark) => { const m = getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor"
                ".match(/[\\d.]+/g).map(Number); const l = (m[0] + m[1] + m[2]) / 765; return dark ? l < 0.3 : l > 0.7; }",
                arg=dark,
            )
            trees = nb.page.evaluate(READ_TREES)
            kinds = " ".join(n["kind"] for n in trees["nodes"])
            assert "jl-k-index" in kinds and "jl-k-scan" in kinds, kinds
            for node in trees["nodes"]:
                assert node["title"] >= 4.5, (theme, node)
                assert all(c >= 4.5 for c in node["lines"]), (theme, node)
                assert (node["luminance"] < 0.2) if dark else (node["luminance"] > 0.5), (theme, node)
            assert set(trees["markers"]) == {"none"} and set(trees["bullets"]) == {"none"}, trees
            shot = tmp_path / f"explain-{'dark' if dark else 'light'}.png"
            nb.page.locator(".jp-Cell", has_text=EXPLAIN_CELL).screenshot(path=str(shot))
            assert shot.stat().st_size > 1000
        assert nb.console_errors == []
    finally:
        nb.js(change, "JupyterLab Light")
        nb.close()
