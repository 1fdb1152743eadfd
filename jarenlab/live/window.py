"""The maintained sorted structure and the RFC 6902 diffs a live query emits.

:class:`SortedEntries` keeps every maintained entry (a collection key, its sort tuple and its
result items) in one sorted Python list, so an insert or delete is a bisect plus a memmove. The
sort tuple of a window ends with the collection key, ascending in code-point order whatever the
direction of the declared terms, so the order is total and deterministic from the first fill.

>>> e = SortedEntries()
>>> e.put("b", (1, "b"), ["B"]), e.put("a", (1, "a"), ["A"]), e.put("c", (0, "c"), ["C"])
((None, 0), (None, 0), (None, 0))
>>> e.slice_items(0, None)
['C', 'A', 'B']
>>> e.remove("a")
1
>>> diff_keyed([("x", 1), ("y", 2)], [("y", 2), ("z", 3)])
[{'op': 'remove', 'path': '/rows/0'}, {'op': 'add', 'path': '/rows/1', 'value': 3}]
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator
from typing import Any

# is the old row still right? Exact sameness: 1 and 1.0 differ, and so does member order
from jarenlab.query.lang.values import identical


def same(a: Any, b: Any) -> bool:
    """Is the old row still right? :func:`~jarenlab.query.lang.values.identical` for rows decoded from JSON."""
    return a is b or identical(a, b, decoded=True)


Op = dict[str, Any]


class Desc:
    """Wraps a string so that it sorts in reverse (numbers are negated instead).

    >>> sorted([Desc("a"), Desc("b")])[0].value
    'b'
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: Desc) -> bool:
        return bool(other.value < self.value)

    def __gt__(self, other: Desc) -> bool:
        return bool(self.value < other.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Desc) and self.value == other.value

    __hash__ = None  # type: ignore[assignment]


def term_key(value: list[Any], desc: bool, empty_greatest: bool) -> tuple[Any, ...]:
    """One order term as a comparable pair: the empty key ranks first or last, as the engine does.

    >>> term_key([], False, False) < term_key([3], False, False) < term_key([], False, True)
    True
    >>> term_key([2], True, False) < term_key([1], True, False)
    True
    """
    if not value:
        rank = 2 if empty_greatest else 0
        return (-rank, 0) if desc else (rank, 0)
    v = value[0]
    if desc:
        return (-1, -v if type(v) is not str else Desc(v))
    return (1, v)


class SortedEntries:
    """Entries ``key -> (sort tuple, items)`` kept sorted by sort tuple (which must be unique)."""

    def __init__(self) -> None:
        self.order: list[tuple[Any, ...]] = []
        self.sort: dict[Any, tuple[Any, ...]] = {}
        self.items: dict[Any, list[Any]] = {}
        self.multi = 0  # entries whose item count is not exactly one

    def __len__(self) -> int:
        return len(self.order)

    def __contains__(self, key: object) -> bool:
        return key in self.sort

    def index(self, key: Any) -> int:
        """The position of ``key`` in the sorted order."""
        return bisect_left(self.order, self.sort[key])

    def remove(self, key: Any) -> int | None:
        """Drop ``key``; return the index it had (None if absent)."""
        st = self.sort.pop(key, None)
        if st is None:
            return None
        i = bisect_left(self.order, st)
        del self.order[i]
        if len(self.items.pop(key)) != 1:
            self.multi -= 1
        return i

    def put(self, key: Any, sort: tuple[Any, ...], items: list[Any]) -> tuple[int | None, int]:
        """Insert or move ``key``; return (old index or None, new index)."""
        old = self.remove(key)
        self.sort[key] = sort
        self.items[key] = items
        if len(items) != 1:
            self.multi += 1
        insort(self.order, sort)
        return old, bisect_left(self.order, sort)

    def keys(self, start: int = 0, stop: int | None = None) -> Iterator[Any]:
        """Collection keys in order (the key is the last element of each sort tuple)."""
        for st in self.order[start:stop]:
            yield st[-1]

    def slice_items(self, skip: int, take: int | None) -> list[Any]:
        """The flattened result items ``[skip : skip + take]`` (all of them when ``take`` is None)."""
        return [item for _, item in self.slice_keyed(skip, take)]

    def slice_keyed(self, skip: int, take: int | None) -> list[tuple[Any, Any]]:
        """Like :meth:`slice_items`, each item with a unique identity ``key`` or ``(key, i)``."""
        end = None if take is None else skip + take
        if not self.multi:
            return [(k, self.items[k][0]) for k in self.keys(skip, end)]
        out: list[tuple[Any, Any]] = []
        for k in self.keys():
            its = self.items[k]
            out.extend(((k, i), x) for i, x in enumerate(its)) if len(its) != 1 else out.append((k, its[0]))
            if end is not None and len(out) >= end:
                break
        return out[skip:end]


