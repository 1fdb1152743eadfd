"""FLWOR evaluation: for -> let -> where -> groupby -> orderby -> count -> return.

A tuple is a dict of variable name -> sequence. Clauses run in that fixed order
whatever the order of keys in the document.

>>> from jarenlab.query.lang.engine import evaluate
>>> evaluate({"$return": "$n", "$orderby": {"$key": "$n", "$dir": "desc"}, "$for": {"n": "$[*]"}}, [2, 3, 1])
[3, 2, 1]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jarenlab.errors import QueryError
from jarenlab.query.lang.compare import MISSING, member_of
from jarenlab.query.lang.nodes import Flwor, Node, PathRef
from jarenlab.query.lang.values import TYPE_KINDS, hash_key

if TYPE_CHECKING:
    from jarenlab.query.lang.compiled import Compiling, SeqFn

Env = dict[str, Any]
_EMPTY_KEY = ("empty",)
_MISSING_TYPE = type(MISSING)
KeyFn = Callable[[Env, list[Any]], list[Any]]


def _unpack(seq: list[Any]) -> list[Any]:
    """``$for`` binds one item per tuple and unpacks arrays one level."""
    if list not in set(map(type, seq)):
        return seq
    return [y for item in seq for y in (item if type(item) is list else (item,))]


def compile_flwor(node: Flwor, c: Compiling) -> SeqFn:
    """Compile a FLWOR node into a closure over the enclosing environment."""
    return _compile_items(node, c) or _compile_tuples(node, c)


def _compile_items(node: Flwor, c: Compiling) -> SeqFn | None:
    """The common shape, one ``$for`` variable and no ``$at/$let/$groupby/$count``: tuples are items.

    No environment is built per item: ``$where`` must have an item-level predicate
    (:meth:`Compiler.item_pred`), ``$orderby`` keys ``$var.member`` read the item, and
    other keys and a ``$return`` other than ``$var`` get ``{**env, var: [item]}`` only
    where they are evaluated. Everything runs in the general path's order, so the same
    errors are raised. Returns None for any other shape.
    """
    if c.limited or len(node.fors) != 1 or node.lets or node.groupby or node.count is not None:
        return None
    var, source, at = node.fors[0]
    where_item = c.item_pred(node.where, var) if node.where is not None else None
    if at is not None or (node.where is not None and where_item is None):
        return None
    where = c.bool(node.where) if node.where is not None else (lambda env: True)
    src = c.seq(source)
    keys = [_item_key(s.key, var, c) for s in node.orderby]
    specs = [(s.desc, s.empty_greatest, s.key.path, wrapped) for s, (_, wrapped) in zip(node.orderby, keys)]
    ret = c.seq(node.ret)
    ret_item = isinstance(node.ret, PathRef) and node.ret.var == var and not node.ret.steps

    def run(env: Env) -> list[Any]:
        items = _unpack(src(env))
        if where_item is not None:
            try:
                items = list(filter(where_item(env), items))
            except AttributeError:  # an item is not an object: ask the general predicate
                items = [x for x in items if where({**env, var: [x]})]
        if keys:
            order = sorted_positions([key(env, items) for key, _ in keys], specs)
            items = [items[i] for i in order]
        if ret_item:
            return items
        out: list[Any] = []
        for x in items:
            out.extend(ret({**env, var: [x]}))
        return out

    return run


def _item_key(key: Node, var: str, c: Compiling) -> tuple[KeyFn, bool]:
    """An ``$orderby`` key over items: ``(column(env, items), wrapped)`` for :func:`_sorted_positions`."""
    member = member_of(key, var)
    if member is not None:

        def member_column(env: Env, items: list[Any]) -> list[Any]:
            return [x.get(member, MISSING) if type(x) is dict else MISSING for x in items]

        return member_column, False
    f = c.seq(key)

    def column(env: Env, items: list[Any]) -> list[Any]:
        return [f({**env, var: [x]}) for x in items]

    return column, True


def _compile_tuples(node: Flwor, c: Compiling) -> SeqFn:
    """The general FLWOR: a list of tuple environments through every clause."""
    fors = [(name, c.seq(e), at) for name, e, at in node.fors]
    lets = [(name, c.seq(e)) for name, e in node.lets]
    where = c.bool(node.where) if node.where is not None else None
    own = list(
        dict.fromkeys([v for name, _, at in node.fors for v in (name, at) if v] + [n for n, _ in node.lets])
    )
    groupby = [(name, c.seq(e), e.path) for name, e in node.groupby]
    specs = [(c.seq(s.key), s.desc, s.empty_greatest, s.key.path) for s in node.orderby]
    flags = [(desc, greatest, path, True) for _, desc, greatest, path in specs]
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
            order = sorted_positions([[f(t) for t in tuples] for f, *_ in specs], flags)
            tuples = [tuples[i] for i in order]
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


def _sort_key(kinds: set[str], greatest: bool) -> Callable[[Any], Any]:
    # Ranks put the empty key and NaN where the spec says; values compare within a rank.
    if "number" in kinds:
        if greatest:
            return lambda v: (2, 0) if v is MISSING else (0, 0) if v != v else (1, v)
        return lambda v: (0, 0) if v is MISSING else (1, 0) if v != v else (2, v)
    if greatest:
        return lambda v: (1, "") if v is MISSING else (0, v)
    return lambda v: (0, "") if v is MISSING else (1, v)


def _ranks(values: list[Any], greatest: bool, where: str) -> list[Any]:
    """Sort keys for one ``$orderby`` column of items (``MISSING`` for an empty key).

    Raises ``JQ2005`` unless the present keys are all numbers or all strings.
    """
    types = set(map(type, values))
    present = types - {_MISSING_TYPE}
    kinds = {TYPE_KINDS.get(t, t.__name__) for t in present}
    if kinds - {"number", "string"} or len(kinds) > 1:
        raise QueryError("JQ2005", f"cannot order by {', '.join(sorted(kinds))} keys", doc_path=where)
    nan = float in types and any(x != x for x in values if type(x) is float)
    if present == types and not nan:
        return values  # no empty key and no NaN: the values are their own ranks
    return list(map(_sort_key(kinds, greatest), values))


def sorted_positions(columns: list[list[Any]], specs: list[tuple[bool, bool, str, bool]]) -> list[int]:
    """Positions ``0..n-1`` in ``$orderby`` order: stable sorts from the last key to the first.

    A column holds one key per tuple, as its sequence when the spec says ``wrapped``
    (checked here for ``JQ2001``) or else as the item itself, ``MISSING`` when empty.
    """
    order = list(range(len(columns[0])))
    for (desc, greatest, where, wrapped), column in reversed(list(zip(specs, columns))):
        if wrapped:
            for v in column:
                if len(v) > 1:
                    raise QueryError("JQ2001", f"an $orderby key has {len(v)} items", doc_path=where)
            column = [v[0] if v else MISSING for v in column]
        order.sort(key=_ranks(column, greatest, where).__getitem__, reverse=desc)
    return order
