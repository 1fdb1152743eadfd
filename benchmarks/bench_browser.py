"""The live table in a real browser: JupyterLab 4 under headless Chromium, through Playwright.

For a live window of N rows (N = 1,000 and 10,000, over 2N documents; ``order_by(score desc)``,
``take(N)``) shown with ``live.widget()`` in a notebook, it measures what a user sees:

- **first render**: from running the widget's cell to every row in the page's table (ms), with the
  websocket messages and bytes the page received meanwhile;
- **render again**: the same cell run once more at the end, in the same page: a table's own cost once
  the page has paid its one-time costs (the widget's module, and JupyterLab's LaTeX typesetter, which
  it loads for the first HTML output on a page: here the table's static copy);
- **widget models**: ipywidgets models the kernel holds for the table (after creating it, and after
  the burst: a model per removed row that is never closed is a leak);
- **burst**: 1,000 single-row commits (each a ``patch`` of a random document's score, so rows move,
  enter and leave), then how long after the kernel finished the page's table shows the kernel's rows
  (the last change to the table's DOM), and the long tasks (``PerformanceObserver('longtask')``)
  over 100 ms from the burst's start to the table settling;
- **DOM nodes** in the table, and in the whole page;
- **scrolling**: 40 wheel steps of 300 px over the table, the frame gaps meanwhile (p95, max) and the
  long tasks over 100 ms;
- **idle**: the long tasks over 100 ms in 10 s when nothing changes, the floor that a busy machine
  alone produces (a long task is wall time: a renderer waiting for a CPU counts too);
- **the page's work** during the burst and the scrolling, from Chromium's own counters
  (``Performance.getMetrics``): layouts and style recalculations (counts, which a busy machine does
  not change) and the time spent in them and in script.

Bars (from the DESIGN's widget goals): first render 1 s, a handful of models (10), on screen 0.3 s
after the burst, no long task over 100 ms, 2,000 DOM nodes. The table is found by its contract
(``[data-jl-widget="live-table"]`` with ``root.jlState``), or, for the widget of one ipywidgets
``HTML`` per row, by a class the benchmark adds to it. Needs Playwright, JupyterLab and a Chromium
binary (Debian's ``chromium``; ``$JARENLAB_CHROMIUM`` to choose another), as the browser tests do.

    .venv/bin/python benchmarks/bench_browser.py [--sizes 1000,10000] [--burst 1000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the browser tests' lab

import nbformat
from browser.lab import Lab, Notebook, chromium, find_browser
from common import print_machine

#: Seconds of doing nothing, to count the long tasks a busy machine causes on its own (the noise floor).
IDLE_S = 10.0
#: Chromium's page counters the benchmark reports for the burst and the scrolling (durations in s).
WORK = ("LayoutCount", "RecalcStyleCount", "LayoutDuration", "RecalcStyleDuration", "ScriptDuration")
BARS = {"render_ms": 1000, "models": 10, "lag_ms": 300, "longtasks": 0, "nodes": 2000}

SETUP = """\
import json, random, time
import ipywidgets
import ipywidgets.widgets.widget as _ipyw
import jarenlab as jl
from jarenlab import it

N = {n}
MODEL = {{"$model": "0.1", "collections": {{"items": {{"schema": {{"type": "object", "required": ["id"], "properties": {{
    "id": {{"type": "integer"}}, "score": {{"type": "integer"}}, "name": {{"type": "string"}},
    "day": {{"type": "string"}}}}}}, "key": "/id"}}}}}}
store = jl.open(model=MODEL)
items = store["items"]
rng = random.Random(7)
items.insert_many([{{"id": i, "score": rng.randrange(10**6), "name": f"item number {{i}}",
                    "day": f"2013-{{1 + i % 12:02d}}-{{1 + i % 28:02d}}"}} for i in range(2 * N)], progress=False)
live = (items.order_by(it.score.desc(), it.id).take(N)
        .select({{"id": it.id, "score": it.score, "name": it.name, "day": it.day}}).live())
models_before = len(_ipyw._instances)
print(live.mode, len(live.rows))
"""

RENDER = """\
table = live.widget()
if hasattr(table, "add_class"):
    table.add_class("jl-bench-table")
table
"""

BURST = """\
t_start = time.time()
for _ in range({burst}):
    items.patch(rng.randrange(2 * N), {{"score": rng.randrange(10**6)}})
t_end = time.time()
print(json.dumps({{"start": t_start, "end": t_end, "ids": [r["id"] for r in live.rows],
                  "models": len(_ipyw._instances) - models_before}}))
