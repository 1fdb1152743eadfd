"""Static checks of the tutorial notebooks (nbval runs them; this checks how they are committed)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))


def test_there_are_tutorials() -> None:
    assert len(PATHS) >= 5


def test_readme_lists_every_notebook() -> None:
    readme = (NOTEBOOKS / "README.md").read_text()
    listed = set(re.findall(r"\]\((\w+\.ipynb)\)", readme))
    assert listed == {p.name for p in PATHS}


def test_the_guide_lists_every_notebook_in_order() -> None:
    """docs/guide.md's tutorial list names every notebook once, numbered as its file is, in order."""
    guide = (NOTEBOOKS.parent / "docs" / "guide.md").read_text()
    listed = re.findall(r"^(\d+)\. `(\w+\.ipynb)`", guide, flags=re.MULTILINE)
    assert [name for _, name in listed] == [p.name for p in PATHS]
    assert all(int(n) == int(name[:2]) for n, name in listed)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_committed_executed_in_order_without_errors(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.execution_count for c in code]
    assert None not in counts, "every code cell is executed (re-run the notebook from a fresh kernel)"
    assert counts == list(range(1, len(code) + 1)), "executed top to bottom in one fresh kernel"
    for cell in code:
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.source[:60]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_nbval_markers_are_exact(path: Path) -> None:
    """nbval only honours a marker alone on its comment line; anything else silently compares."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        for line in cell.source.splitlines():
            text = line.strip().lstrip("#").strip()
            if text.startswith("NBVAL_"):
                assert text in {"NBVAL_IGNORE_OUTPUT", "NBVAL_SKIP", "NBVAL_RAISES_EXCEPTION"}, line
