"""The error root, its fields, and docs/errors.md kept in sync with the code table."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

import jarenlab as jl
from jarenlab import errors

ROOT = Path(__file__).resolve().parents[1]


def test_docs_errors_md_matches_the_code_table() -> None:
    assert (ROOT / "docs" / "errors.md").read_text() == errors.errors_markdown()


def test_every_code_raised_in_the_package_is_in_the_table() -> None:
    used = set()
    for path in (ROOT / "jarenlab").rglob("*.py"):
        used |= set(re.findall(r'"(J[DQ]\d{4})"', path.read_text()))
    assert used - set(errors.CODES) == set()


def test_fields_html_and_pickling() -> None:
    err = errors.StoreError("JD2001", "duplicate key", collection="c", key="k", errors=["e1"])
    assert err.code == "JD2001" and err.name == "duplicate_key" and isinstance(err, jl.JarenlabError)
    assert str(err) == "JD2001 duplicate_key: duplicate key (collection 'c', key 'k')"
    assert "<li>e1</li>" in err._repr_html_() and "duplicate_key" in err._repr_html_()
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is errors.StoreError and back.key == "k" and back.errors == ["e1"]


def test_unknown_codes_are_a_programming_error() -> None:
    with pytest.raises(ValueError):
        errors.JarenlabError("JD9999", "nope")


def test_busy_is_retryable(tmp_path: Path) -> None:
    import sqlite3

    from jarenlab.backends.sqlite.backend import translate

    err = translate(sqlite3.OperationalError("database is locked"))
    assert err is not None and err.code == "JD2005" and err.retryable and err.condition == "busy"
    assert isinstance(err.__cause__, sqlite3.OperationalError)
    other = translate(sqlite3.OperationalError("no such table: x"))
    assert other is not None and not other.retryable and other.condition == "other"


#: ``SomeError("JDxxxx"`` (a literal code as the first argument, possibly on the next line).
RAISED = re.compile(r'\b([A-Z]\w*)\(\s*"(J[DQ]\d{4})"')
#: (code, class, module) raised against the one-class rule, in modules the backend-layer work is
#: rewriting: each should raise its code's class. Listed so this test fails, and the entry goes, once fixed.
KNOWN_STRAYS: set[tuple[str, str, str]] = set()


def test_every_code_is_raised_as_one_class() -> None:
    """A code names one kind of failure, so ``except`` on its class catches every raise of it."""
    raised: dict[str, dict[str, set[str]]] = {}
    for path in sorted((ROOT / "jarenlab").rglob("*.py")):
        for cls, code in RAISED.findall(path.read_text()):
            raised.setdefault(code, {}).setdefault(cls, set()).add(path.relative_to(ROOT).as_posix())
    assert len(raised) > 40  # the pattern still finds the raises
    strays = set()
    for code, by_class in raised.items():
        main = max(by_class, key=lambda c: len(by_class[c]))
        strays |= {(code, cls, p) for cls, paths in by_class.items() if cls != main for p in paths}
    assert strays == KNOWN_STRAYS
