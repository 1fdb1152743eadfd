"""Maintainers built in bulk from a live seed's frozen table, instead of row by row.

A live query seeded from the columns (:mod:`.seed`) needs a maintainer holding every matching row.
Built row by row, each row is a partial document evaluated through the engine's closures, put in
its group's tallies or in the sorted order one at a time: 100-250 microseconds a row on a loaded
machine, minutes at a million rows. Where the plan allows it (:func:`why_not`), the state is made
here from the table's arrays at once, and what only a later update needs of a row is made when that
row is first touched (:class:`Made`):

- a **group-by** (:func:`build_groups`): the groups from the key column's codes (the columns' own
  group-by encoding, :func:`jarenlab.query.columnar.keys.encode`), each group's tallies from one
  vectorized pass per aggregate (counts by ``bincount``, integer sums exactly, float sums as the
  exact integer count of 2**-1074 that :class:`~jarenlab.live.folds.Tally` keeps, from the exact
  levels of :func:`jarenlab.query.columnar.exact.group_levels`; ``$min``/``$max`` as the first
  extreme of the group's values in storage order), each group's members in storage order from one
  stable sort; a row's own variables and contributions (:meth:`~.strategies.Groups.member`) are
  evaluated when a commit touches it, or when its group is read through the engine;
- a **window** (:func:`build_sorted`): every matching row's sort tuple (its order terms, then its
  key) in order from one multi-key sort of the term columns (``pyarrow.compute.sort_indices``), the
  kinds per term counted from the columns; a row's result items are evaluated when the row is
  shown or touched.

Everything a row evaluates to later is what the row-by-row build gives it, from the same partial
document (:class:`Rows`), so updates are unchanged; tests compare both builds' state and follow
random write streams against a fresh run.

>>> m = Made({"a": 0, "b": 1}, lambda key, i: [key * (i + 1)])
>>> len(m), m["b"], m.get("z"), m.pop("a"), len(m)
(2, ['bb'], None, ['a'], 1)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.live.folds import Tally
from jarenlab.live.strategies import Groups, Member, Sorted
from jarenlab.live.window import Desc, SortedEntries, term_key
from jarenlab.query.columnar.columns import Column, pylist, values_at
from jarenlab.query.columnar.exact import group_levels, int_sums
from jarenlab.query.columnar.keys import encode, member_codes
from jarenlab.query.lang.nodes import ArrayCons, MapCons, Node, PathRef

if TYPE_CHECKING:
    from jarenlab.query.columnar.columns import Table
    from jarenlab.query.planner.preds import Field

#: Float magnitudes from here up are counted apart (as :class:`~jarenlab.live.folds.Tally` does).
_NEAR_MAX = 2.0**1000
_SCALE = 2**1074


class Made(dict[Any, Any]):
    """``key -> value`` where the value of a key still in ``index`` (``key -> row``) is made by
    ``make(key, row)`` when first read, then kept like any other (so it keeps its identity)."""

    def __init__(self, index: dict[Any, int], make: Callable[[Any, int], Any]) -> None:
        super().__init__()
        self.index = index
        self.make = make

    def __missing__(self, key: Any) -> Any:
        value = self.make(key, self.index[key])
        del self.index[key]
        dict.__setitem__(self, key, value)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        self.index.pop(key, None)
        dict.__setitem__(self, key, value)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.index

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.index)

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key) or key in self.index:
            return self[key]
        return default

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self.index:
            self.__missing__(key)  # made, so it is what a kept value would be
        return dict.pop(self, key, *default)


class Rows:
    """A frozen table's ``rows`` (places in it) as the row-by-row build sees them: ``keys`` and
    each row's partial document (:meth:`doc`: the table's members that are present)."""

    def __init__(self, table: Table, rows: np.ndarray) -> None:
        self.keys: list[Any] = table.key_array().take(pa.array(rows)).to_pylist()
        self.members = [(f.steps, pylist(col, rows)) for f, col in table.columns.items()]

    def doc(self, i: int) -> dict[Any, Any]:
        """The partial document of the ``i``-th row."""
        doc: dict[Any, Any] = {}
        for steps, values in self.members:
            value = values[i]
            if value is None:
                continue
            *outer, last = steps
            at = doc
            for step in outer:
                at = at.setdefault(step, {})
            at[last] = value
        return doc

    def index(self) -> dict[Any, int]:
        """``key -> i`` for every row."""
        return dict(zip(self.keys, range(len(self.keys))))


def member_field(node: Node | None, var: str, table: Table) -> Field | None:
    """The table's field that ``node`` (a path of members on the row variable) reads, if any."""
    if not isinstance(node, PathRef) or node.var != var or not node.steps:
        return None
    if any(kind != "member" for kind, _ in node.steps):
        return None
    steps = tuple(name for _, name in node.steps)
    return next((f for f in table.columns if f.steps == steps), None)