class WindowOps:
    """The ops of one single-item row entering, leaving or moving in a ``skip``/``take`` window, found
    from the row's places in the whole order, so a commit of one row costs a few ops and no pass over
    the window, whatever its size. Between the steps the rows are a prefix of the window in the
    current order (``order[skip : skip + len(rows)]``); :meth:`finish` trims or fills it to the
    window. The rows and keyed rows are copies, kept beside the ops.
    """

    def __init__(
        self,
        entries: SortedEntries,
        skip: int,
        take: int | None,
        keyed: list[tuple[Any, Any]],
        rows: list[Any],
        ops: list[Op],
    ) -> None:
        assert take is not None
        self.entries = entries
        self.lo, self.take = skip, take
        self.ops = ops
        self.keyed = list(keyed)
        self.rows = list(rows)

    def _at(self, index: int) -> tuple[Any, Any]:
        key = self.entries.order[index][-1]
        return key, self.entries.items[key][0]

    def _add(self, place: int, pair: tuple[Any, Any]) -> None:
        self.ops.append({"op": "add", "path": f"/rows/{place}", "value": pair[1]})
        self.keyed.insert(place, pair)
        self.rows.insert(place, pair[1])

    def _remove(self, place: int) -> None:
        self.ops.append({"op": "remove", "path": f"/rows/{place}"})
        del self.keyed[place], self.rows[place]

    def left(self, i: int) -> None:
        """The row at ``i`` of the whole order has left it (one before the window shifts the
        window's first row out in front)."""
        if self.rows and i < self.lo + len(self.rows):
            self._remove(max(i - self.lo, 0))

    def entered(self, j: int) -> None:
        """A row has entered the whole order at ``j`` (one before the window shifts the row before
        the window in, in front)."""
        if j <= self.lo + len(self.rows) and len(self.entries.order) > self.lo:
            self._add(max(j - self.lo, 0), self._at(max(j, self.lo)))

    def move(self, key: Any, sort: tuple[Any, ...], items: list[Any]) -> None:
        """Put ``key`` (new or moved) in its place in the order."""
        e = self.entries
        i = e.remove(key)
        j = bisect_left(e.order, sort)  # its place once put back
        if i is not None and (i == j or (i < self.lo and j < self.lo)):  # the window keeps its rows
            e.put(key, sort, items)
            at = j - self.lo
            if i == j and 0 <= at < len(self.rows) and self.rows[at] is not items[0]:
                self.ops.append({"op": "replace", "path": f"/rows/{at}", "value": items[0]})
                self.keyed[at] = (key, items[0])
                self.rows[at] = items[0]
            return
        if i is not None:
            self.left(i)
        e.put(key, sort, items)
        self.entered(j)

    def finish(self) -> None:
        """Trim the rows to the window, or fill them from the order."""
        while len(self.rows) > self.take:
            self._remove(len(self.rows) - 1)
        order = self.entries.order
        while len(self.rows) < self.take and self.lo + len(self.rows) < len(order):
            self._add(len(self.rows), self._at(self.lo + len(self.rows)))


