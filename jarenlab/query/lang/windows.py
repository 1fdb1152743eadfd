"""``$window``: ranks, offsets and framed aggregates over the rows of a partition, in the engine.

``{"$window": {"f": <items>, "$partition": [keys], "$orderby": [specs], "$compute": {name: fn}}}``
returns every item (each an object) with the computed members added, in the input order. Rows
are partitioned by deep equality of their keys (NaN equal to NaN) and ordered within a partition
by ``$orderby`` (the FLWOR's rules: stable, empty keys and NaN placed as the spec says). The
functions:

- ``$row-number`` (1, 2, ...), ``$rank`` (ties share a rank, the next one skips), ``$dense-rank``
  (no gaps); ties are equal ``$orderby`` keys. They need ``$orderby``.
- ``$lag``/``$lead`` ``[value, offset = 1, default]``: ``value`` of the row ``offset`` rows before
  (after) in the partition's order; ``default`` (or nothing) beyond its ends.
- ``$count $sum $avg $min $max`` ``[value]`` over a frame of rows, ``"$frame": [start, end]`` as
  row offsets from the current row (``null``: unbounded); the default is ``[null, 0]`` (running)
  with ``$orderby`` and the whole partition without. Each row's ``value`` items are pooled, as
  the aggregates take sequences (an empty frame: ``$count``/``$sum`` 0, the others nothing).

A computed value that is empty leaves its member out (as a map constructor does).

>>> from jarenlab.query.lang.engine import evaluate
>>> doc = {"$window": {"r": "$[*]", "$partition": "$r.c", "$orderby": [{"$key": "$r.d", "$dir": "desc"}],
...        "$compute": {"rank": {"$rank": []}, "prev": {"$lag": "$r.d"}}}}
>>> evaluate(doc, [{"c": "a", "d": 5}, {"c": "a", "d": 9}, {"c": "b", "d": 1}])
[{'c': 'a', 'd': 5, 'rank': 2, 'prev': 9}, {'c': 'a', 'd': 9, 'rank': 1}, {'c': 'b', 'd': 1, 'rank': 1}]
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import TYPE_CHECKING, Any

from jarenlab.errors import QueryError
from jarenlab.query.lang.compiled import Env, SeqFn
from jarenlab.query.lang.flwor import sorted_positions
from jarenlab.query.lang.functions import FUNCTIONS, exact_sum, integer
from jarenlab.query.lang.nodes import Asof, Window, WindowFn
from jarenlab.query.lang.values import hash_key, json_eq, kind

if TYPE_CHECKING:
    from jarenlab.query.lang.compiled import Compiling


def compile_window(node: Window, c: Compiling) -> SeqFn:
    """The closure of a ``$window`` node (see the module docstring)."""
    items_fn = c.seq(node.seq)
    parts = [(c.seq(p), p.path) for p in node.partition]
    specs = [(c.seq(s.key), s.desc, s.empty_greatest, s.key.path) for s in node.orderby]
    flags = [(desc, greatest, path, True) for _, desc, greatest, path in specs]
    fns = [(f, [c.seq(a) for a in f.args]) for f in node.compute]
    var = node.var
    where = node.path

    def run(env: Env) -> list[Any]:
        items = items_fn(env)
        rows: list[Env] = []
        for x in items:
            if type(x) is not dict:
                raise QueryError("JQ2004", f"$window rows are objects, got {kind(x)}", doc_path=where)
            e = dict(env)
            e[var] = [x]
            rows.append(e)
        partitions: dict[tuple[Any, ...], list[int]] = {}
        for i, e in enumerate(rows):
            key = []
            for part, path in parts:
                v = part(e)
                if len(v) > 1:
                    raise QueryError("JQ2001", f"a $partition key has {len(v)} items", doc_path=path)
                key.append(hash_key(v[0]) if v else ("empty",))
            partitions.setdefault(tuple(key), []).append(i)
        out: list[dict[str, Any]] = [dict(x) for x in items]
        for members in partitions.values():
            keys = [[key(rows[i]) for i in members] for key, *_ in specs]
            js = sorted_positions(keys, flags) if specs else list(range(len(members)))
            order = [members[j] for j in js]
            ranks = _ranks([[k[j] for k in keys] for j in js]) if specs else None
            for wf, args in fns:
                values = _compute(wf, args, order, rows, ranks, where)
                for row, v in zip(order, values):
                    if v:
                        if len(v) > 1:
                            raise QueryError("JQ2001", f"{wf.name!r} has {len(v)} items", doc_path=wf.path)
                        out[row][wf.name] = v[0]
        return list(out)

    return run


def _ranks(keys: list[list[list[Any]]]) -> tuple[list[int], list[int]]:
    """``rank`` and ``dense-rank`` of rows already in order (ties: deeply equal keys)."""
    rank: list[int] = []
    dense: list[int] = []
    for n, k in enumerate(keys):
        if n and _same(k, keys[n - 1]):
            rank.append(rank[-1])
            dense.append(dense[-1])
        else:
            rank.append(n + 1)
            dense.append(dense[-1] + 1 if dense else 1)
    return rank, dense


def _same(a: list[list[Any]], b: list[list[Any]]) -> bool:
    return all(
        len(x) == len(y) and all(json_eq(p, q) or (p != p and q != q) for p, q in zip(x, y))
        for x, y in zip(a, b)
    )


def _running(fn: str, values: list[list[Any]], where: str) -> list[list[Any]]:
    """A running ``$count``/``$sum``/``$avg`` in one pass, each prefix's sum exactly ``$sum`` of
    that prefix (integers exact, with floats the correctly rounded total): the floats so far are
    kept as exact partials (Shewchuk's non-overlapping sums, as inside ``math.fsum``), infinities
    and NaN apart, and each row rounds their total once.

    >>> _running("sum", [[0.1], [0.2], [0.3]], "/")
    [[0.1], [0.30000000000000004], [0.6]]
    """
    out: list[list[Any]] = []
    ints = 0
    partials: list[float] = []
    special: list[float] = []  # inf, -inf, NaN: each kept once
    seen: list[float] = []  # every float so far, for a prefix whose partials overflowed
    overflowed = False
    count = 0
    for v in values:
        for x in v:
            count += 1
            if fn == "count":
                continue
            t = type(x)
            if t is int:
                ints += x
            elif t is not float:
                exact_sum([x], where)  # raises the type error $sum raises
            else:
                seen.append(x)
                if not math.isfinite(x):
                    if not any(s == x or (s != s and x != x) for s in special):
                        special.append(x)
                elif not overflowed:
                    partials = _add_exact(partials, x)
                    overflowed = not math.isfinite(partials[-1])
        if fn == "count":
            out.append([count])
            continue
        if overflowed:  # beyond the largest float on the way: $sum's own reading of the prefix
            total = exact_sum([*seen, ints], where)
        else:
            total = exact_sum([*special, *(partials or [0.0]), ints] if seen else [ints], where)
        if fn == "sum":
            out.append([total])
        else:
            try:
                out.append([total / count] if count else [])  # as $avg divides
            except OverflowError:
                raise QueryError("JQ2010", "$avg overflowed", doc_path=where) from None
    return out


def _add_exact(partials: list[float], x: float) -> list[float]:
    """Add a finite ``x`` to non-overlapping partials that keep their exact sum (each step exact:
    two floats' sum is ``hi + lo``, both floats). The last partial is an infinity once a sum went
    beyond the largest float (the caller then sums the prefix itself).
    """
    kept: list[float] = []
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo:
            kept.append(lo)
        x = hi
    kept.append(x)
    return kept


def _compute(
    f: WindowFn,
    args: list[SeqFn],
    order: list[int],
    rows: list[Env],
    ranks: tuple[list[int], list[int]] | None,
    where: str,
) -> list[list[Any]]:
    n = len(order)
    if f.fn == "row-number":
        return [[i + 1] for i in range(n)]
    if f.fn in ("rank", "dense-rank"):
        assert ranks is not None
        return [[r] for r in ranks[0 if f.fn == "rank" else 1]]
    values = [args[0](rows[r]) for r in order]
    if f.fn in ("lag", "lead"):
        offset = integer(args[1](rows[order[0]]), f.path, f"${f.fn} offset") if len(args) > 1 else 1
        step = -(1 if offset is None else offset) if f.fn == "lag" else (1 if offset is None else offset)
        out = []
        for i in range(n):
            j = i + step
            if 0 <= j < n:
                out.append(values[j])
            else:
                out.append(args[2](rows[order[i]]) if len(args) > 2 else [])
        return out
    assert f.frame is not None
    lo, hi = f.frame
    fn = FUNCTIONS[f.fn]
    if lo is None and hi == 0 and f.fn in ("count", "sum", "avg"):
        return _running(f.fn, values, f.path)
    out = []
    for i in range(n):
        a = 0 if lo is None else max(i + lo, 0)
        b = n - 1 if hi is None else min(i + hi, n - 1)
        pooled = [x for j in range(a, b + 1) for x in values[j]]
        out.append(fn([pooled], f.path))
    return out


def compile_asof(node: Asof, c: Compiling) -> SeqFn:
    """``$asof``: each left item (an object) with, as member ``$as``, the right item whose ``$on``
    key is the greatest at or before the left item's, among right items with equal ``$by`` keys
    (deep equality); of several right items with that key, the last in their order. Keys are
    numbers or strings, one kind throughout (``JQ2005`` otherwise); an empty key never matches.

    >>> from jarenlab.query.lang.engine import evaluate
    >>> doc = {"$asof": {"f": "$.f[*]", "w": "$.w[*]", "$on": ["$f.t", "$w.t"], "$by": [["$f.o", "$w.o"]], "$as": "w"}}
    >>> evaluate(doc, {"f": [{"o": "A", "t": 5}, {"o": "B", "t": 1}], "w": [{"o": "A", "t": 3, "v": 1}, {"o": "A", "t": 6}]})
    [{'o': 'A', 't': 5, 'w': {'o': 'A', 't': 3, 'v': 1}}, {'o': 'B', 't': 1}]
    """
    left_fn, right_fn = c.seq(node.left), c.seq(node.right)
    lkey, rkey = (c.seq(x) for x in node.on)
    by = [(c.seq(a), c.seq(b), a.path, b.path) for a, b in node.by]
    lv, rv, name, where = node.left_var, node.right_var, node.name, node.path
    on_paths = (node.on[0].path, node.on[1].path)

    def one(env: Env, f: SeqFn, path: str) -> Any:
        v = f(env)
        if len(v) > 1:
            raise QueryError("JQ2001", f"an $asof key has {len(v)} items", doc_path=path)
        return v[0] if v else None

    def run(env: Env) -> list[Any]:
        groups: dict[tuple[Any, ...], list[tuple[Any, int, Any]]] = {}
        kinds: set[str] = set()
        for i, x in enumerate(right_fn(env)):
            e = dict(env)
            e[rv] = [x]
            k = one(e, rkey, on_paths[1])
            if k is None:
                continue
            kinds.add(kind(k))
            gk = tuple(hash_key(v) if v is not None else ("empty",) for v in (one(e, b[1], b[3]) for b in by))
            groups.setdefault(gk, []).append((k, i, x))
        lefts = []
        for x in left_fn(env):
            if type(x) is not dict:
                raise QueryError("JQ2004", f"$asof left items are objects, got {kind(x)}", doc_path=where)
            e = dict(env)
            e[lv] = [x]
            k = one(e, lkey, on_paths[0])
            gk = tuple(hash_key(v) if v is not None else ("empty",) for v in (one(e, b[0], b[2]) for b in by))
            if k is not None:
                kinds.add(kind(k))
            lefts.append((x, k, gk))
        if kinds - {"number", "string"} or len(kinds) > 1:
            raise QueryError(
                "JQ2005", f"cannot order $asof keys of {', '.join(sorted(kinds))}", doc_path=where
            )
        rank = (lambda k: (1, k) if k == k else (0, 0)) if kinds == {"number"} else (lambda k: k)
        ordered = {}
        for gk, rows in groups.items():
            rows.sort(key=lambda r: (rank(r[0]), r[1]))
            ordered[gk] = ([rank(r[0]) for r in rows], [r[2] for r in rows])
        out = []
        for x, k, gk in lefts:
            item = dict(x)
            found = ordered.get(gk)
            if k is not None and found is not None:
                j = bisect_right(found[0], rank(k))
                if j:
                    item[name] = found[1][j - 1]
            out.append(item)
        return out

    return run
