"""The maintainers that keep storage order, built in bulk from a live seed's frozen table.

A ``rows`` query (a filter and a ``$return``, no order) and an accumulator (``$count``, ``$sum``,
``$avg``, ``$min``, ``$max`` of such a query, or of ``$[*]...``) both keep every matching row in
storage order (:class:`~jarenlab.live.strategies.Sorted` without order terms, the accumulator's
``inner``) with its result items, and the accumulator its aggregate's tally. Built row by row,
each row is a partial document through the engine's closures, put in order one at a time (an
accumulator's seed is a commit of every row: a bisect, an insertion and a tally update per row). Here
the same state comes from the table's arrays at once (:func:`build`):

- every row's place, ``(position, key)``, from the key column (and, in insertion order, the
  table's positions): the order is the table's, a sort tuple per row beside it;
- every row's items from one column where the ``$return`` is a member of the row (``[value]``, or
  ``[]`` where it is missing, as the path gives on the partial document), else (a map or an array
  constructor: one item a row) the seed's answer itself, which holds one item a matching row in
  storage order; an accumulator's ``$count`` of the whole row holds the partial documents;
- an accumulator's :class:`~jarenlab.live.folds.Tally` from one vectorized pass over the member's
  column, as a group-by's tallies are made (:func:`~jarenlab.live.bulk.group_tallies`, one group:
  the count, the exact integer and float sums, the first extreme with its row's place), and its
  result from that tally (through the engine where the tally cannot promise it, as an update does).

What the row-by-row build would hold is what is built: tests compare both states and follow random
writes against a fresh run.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from jarenlab.live.bulk import Made, Rows, group_tallies, member_field
from jarenlab.live.strategies import Accumulator, Sorted
from jarenlab.query.columnar.columns import pylist
from jarenlab.query.lang.nodes import ArrayCons, MapCons, PathRef

if TYPE_CHECKING:
    from jarenlab.query.columnar.columns import Table


def why_not(m: Sorted | Accumulator, table: Table) -> str | None:
    """Why the ``rows`` query or accumulator ``m`` cannot be built in bulk from ``table`` (None:
    it can, with :func:`build`)."""
    if isinstance(m, Accumulator):
        inner = m.inner
        ret = inner.plan.ret
        if isinstance(ret, PathRef) and ret.var == inner.ev.var and not ret.steps:
            return None if m.name == "count" else f"accumulator: ${m.name} of the whole row"
        if member_field(ret, inner.ev.var, table) is None:
            return "accumulator: its $return is not a member of the row"
        return None
    ret = m.plan.ret
    if isinstance(ret, MapCons | ArrayCons) or member_field(ret, m.ev.var, table) is not None:
        return None
    return "rows: its $return is not a member of the row, a map or an array"


def build(m: Sorted | Accumulator, table: Table, rows: np.ndarray, answer: list[Any]) -> str | None:
    """Fill the empty maintainer ``m`` (one :func:`why_not` accepts) with ``table``'s ``rows``
    (places of the matching rows, in storage order), ``answer`` the seed's items; returns why it
    could not after all (``m`` is then untouched and is built row by row)."""
    got = Rows(table, rows)
    inner = m.inner if isinstance(m, Accumulator) else m
    items = _items(inner, table, rows, got, answer)
    if items is None:
        return "rows: the answer does not hold one item a matching row"
    assert inner.positions is not None
    pos = got.keys if inner.positions.by_key else table.pos[rows].tolist()
    order = list(zip(pos, got.keys))
    if any(a >= b for a, b in pairwise(order)):
        return "storage order: the table's rows are not in storage order"
    e = inner.entries
    e.order = order
    e.sort = dict(zip(got.keys, order))
    if isinstance(items, list):
        e.items = dict(zip(got.keys, items))
        e.multi = sum(len(x) != 1 for x in items)
    else:
        e.items = items
    if isinstance(m, Accumulator):
        assert isinstance(inner.plan.ret, PathRef)
        one = np.zeros(len(rows), dtype=np.int64)  # (one group: the whole query)
        m.tally = group_tallies(m.name, inner.plan.ret.steps, table, rows, one, 1, order)[0]
        m.rows, _ = m.result()
        return None
    assert isinstance(items, list)
    inner.keyed = []
    inner.rows = [x for its in items for x in its]
    return None


def _items(
    m: Sorted, table: Table, rows: np.ndarray, got: Rows, answer: list[Any]
) -> list[list[Any]] | Made | None:
    """Each matching row's result items, as evaluating the ``$return`` on its partial document
    gives them (None: the answer does not line up with the rows); the whole row's (an
    accumulator's ``$count`` of it, which reads only how many) by key, made when first read."""
    ret = m.plan.ret
    f = member_field(ret, m.ev.var, table)
    if f is not None:
        return [[] if v is None else [v] for v in pylist(table.columns[f], rows)]
    if isinstance(ret, PathRef):  # the whole row (an accumulator's $count)
        return Made(got.index(), lambda key, i: [got.doc(i)])
    if len(answer) != len(rows):
        return None
    return [[x] for x in answer]


__all__ = ["build", "why_not"]