"""

#: The page side of the benchmark: find the table (new contract or the one-widget-per-row table),
#: read the ids it holds and shows, watch its DOM, record long tasks and animation frames.
PAGE = r"""
() => {
  if (window.jlBench) return;
  const now = () => performance.timeOrigin + performance.now();
  const longtasks = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) longtasks.push({at: performance.timeOrigin + e.startTime, ms: e.duration});
  }).observe({type: 'longtask', buffered: true});
  const num = (s) => Number(String(s).replace(/[^0-9.-]/g, ''));
  const find = () => {
    const nu = document.querySelector('[data-jl-widget="live-table"]');
    if (nu) return {kind: 'anywidget', root: nu};
    const old = document.querySelector('.jl-bench-table');
    if (old) return {kind: 'ipywidgets rows', root: old, body: old.querySelector(':scope > .widget-vbox')};
    return null;
  };
  const ids = () => {
    const t = find();
    if (!t) return null;
    if (t.kind === 'anywidget') {
      const st = t.root.jlState;
      const col = st ? Math.max(st.columns.indexOf('id'), 0) : 0;
      return {
        model: st ? st.rows.map((r) => r[col]) : null,
        shown: [...t.root.querySelectorAll('table.jl-grid tr[data-key]')].map(
          (tr) => num(tr.querySelectorAll('td')[col].textContent)),
      };
    }
    const rows = t.body ? [...t.body.children] : [];
    return {model: null, shown: rows.map((r) => num((r.querySelector('.widget-html-content > div > div') || r).textContent))};
  };
  const matches = (want) => {
    const got = ids();
    if (!got || got.shown.length === 0) return false;
    if (got.model === null) return got.shown.length === want.length && got.shown.every((v, i) => v === want[i]);
    if (got.model.length !== want.length || !got.model.every((v, i) => v === want[i])) return false;
    const at = want.indexOf(got.shown[0]);
    return at >= 0 && got.shown.every((v, i) => v === want[at + i]);
  };
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  let last = 0;
  let observer = null;
  let frames = null;
  window.jlBench = {
    find: () => { const t = find(); return t && t.kind; },
    ids, matches, longtasks,
    nodes: () => {
      const t = find();
      return {table: t ? t.root.getElementsByTagName('*').length : 0, page: document.getElementsByTagName('*').length};
    },
    render: async (needle, n, timeoutMs) => {
      const app = window.jupyterapp;
      const panel = window.jlTest.panel();
      const cell = window.jlTest.cellOf(needle);
      panel.content.activeCellIndex = panel.content.widgets.indexOf(cell);
      const t0 = performance.now();
      app.commands.execute('notebook:run-cell');
      for (;;) {
        await frame();
        const got = ids();
        const full = got && (got.model ? got.model.length === n && got.shown.length > 0 : got.shown.length === n);
        if (full) { await frame(); return performance.now() - t0; }
        if (performance.now() - t0 > timeoutMs) return null;
      }
    },
    watch: () => {
      const t = find();
      const skip = t.kind === 'anywidget' ? t.root.querySelector('.jl-status') : t.root.children[0];
      last = 0;
      if (observer) observer.disconnect();
      observer = new MutationObserver((ms) => {
        if (ms.some((m) => !(skip && skip.contains(m.target)))) last = now();
      });
      observer.observe(t.root, {subtree: true, childList: true, characterData: true, attributes: true});
    },
    lastMutation: () => last,
    now,
    framesStart: () => {
      frames = [];
      const loop = (ts) => { if (frames) { frames.push(ts); requestAnimationFrame(loop); } };
      requestAnimationFrame(loop);
    },
    framesStop: () => { const f = frames; frames = null; return f.slice(1).map((t, i) => t - f[i]); },
    center: () => {
      const r = find().root.getBoundingClientRect();
      const top = Math.max(r.top, 0), bottom = Math.min(r.bottom, window.innerHeight);
      return {x: r.left + r.width / 2, y: (top + bottom) / 2};
    },
  };
}
"""


def notebook_for(n: int, burst: int) -> Any:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(SETUP.format(n=n)), nbformat.v4.new_code_cell(RENDER)]
    return nb


def long_over(tasks: list[dict[str, float]], start: float, end: float, ms: float = 100) -> list[float]:
    return [t["ms"] for t in tasks if t["ms"] > ms and start <= t["at"] <= end]


class PageWork:
    """Chromium's performance counters for one page (through the DevTools protocol)."""

    def __init__(self, page: Any) -> None:
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Performance.enable")

    def read(self) -> dict[str, float]:
        return {m["name"]: m["value"] for m in self.cdp.send("Performance.getMetrics")["metrics"]}

    @staticmethod
    def since(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        return {k: after.get(k, 0.0) - before.get(k, 0.0) for k in WORK}


def stage(n: int, what: str, t0: float = time.monotonic()) -> None:
    print(f"  [{time.monotonic() - t0:7.1f} s] {n:,} rows: {what}", file=sys.stderr, flush=True)


def measure_size(browser: Any, n: int, burst: int, timeout: float) -> dict[str, Any]:
    """Every figure for one window size, in a fresh JupyterLab (its own server and kernel)."""
    out: dict[str, Any] = {"rows": n}
    stage(n, "starting JupyterLab")
    with tempfile.TemporaryDirectory(prefix="jarenlab-bench-lab-") as tmp:
        root = Path(tmp)
        name = f"bench_{n}.ipynb"
        nbformat.write(notebook_for(n, burst), root / name)
        lab = Lab(root)
        try:
            nb = Notebook(browser, lab, name, timeout=timeout)
            page = nb.page
            page.evaluate(PAGE)
            work = PageWork(page)
            nb.run_above("table = live.widget()")
            if nb.output_errors():
                raise RuntimeError(f"the benchmark's setup cell failed: {nb.output_errors()}")
            stage(n, "set up; rendering the table")
            received = nb.received
            received.update(frames=0, bytes=0)
            ms = page.evaluate(
                "([n, t]) => window.jlBench.render('table = live.widget()', n, t)", [n, timeout * 1000]
            )
            out["render_ms"] = ms
            out["render_ws_messages"] = received["frames"]
            out["render_ws_mb"] = received["bytes"] / 1e6
            out["kind"] = page.evaluate("() => window.jlBench.find()")
            nb.wait_idle()
            out["models"] = nb.kernel_json("len(_ipyw._instances) - models_before")
            if ms is None:
                out["note"] = f"the table did not render within {timeout:.0f} s"
                return out
            out["nodes"] = page.evaluate("() => window.jlBench.nodes()")

            stage(n, f"rendered in {ms:.0f} ms; scrolling")
            center = page.evaluate("() => window.jlBench.center()")
            page.mouse.move(center["x"], center["y"])
            s0 = page.evaluate("() => window.jlBench.now()")
            w0 = work.read()
            page.evaluate("() => window.jlBench.framesStart()")
            for _ in range(40):
                page.mouse.wheel(0, 300)
                time.sleep(0.025)
            time.sleep(0.3)
            gaps = page.evaluate("() => window.jlBench.framesStop()")
            out["scroll_work"] = PageWork.since(w0, work.read())
            s1 = page.evaluate("() => window.jlBench.now()")
            gaps = sorted(gaps) or [0.0]
            out["scroll_frames"] = len(gaps)
            out["scroll_p95_ms"] = gaps[int(0.95 * (len(gaps) - 1))]
            out["scroll_max_ms"] = gaps[-1]
            scroll_long = long_over(page.evaluate("() => window.jlBench.longtasks"), s0, s1)
            out["scroll_longtasks"] = len(scroll_long)
            stage(n, "idle (the noise floor)")
            i0 = page.evaluate("() => window.jlBench.now()")
            time.sleep(IDLE_S)
            i1 = page.evaluate("() => window.jlBench.now()")
            idle_long = long_over(page.evaluate("() => window.jlBench.longtasks"), i0, i1)
            out["idle_longtasks"] = len(idle_long)
            out["idle_longest_ms"] = max(idle_long, default=0.0)
            stage(n, "the burst")
            page.evaluate("() => window.jlBench.watch()")
            t0 = page.evaluate("() => window.jlBench.now()")
            w0 = work.read()
            try:
                printed = nb.exec(BURST.format(burst=burst), timeout=timeout)
            except Exception as exc:  # the kernel hung or failed: say so, keep the other figures
                out["note"] = f"the burst did not finish: {str(exc).splitlines()[0]}"
                out["kernel_stderr"] = nb.stderr()
                return out
            res = json.loads(printed.strip().splitlines()[-1])
            stage(n, "burst done in the kernel; waiting for the page")
            out["burst_work"] = PageWork.since(w0, work.read())  # before the checks below read the page
            out["burst_kernel_s"] = res["end"] - res["start"]
            out["models_after_burst"] = res["models"]
            deadline = time.monotonic() + timeout
            while not page.evaluate("(ids) => window.jlBench.matches(ids)", res["ids"]):
                if time.monotonic() > deadline:
                    out["note"] = (
                        f"the table did not show the kernel's rows within {timeout:.0f} s of the burst"
                    )
                    return out
                time.sleep(0.05)
            time.sleep(1.0)  # quiet: nothing more should change
            last = page.evaluate("() => window.jlBench.lastMutation()")
            out["lag_ms"] = max(last - res["end"] * 1000, 0.0)
            tasks = page.evaluate("() => window.jlBench.longtasks")
            burst_long = long_over(tasks, t0, max(last, res["end"] * 1000))
            out["burst_longtasks"] = len(burst_long)
            out["burst_longest_ms"] = max(burst_long, default=0.0)
            out["nodes_after_burst"] = page.evaluate("() => window.jlBench.nodes()")

            stage(n, "rendering the table again (the page's one-time costs paid)")
            nb.exec("table.close()")
            out["render_again_ms"] = page.evaluate(
                "([n, t]) => window.jlBench.render('table = live.widget()', n, t)", [n, timeout * 1000]
            )
            nb.wait_idle()

            out["console_errors"] = nb.console_errors
            out["kernel_stderr"] = nb.stderr()
            nb.close()
        finally:
            lab.stop()
    return out


def fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}{unit}" if v >= 100 else f"{v:,.2f}{unit}"
    if isinstance(v, int):
        return f"{v:,}{unit}"
    return f"{v}{unit}"


