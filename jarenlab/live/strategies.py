"""Maintainers: keep a query's result current from a commit's net changes, and say what changed.

Every maintainer has ``seed(pairs)`` (the collection's ``(key, doc)`` pairs in storage order),
``apply(changes, moved) -> ops`` (RFC 6902 ops on ``/rows/i``; ``[]`` when the result did not
change; ``moved``: the keys the commit deleted and wrote again, which take new storage positions),
``rows`` (a new list per emission; unchanged rows are the same objects) and ``size`` (entries
kept, for the bound). Per-row evaluation goes through the reference engine's compiled closures.

**Storage order** (the order of rows without ``$orderby``, of groups, and of an aggregate's
contributions) is the backend's, as the collection reports it
(:attr:`jarenlab.collection.Collection.storage_order`): ``"key"``, where a key is its own
position, or ``"insertion"``, where a key takes the next position when first seen and gives it up
when deleted, also when a commit deletes it and writes it again (:class:`Positions`). A maintainer
is made for one of the two and assumes nothing else.

>>> from jarenlab.live.analyze import plan_live
>>> doc = {"$for": {"r": "$[*]"}, "$where": {"$gt": ["$r.n", 1]}, "$orderby": {"$key": "$r.n", "$dir": "desc"},
...        "$return": "$r.n"}
>>> m = make_maintainer(plan_live(doc), {}, {}, "key")
>>> m.seed([(1, {"n": 2}), (2, {"n": 5})]); m.rows
[5, 2]
>>> m.apply({3: {"n": 3}, 2: None}), m.rows
([{'op': 'add', 'path': '/rows/1', 'value': 3}, {'op': 'remove', 'path': '/rows/0'}], [3, 2])
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from jarenlab.errors import QueryError
from jarenlab.live.analyze import LivePlan
from jarenlab.live.folds import Tally, split_return
from jarenlab.live.window import Op, SortedEntries, WindowOps, diff_keyed, diff_values, same, term_key
from jarenlab.query.lang.engine import Compiler, Env
from jarenlab.query.lang.functions import FUNCTIONS, integer
from jarenlab.query.lang.values import hash_key, kind

if TYPE_CHECKING:
    from jarenlab.backends.base import StorageOrder

Changes = Mapping[Any, "dict[str, Any] | None"]
#: What a group-by keeps of a row: its group, storage place, own variables, contribution to each fold.
Member = tuple[Any, Any, dict[str, list[Any]], list[list[Any]]]


class RowEval:
    """Compiled per-row clauses of a plan: ``env(doc)`` is None when the row is filtered out."""

    def __init__(
        self, plan: LivePlan, externals: Mapping[str, Any], operators: Mapping[str, Callable[..., Any]]
    ):
        c = Compiler(operators, {})
        self.base: Env = {"$": [None], **{k: [v] for k, v in externals.items()}}
        self.var = plan.var
        self.lets = [(n, c.seq(e)) for n, e in plan.lets]
        self.where = c.bool(plan.where) if plan.where is not None else None
        self.ret = c.seq(plan.ret) if plan.ret is not None else None
        self.terms = [(c.seq(s.key), s.desc, s.empty_greatest, s.key.path) for s in plan.orderby]
        self.group = c.seq(plan.group[1]) if plan.group else None
        self.own = [plan.var] + [n for n, _ in plan.lets]
        self.compiler = c

    def env(self, doc: dict[str, Any]) -> Env | None:
        """The row's environment after ``$let``, or None when ``$where`` drops it."""
        env = dict(self.base)
        env[self.var] = [doc]
        for name, f in self.lets:
            env[name] = f(env)
        if self.where is not None and not self.where(env):
            return None
        return env


