"""Result assembly: the items of a columnar answer, built from its groups' or rows' values.

A group-by's or a row plan's output (:class:`~jarenlab.query.planner.preds.Out`) is assembled as
the engine's constructors assemble it: a member missing from a map is left out, an array holds the
items of its members. The common flat map of keys and aggregates or of members is built one member
list at a time, a map per group or row (:func:`flat_maps`, a dict display compiled for the names:
:func:`maps`); every other shape goes through the planner's :func:`~jarenlab.query.planner.preds.assemble`.
"""

from __future__ import annotations

import functools
from typing import Any

from jarenlab.query.columnar.columns import Decline
from jarenlab.query.planner.preds import AggOut, Field, FieldOut, KeyOut, MapOut, Out, assemble


def flat_maps(names: list[str], lists: list[list[Any]], n: int) -> list[dict[str, Any]]:
    """``n`` maps, the ``i``-th ``{names[0]: lists[0][i], ...}`` without the members whose value is
    None (missing: the map leaves them out, as the engine's map constructor does).

    >>> flat_maps(["a", "b"], [[1, None], ["x", "y"]], 2)
    [{'a': 1, 'b': 'x'}, {'b': 'y'}]
    """
    if not names:
        return [{} for _ in range(n)]
    rows = maps(tuple(names))(*lists)
    for name, values in zip(names, lists):
        if None in values:
            for i in [i for i, v in enumerate(values) if v is None]:
                del rows[i][name]
    return rows


@functools.lru_cache(maxsize=256)
def maps(names: tuple[str, ...]) -> Any:
    """A function of one list per name giving a map per row, ``{names[0]: a, names[1]: b, ...}``:
    a dict display compiled for these names (four times faster than ``dict(zip(names, row))``,
    which builds an iterator per row). The names are bound as values, never written in the code.
    Compiled once per tuple of names (a compile costs more than a small answer: a repeated
    question finds its function here).

    >>> maps(("a", "b"))([1, 2], ["x", "y"])
    [{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'y'}]
    """
    slots = [f"_{i}" for i in range(len(names))]
    display = ", ".join(f"k{s}: v{s}" for s in slots)
    values = ", ".join(f"v{s}" for s in slots)
    code = f"lambda {', '.join('l' + s for s in slots)}: [{{{display}}} for {values}, in zip({', '.join('l' + s for s in slots)})]"
    return eval(code, {"zip": zip, **{f"k{s}": name for s, name in zip(slots, names)}})


def group_items(
    out: Out, order: list[int], keys: list[list[Any]], aggs: dict[AggOut, list[list[Any]]]
) -> list[Any]:
    """The items of the groups in ``order``; the common flat map of keys and aggregates
    (``{"k": $k, "n": {"$count": ...}}``) as one member list each and a map per group."""
    if isinstance(out, MapOut) and all(isinstance(m, KeyOut | AggOut) for _, m in out.members):
        lists = [
            [keys[m.index][g] for g in order]
            if isinstance(m, KeyOut)
            else [got[0] if got else None for got in map(aggs[m].__getitem__, order)]
            for _, m in out.members
            if isinstance(m, KeyOut | AggOut)
        ]
        return flat_maps([k for k, _ in out.members], lists, len(order))
    return [item for g in order for item in _items(out, g, keys, aggs)]


def _items(out: Out, g: int, keys: list[list[Any]], aggs: dict[AggOut, list[list[Any]]]) -> list[Any]:
    def leaf(o: Out) -> list[Any]:
        if isinstance(o, KeyOut):
            v = keys[o.index][g]
            return [] if v is None else [v]
        if isinstance(o, AggOut):
            return list(aggs[o][g])
        raise Decline(f"no columnar form for a group output {type(o).__name__}")

    return assemble(out, leaf)


def row_items(out: Out, i: int, values: dict[Field, list[Any]]) -> list[Any]:
    """The items of the ``i``-th result row, its members' values in ``values`` (one list per
    field, None where missing)."""

    def leaf(o: Out) -> list[Any]:
        if isinstance(o, FieldOut):
            v = values[o.field][i]
            return [] if v is None else [v]
        raise Decline(f"no columnar form for a row output {type(o).__name__}")

    return assemble(out, leaf)
