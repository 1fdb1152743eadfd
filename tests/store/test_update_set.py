"""``q.update(set={member: value})``: members computed from each document as stored, by the reference
engine, written in one transaction (validated, version-checked, in the change log), on both backends."""

from __future__ import annotations

import random
from typing import Any

import pytest

import jarenlab as jl
from jarenlab import it, param
from jarenlab.query import Expr

MODEL = {
    "$model": "0.1",
    "collections": {
        "t": {
            "schema": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer"},
                    "x": {"type": "number"},
                    "s": {"type": "string"},
                    "o": {"type": "object"},
                    "tags": {"type": "array"},
                },
            },
            "key": None,
            "identity": "integer",
            "indexes": [{"name": "n", "path": "$.n"}],
        }
    },
}


def _docs(count: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        d: dict[str, Any] = {"s": rng.choice(["a", "b", "c"])}
        if rng.random() < 0.8:
            d["n"] = rng.randint(-5, 50)
        if rng.random() < 0.5:
            d["x"] = rng.choice([0.1, 2.5, -1.0, 3])
        if rng.random() < 0.3:
            d["o"] = {"k": i}
        out.append(d)
    return out


@pytest.fixture
def t(open_store: Any) -> Any:
    store = open_store(MODEL)
    store["t"].insert_many(_docs(300))
    return store["t"]


def _expected(before: list[tuple[Any, Any]], keep: Any, change: Any) -> dict[Any, Any]:
    return {k: (change(dict(d)) if keep(d) else d) for k, d in before}


def test_set_computes_each_member_from_the_stored_document(t: Any) -> None:
    before = t.query().items()
    with pytest.raises(jl.StoreError) as err:
        t.where(it.n > 10).update(
            set={"n": it.n * 2 + param("k"), "s": it.s.str.upper(), "/o/seen": True}, k=1
        )
    assert err.value.code == "JD2009" and "/o/seen" in err.value.reason

    def change(d: dict[str, Any]) -> dict[str, Any]:
        d["n"] = d["n"] * 2 + 1
        d["s"] = d["s"].upper()
        d["o"] = {**d.get("o", {}), "seen": True} if "o" in d else d.get("o")
        return d

    keep = lambda d: isinstance(d.get("n"), int) and d["n"] > 10  # noqa: E731
    # a pointer into a member a document lacks fails its patch: the whole update wrote nothing
    assert dict(t.query().items()) == dict(before)
    with_o = t.where((it.n > 10) & it.o.exists())
    count = with_o.count()
    assert (
        with_o.update(set={"n": it.n * 2 + param("k"), "s": it.s.str.upper(), "/o/seen": True}, k=1) == count
    )
    want = _expected(before, lambda d: keep(d) and "o" in d, change)
    assert dict(t.query().items()) == want


def test_nothing_removes_the_member_and_constants_are_values(t: Any) -> None:
    before = dict(t.query().items())
    assert t.where(it.s == "a").update(set={"x": it.nothing, "s": "$not a path", "tags": [1, "two"]}) > 0
    for k, d in t.query().items():
        if before[k]["s"] == "a":
            assert "x" not in d and d["s"] == "$not a path" and d["tags"] == [1, "two"]
        else:
            assert d == before[k]


def test_a_failure_on_any_document_writes_nothing(t: Any) -> None:
    before = dict(t.query().items())
    with pytest.raises(jl.ValidationError) as err:
        t.query().update(set={"n": it.s})  # the first document's s is not an integer
    assert err.value.code == "JD2003"
    assert dict(t.query().items()) == before
    with pytest.raises(jl.QueryError) as e3:
        t.query().update(set={"tags": Expr({"$seq": [1, 2]})})
    assert e3.value.code == "JQ2001" and "/tags" in e3.value.reason
    assert dict(t.query().items()) == before


@pytest.mark.parametrize(
    "kwargs",
    [{"set": {}}, {"set": {1: 1}}, {"set": {"/a~2": 1}}, {"ops": [], "set": {"n": 1}}, {"ops": 5}],
)
def test_bad_requests_are_coded(t: Any, kwargs: dict[str, Any]) -> None:
    kwargs = dict(kwargs)
    ops = kwargs.pop("ops", None)
    with pytest.raises(jl.JarenlabError) as err:
        t.query().update(ops, **kwargs)
    assert err.value.code == "JD2009"


def test_a_live_query_and_the_change_feed_follow(t: Any) -> None:
    live = t.where(it.n > 40).select({"n": it.n}).live()
    cursor = t.store.changes.cursor()
    changed = t.where(it.n > 40).update(set={"n": it.n + 1000})
    assert changed == len(live.rows)
    assert sorted(r["n"] for r in live.rows) == sorted(d["n"] for d in t.where(it.n > 40).to_list())
    assert all(r["n"] > 1000 for r in live.rows)
    page = t.store.changes(cursor)
    assert len(page.items) == changed and page.commits == 1  # one transaction
    live.close()