class Positions:
    """Storage positions of keys under a :data:`~jarenlab.backends.base.StorageOrder`: in ``"key"``
    order a key is its own position; in ``"insertion"`` order a key gets the next number when first
    seen (in storage order, as a seed sees them) and loses it when deleted.

    >>> p = Positions("insertion")
    >>> p.number(["b", "a"]); p.of("c"), p.of("a")
    (2, 1)
    >>> p.forget("b"); p.of("b")
    3
    >>> p.learn({"a": {}}, moved={"a"}); p.of("a")
    4
    """

    def __init__(self, order: StorageOrder) -> None:
        #: True in ``"key"`` order: nothing to remember.
        self.by_key = order == "key"
        self.pos: dict[Any, int] = {}
        self.next = 0
        #: Where writers commit side by side, a row inserted first may commit last, so commit order
        #: is not storage order: the database's own positions of keys (``locate(keys)``, every
        #: key's for None: :meth:`jarenlab.collection.Collection.positions`), set by the live query.
        self.locate: Callable[[list[Any] | None], dict[Any, int]] | None = None

    def of(self, key: Any) -> Any:
        """The storage position of ``key``."""
        if self.by_key:
            return key
        p = self.pos.get(key)
        if p is None:
            p = self.pos[key] = self.next
            self.next += 1
        return p

    def number(self, keys: list[Any]) -> None:
        """Number every stored key (in storage order) as a seed over all of them would have,
        so a seed over fewer rows leaves each later-matching row its storage place (with
        :attr:`locate`, the database numbers them all and ``keys`` is not read)."""
        if self.by_key:
            return
        if self.locate is not None:
            self.adopt(self.locate(None))
            return
        for key in keys:
            self.of(key)

    def learn(self, changes: Changes, moved: Collection[Any] = ()) -> None:
        """Before a commit's changes apply: the keys it ``moved`` (deleted and wrote again) give up
        their positions, to take new ones after every stored key, in the order ``changes`` lists
        them (as new keys do); with :attr:`locate`, the database's positions of the keys it brings
        that have none now (one statement per commit)."""
        if self.by_key:
            return
        for key in moved:
            self.pos.pop(key, None)
        if self.locate is None:
            return
        new = [key for key, doc in changes.items() if doc is not None and key not in self.pos]
        if new:
            self.adopt(self.locate(new))

    def adopt(self, found: dict[Any, int]) -> None:
        """Take the database's own positions of keys (a seed from the columns holds every row's)."""
        self.pos.update(found)
        if found:
            self.next = max(self.next, max(found.values()) + 1)

    def forget(self, key: Any) -> None:
        """Drop a deleted key's position."""
        if not self.by_key:
            self.pos.pop(key, None)


