"""Rows over columns: a row plan's results in order, past its offset, within its limit, projected.

The rows the filter keeps are ordered as the engine orders them (:func:`positions`: missing members
where the engine puts them, ties in storage order, one Arrow sort of every key); a top-N first
prunes to the rows that can still be among the first N by the first key. A ``$window`` ranks the
rows instead (:mod:`.windows`) and a ``$rolling`` computes its members over the rows in order
(:mod:`.series`); :func:`row_values` hands both forms (the items here, the Arrow arrays of
:mod:`.arrow`) the positions and the computed members. :func:`project` builds the items
(:mod:`.items`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.query.columnar.columns import Column, Decline, bits, pylist, values_at
from jarenlab.query.columnar.items import flat_maps, row_items
from jarenlab.query.columnar.reads import out_fields
from jarenlab.query.columnar.series import rolled
from jarenlab.query.columnar.windows import window_rows
from jarenlab.query.planner.plan import Plan
from jarenlab.query.planner.preds import Field, FieldOut, MapOut, OrderKey, Out


def positions(plan: Plan, cols: dict[Field, Column], n: int, rows: np.ndarray | None) -> np.ndarray:
    """The table positions of a row plan's results, in its order (ties in storage order), past its
    offset and within its limit; ``rows``: those the filter keeps (None: all ``n``)."""
    idx = np.arange(n) if rows is None else rows
    if plan.order:
        idx = _ordered_rows(
            idx, plan.order, cols, plan.offset + plan.limit if plan.limit is not None else None
        )
    end = None if plan.limit is None else plan.offset + plan.limit
    return idx[plan.offset : end]


def row_values(
    plan: Plan, cols: dict[Field, Column], n: int, rows: np.ndarray | None
) -> tuple[np.ndarray, dict[str, Column]]:
    """The table positions of a row plan's results, and the members a ``$window`` or a
    ``$rolling`` computes that its projection returns, each as a column of the results (the items
    and the Arrow forms read them as they read a held member). :class:`Decline` where a result
    has no such member: the engine shows the row's own stored member of that name there, which
    the columns do not hold."""
    if plan.window is not None:
        idx, computed = window_rows(plan, cols, n, rows)
    else:
        idx = positions(plan, cols, n, rows)
        computed = {} if plan.rolling is None else rolled(plan.rolling, cols, idx)
    assert plan.output is not None
    what = "rolling" if plan.window is None else "window"
    returned = {f.steps[0] for f in _fields_of_out(plan.output) if len(f.steps) == 1}
    for name, col in computed.items():
        if name in returned and col.values.null_count:
            raise Decline(f"a row with no {what} {name!r}: its own member, if any, is not in columns")
    return idx, computed


def project(plan: Plan, cols: dict[Field, Column], n: int, rows: np.ndarray | None) -> list[Any]:
    """A row plan's items: its projection of each result row, in order (``rows``: those the
    filter keeps, None: all ``n``)."""
    idx, computed = row_values(plan, cols, n, rows)
    assert plan.output is not None
    values: dict[Field, list[Any]] = {}
    for f in _fields_of_out(plan.output):
        name = f.steps[0] if len(f.steps) == 1 else None
        values[f] = pylist(computed[name]) if name in computed else pylist(cols[f], idx)
    out = plan.output
    if isinstance(out, MapOut) and all(isinstance(m, FieldOut) for _, m in out.members):
        # the common flat projection ({"name": $it.name, ...}): one dict per row, built by zip
        lists = [values[m.field] for _, m in out.members if isinstance(m, FieldOut)]
        return flat_maps([k for k, _ in out.members], lists, len(idx))
    return [item for i in range(len(idx)) for item in row_items(out, i, values)]


def _fields_of_out(out: Out) -> list[Field]:
    found: dict[Field, None] = {}
    out_fields(out, found)
    return list(found)


# -- order and top-N -----------------------------------------------------------------------------
def _ordered_rows(
    idx: np.ndarray, keys: tuple[OrderKey, ...], cols: dict[Field, Column], top: int | None
) -> np.ndarray:
    """``idx`` ordered by the keys, ties in storage order (the engine's stable sort)."""
    if top is not None and top < len(idx) // 8:
        near = _contenders(idx, keys[0], cols, top)
        if near is not None:
            idx = near
    sort_keys = []
    columns: dict[str, Any] = {}
    for n, k in enumerate(keys):
        assert k.field is not None
        values = values_at(cols[k.field], idx)
        empty_first = (not k.desc and not k.empty_greatest) or (k.desc and k.empty_greatest)
        columns[f"e{n}"] = pc.is_null(values)
        sort_keys.append((f"e{n}", "descending" if empty_first else "ascending"))
        columns[f"v{n}"] = values
        sort_keys.append((f"v{n}", "descending" if k.desc else "ascending"))
    columns["pos"] = pa.array(np.arange(len(idx)))
    sort_keys.append(("pos", "ascending"))
    order = pc.sort_indices(pa.table(columns), sort_keys=sort_keys).to_numpy()
    return idx[order]


def _contenders(idx: np.ndarray, k: OrderKey, cols: dict[Field, Column], top: int) -> np.ndarray | None:
    """The rows of ``idx`` (in storage order) that can be among the first ``top`` by the first key:
    those at or before the ``top``-th value, so every row tied with it stays for the later keys and the
    storage order to decide (None: missing members would come first, or too few rows to prune).

    >>> v = Field(("v",), "number", None)
    >>> col = Column(v, pa.array([3.0, 9.0, 5.0, 9.0, 1.0, 9.0, 2.0, 0.0]))
    >>> _contenders(np.arange(8), OrderKey(v, "field", True, False), {v: col}, 2).tolist()
    [1, 3, 5]
    """
    assert k.field is not None
    values = values_at(cols[k.field], idx)
    empty_first = (not k.desc and not k.empty_greatest) or (k.desc and k.empty_greatest)
    if empty_first and values.null_count:
        return None
    present = pc.drop_null(values)
    if len(present) < top:
        return None
    picked = present.take(
        pc.select_k_unstable(present, k=top, sort_keys=[("", "descending" if k.desc else "ascending")])
    )
    edge = pc.min(picked) if k.desc else pc.max(picked)
    return idx[bits((pc.greater_equal if k.desc else pc.less_equal)(values, edge))]
