"""A row query's results as Arrow arrays taken straight from the columns (no Python item per row).

``to_arrow()``, ``to_pandas()`` and ``iter_batches()`` of a query that returns members of its
rows (``where(...).order_by(...).select({...})``) read this form when the columns answer it: each
result column is the held column taken at the result rows, as the items path would have typed it
from the same values. The tables equal what the items give, batch for batch: a result missing a
member has a null there, a member missing from a whole batch has no column in it (as
:func:`jarenlab.frames.records_to_arrow` builds from items), strings are ``string``, integers
``int64``, other numbers ``double``. A number member holding both integers and fractions is typed
row by row from items (the columns decline it), and so is every other shape of result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.query.columnar.answer import kept, positions
from jarenlab.query.columnar.columns import Decline, Table, values_at
from jarenlab.query.columnar.reads import pointer
from jarenlab.query.columnar.series import rolled
from jarenlab.query.planner.plan import Plan
from jarenlab.query.planner.preds import Field, FieldOut, MapOut

#: The name a result that is not a map takes (as :func:`jarenlab.frames.records_to_arrow` names it).
VALUE = "value"


def shape(plan: Plan) -> list[tuple[str, Field]] | None:
    """The result columns of a row plan whose every result is a flat map of members, or one member:
    ``[(name, field)]`` in the map's order; None for any other plan.

    >>> f = Field(("a",), "integer", None)
    >>> p = Plan("t", "native", output=MapOut((("x", FieldOut(f)),)))
    >>> shape(p)[0][0], shape(Plan("t", "native", output=FieldOut(f)))[0][0]
    ('x', 'value')
    """
    if plan.aggregate is not None or plan.group is not None or plan.series is not None or plan.window:
        return None
    out = plan.output
    if isinstance(out, FieldOut) and plan.rolling is None:
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
        keep &= ~_missing(cols[plan.output.field].values)  # a missing member is no result at all
    idx = positions(plan, cols, len(table), None if keep.all() else np.flatnonzero(keep))
    computed = _rolled(plan, cols, idx)
    arrays = {}
    for name, f in columns:
        if len(f.steps) == 1 and f.steps[0] in computed:
            arrays[name] = computed[f.steps[0]]
            continue
        col = cols[f]
        if col.ints is not None:
            raise Decline(f"{pointer(f)} holds integers and fractions (typed row by row)")
        values = values_at(col, idx)
        arrays[name] = values.cast(pa.string()) if pa.types.is_large_string(values.type) else values
    return pa.table(arrays)


def _rolled(plan: Plan, cols: dict[Field, Any], idx: np.ndarray) -> dict[Any, pa.Array]:
    """A ``$rolling``'s computed members at ``idx`` as arrays typed as the items path types them:
    counts and sums of integers ``int64``, averages ``double``, extremes of strings ``string``
    (:class:`Decline` where a row has none, or a column would mix integers and fractions)."""
    if plan.rolling is None:
        return {}
    out = {}
    kinds = {name: fn for name, fn, _ in plan.rolling.compute}
    for name, values in rolled(plan.rolling, cols, idx).items():
        if isinstance(values, np.ndarray):  # every row a number of one kind
            out[name] = pa.array(values)
            continue
        if None in values:
            raise Decline(f"a row with no rolling {name!r}: its own member, if any, is not in columns")
        arr = pa.array(values)
        if not (pa.types.is_integer(arr.type) or pa.types.is_string(arr.type) or kinds[name] == "avg"):
            raise Decline(f"the rolling {name!r} may mix integers and fractions (typed row by row)")
        out[name] = arr
    return out


def _missing(values: pa.Array) -> np.ndarray:
    return np.asarray(pc.is_null(values).to_numpy(zero_copy_only=False), dtype=bool)
