"""A real JupyterLab and a real headless Chromium, for the browser tests and the browser benchmark.

:func:`find_browser` says what is missing (Playwright, JupyterLab, a Chromium binary) or ``None``.
:class:`Lab` starts one JupyterLab server on 127.0.0.1 with a token and a free port, in a root
directory of its own (its settings, workspaces and runtime files stay there too), and stops it.
:class:`Notebook` is one notebook open in a Chromium page: it runs cells through JupyterLab's own
commands, executes code in the notebook's kernel through the page's kernel connection, reads the
live tables on the page, and collects every console error and uncaught page error.

The browser is Debian's ``chromium`` package (or ``$JARENLAB_CHROMIUM``); none is ever downloaded.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

#: Page-side helpers, installed once per page load: find the notebook panel, run code in its kernel,
#: read a live table (its ``jlState`` and its rendered rows), wait for the kernel to be idle.
PAGE_HELPERS = r"""
() => {
  if (window.jlTest) return;
  const app = () => window.jupyterapp;
  const panel = () => {
    for (const w of app().shell.widgets('main')) {
      if (w.context && w.context.path && w.context.path.endsWith('.ipynb')) return w;
    }
    return null;
  };
  const kernel = () => panel().sessionContext.session.kernel;
  const cellOf = (needle) => panel().content.widgets.find(
    (c) => c.model.sharedModel.getSource().includes(needle));
  window.jlTest = {
    panel, kernel, cellOf, stderr: [],
    ready: () => {
      const p = panel();
      const k = p && p.sessionContext.session && p.sessionContext.session.kernel;
      return !!(k && k.connectionStatus === 'connected' && k.status === 'idle');
    },
    exec: async (code, timeoutMs) => {
      const fut = kernel().requestExecute({code, silent: false, store_history: false});
      let out = '';
      let err = null;
      fut.onIOPub = (msg) => {
        const t = msg.header.msg_type;
        if (t === 'stream' && msg.content.name === 'stdout') out += msg.content.text;
        if (t === 'stream' && msg.content.name === 'stderr') window.jlTest.stderr.push(msg.content.text);
        if (t === 'error') err = msg.content.ename + ': ' + msg.content.evalue;
      };
      if (timeoutMs) {
        let timer = null;
        const late = new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the kernel ran past ${timeoutMs} ms`)), timeoutMs);
        });
        await Promise.race([fut.done, late]).finally(() => clearTimeout(timer));
      } else {
        await fut.done;
      }
      if (err !== null) throw new Error(err);
      return out;
    },
    runAbove: async (needle) => {
      const p = panel();
      p.content.activeCellIndex = p.content.widgets.indexOf(cellOf(needle));
      return await app().commands.execute('notebook:run-all-above');
    },
    runFrom: async (needle) => {
      const p = panel();
      p.content.activeCellIndex = p.content.widgets.indexOf(cellOf(needle));
      return await app().commands.execute('notebook:run-all-below');
    },
    errors: () => panel().content.widgets
      .filter((c) => c.model.type === 'code')
      .flatMap((c) => c.model.outputs.toJSON())
      .filter((o) => o.output_type === 'error')
      .map((o) => o.ename + ': ' + o.evalue),
    table: (needle) => {
      const cell = cellOf(needle);
      const root = cell && cell.node.querySelector('[data-jl-widget="live-table"]');
      if (!root) return null;
      const st = root.jlState || null;
      const status = root.querySelector('.jl-status');
      return {
        state: st && JSON.parse(JSON.stringify(st)),
        rendered: [...root.querySelectorAll('table.jl-grid tr[data-key]')].map(
          (tr) => ({key: tr.dataset.key, cells: [...tr.querySelectorAll('td')].map(
            (td) => td.title || td.textContent)})),
        status: status ? status.textContent : null,
        nodes: root.getElementsByTagName('*').length,
      };
    },
  };
}
"""


def find_browser() -> tuple[str | None, str]:
    """``(chromium path, "")`` when a real browser test can run here, else ``(None, what is missing)``."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return None, "the playwright package is not installed (the test extra)"
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        return None, "jupyterlab is not installed (the test extra)"
    path = os.environ.get("JARENLAB_CHROMIUM") or next(
        (p for p in map(shutil.which, CHROMIUM_NAMES) if p), None
    )
    if not path or not os.access(path, os.X_OK):
        return None, "no Chromium binary (apt-get install chromium, or set JARENLAB_CHROMIUM)"
    return path, ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Lab:
    """One JupyterLab server over ``root`` (notebooks are copied in by the caller)."""

    def __init__(self, root: Path, *, python: str = sys.executable, timeout: float = 60.0) -> None:
        self.root = root
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        home = root / ".jupyter-home"
        config = home / "config"
        config.mkdir(parents=True, exist_ok=True)
        (config / "jupyter_server_config.json").write_text(
            json.dumps(
                {
                    "LabApp": {
                        "expose_app_in_browser": True,  # the tests drive JupyterLab's own commands
                        "news_url": None,  # nothing is fetched from outside
                        "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
                        "extension_manager": "readonly",  # no package index is asked
                    },
                    "ServerApp": {"terminals_enabled": False},
                    "LanguageServerManager": {"autodetect": False},
                }
            )
        )
        news = home / "settings" / "@jupyterlab" / "apputils-extension"
        news.mkdir(parents=True, exist_ok=True)
        (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(config),
            "JUPYTER_DATA_DIR": str(home / "data"),  # kernelspecs: the server's own Python (python3)
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
            "JUPYTER_PLATFORM_DIRS": "1",
        }
        self.log = (home / "server.log").open("w")
        self.proc = subprocess.Popen(
            [
                python, "-m", "jupyterlab", "--no-browser",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
                *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
            ],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            self._wait_up(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_up(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"JupyterLab exited with {self.proc.returncode}: {self.log_text()[-2000:]}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"JupyterLab did not answer within {timeout:.0f} s: {self.log_text()[-2000:]}")

    def log_text(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return (self.root / ".jupyter-home" / "server.log").read_text(errors="replace")

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}&reset"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # the server shuts its kernels down on SIGTERM
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


@contextmanager
def chromium(path: str) -> Iterator[Any]:
    """A headless Chromium from ``path`` through Playwright (``--no-sandbox`` when run as root)."""
    from playwright.sync_api import sync_playwright

    args = ["--no-sandbox"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, headless=True, args=args)
        try:
            yield browser
        finally:
            browser.close()


class Notebook:
    """A notebook open in a page of ``browser``.

    ``console_errors`` collects what the page logged as errors; ``received`` counts the websocket
    frames and bytes the page received (the kernel's messages among them).
    """

    def __init__(self, browser: Any, lab: Lab, name: str, *, timeout: float = 60.0) -> None:
        self.lab = lab
        self.name = name
        self.timeout = timeout
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.console_errors: list[str] = []
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda exc: self.console_errors.append(f"page error: {exc}"))
        self.received = {"frames": 0, "bytes": 0}
        self.page.on("websocket", lambda ws: ws.on("framereceived", self._on_frame))
        self.open()

    def _on_console(self, msg: Any) -> None:
        if msg.type == "error":
            self.console_errors.append(f"console error: {msg.text} ({msg.location.get('url', '')})")

    def _on_frame(self, payload: str | bytes) -> None:
        self.received["frames"] += 1
        self.received["bytes"] += len(payload)

    def open(self, *, reload: bool = False) -> None:
        """Load (or reload) JupyterLab on the notebook and wait for its kernel to be idle."""
        if reload:
            self.page.reload()
        else:
            self.page.goto(self.lab.notebook_url(self.name))
        self.page.wait_for_function("() => !!(window.jupyterapp && window.jupyterapp.shell)",
                                    timeout=self.timeout * 1000)  # fmt: skip
        self.page.evaluate(PAGE_HELPERS)
        self.page.wait_for_function("() => window.jlTest.ready()", timeout=self.timeout * 1000)

    def js(self, expr: str, arg: Any = None) -> Any:
        """Evaluate ``expr`` (a function of ``(t, arg)``, ``t`` the page helpers) in the page."""
        return self.page.evaluate(f"([arg]) => ({expr})(window.jlTest, arg)", [arg])

    def run_above(self, needle: str) -> None:
        """Run every cell above the first cell whose source holds ``needle`` (JupyterLab's command)."""
        self.js("(t, n) => t.runAbove(n)", needle)
        self.wait_idle()

    def run_from(self, needle: str) -> None:
        """Run the cell whose source holds ``needle`` and every cell below it."""
        self.js("(t, n) => t.runFrom(n)", needle)
        self.wait_idle()

    def wait_idle(self) -> None:
        self.page.wait_for_function("() => window.jlTest.ready()", timeout=self.timeout * 1000)

    def output_errors(self) -> list[str]:
        return list(self.js("(t) => t.errors()"))

    def exec(self, code: str, *, timeout: float | None = None) -> str:
        """Run ``code`` in the notebook's kernel (not in a cell) and return what it printed.

        What it wrote to stderr is kept in the page (``stderr()``); an exception, or the kernel
        still busy after ``timeout`` seconds, raises here.
        """
        ms = None if timeout is None else int(timeout * 1000)
        return str(self.js("(t, a) => t.exec(a.code, a.ms)", {"code": code, "ms": ms}))

    def stderr(self) -> list[str]:
        """What code run by :meth:`exec` wrote to stderr since the page loaded."""
        return list(self.js("(t) => t.stderr"))

    def kernel_json(self, expr: str) -> Any:
        """The value of a Python expression in the kernel, through JSON (``default=str``)."""
        out = self.exec(f"import json as _json\nprint(_json.dumps({expr}, default=str))")
        return json.loads(out)

    def table(self, needle: str) -> dict[str, Any] | None:
        """The live table in the output of the cell holding ``needle``, as the page shows it."""
        return self.js("(t, n) => t.table(n)", needle)  # type: ignore[no-any-return]

    def wait_for(self, check: Callable[[], Any], *, timeout: float = 15.0, what: str = "") -> Any:
        """Poll ``check()`` until it returns something truthy; fail with ``what`` after ``timeout``."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = check()
            if last:
                return last
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")

    def close(self) -> None:
        self.context.close()
