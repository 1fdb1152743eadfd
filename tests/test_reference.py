"""Every public name is documented, and docs/reference.md is current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("make_reference", ROOT / "docs" / "make_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_name_has_a_docstring() -> None:
    gen = _generator()
    missing = []
    for section, obj in gen.SURFACE:
        if not gen.summary(obj):
            missing.append(section)
        for name, member in gen.public_members(obj):
            if gen.is_field(member):
                continue
            if not gen.summary(member):
                missing.append(f"{section}.{name}")
    assert missing == []


def test_reference_md_is_current() -> None:
    assert (ROOT / "docs" / "reference.md").read_text() == _generator().render()
