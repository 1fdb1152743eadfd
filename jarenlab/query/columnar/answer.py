"""The columnar path's answer: a native plan evaluated over a collection's columns (the driver).

The planner's analysis decides what SQL may answer exactly (:class:`~jarenlab.query.planner.plan.Plan`,
mode ``native``); this module answers the same plan from Arrow columns with pyarrow's compute
functions and numpy, to the same items. It checks that every column the plan reads can be exact
(:func:`kept`), keeps the rows the filter keeps (:mod:`.filters`), and hands them on: a count of
them, a whole-query aggregate or a group-by (:mod:`.groups`: groups in the order of their first
row, or as ordered, with their ``HAVING``), or rows of members ordered and windowed (:mod:`.rows`),
each assembled as the engine's constructors would (:mod:`.items`). It takes a plan only where every
member it reads is schema-typed as one string, integer or number (a missing member is a null, never
a value); :func:`~jarenlab.query.columnar.reads.needs` says why otherwise, and the SQL path answers.
Integers stay integers, float sums are the engine's correctly rounded ones (:mod:`.exact`), strings
compare by code point (UTF-8 bytes order as code points do), missing members order as the engine
orders them, and ties keep storage order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jarenlab.query.columnar.columns import Column, Decline, Table
from jarenlab.query.columnar.filters import mask
from jarenlab.query.columnar.groups import group_by
from jarenlab.query.columnar.reads import member, pointer
from jarenlab.query.columnar.rows import project
from jarenlab.query.columnar.whole import whole
from jarenlab.query.planner.plan import TRUE, Plan
from jarenlab.query.planner.preds import AggOut, Field


class Held(dict[Field, Column]):
    """A table's columns looked up by a plan's fields (a column is held per member and family,
    whichever typed column the plan's field names)."""

    def __init__(self, columns: dict[Field, Column]) -> None:
        super().__init__()
        self.columns = columns

    def __getitem__(self, f: Field) -> Column:
        return self.columns[member(f)]


def evaluate(plan: Plan, table: Table, externals: dict[str, Any], needed: tuple[Field, ...]) -> list[Any]:
    """The flat items of ``plan`` over ``table`` (as :func:`~jarenlab.query.planner.decode.decode`
    gives them from SQL); :class:`Decline` where the columns cannot be exact."""
    cols = _held(table, needed)
    rows: np.ndarray | None = None
    if plan.where == TRUE:  # (no filter: every row, no mask made)
        if plan.aggregate == ("count", None):
            return [len(table)]
    else:
        keep = mask(plan.where, cols, externals, len(table))
        if plan.aggregate == ("count", None):
            return [int(np.count_nonzero(keep))]
        rows = None if keep.all() else np.flatnonzero(keep)
    if plan.aggregate is not None:
        return whole(AggOut(*plan.aggregate), cols, rows, len(table))
    if plan.group is not None:
        return group_by(plan, cols, rows, len(table))
    return project(plan, cols, len(table), rows)


def kept(
    plan: Plan, table: Table, externals: dict[str, Any], needed: tuple[Field, ...]
) -> tuple[Held, np.ndarray]:
    """The table's columns by field, and the rows the plan's filter keeps (:class:`Decline` where a
    column the plan reads cannot give the engine's answer)."""
    cols = _held(table, needed)
    return cols, mask(plan.where, cols, externals, len(table))


def _held(table: Table, needed: tuple[Field, ...]) -> Held:
    """The table's columns by field (:class:`Decline` where one the plan reads cannot give the
    engine's answer)."""
    cols = Held(table.columns)
    for f in needed:
        if cols[f].inexact:
            raise Decline(f"{pointer(f)} holds {cols[f].inexact}")
    return cols
