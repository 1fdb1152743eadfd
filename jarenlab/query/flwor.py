"""FLWOR evaluation: for -> let -> where -> groupby -> orderby -> count -> return.

A tuple is a dict of variable name -> sequence. Clauses run in that fixed order
whatever the order of keys in the document.

>>> from jarenlab.query.engine import evaluate
>>> evaluate({"$return": "$n", "$orderby": {"$key": "$n", "$dir": "desc"}, "$for": {"n": "$[*]"}}, [2, 3, 1])
[3, 2, 1]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jarenlab.errors import QueryError
from jarenlab.query.document import Flwor
from jarenlab.query.values import hash_key, kind

if TYPE_CHECKING:
    from jarenlab.query.engine import Compiler, SeqFn

Env = dict[str, Any]
_EMPTY_KEY = ("empty",)


def _unpack(seq: list[Any]) -> list[Any]:
    """``$for`` binds one item per tuple and unpacks arrays one level."""
    for x in seq:
        if type(x) is list:
            return [y for item in seq for y in (item if type(item) is list else (item,))]
    return seq


def compile_flwor(node: Flwor, c: Compiler) -> SeqFn:
    """Compile a FLWOR node into a closure over the enclosing environment."""
    fors = [(name, c.seq(e), at) for name, e, at in node.fors]
    lets = [(name, c.seq(e)) for name, e in node.lets]
    where = c.bool(node.where) if node.where is not None else None
    own = list(
        dict.fromkeys([v for name, _, at in node.fors for v in (name, at) if v] + [n for n, _ in node.lets])
    )
    groupby = [(name, c.seq(e), e.path) for name, e in node.groupby]
    specs = [(c.seq(s.key), s.desc, s.empty_greatest, s.key.path) for s in node.orderby]
    count = node.count
    ret = c.seq(node.ret)
    here = node.path
    fuse_where = where is not None and not lets and bool(fors)
    last = node.fors[-1] if node.fors else None
    item_where = None
    if fuse_where and node.where is not None and last is not None and last[2] is None:
        item_where = c.item_pred(node.where, last[0])

    def bind(env: Env) -> list[Env]:
        tuples = [env] if fors else [dict(env)]
        for i, (name, f, at) in enumerate(fors):
            fused = fuse_where and i == len(fors) - 1
            new: list[Env] = []
            for t in tuples:
                work = dict(t)
                items = _unpack(f(t))
                if fused and item_where is not None:
                    try:
                        kept = list(filter(item_where(t), items))
                    except AttributeError:  # an item is not an object: take the general path
                        pass
                    else:
                        for x in kept:
                            nt = dict(t)
                            nt[name] = [x]
                            new.append(nt)
                        continue
                if fused and at is None:
                    cell = [None]
                    work[name] = cell
                    for x in items:
                        cell[0] = x
                        if where(work):  # type: ignore[misc]
                            nt = dict(work)
                            nt[name] = [x]
                            new.append(nt)
                    continue
                for pos, x in enumerate(items):
                    work[name] = [x]
                    if at is not None:
                        work[at] = [pos]
                    if not fused or where(work):  # type: ignore[misc]
                        new.append(dict(work))
            c.too_many(len(new), here)
            tuples = new
        for name, f in lets:
            for t in tuples:
                t[name] = f(t)
        if where is not None and not fuse_where:
            tuples = [t for t in tuples if where(t)]
        return tuples

    def run(env: Env) -> list[Any]:
        tuples = bind(env)
        if groupby:
            tuples = _group(env, tuples, groupby, own)
        if specs:
            tuples = _order(tuples, specs)
        if count is not None:
            for i, t in enumerate(tuples):
                t[count] = [i]
        out: list[Any] = []
        for t in tuples:
            out.extend(ret(t))
        return out

    return run


def _group(env: Env, tuples: list[Env], groupby: list[tuple[str, SeqFn, str]], own: list[str]) -> list[Env]:
    groups: dict[tuple[Any, ...], tuple[list[list[Any]], list[Env]]] = {}
    for t in tuples:
        keys = []
        for _, f, where in groupby:
            v = f(t)
            if len(v) > 1:
                raise QueryError("JQ2001", f"a $groupby key has {len(v)} items", doc_path=where)
            keys.append(v)
        hk = tuple(hash_key(v[0]) if v else _EMPTY_KEY for v in keys)
        g = groups.get(hk)
        if g is None:
            groups[hk] = (keys, [t])
        else:
            g[1].append(t)
    out = []
    for keys, members in groups.values():
        nt = dict(env)
        for var in own:
            nt[var] = [x for m in members for x in m[var]]
        for (name, _, _), k in zip(groupby, keys):
            nt[name] = k
        out.append(nt)
    return out


def _sort_key(kinds: set[str], greatest: bool) -> Callable[[list[Any]], Any]:
    # Ranks put the empty key and NaN where the spec says; values compare within a rank.
    if "number" in kinds:
        if greatest:
            return lambda v: (2, 0) if not v else (0, 0) if v[0] != v[0] else (1, v[0])
        return lambda v: (0, 0) if not v else (1, 0) if v[0] != v[0] else (2, v[0])
    if greatest:
        return lambda v: (1, "") if not v else (0, v[0])
    return lambda v: (0, "") if not v else (1, v[0])


def _order(tuples: list[Env], specs: list[tuple[SeqFn, bool, bool, str]]) -> list[Env]:
    # Stable sorts from the last key to the first; each sorts positions by precomputed ranks.
    columns = [[f(t) for t in tuples] for f, _, _, _ in specs]
    order = list(range(len(tuples)))
    for (_, desc, greatest, where), column in reversed(list(zip(specs, columns))):
        kinds = set()
        for v in column:
            if len(v) > 1:
                raise QueryError("JQ2001", f"an $orderby key has {len(v)} items", doc_path=where)
            if v:
                kinds.add(kind(v[0]))
        if kinds - {"number", "string"} or len(kinds) > 1:
            raise QueryError("JQ2005", f"cannot order by {', '.join(sorted(kinds))} keys", doc_path=where)
        values = [v[0] for v in column if v]
        if len(values) == len(column) and all(x == x for x in values):
            ranks: list[Any] = values  # no empty key and no NaN: the values are their own ranks
        else:
            ranks = list(map(_sort_key(kinds, greatest), column))
        order.sort(key=ranks.__getitem__, reverse=desc)
    return [tuples[i] for i in order]
