"""RFC 9485 I-Regexp: the ``match()``/``search()`` cases of the JSONPath compliance suite, run through
the query language's ``$match``/``$search``.

A suite case is a filter ``$[?match(@, 'pattern')]`` (or ``search``, ``!match``, ``@.a``, a pattern taken
from the document) and the nodes it selects. Filters are outside the path subset (``test_jsonpath.py``
checks they are refused), so here each candidate string is tested with ``$match``/``$search`` and must be
selected exactly when the suite selects it. Candidates that are not strings are left out on both sides:
RFC 9535 makes ``match()`` false for them, the query language raises ``JQ2004``. Cases about filter
semantics rather than patterns (a literal non-string argument, arity and comparison errors in the filter)
are counted apart.

One known disagreement is asserted strictly: the suite reads ``^`` and ``$`` in ``match()`` as anchors,
while RFC 9485 makes them ordinary characters, as the query language does.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from jarenlab.query import evaluate
from jarenlab.query.lang.path import parse_path
from tests.conformance.suites import absent, load, require

CTS = "jsonpath-compliance-test-suite/cts.json"
#: $[?match(@.a, 'p')], $.values[?!search(@, $.regex)], ...: a pattern as a literal or from the document.
FILTER = re.compile(
    r"\$(?P<base>\.values)?\[\?(?P<neg>!?)(?P<fn>match|search)\((?P<arg>@(?:\.a)?)\s*,\s*"
    r"""(?P<pat>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\$\.regex|value\(\$\.\.\['regex'\]\))\)\]"""
)
#: RFC 9485 section 5.3: '^' and '$' are ordinary characters; the suite anchors with them.
ANCHOR_CASES = {"functions, match, explicit caret", "functions, match, explicit dollar"}
COUNTS = {"agrees": 44, "RFC 9485 anchors differ": 2, "filter semantics": 10}


def _regex_cases() -> list[Any]:
    data = load(CTS)
    if data is None:
        return absent(CTS)
    return [pytest.param(case, id=case["name"]) for case in data["tests"] if _is_regex_case(case)]


def _is_regex_case(case: dict[str, Any]) -> bool:
    return bool({"match", "search"} & set(case.get("tags", ())))


def split(case: dict[str, Any]) -> tuple[str, bool, str, list[tuple[Any, str]]] | None:
    """(function, negated, pattern, [(node, its string)]) of a pattern case, or None for a case about
    filter semantics. Nodes whose tested value is not a string are left out."""
    m = FILTER.fullmatch(case["selector"])
    if m is None or case.get("invalid_selector"):
        return None
    doc = case["document"]
    nodes = doc["values"] if m["base"] else doc
    literal = m["pat"].startswith(("'", '"'))
    pattern = parse_path(f"$[{m['pat']}]", "/").steps[0][1] if literal else doc["regex"]
    out = []
    for node in nodes.values() if isinstance(nodes, dict) else nodes:
        value = node if m["arg"] == "@" else node.get("a") if isinstance(node, dict) else None
        if isinstance(value, str):
            out.append((node, value))
    return m["fn"], bool(m["neg"]), str(pattern), out


def kind(case: dict[str, Any]) -> str:
    if split(case) is None:
        return "filter semantics"
    return "RFC 9485 anchors differ" if case["name"] in ANCHOR_CASES else "agrees"


@pytest.mark.parametrize("case", _regex_cases())
def test_iregexp_compliance_case(case: dict[str, Any]) -> None:
    parts = split(case)
    if parts is None:
        return  # counted in test_iregexp_compliance_counts; the filter itself is refused (test_jsonpath)
    fn, negated, pattern, candidates = parts
    ours = []
    for node, value in candidates:
        [hit] = evaluate({f"${fn}": [{"$const": value}, {"$const": pattern}]}, None)
        if hit != negated:
            ours.append(node)
    theirs = [node for node, _ in candidates if node in case["result"]]
    if kind(case) == "agrees":
        assert ours == theirs
    else:  # the suite anchors; read literally, '^ab.*' and '.*bc$' match none of these strings
        assert theirs and ours == [] and not any("^" in v or "$" in v for _, v in candidates)


def test_iregexp_compliance_counts() -> None:
    cases = [c for c in require(CTS)["tests"] if _is_regex_case(c)]
    assert dict(Counter(kind(c) for c in cases)) == COUNTS
