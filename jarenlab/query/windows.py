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

>>> from jarenlab.query.engine import evaluate
>>> doc = {"$window": {"r": "$[*]", "$partition": "$r.c", "$orderby": [{"$key": "$r.d", "$dir": "desc"}],
...        "$compute": {"rank": {"$rank": []}, "prev": {"$lag": "$r.d"}}}}
>>> evaluate(doc, [{"c": "a", "d": 5}, {"c": "a", "d": 9}, {"c": "b", "d": 1}])
[{'c': 'a', 'd': 5, 'rank': 2, 'prev': 9}, {'c': 'a', 'd': 9, 'rank': 1}, {'c': 'b', 'd': 1, 'rank': 1}]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jarenlab.errors import QueryError
from jarenlab.query.compare import Env, SeqFn
from jarenlab.query.document import Window, WindowFn
from jarenlab.query.flwor import sorted_positions
from jarenlab.query.functions import FUNCTIONS, integer
from jarenlab.query.values import hash_key, json_eq, kind

if TYPE_CHECKING:
    from jarenlab.query.engine import Compiler


def compile_window(node: Window, c: Compiler) -> SeqFn:
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
    """A running ``$count``/``$sum``/``$avg`` in one pass: the same additions, in the same order,
    as ``$sum`` over each prefix (so the same floats)."""
    out: list[list[Any]] = []
    total: Any = 0
    count = 0
    for v in values:
        for x in v:
            if fn != "count":
                total = FUNCTIONS["sum"]([[total, x]], where)[0]
            count += 1
        if fn == "count":
            out.append([count])
        elif fn == "sum":
            out.append([total])
        else:
            try:
                out.append([total / count] if count else [])  # as $avg divides
            except OverflowError:
                raise QueryError("JQ2010", "$avg overflowed", doc_path=where) from None
    return out


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