def report(results: list[dict[str, Any]]) -> None:
    print(f"{'figure':<34}" + "".join(f"{r['rows']:>14,} rows" for r in results) + "   bar")
    lines = [
        ("widget", "kind", "", None),
        ("first render (ms)", "render_ms", "", BARS["render_ms"]),
        ("render again (ms)", "render_again_ms", "", BARS["render_ms"]),
        ("  websocket messages", "render_ws_messages", "", None),
        ("  websocket MB", "render_ws_mb", "", None),
        ("widget models", "models", "", BARS["models"]),
        ("widget models after the burst", "models_after_burst", "", BARS["models"]),
        ("burst: kernel time (s)", "burst_kernel_s", "", None),
        ("burst: on screen after (ms)", "lag_ms", "", BARS["lag_ms"]),
        ("burst: long tasks > 100 ms", "burst_longtasks", "", BARS["longtasks"]),
        ("burst: longest task (ms)", "burst_longest_ms", "", None),
        ("burst: page layouts", ("burst_work", "LayoutCount"), "", None),
        ("burst: page style recalcs", ("burst_work", "RecalcStyleCount"), "", None),
        ("burst: layout + style (s)", ("burst_work", "layout_style_s"), "", None),
        ("burst: script (s)", ("burst_work", "ScriptDuration"), "", None),
        ("DOM nodes in the table", ("nodes", "table"), "", BARS["nodes"]),
        ("DOM nodes in the page", ("nodes", "page"), "", None),
        ("DOM nodes in the table after", ("nodes_after_burst", "table"), "", BARS["nodes"]),
        ("idle 10 s: long tasks > 100 ms", "idle_longtasks", "", None),
        ("idle 10 s: longest task (ms)", "idle_longest_ms", "", None),
        ("scroll: frames", "scroll_frames", "", None),
        ("scroll: p95 frame gap (ms)", "scroll_p95_ms", "", None),
        ("scroll: longest frame gap (ms)", "scroll_max_ms", "", None),
        ("scroll: long tasks > 100 ms", "scroll_longtasks", "", BARS["longtasks"]),
        ("scroll: page layouts", ("scroll_work", "LayoutCount"), "", None),
        ("scroll: layout + style (s)", ("scroll_work", "layout_style_s"), "", None),
    ]
    for r in results:
        for k in ("burst_work", "scroll_work"):
            if k in r:
                r[k]["layout_style_s"] = r[k]["LayoutDuration"] + r[k]["RecalcStyleDuration"]
    for label, key, unit, bar in lines:
        cells = []
        for r in results:
            v = r.get(key[0], {}).get(key[1]) if isinstance(key, tuple) else r.get(key)
            ok = "" if bar is None or v is None or isinstance(v, str) else (" ok" if v <= bar else " !!")
            cells.append(f"{fmt(v, unit) + ok:>19}")
        print(f"{label:<34}" + "".join(cells) + f"   {'' if bar is None else fmt(bar)}")
    for r in results:
        if r.get("note"):
            print(f"{r['rows']:,} rows: {r['note']}")
        if r.get("console_errors"):
            print(f"{r['rows']:,} rows: console errors: {r['console_errors'][:3]}")
        for chunk in r.get("kernel_stderr") or []:
            print(f"{r['rows']:,} rows: the kernel wrote to stderr: {chunk.strip().splitlines()[-1][:200]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds before a figure is given up")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    path, missing = find_browser()
    if path is None:
        sys.exit(f"bench_browser: {missing}")
    print_machine()
    results = []
    with chromium(path) as browser:
        print(f"JupyterLab under headless Chromium {browser.version}")
        for n in (int(s) for s in args.sizes.split(",")):
            results.append(measure_size(browser, n, args.burst, args.timeout))
            print(json.dumps(results[-1]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    report(results)


if __name__ == "__main__":
    main()
