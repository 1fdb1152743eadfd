"""RFC 9485 I-Regexp in SQL: the compliance suite's ``match()``/``search()`` patterns (``test_iregexp.py``)
and generated patterns, run as ``$match``/``$search`` conditions through a store on each backend, pushed
and not, against the engine. On SQLite SQL calls the engine's own matcher; on PostgreSQL it runs the
pattern's exact ARE (``jarenlab.query.lang.iregexp.are``) with ``~``, where the pattern has one (not
for a category ``\\p{..}`` or a count above 255: there the engine runs it, and ``explain()`` says why).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from backend_fixtures import BACKENDS, scratch_store

from jarenlab.query import evaluate
from jarenlab.query.lang.iregexp import are
from tests.conformance.suites import load, require
from tests.conformance.test_iregexp import CTS, _is_regex_case, _regex_cases, split

MODEL = {
    "$model": "0.1",
    "collections": {
        "s": {
            "key": "/i",
            "schema": {
                "type": "object",
                "required": ["i"],
                "properties": {"i": {"type": "integer"}, "s": {"type": "string"}},
            },
        }
    },
}
#: The characters generated patterns and strings are made of: line ends, a letter beyond ASCII and
#: one beyond the BMP, and the characters an ARE would read otherwise (``^ $ * { - [`` ...).
ALPHABET = ["a", "b", "\n", "\r", "é", "😀", "^", "$", "-", "*", "{", "]", "\\", " "]
#: Generated strings: every short one over a few characters, and random longer ones.
GENERATED = 200


def _strings() -> list[str]:
    """Every string the suite's pattern cases test, and the generated ones (no U+0000: PostgreSQL's
    text cannot hold it, and the store refuses it there)."""
    out: dict[str, None] = {"": None}
    data = load(CTS)
    for case in data["tests"] if data is not None else []:
        parts = split(case) if _is_regex_case(case) else None
        for _, value in parts[3] if parts else []:
            out.setdefault(value)
    rng = random.Random(9485)
    while len(out) < GENERATED + 60:
        out.setdefault("".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6))))
    return [s for s in out if "\x00" not in s]


STRINGS = _strings()
DOCS = [{"i": n, "s": s} for n, s in enumerate(STRINGS)] + [{"i": len(STRINGS)}]  # a missing member: ""


@pytest.fixture(scope="module", params=BACKENDS)
def store(request: pytest.FixtureRequest) -> Any:
    """One store per backend for the module (queries never write)."""
    s = scratch_store(request.param, request, MODEL, "iregexp_sql", checks="off")
    s["s"].insert_many(DOCS)
    yield s
    s.close()


def query(fn: str, pattern: str) -> list[Any]:
    return [{"$for": {"d": "$[*]"}, "$where": {f"${fn}": ["$d.s", pattern]}, "$return": "$d"}]


def check(store: Any, fn: str, pattern: str) -> str:
    """Run one pattern over every string, pushed and not, against the engine; the pushed mode."""
    q = query(fn, pattern)
    [expected] = evaluate(q, DOCS, {})
    coll = store["s"]
    assert coll.execute(q, columns=False) == expected, (fn, pattern)
    assert coll.execute(q, pushdown=False) == expected, (fn, pattern)
    ex = coll.explain(q)
    if ex.mode != "native":
        assert store.backend.name == "postgresql", (fn, pattern, ex.residual)
        assert ex.residual["reasons"][0]["reason"].startswith("the I-Regexp has no exact PostgreSQL form")
        with pytest.raises(ValueError):
            are(pattern, fn == "match")
    return str(ex.mode)


@pytest.mark.parametrize("case", _regex_cases())
def test_suite_pattern_in_sql(store: Any, case: dict[str, Any]) -> None:
    parts = split(case)
    if parts is None:
        return  # about filter semantics, not patterns (test_iregexp.py counts them)
    fn, _, pattern, _ = parts
    check(store, fn, pattern)


def test_suite_patterns_with_an_are() -> None:
    """How many of the suite's patterns have an exact ARE (the other 4 use a category \\p{..} or are refused)."""
    cases = [split(c) for c in require(CTS)["tests"] if _is_regex_case(c)]
    counts = Counter("are" if _has_are(p[2]) else "engine" for p in cases if p is not None)
    assert counts == {"are": 42, "engine": 4}


def _has_are(pattern: str) -> bool:
    try:
        are(pattern, True)
    except ValueError:
        return False
    return True


def _pattern(rng: random.Random, depth: int = 0) -> str:
    """A random I-Regexp over :data:`ALPHABET`: literals (escaped where I-Regexp needs it), ``.``,
    classes (negated, with ranges and escapes), groups, alternation, quantifiers."""
    pieces = []
    for _ in range(rng.randint(1 if depth == 0 else 0, 3)):
        kind = rng.choice(["char", "char", "dot", "class", "group" if depth < 2 else "char"])
        if kind == "char":
            c = rng.choice(
                ["a", "b", "é", "😀", "^", "$", " ", "\\n", "\\r", "\\.", "\\*", "\\{", "\\]", "\\\\", "-"]
            )
            atom = c
        elif kind == "dot":
            atom = "."
        elif kind == "class":
            items = rng.sample(
                ["a", "b-é", "\\n", "\\r", "😀", "^", "$", "\\]", "\\-", "\\[", "a-b"], rng.randint(1, 3)
            )
            body = "".join(items)
            atom = "[" + rng.choice(["", "^"]) + ("\\" + body if body.startswith("^") else body) + "]"
        else:
            inner = "|".join(_pattern(rng, depth + 1) for _ in range(rng.randint(1, 2)))
            atom = f"({inner})"
        quant = rng.choice(["", "", "", "*", "+", "?", "{2}", "{0,2}", "{1,}"])
        pieces.append(atom + (quant if atom else ""))
    return "".join(pieces)


def test_generated_patterns_in_sql(store: Any) -> None:
    """Generated patterns over the same strings: every one an ARE answers natively on PostgreSQL."""
    rng = random.Random(20261205)
    modes: Counter[str] = Counter()
    tried = 0
    while tried < 120:
        pattern = _pattern(rng)
        try:
            evaluate(query("match", pattern), [], {})
        except Exception:  # a (a*)* or a bad class: the engine refuses it; not a case here
            continue
        tried += 1
        for fn in ("match", "search"):
            modes[check(store, fn, pattern)] += 1
    assert modes == {"native": 240}
