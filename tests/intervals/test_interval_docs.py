"""The docstring examples of the interval, owner and idempotency modules run and pass."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

from jarenlab import idempotency, intervals, owner


@pytest.mark.parametrize("module", [intervals, owner, idempotency], ids=lambda m: m.__name__)
def test_docstring_examples_pass(module: ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3 and result.failed == 0
