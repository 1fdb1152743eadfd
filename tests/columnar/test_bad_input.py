"""Bad input to ``store.columns``: a coded error, nothing changed."""

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


def test_warm_refuses_members_that_are_not_names(open_store: Any) -> None:
    """``warm("items", 5)`` was a TypeError ('int' object is not iterable) and ``warm("items", [5])``
    an AttributeError ('int' object has no attribute 'startswith'): each is JD2010 saying members
    are a name or a list of names; nothing is built."""
    columns = open_store(MODEL).columns
    for members in (5, [5], [None], ["x", 2.5], {"x": 1}.items()):
        with pytest.raises(jl.JarenlabError) as info:
            columns.warm("items", members)
        assert info.value.code == "JD2010" and "a list of names" in info.value.reason, members
    assert columns.held() == []
    columns.warm("items", (m for m in ["x", "/g"]))  # any iterable of names
    assert {row["member"] for row in columns.held()} == {"/x", "/g"}


def test_drop_refuses_a_collection_the_model_does_not_declare(open_store: Any) -> None:
    """``drop("itmes")`` (a typo) let go of nothing without a word, and ``drop(["items"])`` was a
    TypeError (unhashable type: 'list'): each is JD2004, as ``warm`` of such a name is, and the
    columns held stay."""
    columns = open_store(MODEL).columns
    columns.warm("items", ["x"])
    for name in ("itmes", 5, ["items"]):
        with pytest.raises(jl.JarenlabError) as info:
            columns.drop(name)  # type: ignore[arg-type]
        assert info.value.code == "JD2004", name
    assert len(columns.held()) == 1
    columns.drop("items")
    assert columns.held() == []


def test_budget_and_progress_take_what_open_takes(open_store: Any) -> None:
    """``store.columns.budget = "lots"`` and ``progress = "no"`` were kept, and failed later (a
    TypeError at the next build) or read as true: now JD0006, the setting unchanged. A budget is
    set as ``jl.open``'s ``columns=``: a size, bytes, True or False."""
    columns = open_store(MODEL).columns
    before = columns.budget
    for value in ("lots", -5, 2.5, [1]):
        with pytest.raises(jl.JarenlabError) as info:
            columns.budget = value  # type: ignore[assignment]
        assert info.value.code == "JD0006" and columns.budget == before
    for flag in ("no", 1, 0):
        with pytest.raises(jl.JarenlabError) as info:
            columns.progress = flag  # type: ignore[assignment]
        assert info.value.code == "JD0006" and columns.progress is None
    columns.budget = "2GB"
    assert columns.budget == 2_000_000_000
    columns.budget = False
    assert columns.budget is None
    columns.budget = True
    columns.progress = False
    assert columns.budget == 1_000_000_000 and columns.progress is False