def diff_keyed(old: list[tuple[Any, Any]], new: list[tuple[Any, Any]], base: str = "/rows/") -> list[Op]:
    """RFC 6902 ops that turn ``old`` into ``new`` (lists of (unique key, item)).

    An item counts as unchanged when it is the same object; trims the common prefix and suffix
    first, so a one-row change in a long list emits one or two ops.
    """
    n0, n1 = len(old), len(new)
    p = 0
    while p < n0 and p < n1 and old[p][0] == new[p][0] and old[p][1] is new[p][1]:
        p += 1
    s = 0
    while (
        s < n0 - p
        and s < n1 - p
        and old[n0 - 1 - s][0] == new[n1 - 1 - s][0]
        and old[n0 - 1 - s][1] is new[n1 - 1 - s][1]
    ):
        s += 1
    cur = list(old[p : n0 - s])
    mid = new[p : n1 - s]
    ops: list[Op] = []
    # Rows that keep their relative order stay put: the longest run of old positions that increases
    # along the new order. Every other old row is removed, and every new place filled by an add, so
    # a row moving d places costs one remove and one add, not d pairs.
    where = {k: i for i, (k, _) in enumerate(cur)}
    staying = _increasing([where[k] for k, _ in mid if k in where])
    for i in range(len(cur) - 1, -1, -1):
        if i not in staying:
            ops.append({"op": "remove", "path": f"{base}{p + i}"})
            del cur[i]
    for i, (k, item) in enumerate(mid):
        if i < len(cur) and cur[i][0] == k:
            if cur[i][1] is not item:
                ops.append({"op": "replace", "path": f"{base}{p + i}", "value": item})
                cur[i] = (k, item)
            continue
        ops.append({"op": "add", "path": f"{base}{p + i}", "value": item})
        cur.insert(i, (k, item))
    return ops


def _increasing(seq: list[int]) -> set[int]:
    """The values of one longest strictly increasing subsequence of ``seq`` (patience sorting).

    >>> sorted(_increasing([1, 2, 3, 0])), sorted(_increasing([3, 0, 1, 2]))
    ([1, 2, 3], [0, 1, 2])
    """
    tails: list[int] = []  # tails[L]: index in seq of the smallest tail of a run of length L + 1
    back: list[int] = []
    for i, v in enumerate(seq):
        lo = _bisect_tails(seq, tails, v)
        back.append(tails[lo - 1] if lo else -1)
        if lo == len(tails):
            tails.append(i)
        else:
            tails[lo] = i
    out: set[int] = set()
    i = tails[-1] if tails else -1
    while i >= 0:
        out.add(seq[i])
        i = back[i]
    return out


def _bisect_tails(seq: list[int], tails: list[int], v: int) -> int:
    """The first run length whose tail is not below ``v``."""
    lo, hi = 0, len(tails)
    while lo < hi:
        mid = (lo + hi) // 2
        if seq[tails[mid]] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


def diff_values(old: list[Any], new: list[Any], base: str = "/rows/") -> tuple[list[Op], list[Any]]:
    """Ops from ``old`` to ``new`` compared by value; returns (ops, rows reusing old equal objects).

    >>> a = {"n": 1}
    >>> ops, rows = diff_values([a, 2], [{"n": 1}, 3, 4])
    >>> ops, rows[0] is a
    ([{'op': 'replace', 'path': '/rows/1', 'value': 3}, {'op': 'add', 'path': '/rows/2', 'value': 4}], True)
    """
    rows = list(new)
    ops: list[Op] = []
    for i in range(min(len(old), len(new))):
        if same(old[i], new[i]):
            rows[i] = old[i]
        else:
            ops.append({"op": "replace", "path": f"{base}{i}", "value": new[i]})
    for i in range(len(old) - 1, len(new) - 1, -1):
        ops.append({"op": "remove", "path": f"{base}{i}"})
    for i in range(len(old), len(new)):
        ops.append({"op": "add", "path": f"{base}{i}", "value": new[i]})
    return ops, rows
