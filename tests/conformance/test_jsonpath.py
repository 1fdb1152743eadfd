"""RFC 9535 JSONPath against the public compliance suite (jsonpath-compliance-test-suite ``cts.json``).

The query language's paths are a documented subset of RFC 9535 (``docs/query.md``, Paths). Every case of
the suite is run as a path over its document:

- a valid selector inside the subset must give the suite's result, through the reference engine and
  through the planner (the document stored in a collection, the path read from each record);
- a valid selector outside the subset (filters, slices, unions, descendants) must be refused with
  ``JQ0008``, never answered differently;
- an invalid selector must be refused with a coded error: ``JQ0004`` (bad path) or ``JQ0008`` (when it
  stops at a construct outside the subset first);
- a selector that does not start with ``$`` is not a path in the query language (it reads as a string),
  and the suite marks every such selector invalid.

The counts of each kind are asserted, so coverage cannot shrink silently.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import QueryError
from jarenlab.query import evaluate
from jarenlab.query.lang.values import identical
from tests.conformance.suites import absent, load, require

CTS = "jsonpath-compliance-test-suite/cts.json"
MODEL = {
    "$model": "0.1",
    "collections": {"d": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}
#: the kinds of case and how many of each the suite holds (see the module docstring).
COUNTS = {
    "agrees": 83,
    "unsupported (JQ0008)": 373,
    "invalid, refused JQ0004": 125,
    "invalid, refused JQ0008": 121,
    "not a path": 1,
}


def outcome(case: dict[str, Any]) -> tuple[str, Any]:
    """What the query language makes of a case: (kind, result or error code); see the docstring."""
    selector = case["selector"]
    if not selector.startswith("$"):
        return "not a path", None
    try:
        result = evaluate(selector, case.get("document"))
    except QueryError as err:
        if case.get("invalid_selector"):
            return f"invalid, refused {err.code}", err.code
        return f"unsupported ({err.code})", err.code
    return ("accepted an invalid selector" if case.get("invalid_selector") else "agrees"), result


def through_planner(selector: str, document: Any) -> list[Any]:
    """The path run by the planner over one stored record ``{"v": document}``."""
    with jl.open(model=MODEL) as store:
        store["d"].insert({"v": document})
        return store["d"]._run_query({"$for": {"d": "$[*]"}, "$return": "$d.v" + selector[1:]}, {})


def _cases() -> list[Any]:
    data = load(CTS)
    if data is None:
        return absent(CTS)
    return [pytest.param(case, id=f"{n}:{case['name']}") for n, case in enumerate(data["tests"])]


@pytest.mark.parametrize("case", _cases())
def test_jsonpath_compliance_case(case: dict[str, Any]) -> None:
    kind, got = outcome(case)
    if kind == "not a path":
        assert case.get("invalid_selector")
    elif case.get("invalid_selector"):
        assert kind in ("invalid, refused JQ0004", "invalid, refused JQ0008"), (kind, got)
    elif kind != "agrees":
        assert kind == "unsupported (JQ0008)", (kind, got)
    else:
        expected = [case["result"]] if "result" in case else case["results"]
        assert any(identical(got, e) for e in expected), (got, expected)
        assert identical(through_planner(case["selector"], case["document"]), got)


def test_jsonpath_compliance_counts() -> None:
    tally = Counter(outcome(case)[0] for case in require(CTS)["tests"])
    assert dict(tally) == COUNTS