class Sorted:
    """``rows`` and ``window``: every matching row, sorted, with an optional visible slice."""

    def __init__(
        self,
        plan: LivePlan,
        ev: RowEval,
        order: StorageOrder,
        skip: int,
        take: int | None,
        *,
        listed: bool = True,
    ) -> None:
        self.plan, self.ev, self.skip, self.take = plan, ev, skip, take
        #: False: only the entries are kept (an accumulator's rows), no ``rows`` and no ops.
        self.listed = listed
        self.positions = Positions(order) if not plan.orderby else None
        self.entries = SortedEntries()
        #: Per order term, how many kept rows have a number and how many a string there.
        self.kinds = [Counter[str]() for _ in ev.terms]
        self.rows: list[Any] = []
        self.keyed: list[tuple[Any, Any]] = []

    @property
    def size(self) -> int:
        return len(self.entries)

    def evaluate(self, key: Any, doc: dict[str, Any] | None) -> tuple[tuple[Any, ...], list[Any]] | None:
        """The row's sort tuple and result items (None: it does not match)."""
        if doc is None:
            return None
        # Every stored key gets its storage position, matching or not: a row that starts to
        # match later keeps the place the backend gave it.
        pos = self.positions.of(key) if self.positions is not None else None
        env = self.ev.env(doc)
        if env is None:
            return None
        items = self.ev.ret(env) if self.ev.ret is not None else []
        if pos is not None:
            return (pos, key), items
        parts: list[Any] = []
        for f, desc, greatest, where in self.ev.terms:
            v = f(env)
            if len(v) > 1:
                raise QueryError("JQ2001", f"an $orderby key has {len(v)} items", doc_path=where)
            if v and kind(v[0]) not in ("number", "string"):
                raise QueryError("JQ2005", f"cannot order by {kind(v[0])} keys", doc_path=where)
            parts.append(term_key(v, desc, greatest))
        parts.append(key)
        return tuple(parts), items

    def _count_kinds(self, key: Any, sort: tuple[Any, ...] | None) -> None:
        """Before ``key`` is put with ``sort`` (None: removed): its terms' kinds leave the counts
        (read from the sort tuple it is kept with) and the new ones join them."""
        if not self.kinds:
            return
        old = self.entries.sort.get(key)
        for sign, st in ((-1, old), (1, sort)):
            if st is not None:
                for i, part in enumerate(st[:-1]):
                    if part[0] in (1, -1):
                        self.kinds[i]["string" if type(_value(part)) is str else "number"] += sign

    def seed(self, pairs: list[tuple[Any, dict[str, Any]]]) -> None:
        """Fill from empty with one sort instead of an insort per row. An ordering error (mixed
        kinds) replays the per-row path from empty, so it is raised exactly as ``apply`` raises it."""
        changes = dict(pairs)
        e = self.entries
        for key, new in [(k, self.evaluate(k, doc)) for k, doc in changes.items()]:
            if new is not None:
                self._count_kinds(key, new[0])
                e.sort[key], e.items[key] = new
                e.multi += len(new[1]) != 1
        try:
            e.order = sorted(e.sort.values())
            mixed = any(sum(1 for n in c.values() if n > 0) > 1 for c in self.kinds)
        except TypeError:
            mixed = True
        if mixed:
            self.entries = SortedEntries()
            self.kinds = [Counter[str]() for _ in self.ev.terms]
            self.apply(changes)
            return
        keyed = e.slice_keyed(self.skip, self.take)
        self.keyed = keyed if self.take is not None else []
        self.rows = [item for _, item in keyed]

    def apply(self, changes: Changes, moved: Collection[Any] = ()) -> list[Op]:
        e = self.entries
        if self.positions is not None:
            self.positions.learn(changes, moved)
        evaluated = [(k, self.evaluate(k, doc)) for k, doc in changes.items()]
        if not self.listed:
            self._keep(changes, evaluated)
            return []
        single = not e.multi and all(v is None or len(v[1]) == 1 for _, v in evaluated)
        fast = single and self.take is None and self.skip == 0
        ops: list[Op] = []
        # one row changed in a window: its places in the order say what the window gains and loses
        one = single and self.take is not None and len(evaluated) == 1
        window = WindowOps(self.entries, self.skip, self.take, self.keyed, self.rows, ops) if one else None
        old_keyed = (
            None
            if fast or window is not None
            else self.keyed
            if self.take is not None
            else e.slice_keyed(0, None)
        )
        rows = list(self.rows) if fast else self.rows
        for key, new in evaluated:
            if new is None:
                if self.positions is not None and changes[key] is None:
                    self.positions.forget(key)
                self._count_kinds(key, None)
                i = e.remove(key)
                if i is not None and fast:
                    ops.append({"op": "remove", "path": f"/rows/{i}"})
                    del rows[i]
                elif i is not None and window is not None:
                    window.left(i)
                continue
            sort, items = new
            had = e.items.get(key)
            if had is not None and same(had, items):
                if e.sort[key] == sort:
                    continue
                items = had
            self._count_kinds(key, sort)
            try:
                if window is not None:
                    window.move(key, sort, items)
                    continue
                old, j = e.put(key, sort, items)
            except TypeError:
                raise QueryError(
                    "JQ2005", "cannot order numbers and strings together", doc_path="/"
                ) from None
            if fast:
                if old == j:  # (a row that moved where it already was, after the rows it follows: no op)
                    if items is not had:
                        ops.append({"op": "replace", "path": f"/rows/{j}", "value": items[0]})
                        rows[j] = items[0]
                    continue
                if old is not None:
                    ops.append({"op": "remove", "path": f"/rows/{old}"})
                    del rows[old]
                ops.append({"op": "add", "path": f"/rows/{j}", "value": items[0]})
                rows.insert(j, items[0])
        for i, counter in enumerate(self.kinds):
            if sum(1 for n in counter.values() if n > 0) > 1:
                raise QueryError(
                    "JQ2005", "cannot order numbers and strings together", doc_path=self.ev.terms[i][3]
                )
        if fast:
            self.rows = rows
            return ops
        if window is not None:
            window.finish()
            self.keyed, self.rows = window.keyed, window.rows
            return ops
        new_keyed = e.slice_keyed(self.skip, self.take)
        ops = diff_keyed(old_keyed or [], new_keyed)
        if self.take is not None:
            self.keyed = new_keyed
        self.rows = [item for _, item in new_keyed]
        return ops

    def _keep(self, changes: Changes, evaluated: list[tuple[Any, Any]]) -> None:
        """Only the entries: each changed row put in its place with its items, or removed."""
        e = self.entries
        for key, new in evaluated:
            if new is None:
                if self.positions is not None and changes[key] is None:
                    self.positions.forget(key)
                e.remove(key)
            elif not (e.sort.get(key) == new[0] and same(e.items[key], new[1])):
                e.put(key, *new)


