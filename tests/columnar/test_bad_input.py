"""Bad input to ``store.columns``: found by an outside trial, left for the columns room.

Each is a strict xfail with the reason: the fix belongs in ``jarenlab/query/columnar/``, which
other work holds now; when it lands the xfail turns into a failure and is removed.
"""

from __future__ import annotations

from typing import Any

import pytest

import jarenlab as jl
from tests.live.conftest import MODEL


@pytest.mark.xfail(
    strict=True,
    reason="columns.save(5) and columns.load(5) raise TypeError from os.path: a folder that is not "
    "a str or os.PathLike should be JD2162 columns_folder (jarenlab/query/columnar/path.py)",
)
def test_save_and_load_refuse_a_folder_that_is_not_a_path(open_store: Any) -> None:
    columns = open_store(MODEL).columns
    for call in (lambda: columns.save(5), lambda: columns.load(5)):
        with pytest.raises(jl.JarenlabError) as info:
            call()
        assert info.value.code == "JD2162"


@pytest.mark.xfail(
    strict=True,
    reason="columns.load('/no/such/folder') returns silently with nothing loaded: a folder that does "
    "not exist (or holds no saved columns) should be JD2162, not an empty success "
    "(jarenlab/query/columnar/path.py)",
)
def test_load_refuses_a_folder_that_does_not_exist(open_store: Any, tmp_path: Any) -> None:
    columns = open_store(MODEL).columns
    with pytest.raises(jl.JarenlabError) as info:
        columns.load(tmp_path / "no-such-folder")
    assert info.value.code == "JD2162"
