"""RFC 6902 JSON Patch, RFC 6901 JSON Pointer and RFC 7386 merge patch against the public suites.

json-patch-tests (``tests.json``, ``spec_tests.json``): every enabled case, and the disabled cases that
still mean something once parsed (a disabled case expecting an error is about a duplicate member, which a
parsed patch cannot hold). RFC 6901 section 5 and RFC 7386 appendix A: every example.
"""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab import pointer
from jarenlab.errors import StoreError
from jarenlab.patch import apply_patch, merge_patch
from tests.conformance.suites import absent, load, require, same_json

PATCH_FILES = ("json-patch-tests/tests.json", "json-patch-tests/spec_tests.json")
POINTERS = "rfc6901-section5-examples.json"
MERGES = "rfc7386-merge-patch-examples.json"


def _patch_cases() -> list[Any]:
    out: list[Any] = []
    for name in PATCH_FILES:
        cases = load(name)
        if cases is None:
            return absent(name)
        for n, case in enumerate(cases):
            runnable = not (case.get("disabled") and "error" in case)
            label = f"{name.split('/')[-1]}:{n}:{case.get('comment', '')[:40]}"
            out.append(
                pytest.param(
                    case,
                    id=label,
                    marks=()
                    if runnable
                    else pytest.mark.skip(
                        reason="a parsed patch cannot hold the duplicate member this disabled case is about"
                    ),
                )
            )
    return out


@pytest.mark.parametrize("case", _patch_cases())
def test_json_patch_suite(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(StoreError) as info:
            apply_patch(case["doc"], case["patch"])
        assert info.value.code == "JD2009"
        return
    got = apply_patch(case["doc"], case["patch"])
    if "expected" in case:
        assert same_json(got, case["expected"])


def test_json_patch_suite_size() -> None:
    """Every case is accounted for: the checked count cannot shrink without this test saying so."""
    cases = [c for name in PATCH_FILES for c in require(name)]
    skipped = [c for c in cases if c.get("disabled") and "error" in c]
    assert (len(cases), len(cases) - len(skipped), len(skipped)) == (112, 110, 2)
    assert sum("error" in c for c in cases if c not in skipped) == 34


def _pointer_cases() -> list[Any]:
    data = load(POINTERS)
    if data is None:
        return absent(POINTERS)
    return [pytest.param({**t, "document": data["document"]}, id=repr(t["pointer"])) for t in data["tests"]]


@pytest.mark.parametrize("case", _pointer_cases())
def test_rfc6901_examples(case: dict[str, Any]) -> None:
    assert pointer.problem(case["pointer"]) is None
    assert pointer.split(case["pointer"]) == case["tokens"]
    ops = [{"op": "test", "path": case["pointer"], "value": case["value"]}]
    assert apply_patch(case["document"], ops) == case["document"]


def _merge_cases() -> list[Any]:
    data = load(MERGES)
    if data is None:
        return absent(MERGES)
    return [pytest.param(t, id=t["name"]) for t in data["tests"]]


@pytest.mark.parametrize("case", _merge_cases())
def test_rfc7386_examples(case: dict[str, Any]) -> None:
    assert same_json(merge_patch(case["original"], case["patch"]), case["result"])


def test_rfc_example_counts() -> None:
    assert len(require(POINTERS)["tests"]) == 12
    assert len(require(MERGES)["tests"]) == 17


# -- beyond the suites: pointers the RFC refuses are refused with the patch code --------------------
@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/a~2", "'~' not followed by '0' or '1'"),
        ("/a~", "'~' not followed by '0' or '1'"),
        ("/~a", "'~' not followed by '0' or '1'"),
        ("a", "does not start with '/'"),
        (7, "is not a string"),
        (None, "is not a string"),
    ],
)
def test_malformed_pointers_are_the_patch_error(path: Any, words: str) -> None:
    with pytest.raises(StoreError) as info:
        apply_patch({"a": 1, "a~2": 2}, [{"op": "test", "path": path, "value": 1}])
    assert info.value.code == "JD2009" and words in info.value.reason and info.value.doc_path == "/0"


@pytest.mark.parametrize("index", ["٣", "３", "+1", "-1", "01", "00", " 1", "1 ", "1e0", "0x1", "1_0"])
def test_array_indexes_are_ascii_digits_without_leading_zeros(index: str) -> None:
    doc = {"a": [0, 1, 2, 3]}
    for op in (
        {"op": "test", "path": f"/a/{index}", "value": 3},
        {"op": "add", "path": f"/a/{index}", "value": 9},
        {"op": "remove", "path": f"/a/{index}"},
    ):
        with pytest.raises(StoreError) as info:
            apply_patch(doc, [op])
        assert info.value.code == "JD2009" and "is not an array index" in info.value.reason


def test_an_index_of_many_digits_is_out_of_range_not_a_crash() -> None:
    with pytest.raises(StoreError) as info:
        apply_patch({"a": [1]}, [{"op": "test", "path": "/a/" + "9" * 5000, "value": 1}])
    assert info.value.code == "JD2009" and "out of range" in info.value.reason
    assert apply_patch({"a": [1, 2]}, [{"op": "test", "path": "/a/1", "value": 2}]) == {"a": [1, 2]}
