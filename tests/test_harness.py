"""The harness itself: a module's per-path floor test skips (never fails) when pytest-xdist spreads
its cases over processes (plain ``-n 2``, whose processes cannot see the ``--dist`` mode), and holds
the floor when they all ran in one (no ``-n``, or ``--dist loadfile``). Real pytest runs in a
subprocess, over a small module in the planner tests' shape."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CONFTEST = """
from tests.planner.tally import TALLY


def pytest_runtest_setup(item):
    TALLY.start(item)
"""
MODULE = """
import pytest
from tests.planner.tally import TALLY, assert_floors

TALLY.enter("test_floors")


@pytest.mark.parametrize("n", range(8))
def test_case(n):
    TALLY.enter("test_floors")
    TALLY.add("engine")


def test_floor(request):
    assert_floors(request, "test_case", 8, {"engine": 8})
"""


def run(tmp_path: Path, *args: str) -> str:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_floors.py").write_text(MODULE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q"]
    command += ["--rootdir", str(tmp_path), *args, str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("args", "floor"),
    [
        pytest.param((), "passed", marks=pytest.mark.slow),
        pytest.param(("-n", "2", "--dist", "loadfile"), "passed", marks=pytest.mark.slow),
        (("-n", "2"), "skipped"),
    ],
    ids=["one process", "loadfile", "plain -n 2"],
)
def test_a_floor_skips_when_its_cases_were_spread(tmp_path: Path, args: tuple[str, ...], floor: str) -> None:
    out = run(tmp_path, *args)
    if floor == "passed":
        assert "9 passed" in out, out
    else:
        assert "8 passed, 1 skipped" in out and "ran in this process" in out, out
