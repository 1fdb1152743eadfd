"""The public conformance suites, read where they live: they are not part of the project.

The folder is ``<repo>/../shared/conformance`` unless the ``JARENLAB_CONFORMANCE`` environment variable
names another. Where a suite file is missing its tests skip, saying which file and where it was looked for.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

ROOT = Path(
    os.environ.get("JARENLAB_CONFORMANCE")
    or Path(__file__).resolve().parents[2].parent / "shared" / "conformance"
)


def load(relative: str) -> Any:
    """The parsed JSON of one suite file, or None when it is absent."""
    path = ROOT / relative
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def absent(relative: str) -> Any:
    """A parameter set that skips with the reason, for a suite file that is not there."""
    reason = f"conformance suite file {ROOT / relative} is absent (JARENLAB_CONFORMANCE names the folder)"
    return [pytest.param(None, id="absent", marks=pytest.mark.skip(reason=reason))]


def require(relative: str) -> Any:
    """The parsed JSON of one suite file; skip the calling test when it is absent."""
    data = load(relative)
    if data is None:
        pytest.skip(
            f"conformance suite file {ROOT / relative} is absent (JARENLAB_CONFORMANCE names the folder)"
        )
    return data


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON texts with sorted members: types exact (``1`` is not ``1.0``), member order free."""
    return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)