def _value(part: tuple[Any, Any]) -> Any:
    v = part[1]
    return getattr(v, "value", v)


class Accumulator:
    """Whole-query ``$count/$sum/$avg/$min/$max``: every matching row's contribution kept in storage
    order (``inner``), and the aggregate in a :class:`~jarenlab.live.folds.Tally` as contributions
    come and go (exact integer and float sums, the first extreme with its row's place); where the
    tally cannot promise the engine's answer (mixed kinds, infinities, non-numbers), the engine
    computes it from every contribution in storage order."""

    def __init__(self, plan: LivePlan, ev: RowEval, order: StorageOrder) -> None:
        self.name = plan.aggregate or "count"
        self.fn = FUNCTIONS[self.name]
        self.inner = Sorted(
            LivePlan("rows", var=plan.var, lets=plan.lets, where=plan.where, ret=plan.ret),
            ev,
            order,
            0,
            None,
            listed=False,
        )
        self.tally = Tally(self.name)
        self.rows: list[Any] = []

    @property
    def size(self) -> int:
        return len(self.inner.entries)

    @property
    def positions(self) -> Positions | None:
        return self.inner.positions

    def seed(self, pairs: list[tuple[Any, dict[str, Any]]]) -> None:
        self.apply(dict(pairs))

    def apply(self, changes: Changes, moved: Collection[Any] = ()) -> list[Op]:
        entries, tally = self.inner.entries, self.tally
        for key in changes:
            old = entries.items.get(key)
            if old is not None:
                tally.remove(old, entries.sort[key])
        self.inner.apply(changes, moved)
        for key in changes:
            new = entries.items.get(key)
            if new is not None:
                tally.add(new, entries.sort[key])
        self.rows, ops = self.result()
        return ops

    def result(self) -> tuple[list[Any], list[Op]]:
        """The aggregate now (from the tally, else through the engine) and the ops to it."""
        entries, tally = self.inner.entries, self.tally
        if tally.needs_scan:
            tally.found((st, entries.items[st[-1]]) for st in entries.order)
        result = tally.value()
        if result is None:
            result = self.fn([entries.slice_items(0, None)], "/")
        ops, rows = diff_values(self.rows, result)
        return rows, ops


