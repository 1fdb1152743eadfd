"""Differential tests: pushdown on, pushdown off, the engine alone, and DuckDB (where it covers).

Every case of ``cases/*.json`` (the conformance corpus format, :func:`tests.query.corpus.load_cases`)
runs through the four paths over the same documents; answers (or error codes) must agree exactly,
``int`` told from ``float``. Each path's count of checked cases is tallied
(:class:`tests.planner.conftest.Tally`), printed at the end of the run, and held to a floor by
the module's last test, so coverage cannot shrink silently.
"""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab.errors import JarenlabError
from jarenlab.query import evaluate
from tests.planner import duck
from tests.planner.conftest import CASES, DATASETS
from tests.planner.tally import TALLY, assert_floors
from tests.query.corpus import load_cases, same

ALL = list(load_cases(CASES))


def outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except JarenlabError as err:
        return "error", err.code


def check(store: Any, docs: list[dict[str, Any]], query: Any, ext: dict[str, Any] | None) -> str:
    """Run the four paths (DuckDB where its translator covers the query); return ok or error.

    Tallies the paths it checked, and the mode that answered the pushed run.
    """
    coll = store["docs"]
    engine = outcome(lambda: evaluate(query, docs, ext or {}))
    before = dict(store.planner.counters)
    pushed = outcome(lambda: coll._run_query(query, dict(ext or {})))
    after = store.planner.counters
    mode = next((m for m in ("native", "row", "set") if after[m] > before[m]), "error")
    plain = outcome(lambda: coll._run_query(query, dict(ext or {}), pushdown=False))
    for name, got in (("pushdown", pushed), ("pushdown=False", plain)):
        assert got[0] == engine[0], f"{name}: {got} vs engine {engine}"
        if got[0] == "ok":
            assert same(got[1], engine[1]), f"{name}: {got[1]!r} vs engine {engine[1]!r}"
        else:
            assert got[1] == engine[1], f"{name}: error {got[1]} vs engine {engine[1]}"
    if engine[0] == "ok":
        via_duck = duck.run(docs, query, dict(ext or {}))
        if via_duck is not None:
            assert via_duck == engine[1], f"duckdb: {via_duck!r} vs engine {engine[1]!r}"
            TALLY.add("duckdb")
    TALLY.add("engine", "pushdown", "pushdown=False", f"pushdown:{mode}")
    return pushed[0]


@pytest.mark.parametrize("case", ALL, ids=[c.name for c in ALL])
def test_case(case: Any, stores: dict[str, Any]) -> None:
    name = next(k for k, v in DATASETS.items() if v == case.data)
    check(stores[name], case.data, case.query, case.externals)


def test_corpus_is_large_and_mostly_pushed(stores: dict[str, Any]) -> None:
    """At least 150 cases, and the planner pushes most of them (the suite must exercise SQL)."""
    assert len(ALL) >= 150
    from jarenlab.query.run import prepare

    coll = stores["mix"]["docs"]
    modes = []
    for c in ALL:
        try:
            modes.append(prepare(coll, c.query, pushdown=True, strict=False, profile=None)[0].plan.mode)
        except JarenlabError:
            modes.append("error")
    assert modes.count("native") > len(modes) // 2, {m: modes.count(m) for m in set(modes)}


#: Cases each path checked when the floor was set (``error``: all paths agreed on an error code).
FLOORS = {
    "engine": 669,
    "pushdown": 669,
    "pushdown=False": 669,
    "duckdb": 487,
    "pushdown:native": 600,
    "pushdown:row": 2,
    "pushdown:set": 53,
    "pushdown:error": 14,
}


def test_every_path_checked_its_floor_of_cases(request: pytest.FixtureRequest) -> None:
    """Runs after the cases (last in the module): no path checked fewer cases than its floor."""
    assert_floors(request, "test_case", len(ALL), FLOORS)
