"""An HTML export of a notebook (nbconvert, with the widget state its run saved) opened in Chromium.

An export loads RequireJS, the widget manager for static pages (``@jupyter-widgets/html-manager``'s
``embed-amd.js``) and each widget's own module (``anywidget``) from the web. The machine running the
tests reaches no web, so :func:`widget_scripts` brings those packages from the npm registry with
``npm pack`` (once, into a cache) and :func:`open_export` serves them to the page in place of the
web (Playwright routes), or refuses every request that leaves the file (``reachable=False``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

#: The static pages' widget manager and RequireJS at the versions served to exports.
HTML_MANAGER = "@jupyter-widgets/html-manager@1.0.15"
REQUIREJS = "requirejs@2.3.7"


def widget_scripts(cache: Path) -> dict[str, Path] | str:
    """``{what the page asks for (the end of its URL): the local file}``, or what is missing."""
    if shutil.which("npm") is None:
        return "no npm to fetch the widget scripts an HTML export loads"
    packages = {
        "html-manager": HTML_MANAGER,
        "requirejs": REQUIREJS,
        "anywidget": f"anywidget@{version('anywidget')}",
    }
    files = {
        "/dist/embed-amd.js": cache / "html-manager" / "package" / "dist" / "embed-amd.js",
        "/require.min.js": cache / "requirejs" / "package" / "require.js",
        "/dist/index.js": cache / "anywidget" / "package" / "dist" / "index.js",
    }
    if all(p.exists() for p in files.values()):
        return files
    cache.mkdir(parents=True, exist_ok=True)
    for name, spec in packages.items():
        done = subprocess.run(
            ["npm", "pack", spec, "--pack-destination", str(cache)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode != 0:
            return f"npm pack {spec} failed: {done.stderr[-500:]}"
        tarball = cache / done.stdout.strip().splitlines()[-1]
        with tarfile.open(tarball) as tar:
            tar.extractall(cache / name, filter="data")
    missing = [str(p) for p in files.values() if not p.exists()]
    return f"not in the packages: {missing}" if missing else files


def export_html(notebook: Path) -> Path:
    """Run ``notebook`` with nbconvert (which saves its widget state) and export it as HTML."""
    done = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--execute", str(notebook)],
        capture_output=True, text=True, timeout=300, cwd=notebook.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    html = notebook.with_suffix(".html")
    assert "application/vnd.jupyter.widget-state+json" in html.read_text()
    return html


def open_export(
    browser: Any, html: Path, scripts: dict[str, Path], *, reachable: bool
) -> tuple[Any, list[str]]:
    """A page on the export; every request leaving the file is served from ``scripts`` (when
    ``reachable``) or refused. Returns the page and the URLs the page was served from the scripts."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    served: list[str] = []

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith("file:"):
            r.continue_()
            return
        if reachable:
            path = url.split("?")[0]
            for end, file in scripts.items():
                if path.endswith(end) and (end != "/dist/index.js" or "/anywidget@" in path):
                    served.append(path)
                    r.fulfill(path=str(file), content_type="application/javascript")
                    return
        r.abort()

    page.route("**/*", route)
    page.goto(html.as_uri())
    return page, served