class Groups:
    """A single-level ``$groupby``: only groups a commit touches are computed again. When the
    ``$return`` reads the rows only through ``$count/$sum/$avg/$min/$max`` of paths, each group keeps
    those aggregates as rows come and go (:mod:`jarenlab.live.folds`) and the rest of ``$return`` is
    evaluated on them; otherwise (or where a tally cannot promise the engine's answer) the group's
    rows go through the engine."""

    def __init__(self, plan: LivePlan, ev: RowEval, order: StorageOrder) -> None:
        assert plan.group is not None and plan.ret is not None
        self.plan, self.ev = plan, ev
        self.gname = plan.group[0]
        self.positions = Positions(order)
        #: key -> (group, storage place, the row's own variables, its contribution to each fold)
        self.members: dict[Any, Member] = {}
        self.groups: dict[Any, tuple[list[Any], SortedEntries, list[Any]]] = {}
        self.tallies: dict[Any, list[Tally]] = {}
        split = split_return(plan.ret, ev.own)
        self.folds = split[1] if split else []
        self.args = [ev.compiler.seq(f.arg) for f in self.folds]
        self.rest = ev.compiler.seq(split[0]) if split else None
        self.rows: list[Any] = []
        self.keyed: list[tuple[Any, Any]] = []

    @property
    def size(self) -> int:
        return len(self.members)

    def seed(self, pairs: list[tuple[Any, dict[str, Any]]]) -> None:
        self.apply(dict(pairs))

    def apply(self, changes: Changes, moved: Collection[Any] = ()) -> list[Op]:
        dirty: set[Any] = set()
        self.positions.learn(changes, moved)
        for key, doc in changes.items():
            old = self.members.pop(key, None)
            if old is not None:
                self.groups[old[0]][1].remove(key)
                for tally, items in zip(self.tallies[old[0]], old[3]):
                    tally.remove(items, (old[1], key))
                dirty.add(old[0])
            if doc is None:
                self.positions.forget(key)
                continue
            made = self.member(key, doc)
            if made is None:
                continue
            gk, (hk, pos, own, parts) = made
            self.members[key] = (hk, pos, own, parts)
            group = self.groups.get(hk)
            if group is None:
                group = self.groups[hk] = (gk, SortedEntries(), [])
                self.tallies[hk] = [Tally(f.name) for f in self.folds]
            group[1].put(key, (pos, key), [None])
            for tally, items in zip(self.tallies[hk], parts):
                tally.add(items, (pos, key))
            dirty.add(hk)
        self.refresh(dirty)
        return self.reordered()

    def refresh(self, dirty: Iterable[Any]) -> None:
        """Compute the ``dirty`` groups' items again (from the tallies where they can promise
        them, else through the engine); drop the groups left empty."""
        for hk in dirty:
            gk, members, items = self.groups[hk]
            if not len(members):
                del self.groups[hk], self.tallies[hk]
                continue
            fresh = self._folded(hk, gk)
            if fresh is None:
                fresh = self._evaluated(gk, members)
            if not same(items, fresh):
                self.groups[hk] = (gk, members, fresh)

    def member(self, key: Any, doc: dict[str, Any]) -> tuple[list[Any], Member] | None:
        """The row's group key and what it keeps of the row (None: it does not match)."""
        pos = self.positions.of(key)
        env = self.ev.env(doc)
        if env is None:
            return None
        assert self.ev.group is not None
        gk = self.ev.group(env)
        if len(gk) > 1:
            raise QueryError("JQ2001", f"a $groupby key has {len(gk)} items", doc_path="/$groupby")
        hk = hash_key(gk[0]) if gk else ("empty",)
        own = {v: env[v] for v in self.ev.own}
        return gk, (hk, pos, own, [f(env) for f in self.args])

    def reordered(self) -> list[Op]:
        """The groups' items in the order of each group's first row, and the ops to them."""
        ordered = sorted(self.groups.items(), key=lambda g: g[1][1].order[0])
        keyed = [((hk, i), x) for hk, (_, _, items) in ordered for i, x in enumerate(items)]
        ops = diff_keyed(self.keyed, keyed)
        self.keyed = keyed
        self.rows = [x for _, x in keyed]
        return ops

    def _folded(self, hk: Any, gk: list[Any]) -> list[Any] | None:
        """The group's result from its tallies (None when one of them cannot promise it)."""
        if self.rest is None:
            return None
        env = dict(self.ev.base)
        env[self.gname] = gk
        for i, (fold, tally) in enumerate(zip(self.folds, self.tallies[hk])):
            if tally.needs_scan:
                members = self.groups[hk][1]
                tally.found((st, self.members[st[-1]][3][i]) for st in members.order)
            value = tally.value()
            if value is None:
                return None
            env[fold.var] = value
        return self.rest(env)

    def _evaluated(self, gk: list[Any], members: SortedEntries) -> list[Any]:
        """The group's result through the engine, from every row's own variables in storage order."""
        env = dict(self.ev.base)
        keys = list(members.keys())
        for v in self.ev.own:
            env[v] = [x for k in keys for x in self.members[k][2][v]]
        env[self.gname] = gk
        assert self.ev.ret is not None
        return self.ev.ret(env)


def make_maintainer(
    plan: LivePlan,
    externals: Mapping[str, Any],
    operators: Mapping[str, Callable[..., Any]],
    order: StorageOrder,
) -> Sorted | Accumulator | Groups:
    """The maintainer of an incremental plan (``plan.strategy`` is not ``rerun``) over a collection
    in ``order`` (its :attr:`~jarenlab.collection.Collection.storage_order`)."""
    ev = RowEval(plan, externals, operators)
    if plan.strategy == "accumulator":
        return Accumulator(plan, ev, order)
    if plan.strategy == "groups":
        return Groups(plan, ev, order)
    skip, take = 0, None
    if plan.start is not None:
        skip = max(_integer(ev, plan.start), 0)
    if plan.length is not None:
        start = _integer(ev, plan.start) if plan.start is not None else 0
        end = max(start + _integer(ev, plan.length), 0)
        take = max(end - skip, 0)
    return Sorted(plan, ev, order, skip, take)


def _integer(ev: RowEval, node: Any) -> int:
    v = integer(ev.compiler.seq(node)(dict(ev.base)), node.path, "$subsequence bound")
    if type(v) is not int:
        raise QueryError("JQ2004", "$subsequence bounds must be integers", doc_path=node.path)
    return v
