"""Every docstring example in the package runs and passes (executable docs)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import jarenlab

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(jarenlab.__path__, "jarenlab.") if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", ["jarenlab", *MODULES])
def test_docstring_examples_pass(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_the_package_has_examples() -> None:
    attempted = sum(doctest.testmod(importlib.import_module(n)).attempted for n in MODULES)
    assert attempted >= 100
