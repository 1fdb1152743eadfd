"""explain() drawn as a tree: the result, the engine's residual, a diversion, the statement and the
database's own plan steps (full scans and index use marked), on both backends."""

from __future__ import annotations

from typing import Any

from jarenlab.query.planner.tree import _walk, plan_tree, step_kind, tree_html

F = {"$for": {"n": "$[*]"}, "$return": "$n.id"}


def _kinds(ex: Any) -> list[str]:
    return [n["kind"] for n in _walk(ex.tree())]


def _fill(store: Any) -> Any:
    notes = store["notes"]
    notes.insert_many([{"id": f"n{i}", "tag": "ab"[i % 2], "score": i} for i in range(20)])
    return notes


def test_an_indexed_filter_is_an_index_step_under_the_statement(store: Any) -> None:
    ex = _fill(store).explain({**F, "$where": {"$eq": ["$n.tag", "a"]}})
    kinds = _kinds(ex)
    assert kinds[:2] == ["result", "sql"] and "index" in kinds and "residual" not in kinds
    page = ex._repr_html_()
    assert "jl-k-index" in page and "[index]" in page and "<details>" in page


def test_a_residual_and_a_diversion_sit_above_the_statement(store: Any) -> None:
    notes = _fill(store)
    ex = notes.explain({**F, "$where": {"$normalize-space": "$n.tag"}}, analyze=True)
    assert _kinds(ex)[:3] == ["result", "residual", "sql"]
    top = ex.tree()
    assert any(line.startswith("rows returned: ") for line in top["lines"])
    diverted = notes.explain({**F, "$where": {"$eq": ["$n.score", "$v"]}}, {"v": None})
    assert _kinds(diverted)[:4] == ["result", "residual", "diverted", "sql"]
    assert "external $v is None" in diverted._repr_html_()


def test_a_whole_table_read_is_marked_a_full_scan(store: Any) -> None:
    ex = _fill(store).explain({**F, "$where": {"$gt": ["$n.id", "n1"]}})
    assert "scan" in _kinds(ex) and "[full scan]" in ex._repr_html_()


def test_steps_nest_by_parent_and_text_is_escaped() -> None:
    plan = [
        {"id": 1, "parent": 0, "depth": 0, "detail": "Sort (Sort Key: v)"},
        {"id": 2, "parent": 1, "depth": 1, "detail": "Index Scan using t_a on t (Index Cond: (a = '<x>'))"},
        {"id": 3, "parent": 0, "depth": 0, "detail": "USE TEMP B-TREE FOR ORDER BY"},
    ]
    tree = plan_tree(mode="native", database="postgresql", indexes=[], residual=None, diverted=None,
                     engine_plan=plan)  # fmt: skip
    sql = tree["children"][0]
    assert [c["title"] for c in sql["children"]] == ["Sort (Sort Key: v)", "USE TEMP B-TREE FOR ORDER BY"]
    assert sql["children"][0]["children"][0]["kind"] == "index"
    page = tree_html(tree)
    assert "&lt;x&gt;" in page and "<x>" not in page and page.count("<ul") == 4
    assert [step_kind(d) for d in ("SCAN t", "Seq Scan on t", "SEARCH t USING COVERING INDEX i (a=?)")] == [
        "scan",
        "scan",
        "index",
    ]
