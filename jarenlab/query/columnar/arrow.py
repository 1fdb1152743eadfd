"""A row query's results as Arrow arrays taken straight from the columns (no Python item per row).

``to_arrow()``, ``to_pandas()`` and ``iter_batches()`` of a query that returns members of its
rows (``where(...).order_by(...).select({...})``, also after a ``$window`` or a ``$rolling``)
read this form when the columns answer it: each result column is the held column taken at the
result rows, or the computed member's array (ranks, offsets, framed and rolling aggregates, kept
as numpy and Arrow arrays from the start), as the items path would have typed it from the same
values. The tables equal what the items give, batch for batch: a result missing a member has a
null there, a member missing from a whole batch has no column in it (as
:func:`jarenlab.frames.records_to_arrow` builds from items), strings are ``string``, integers
``int64``, other numbers ``double``. A number member whose results mix integers and fractions is
typed row by row from items (the columns decline it), and so is every other shape of result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.query.columnar.answer import kept
from jarenlab.query.columnar.columns import Column, Decline, Table, bits, values_at
from jarenlab.query.columnar.reads import pointer
from jarenlab.query.columnar.rows import row_values
from jarenlab.query.planner.plan import Plan
from jarenlab.query.planner.preds import Field, FieldOut, MapOut

#: The name a result that is not a map takes (as :func:`jarenlab.frames.records_to_arrow` names it).
VALUE = "value"


def shape(plan: Plan) -> list[tuple[str, Field]] | None:
    """The result columns of a row plan whose every result is a flat map of members (a
    ``$window``'s or a ``$rolling``'s computed ones included), or one member: ``[(name, field)]``
    in the map's order; None for any other plan.

    >>> f = Field(("a",), "integer", None)
    >>> p = Plan("t", "native", output=MapOut((("x", FieldOut(f)),)))
    >>> shape(p)[0][0], shape(Plan("t", "native", output=FieldOut(f)))[0][0]
    ('x', 'value')
    """
    if plan.aggregate is not None or plan.group is not None or plan.series is not None:
        return None
    out = plan.output
    if isinstance(out, FieldOut) and plan.rolling is None and plan.window is None:
        return [(VALUE, out.field)]
    if isinstance(out, MapOut) and out.members:
        fields = [(name, o.field) for name, o in out.members if isinstance(o, FieldOut)]
        return fields if len(fields) == len(out.members) else None
    return None


def evaluate_arrow(
    plan: Plan, table: Table, externals: dict[str, Any], needed: tuple[Field, ...]
) -> pa.Table:
    """The plan's results as one table (:class:`Decline` where the items path must type them)."""
    columns = shape(plan)
    if columns is None:
        raise Decline("only a row query returning members has an Arrow form")
    cols, keep = kept(plan, table, externals, needed)
    if isinstance(plan.output, FieldOut):
        keep &= ~bits(pc.is_null(cols[plan.output.field].values))  # a missing member is no result
    idx, computed = row_values(plan, cols, len(table), None if keep.all() else np.flatnonzero(keep))
    arrays = {}
    for name, f in columns:
        if len(f.steps) == 1 and f.steps[0] in computed:
            arrays[name] = typed(computed[str(f.steps[0])], None, repr(f.steps[0]))
        else:
            arrays[name] = typed(cols[f], idx, pointer(f))
    return pa.table(arrays)


def typed(col: Column, idx: np.ndarray | None, name: str) -> pa.Array:
    """A column's values at ``idx`` (all when None) typed as the items path types them: strings
    ``string``, integers ``int64``, other numbers ``double``, a number member whose results hold
    only integers ``int64`` (exact: held within 2^53 beside floats); :class:`Decline` where the
    results mix integers and fractions (the items path types each batch by its own rows).

    >>> from jarenlab.query.columnar.columns import computed
    >>> typed(computed(np.array([2.0, 3.0]), ints=np.array([True, True])), None, "n").type
    DataType(int64)
    """
    whole = idx is None or (len(idx) == len(col.values) and bool(np.array_equal(idx, np.arange(len(idx)))))
    values = col.values if whole else values_at(col, idx)
    if pa.types.is_large_string(values.type):
        return values.cast(pa.string())
    if col.ints is not None:
        ints = col.ints if whole else col.ints[idx]
        present = bits(values.is_valid())
        if np.array_equal(ints & present, present):
            return values.cast(pa.int64())
        if (ints & present).any():
            raise Decline(f"{name} holds integers and fractions (typed row by row)")
    return values
