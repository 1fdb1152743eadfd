"""The differential corpora's windows and rolling windows as Arrow tables and DataFrames.

Every case of ``cases/*.json`` with a ``$window`` or a ``$rolling`` runs through the export path
(``iter_batches``, ``to_arrow``, ``to_pandas``: :func:`jarenlab.query.planner.run.stream_query`)
with the columns warm, on SQLite and on PostgreSQL. Where the columns answer it as Arrow arrays,
each batch must equal, schema and values, the batch the items path builds from the engine's own
items (:func:`jarenlab.frames.chunk_to_arrow`, :func:`~jarenlab.frames.records_to_arrow`: ``int`` stays ``int64``, a missing member is a
null, a member missing from a whole batch is no column), and the DataFrames must be equal. The
number of cases answered as arrays is held exactly, so a shape that stops being taken (or one
that starts) shows.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from jarenlab.errors import JarenlabError
from jarenlab.frames import arrow_to_frame, chunk_to_arrow, concat_batches, slices
from jarenlab.query import evaluate
from jarenlab.query.planner.run import run_query, stream_query
from tests.planner.conftest import CASES, DATASETS, NO_POSTGRESQL
from tests.query.corpus import load_cases

#: The corpora's cases holding a window or a rolling window (of every file: windows_columns.json,
#: series_columns.json, windows.json, series.json ...).
WINDOWED = [
    c for c in load_cases(CASES) if '"$window"' in json.dumps(c.query) or '"$rolling"' in json.dumps(c.query)
]
#: A batch size that splits the datasets' results into several batches.
SIZE = 3
#: Per backend: the cases an export takes from the columns as arrays (a result that is not empty,
#: no declared index serving the query), and the cases the columns answer as arrays when asked
#: (every one they answer as items but those declining for the reasons docs/columns.md gives: a
#: number member or a computed one whose results mix integers and fractions, a single member).
TAKEN = {"sqlite": (46, 76), "postgresql": (46, 76)}


def exported(store: Any, case: Any) -> list[Any] | None:
    """The case's export batches with the columns warm where the columns answered them as
    arrays; None where they did not, the result is empty, or the engine raises (every path's
    error)."""
    coll = store["docs"]
    try:
        run_query(coll, case.query, dict(case.externals or {}), columns=True)  # warms what it reads
        chunks = list(stream_query(coll, case.query, dict(case.externals or {}), SIZE))
    except JarenlabError:
        return None
    finally:
        store.columns.drop()  # (the other tests' runs keep choosing as they would)
    kinds = {kind for kind, _ in chunks}
    if kinds != {"arrow"}:  # (an empty result is no batch at all: nothing to compare)
        assert "arrow" not in kinds, case.name  # all from the columns' table, or none
        return None
    return [
        b
        for kind, chunk in chunks
        for b in chunk_to_arrow(kind, chunk, None, members(case.query)).to_batches()
    ]


def members(query: Any) -> list[str] | None:
    """The member names of a query's final map constructor, in order (as ``select({...})`` hands
    them to the export, which puts its columns in that order)."""
    top = query[0] if type(query) is list and len(query) == 1 else query
    ret = top.get("$return") if isinstance(top, dict) else None
    if isinstance(ret, dict) and not any(k.startswith("$") for k in ret):
        return list(ret)
    return None


def expected(case: Any) -> list[Any]:
    """The items path's batches: the engine's items, ``SIZE`` at a time, as ``records_to_arrow``."""
    items = evaluate(case.query, case.data, dict(case.externals or {}))
    if type(case.query) is list and len(items) == 1 and type(items[0]) is list:
        items = items[0]
    names = members(case.query)
    return [
        b
        for i in range(0, len(items), SIZE)
        for b in chunk_to_arrow("items", items[i : i + SIZE], None, names).to_batches()
    ]


def arrays(store: Any, case: Any) -> list[Any] | None:
    """The case's batches as the columns answer it as Arrow arrays wherever they can (forced: also
    where a declared index would send the export to SQL); None where they answer it otherwise."""
    coll = store["docs"]
    try:
        _, trace, prepared = run_query(coll, case.query, dict(case.externals or {}), columns=True)
        if trace.mode != "columnar":
            return None
        ext = prepared.aligned.bind(dict(case.externals or {}))
        got = store.columns.answer(coll, prepared.columnar, ext, force=True, indexed=False, arrow=True)
    except JarenlabError:
        return None
    finally:
        store.columns.drop()
    if not hasattr(got, "items"):  # (a Reason: the items path types these results)
        return None
    names = members(case.query)
    return [
        b for part in slices(got.items, SIZE) for b in chunk_to_arrow("arrow", part, None, names).to_batches()
    ]


def same_batches(batches: list[Any], case: Any) -> None:
    """``batches`` equal the items path's, schema and values, and so do their DataFrames."""
    want = expected(case)
    assert [b.schema for b in batches] == [b.schema for b in want], case.name
    assert all(a.equals(b) for a, b in zip(batches, want)) and len(batches) == len(want), case.name
    pd.testing.assert_frame_equal(
        arrow_to_frame(concat_batches(batches)), arrow_to_frame(concat_batches(want))
    )


def check_all(by_name: dict[str, Any]) -> tuple[int, int]:
    """How many cases the export took from the columns as arrays, and how many the columns answer
    as arrays when asked (each equal to the items path's batches)."""
    exports = answers = 0
    for case in WINDOWED:
        store = by_name[next(k for k, v in DATASETS.items() if v == case.data)]
        batches = exported(store, case)
        if batches is not None:
            same_batches(batches, case)
            exports += 1
        batches = arrays(store, case)
        if batches is not None:
            same_batches(batches, case)
            answers += 1
    return exports, answers


def test_windows_export_as_the_items_do(stores: dict[str, Any]) -> None:
    assert len(WINDOWED) == 416
    assert check_all(stores) == TAKEN["sqlite"]


def test_windows_export_as_the_items_do_on_postgresql(pg_stores: dict[str, Any] | None) -> None:
    if pg_stores is None:
        pytest.skip(NO_POSTGRESQL)
    assert check_all(pg_stores) == TAKEN["postgresql"]
