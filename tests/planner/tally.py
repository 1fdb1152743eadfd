"""The tally of what the planner differential checked, per test module and path.

Imported as ``tests.planner.tally`` everywhere, so the test modules, the helpers they share and
``conftest.py`` (which pytest may import under another name) count into one object.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pytest


class Tally:
    """How many cases each differential path checked in this process, per test module.

    Paths: ``engine`` (the reference engine alone), ``pushdown`` and ``pushdown=False`` (through
    the store on SQLite), ``duckdb`` (the independent translator, where it covers the case), and
    ``pushdown:<mode>``: which mode answered the pushed run (``native``, ``row``, ``set``, or
    ``error`` when every path agreed on an error code). On PostgreSQL: ``postgresql``,
    ``postgresql pushdown=False`` and ``postgresql:<mode>``, and ``postgresql kept: <why>`` for
    each case PostgreSQL answered in a lower mode than SQLite, for a reason it states (or
    ``postgresql pushed: <why>`` for one it answered in a higher mode).
    """

    def __init__(self) -> None:
        self.modules: dict[str, Counter[str]] = {}
        self.current: Counter[str] = Counter()
        #: How many items of each (module, test function) began in this process.
        self.started: Counter[tuple[str, str]] = Counter()

    def start(self, item: pytest.Item) -> None:
        """Count a test item as it begins here (a ``pytest_runtest_setup`` hook calls it)."""
        module = getattr(item, "module", None)
        if module is not None:
            self.started[(module.__name__, getattr(item, "originalname", item.name))] += 1

    def enter(self, module: str) -> None:
        self.current = self.modules.setdefault(module, Counter())

    def add(self, *paths: str) -> None:
        self.current.update(paths)


TALLY = Tally()


def assert_floors(
    request: pytest.FixtureRequest,
    test: str,
    cases: int,
    floors: Mapping[str, int],
    exact: Mapping[str, int] | None = None,
) -> None:
    """Every path of this module checked at least its floor of cases, and each path of ``exact``
    exactly that many (run it as the module's last test).

    ``cases`` is how many items of the module's case test ``test`` there are: a run of a subset
    (``-k``, one node id) or one that spreads a module over several processes (plain ``-n 2``:
    fewer of its cases began in this process, :meth:`Tally.start`) cannot be held to the floor, and
    is skipped with the reason.
    """
    module = request.module
    selected = sum(
        1
        for item in request.session.items
        if getattr(item, "module", None) is module and getattr(item, "originalname", None) == test
    )
    if selected < cases:
        pytest.skip(f"only {selected} of the module's {cases} case tests were selected")
    # A process of pytest-xdist knows nothing of how tests were spread (its own `dist` option says
    # "no"), so count what began here: fewer than all cases means other processes ran some.
    ran = TALLY.started[(module.__name__, test)]
    if ran < cases:
        pytest.skip(
            f"only {ran} of the module's {cases} case tests ran in this process (pytest-xdist spread "
            "them: use --dist loadfile)"
        )
    if request.session.testsfailed:
        pytest.skip("cases failed, so their paths were not all checked")
    counts = TALLY.modules.get(module.__name__.rpartition(".")[2], Counter())
    short = {path: (counts[path], floor) for path, floor in floors.items() if counts[path] < floor}
    assert not short, f"paths checked fewer cases than their floor (checked, floor): {short}"
    if exact is not None:
        prefixes = {path.partition(":")[0] + ":" for path in exact}
        seen = {path: n for path, n in counts.items() if path.startswith(tuple(prefixes))}
        assert seen == {p: n for p, n in exact.items() if n}, f"(checked, expected): {seen} vs {exact}"
