"""Live queries on a SQLite store whose file is deleted or replaced while it is open: the store's
connections still read the file it opened, which nobody writes any more, so its live queries say
``stale`` (retryable JD2005 naming the file) instead of showing old rows as current, never make a
new empty file at the path, and follow again when the same file comes back."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from jarenlab import it
from tests.waiting import wait_for

from .conftest import MODEL

pytestmark = pytest.mark.filterwarnings("ignore:jarenlab live queries are stale")


def _follow(store: Any) -> tuple[Any, list[Any]]:
    live = store["nums"].where(it.n >= 0).order_by(it.n).select(it.n).live()
    errors: list[Any] = []
    live.subscribe(lambda patch, seq: None, on_error=errors.append)
    return live, errors


def _opened(path: Path) -> Any:
    store = jl.open(str(path), MODEL)
    store["nums"].insert_many([{"n": n} for n in range(3)])
    return store


def test_a_deleted_file_makes_live_queries_stale_until_it_comes_back(tmp_path: Path) -> None:
    path = tmp_path / "lab.db"
    with _opened(path) as store:
        live, errors = _follow(store)
        os.link(path, tmp_path / "kept.db")  # the same file under another name
        os.remove(path)
        wait_for(lambda: live.state == "stale")
        assert [(e.code, e.retryable, e.condition) for e in errors] == [("JD2005", True, "connection")]
        assert "deleted or replaced" in errors[0].reason and str(path) in errors[0].reason
        assert store.changes.stats()["stale"] == 1
        assert not path.exists()  # nothing made a new, empty file there
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert live.rows == [0, 1, 2]  # kept, and marked stale: not shown as current
        os.link(tmp_path / "kept.db", path)  # the same file is back
        wait_for(lambda: live.state == "live")
        with jl.open(str(path), MODEL) as writer:
            writer["nums"].insert({"n": 9})
        wait_for(lambda: live.rows == [0, 1, 2, 9])
        assert len(errors) == 1


def test_a_file_replaced_by_another_store_is_stale_not_silently_old(tmp_path: Path) -> None:
    path, other_path = tmp_path / "lab.db", tmp_path / "other.db"
    with _opened(path) as store, _opened(other_path) as other:
        other["nums"].insert({"n": 100})
        live, errors = _follow(store)
        shutil.copy(other_path, tmp_path / "copy.db")
        os.replace(tmp_path / "copy.db", path)  # a restored backup moved over the open file
        wait_for(lambda: live.state == "stale")
        assert errors and errors[0].code == "JD2005" and "replaced" in errors[0].reason
        assert live.state == "stale" and len(errors) == 1
