"""The two JSON equalities: JSON equality (queries, RFC 6902 ``test``) and exact sameness.

Each rule is defined once, in :mod:`jarenlab.query.lang.values`; these tests pin where they differ and that
the patch ``test`` operation, idempotent results and live rows use the right one.
"""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab.errors import StoreError
from jarenlab.live import window
from jarenlab.patch import apply_patch
from jarenlab.query.lang.values import identical, json_eq

#: (a, b, JSON equal, identical)
PAIRS: list[tuple[Any, Any, bool, bool]] = [
    (1, 1, True, True),
    (1, 1.0, True, False),
    (0.0, -0.0, True, False),
    (True, 1, False, False),
    (False, 0, False, False),
    ([1], [True], False, False),
    ({"b": True}, {"b": 1}, False, False),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True, False),
    ({"a": [1, {"c": None}]}, {"a": [1.0, {"c": None}]}, True, False),
    ({"a": [1, {"c": None}]}, {"a": [1, {"c": None}]}, True, True),
    ([1, 2], [1, 2, 3], False, False),
    ({"a": None}, {}, False, False),
    ("1", 1, False, False),
    (None, None, True, True),
]


@pytest.mark.parametrize(("a", "b", "equal", "same"), PAIRS)
def test_json_equality_and_exact_sameness(a: Any, b: Any, equal: bool, same: bool) -> None:
    assert json_eq(a, b) is equal and json_eq(b, a) is equal
    assert identical(a, b) is same and identical(b, a) is same


def test_a_tuple_is_not_a_list_when_sameness_is_exact() -> None:
    assert not identical([1, 2], (1, 2))
    assert not identical({"a": [1]}, {"a": (1,)})


@pytest.mark.parametrize(("a", "b", "equal", "same"), PAIRS)
def test_patch_test_is_json_equality(a: Any, b: Any, equal: bool, same: bool) -> None:
    """RFC 6902 section 4.6: JSON types compared recursively, numbers by value."""
    ops = [{"op": "test", "path": "/v", "value": b}]
    if equal:
        assert apply_patch({"v": a}, ops) == {"v": a}
    else:
        with pytest.raises(StoreError) as info:
            apply_patch({"v": a}, ops)
        assert info.value.code == "JD2009"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"n": 1}, {"n": 1.0}),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
        ([0.0], [-0.0]),
        ([True], [1]),
        ({"a": [1]}, {"a": [1]}),
    ],
)
def test_the_decoded_fast_path_agrees_with_the_rule(a: Any, b: Any) -> None:
    assert identical(a, b, decoded=True) == identical(a, b) == window.same(a, b)


def test_live_rows_compare_by_exact_sameness() -> None:
    assert window.diff_values([{"n": 1}], [{"n": 1.0}])[0] == [
        {"op": "replace", "path": "/rows/0", "value": {"n": 1.0}}
    ]
    assert window.diff_values([{"a": 1, "b": 2}], [{"b": 2, "a": 1}])[0] != []
    assert window.diff_values([{"n": 1}], [{"n": 1}])[0] == []