def why_not(m: Sorted | Groups, table: Table) -> str | None:
    """Why the group-by or window ``m`` cannot be built in bulk from ``table`` (None: it can, with
    :func:`build`; a ``rows`` query and an accumulator: :mod:`.stored`)."""
    if isinstance(m, Groups):
        if m.rest is None:
            return (
                "groups: the $return reads the rows other than through $count/$sum/$avg/$min/$max of members"
            )
        assert m.plan.group is not None
        if member_field(m.plan.group[1], m.ev.var, table) is None:
            return "groups: the $groupby key is not a member of the row"
        for fold in m.folds:
            if fold.arg.var != m.ev.var or (
                fold.arg.steps and member_field(fold.arg, m.ev.var, table) is None
            ):
                return f"groups: ${fold.name} of {fold.arg.path} is not of a member of the row"
            if not fold.arg.steps and fold.name != "count":
                return f"groups: ${fold.name} of the whole row"
        return None
    if not isinstance(m.plan.ret, MapCons | ArrayCons):
        return "window: a $return that may give other than one item a row"
    for spec in m.plan.orderby:
        if member_field(spec.key, m.ev.var, table) is None:
            return "window: an $orderby key that is not a member of the row"
    return None


def build(m: Sorted | Groups, table: Table, rows: np.ndarray) -> str | None:
    """Fill the empty maintainer ``m`` (one :func:`why_not` accepts) with ``table``'s ``rows``
    (places of the matching rows, in storage order); returns why it could not after all (``m``
    is then untouched and is built row by row)."""
    if isinstance(m, Groups):
        return build_groups(m, table, rows)
    return build_sorted(m, table, rows)


def build_groups(m: Groups, table: Table, rows: np.ndarray) -> str | None:
    """A group-by's groups, tallies and members from the table's columns (see the module)."""
    assert m.plan.group is not None
    by = member_field(m.plan.group[1], m.ev.var, table)
    assert by is not None
    got = Rows(table, rows)
    codes, _, count = encode([member_codes(table.columns[by], rows)])
    order = np.argsort(codes, kind="stable")  # each group's rows in storage order
    bounds = np.searchsorted(codes[order], np.arange(count + 1))
    made = Made(got.index(), lambda key, i: _member(m, key, got.doc(i))[1])
    firsts = [_member(m, got.keys[i], got.doc(i)) for i in order[bounds[:-1]].tolist()]
    hks = [member[0] for _, member in firsts]
    if len(set(hks)) < count:  # values the columns tell apart that group together (0.0 and -0.0)
        return "groups: two key values of the columns are one group"
    for i, (_, member) in zip(order[bounds[:-1]].tolist(), firsts):
        made[got.keys[i]] = member
    pos = got.keys if m.positions.by_key else table.pos[rows].tolist()
    places = list(zip(pos, got.keys))
    one = [None]  # every member's items (a group-by reads only their count)
    tallies = [
        group_tallies(fold.name, fold.arg.steps, table, rows, codes, count, places) for fold in m.folds
    ]
    for g, hk in enumerate(hks):
        members = SortedEntries()
        mine = order[bounds[g] : bounds[g + 1]].tolist()
        members.order = list(map(places.__getitem__, mine))
        members.sort = dict(zip(map(got.keys.__getitem__, mine), members.order))
        members.items = dict.fromkeys(members.sort, one)
        m.groups[hk] = (firsts[g][0], members, [])
        m.tallies[hk] = [t[g] for t in tallies]
    m.members = made
    m.refresh(list(m.groups))
    m.reordered()
    return None


def _member(m: Groups, key: Any, doc: dict[Any, Any]) -> tuple[list[Any], Member]:
    got = m.member(key, doc)
    assert got is not None, "a row the columns' filter kept does not match"
    return got


def group_tallies(
    name: str,
    steps: tuple[Any, ...],
    table: Table,
    rows: np.ndarray,
    codes: np.ndarray,
    count: int,
    places: list[Any],
) -> list[Tally]:
    """Each group's :class:`Tally` of ``$name`` over a member (``steps``; none: the row itself,
    counted), as adding the group's rows one by one in storage order leaves it."""
    if not steps:
        return [Tally.loaded(name, n=int(c)) for c in np.bincount(codes, minlength=count)]
    col = table.columns[next(f for f in table.columns if f.steps == tuple(s for _, s in steps))]
    values = values_at(col, rows)
    present = ~np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    at = np.flatnonzero(present)
    groups = codes[at]
    sizes = np.bincount(groups, minlength=count)
    text = pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    if name == "count":
        return [Tally.loaded(name, n=int(c)) for c in sizes]
    if name in ("min", "max"):
        return _extremes(name, col, rows, at, groups, count, sizes, text, places)
    if text:
        return [Tally.loaded(name, n=int(c), strings=int(c)) for c in sizes]
    numbers = values.take(pa.array(at)).to_numpy(zero_copy_only=False)
    ints_at = np.zeros(len(at), dtype=bool) if col.ints is None else col.ints[rows[at]].astype(bool)
    if numbers.dtype.kind in "iu":
        ints_at[:] = True
    ints = int_sums(numbers[ints_at].astype(np.int64), groups[ints_at], count)
    floats, fgroups = numbers[~ints_at].astype(np.float64), groups[~ints_at]
    wild = ~(np.abs(floats) < _NEAR_MAX)
    specials = np.bincount(fgroups[wild], minlength=count)
    floats, fgroups = floats[~wild], fgroups[~wild]
    nfloats = np.bincount(fgroups, minlength=count)
    levels, slow = group_levels(floats, fgroups, count)
    scaled = [sum(_scaled(float(level[g])) for level in levels) for g in range(count)]
    for g in slow:
        scaled[g] = sum(_scaled(x) for x in floats[fgroups == g].tolist())
    return [
        Tally.loaded(
            name,
            n=int(sizes[g]),
            ints=ints[g],
            floats=int(nfloats[g]),
            scaled=scaled[g],
            specials=int(specials[g]),
        )
        for g in range(count)
    ]


