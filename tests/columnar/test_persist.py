"""Columns saved beside the database and read by a reopened store: warm at once, patched forward from
the change log, and never trusted when the stamp does not hold (another store's file, a cut file, a
changed schema), on both backends."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.query import agg, it, key

MODEL = {
    "$model": "0.1",
    "collections": {
        "t": {
            "schema": {
                "type": "object",
                "properties": {"c": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"}},
            },
            "key": None,
            "identity": "integer",
        }
    },
}


def _question(t: Any) -> Any:
    return t.group_by(c=it.c).select(
        {"c": key("c"), "n": agg.sum(it.n), "x": agg.sum(it.x), "k": agg.count()}
    )


def _answer(t: Any) -> list[Any]:
    """The columns' answer, checked against SQL's."""
    doc = _question(t).document
    got = t.execute(doc, {}, columns=True)
    assert got == t.execute(doc, {}, columns=False)
    assert t.explain(doc, {}, columns=True).mode == "columnar"
    return list(got)


def _folder(store: Any, tmp_path: Path) -> Path:
    """Where the test saves: beside a SQLite file, a folder of the test's for PostgreSQL."""
    return store.columns.folder if store.columns.folder is not None else tmp_path / "columns"


def _load(t: Any, n: int) -> None:
    t.insert_many([{"c": "abc"[i % 3], "n": i, "x": i / 7} for i in range(n)], progress=False)


def test_a_reopened_store_reads_its_saved_columns_and_patches_them_forward(
    open_store: Any, tmp_path: Path
) -> None:
    store = open_store(MODEL)
    t = store["t"]
    _load(t, 3000)
    _answer(t)
    folder = _folder(store, tmp_path)
    written = store.columns.save(folder)
    assert written == [str(folder / "t.arrow")] and os.listdir(folder) == ["t.arrow"]  # no temporary left
    t.insert({"c": "a", "n": 5, "x": 0.25})  # after the save: the reopened store patches it in
    t.delete(1)
    expected = _answer(t)
    store.close()
    again = open_store.reopen(store, MODEL)
    if again.columns.folder != folder:
        again.columns.load(folder)
    assert _answer(again["t"]) == expected
    stats = again.columns.stats()
    assert stats["restores"] == 1 and stats["builds"] == 0 and stats["patches"] == 1
    assert stats["restored"]["t"].startswith("read from ")


def test_a_stamp_that_does_not_hold_is_never_trusted(open_store: Any, tmp_path: Path) -> None:
    store = open_store(MODEL)
    t = store["t"]
    _load(t, 500)
    _answer(t)
    folder = _folder(store, tmp_path)
    store.columns.save(folder)
    other = open_store(MODEL, name="other")
    _load(other["t"], 40)
    _answer(other["t"])
    elsewhere = tmp_path / "other-columns"
    other.columns.save(elsewhere)
    expected = _answer(t)
    store.close()

    def reopened(why: str) -> None:
        again = open_store.reopen(store, MODEL)
        again.columns.load(folder)
        assert _answer(again["t"]) == expected
        restored = again.columns.stats()["restored"]["t"]
        assert restored.startswith("rebuilt: ") and why in restored, restored
        assert again.columns.stats()["restores"] == 0
        again.close()

    shutil.copy(elsewhere / "t.arrow", folder / "t.arrow")  # another store's columns, same record number
    reopened("is not the one it reflects")
    size = (folder / "t.arrow").stat().st_size
    os.truncate(folder / "t.arrow", size // 2)  # a file cut short
    reopened("cannot be read")
    (folder / "t.arrow").write_bytes(b"not arrow at all")
    reopened("cannot be read")


def test_a_schema_changed_since_the_save_rebuilds(open_store: Any, tmp_path: Path) -> None:
    store = open_store(MODEL)
    t = store["t"]
    _load(t, 200)
    _answer(t)
    folder = _folder(store, tmp_path)
    store.columns.save(folder)
    store.close()
    changed = {"$model": "0.1", "collections": {"t": {**MODEL["collections"]["t"]}}}
    changed["collections"]["t"]["schema"] = {
        **MODEL["collections"]["t"]["schema"],
        "properties": {**MODEL["collections"]["t"]["schema"]["properties"], "extra": {"type": "string"}},
    }
    again = open_store.reopen(store)
    again.migrate(changed)
    again.columns.load(folder)
    _answer(again["t"])
    assert "schema" in again.columns.stats()["restored"]["t"]


def test_saving_needs_a_folder_it_can_write(open_store: Any, tmp_path: Path) -> None:
    store = open_store(MODEL)
    _load(store["t"], 50)
    _answer(store["t"])
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(jl.StoreError) as err:
        store.columns.save(blocker)
    assert err.value.code == "JD2162"
    if store.columns.folder is None:  # PostgreSQL: no file to save beside
        with pytest.raises(jl.StoreError) as err:
            store.columns.save()
        assert err.value.code == "JD2162"
