"""Every JSON Pointer the package writes escapes its tokens (RFC 6901): a member named ``a/b`` is
``/a~1b``, never ``/a/b`` (which names member ``b`` of member ``a``)."""

from __future__ import annotations

import jsonschema_rs
import pytest

from jarenlab.errors import StoreError, ValidationError
from jarenlab.model import validation_errors
from jarenlab.patch import apply_patch
from jarenlab.values import to_json


def test_value_refusals_name_the_member_by_an_escaped_pointer() -> None:
    with pytest.raises(ValidationError) as info:
        to_json({"a/b": {"c~d": [1, float("nan")]}})
    assert info.value.reason.endswith(" at /a~1b/c~0d/1")


def test_validator_messages_name_the_member_by_an_escaped_pointer() -> None:
    schema = {"type": "object", "properties": {"a/b": {"type": "array", "items": {"type": "string"}}}}
    validator = jsonschema_rs.validator_for(schema)
    assert validation_errors(validator, {"a/b": ["x", 1]}) == ['/a~1b/1: 1 is not of type "string"']
    assert validation_errors(validator, []) == ['(root): [] is not of type "object"']


def test_patch_errors_name_the_path_by_an_escaped_pointer() -> None:
    with pytest.raises(StoreError) as info:
        apply_patch({"a/b": {}}, [{"op": "remove", "path": "/a~1b/c~0d"}])
    assert info.value.reason == "path /a~1b/c~0d does not exist"