def _scaled(x: float) -> int:
    """A finite float as a whole number of 2**-1074."""
    num, den = x.as_integer_ratio()
    return num * (_SCALE // den)


def _extremes(
    name: str,
    col: Column,
    rows: np.ndarray,
    at: np.ndarray,
    groups: np.ndarray,
    count: int,
    sizes: np.ndarray,
    text: bool,
    places: list[Any],
) -> list[Tally]:
    """``$min``/``$max`` tallies: the first extreme of each group's values in storage order (the
    engine keeps the first of equal items), with the place of its row."""
    order = np.argsort(groups, kind="stable")
    bounds = np.searchsorted(groups[order], np.arange(count + 1))
    ranked = at[order]
    values = pylist(col, rows[ranked])
    pick = min if name == "min" else max
    out = []
    for g in range(count):
        lo, hi = int(bounds[g]), int(bounds[g + 1])
        best = None
        if hi > lo:
            mine = values[lo:hi]
            x = pick(mine)
            best = (x, (places[int(ranked[lo + mine.index(x)])], 0))
        out.append(Tally.loaded(name, n=int(sizes[g]), strings=int(sizes[g]) if text else 0, best=best))
    return out


def build_sorted(m: Sorted, table: Table, rows: np.ndarray) -> str | None:
    """A window's sorted order of every matching row from one multi-key sort (see the module)."""
    got = Rows(table, rows)
    parts: list[list[Any]] = []
    sort_keys: dict[str, pa.Array] = {}
    directions: list[tuple[str, str]] = []
    for i, spec in enumerate(m.plan.orderby):
        f = member_field(spec.key, m.ev.var, table)
        assert f is not None
        values = values_at(table.columns[f], rows)
        texts = pylist(table.columns[f], rows)
        empty = term_key([], spec.desc, spec.empty_greatest)
        kind = (
            "string" if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) else "number"
        )
        parts.append(_terms(texts, spec.desc, kind, empty))
        m.kinds[i] = (
            Counter({kind: len(texts) - values.null_count}) if len(texts) > values.null_count else Counter()
        )
        rank = pc.if_else(values.is_null(), empty[0], -1 if spec.desc else 1)
        sort_keys[f"r{i}"], sort_keys[f"v{i}"] = rank, values
        directions += [(f"r{i}", "ascending"), (f"v{i}", "descending" if spec.desc else "ascending")]
    sort_keys["key"] = pa.array(got.keys)
    directions.append(("key", "ascending"))
    perm = pc.sort_indices(pa.table(sort_keys), sort_keys=directions).to_numpy()
    tuples = list(zip(*parts, got.keys))
    e = m.entries
    e.order = [tuples[i] for i in perm.tolist()]
    e.sort = dict(zip(got.keys, tuples))
    e.items = Made(got.index(), lambda key, i: _items(m, key, got.doc(i)))
    keyed = e.slice_keyed(m.skip, m.take)
    m.keyed = keyed if m.take is not None else []
    m.rows = [item for _, item in keyed]
    return None


def _terms(values: list[Any], desc: bool, kind: str, empty: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Each value's order term, as :func:`~jarenlab.live.window.term_key` makes it, for a column of
    one ``kind`` (a comprehension per case instead of a call per row).

    >>> _terms([2, None], True, "number", (0, 0)) == [term_key([2], True, False), (0, 0)]
    True
    """
    if not desc:
        return [empty if v is None else (1, v) for v in values]
    if kind == "string":
        return [empty if v is None else (-1, Desc(v)) for v in values]
    return [empty if v is None else (-1, -v) for v in values]


def _items(m: Sorted, key: Any, doc: dict[Any, Any]) -> list[Any]:
    got = m.evaluate(key, doc)
    assert got is not None, "a row the columns' filter kept does not match"
    return got[1]


__all__ = [
    "Made",
    "Rows",
    "build",
    "build_groups",
    "build_sorted",
    "group_tallies",
    "member_field",
    "why_not",
]
