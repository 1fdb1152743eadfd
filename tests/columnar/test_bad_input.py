"""Bad input to ``store.columns`` (found by an outside trial): a coded error, nothing changed."""

from __future__ import annotations

from typing import Any

import pytest

import jarenlab as jl
from tests.live.conftest import MODEL


def test_save_and_load_refuse_a_folder_that_is_not_a_path(open_store: Any) -> None:
    columns = open_store(MODEL).columns
    for call in (lambda: columns.save(5), lambda: columns.load(5)):
        with pytest.raises(jl.JarenlabError) as info:
            call()
        assert info.value.code == "JD2162"


def test_load_refuses_a_folder_that_does_not_exist(open_store: Any, tmp_path: Any) -> None:
    columns = open_store(MODEL).columns
    with pytest.raises(jl.JarenlabError) as info:
        columns.load(tmp_path / "no-such-folder")
    assert info.value.code == "JD2162"


def test_load_refuses_a_folder_without_this_stores_columns_and_keeps_its_own(
    open_store: Any, tmp_path: Any
) -> None:
    """A folder holding no saved columns of the store's collections is refused, and the folder the
    store reads from stays what it was."""
    columns = open_store(MODEL).columns
    (tmp_path / "other.arrow").write_bytes(b"not ours")
    before = columns.folder
    with pytest.raises(jl.JarenlabError) as info:
        columns.load(tmp_path)
    assert info.value.code == "JD2162" and "holds no saved columns" in str(info.value)
    assert columns.folder == before
