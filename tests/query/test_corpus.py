"""Run every conformance-corpus case through the reference engine."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from jarenlab.errors import QueryError
from jarenlab.query import compile_query
from jarenlab.query.lang.document import ARITY, parse, walk

from .corpus import Case, load_cases, same

CASES = list(load_cases())
#: the core vocabulary every path must be checked on.
CORE = set(ARITY) - {"call"} | {
    "for",
    "let",
    "where",
    "groupby",
    "orderby",
    "count-clause",
    "at",
    "const",
    "map",
}


def _run(case: Case) -> list[object]:
    cq = compile_query(
        case.query, operators=case.operators, limits=case.limits, allowed_externals=case.allowed_externals
    )
    return cq.run(case.data, case.externals)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case) -> None:
    if case.error is not None:
        with pytest.raises(QueryError) as info:
            _run(case)
        assert info.value.code == case.error, info.value.message
        if case.doc_path is not None:
            assert info.value.doc_path == case.doc_path
    else:
        got = _run(case)
        assert same(got, case.expected), f"got {json.dumps(got, ensure_ascii=False)}"


def test_corpus_is_large_and_well_formed() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)), "case names are unique"
    assert len(CASES) >= 300
    assert all((c.expected is None) != (c.error is None) for c in CASES)


def _constructs(query: object) -> set[str]:
    text = json.dumps(query)
    found = {name for name in ARITY if f'"${name}"' in text}
    for flag, key in (("for", "$for"), ("let", "$let"), ("where", "$where"), ("groupby", "$groupby")):
        if f'"{key}"' in text:
            found.add(flag)
    found |= {k for k in ("orderby", "at", "const", "map") if f'"${k}"' in text}
    try:
        nodes = walk(parse(query, operators=None).node)
    except QueryError:
        return found
    if any(getattr(n, "count", None) is not None and hasattr(n, "fors") for n in nodes):
        found.add("count-clause")
    return found


def test_every_core_construct_has_cases() -> None:
    seen: Counter[str] = Counter()
    for case in CASES:
        seen.update(_constructs(case.query))
    missing = sorted(c for c in CORE if seen[c] == 0)
    assert not missing, f"constructs with no corpus case: {missing}"
