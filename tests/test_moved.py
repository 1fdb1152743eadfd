"""The module paths that moved keep importing, with a warning, as the modules at their new paths."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import jarenlab
from jarenlab.moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_gives_the_module_at_its_new_one(old: str) -> None:
    new = MOVED[old]
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module({old!r})\n"
        f"new = importlib.import_module({new!r})\n"
        "assert old is new and new.__spec__.name == new.__name__\n"
        f"assert [str(x.message).split(':')[0] for x in w if x.category is FutureWarning] == ['{old} moved to {new}']\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_old_path_is_a_module_of_its_own() -> None:
    """A file at an old path would shadow the move: each old path is only an alias."""
    root = Path(jarenlab.__file__).parent.parent
    for old in MOVED:
        path = root.joinpath(*old.split("."))
        assert not path.with_suffix(".py").exists() and not (path / "__init__.py").exists(), old
