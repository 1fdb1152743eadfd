"""Emit a graph load as ONE statement of correlated subqueries, only through the dialect.

Each level reads its collection through a derived table ``l<n>`` selecting ``p`` (storage order),
``d`` (the document), ``k`` (the key), ``c`` (the member a to-many include is joined on),
``r<i>``/``g<i>`` (the member child ``i`` of a to-one include points with, and its kind test
where the schema does not type it) and ``o<i>`` (ordering keys), filtered by the level's own
conditions. A level's item is its document's JSON text with each include appended as a member
(:meth:`~jarenlab.backends.base.Dialect.json_members`: the stored text is concatenated, never
parsed, so Python parses each root document once and has nothing to put in place); a to-many include is
the dialect's JSON array of ``(SELECT item AS x ... WHERE l<n>.c = parent.k ORDER BY ...)``, its
rows concatenated in the order they arrive (``group_concat`` over it on SQLite, an array built from
it on PostgreSQL: no aggregate, so no sort of every parent's rows). With ``take``/``skip`` the rows
come from the window itself, read once through the index on the relation member and the ordering
(``FROM (SELECT ... WHERE w<n>.c = parent.k ORDER BY ... LIMIT ...) AS l<n>``, in order), and the
items are built for its rows alone. A to-one include is ``(SELECT item ... WHERE l<n>.k =
parent.r<i>)`` (``null`` when the parent is missing), a count ``(SELECT count(*) ...)``.

A reference to a composite key points with the key's stored text, built in SQL from the holder's
members (:meth:`~jarenlab.backends.base.Dialect.encoded_key`) as ``r<i>``; a to-many include from
the composite side matches member by member instead (``c<j>`` of the child to ``q<i>_<j>``, the
parent's key members), so an index on the members serves it.

A many-to-many include reads its collection joined to the join collection: its derived table is
``(SELECT j.p AS p, t.d AS d, t.k AS k, ..., j.c AS c FROM (SELECT <storage order> AS p, <from> AS c,
<to> AS t FROM join) AS j, (SELECT ... FROM to) AS t WHERE t.k = j.t)``, one row per link whose both
ends exist, in link order (``p`` is the join document's storage order); the rest of the statement
reads it as any to-many include's table. With ``link`` it also selects the join document
(``j.d AS ld``), appended to each item as a member. An end with a composite key is named by one
join member per key member: ``j.t`` is then the key's stored text built from the ``to`` members
(a primary-key lookup, as a to-one include's), and the ``from`` members are ``c<j>``, matched to
the parent's key members one by one (an index on them serves, as for a to-many include).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from jarenlab.query.loads.plan import Level, member_field
from jarenlab.query.planner.preds import Const
from jarenlab.query.planner.sql import Emitter, Statement

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect
    from jarenlab.model import CollectionSpec
    from jarenlab.model.relations import Relation


class _Writer:
    def __init__(self, dialect: Dialect, specs: Mapping[str, CollectionSpec]) -> None:
        self.d = dialect
        self.e = Emitter(dialect)
        self.specs = specs
        self.aliases = 0

    def key_family(self, collection: str) -> str:
        return "string" if self.specs[collection].key_type is str else "number"

    def parts(self, collection: str, end: str, members: tuple[str, ...]) -> list[tuple[str, str, list[str]]]:
        """Each of ``collection``'s ``members`` as (value, family, kind tests), in the families of
        the members of ``end``'s key (a single key: its one family)."""
        codec = self.specs[end].composite
        families = (
            ["string" if t is str else "number" for t in codec.types] if codec else [self.key_family(end)]
        )
        out = []
        for member, family in zip(members, families):
            f = member_field(self.specs[collection], member, self.d)
            out.append((self.e.value(f, family), family, self.e.guard(f, family)))
        return out

    def reference(self, rel: Relation) -> tuple[str, list[str]]:
        """What a to-one reference's holder row points with, compared to the target's key column,
        and the kind tests it needs (:meth:`pointing`)."""
        return self.pointing(rel.holder, rel.target, rel.members or (rel.member,))

    def pointing(self, holder: str, end: str, members: tuple[str, ...]) -> tuple[str, list[str]]:
        """What ``holder``'s ``members`` point at ``end`` with, compared to its key column, and the
        kind tests they need: the member's value, or a composite key's stored text built from each
        member (:meth:`~jarenlab.backends.base.Dialect.encoded_key`)."""
        parts = self.parts(holder, end, members)
        guards = [g for _, _, guard in parts for g in guard]
        if self.specs[end].composite is None:
            return parts[0][0], guards
        return self.d.encoded_key([(value, family == "number") for value, family, _ in parts]), guards

    @staticmethod
    def composite_many(rel: Relation | None) -> bool:
        """A to-many (or many-to-many) relation from a composite-keyed collection: its children (or
        links) are matched member by member (``c<j>`` to the parent's ``q<i>_<j>``), so an index
        on the members serves."""
        return rel is not None and rel.many and len(rel.members) > 1

    def derived(self, level: Level, alias: str) -> str:
        """The level's collection as a derived table with the names the statement reads."""
        cols, conds = self.columns(level)
        text = self.d.select([self.d.aliased(x, name) for x, name in cols], level.collection)
        if conds:
            text += self.d.where(self.d.all_of(conds))
        if level.relation is not None and level.relation.through is not None:
            names = [name for _, name in cols] + (["ld"] if level.link is not None else [])
            return self.linked(level, text, names, alias)
        return self.d.derived(text, alias)

    def linked(self, level: Level, target: str, names: list[str], alias: str) -> str:
        """A many-to-many level's table: its documents (``target``, a select of ``names``) once
        per join document linking them, in the join documents' storage order, ``c`` the key of
        the document linking to them (``c<j>`` its members, for a composite key)."""
        d = self.d
        rel = level.relation
        assert rel is not None and rel.other is not None
        self.aliases += 1
        j, t = f"j{self.aliases}", f"t{self.aliases}"
        cols, guards = [(d.storage_order(), "p")], []
        if level.link is not None:
            cols.append((d.document(), "ld"))
        if self.composite_many(rel):  # matched to the parent's key members one by one
            mine = [f"c{i}" for i in range(len(rel.members))]
            for name, (value, _, guard) in zip(mine, self.parts(rel.holder, rel.target, rel.members)):
                cols.append((value, name))
                guards += guard
        else:
            mine = ["c"]
            value, guard = self.pointing(rel.holder, rel.target, rel.members)
            cols.append((value, "c"))
            guards += guard
        value, guard = self.pointing(rel.holder, rel.to, rel.others)
        cols.append((value, "t"))
        guards += guard
        links = d.select([d.aliased(x, name) for x, name in cols], rel.holder)
        if guards:
            links += d.where(d.all_of(guards))
        picked = [d.aliased(d.qualified(j if n in ("p", "ld") else t, n), n) for n in names]
        text = d.select_from(
            [*picked, *(d.aliased(d.qualified(j, c), c) for c in mine)],
            [d.derived(links, j), d.derived(target, t)],
        )
        text += d.where(d.compare(d.qualified(t, "k"), "eq", d.qualified(j, "t")))
        return d.derived(text, alias)

    def columns(self, level: Level) -> tuple[list[tuple[str, str]], list[str]]:
        """The (expression, name) pairs of a level's derived table, and its own conditions."""
        d, e = self.d, self.e
        cols = [(d.storage_order(), "p"), (d.document(), "d"), (d.key(), "k")]
        conds = [] if level.where == Const(True) else [e.pred(level.where)]
        own = level.relation
        if own is not None and own.through is None and self.composite_many(own):
            for j, (value, _, guard) in enumerate(self.parts(own.holder, own.target, own.members)):
                cols.append((value, f"c{j}"))
                conds += guard
        elif own is not None and own.many and own.through is None:
            value, guard = self.reference(own)
            cols.append((value, "c"))
            conds += guard
        for i, (_, child) in enumerate(level.children):
            rel = child.relation
            if rel is not None and self.composite_many(rel):
                codec = self.specs[rel.target].composite
                assert codec is not None
                for j, (value, _, _) in enumerate(self.parts(rel.target, rel.target, codec.members)):
                    cols.append((value, f"q{i}_{j}"))
            elif rel is not None and not rel.many:
                value, guard = self.reference(rel)
                cols.append((value, f"r{i}"))
                if guard:
                    cols.append((d.all_of(guard), f"g{i}"))
        for i, key in enumerate(level.order):
            assert key.field is not None
            cols.append((e.value(key.field, "string" if key.field.family == "string" else "number"), f"o{i}"))
        return cols, conds

    def window(self, child: Level, alias: str, parent: str, index: int) -> str:
        """A to-many include's window as the derived table ``alias``: the rows matching the parent,
        in order, ``skip``/``take`` applied; the items are then built for those rows alone."""
        d = self.d
        pick = f"w{self.aliases}"
        own = [name for _, name in self.columns(child)[0]] + (["ld"] if child.link is not None else [])
        names = [d.aliased(d.qualified(pick, name), name) for name in own]
        text = d.select_from(names, [self.derived(child, pick)])
        text += d.where(self.match(child, pick, parent, index))
        text += d.order_by(self.terms(child, pick)) + self.e.window(child.skip, child.take)
        return d.derived(text, alias)

    def terms(self, level: Level, alias: str) -> list[str]:
        d = self.d
        out = []
        for i, key in enumerate(level.order):
            empty_first = (not key.desc and not key.empty_greatest) or (key.desc and key.empty_greatest)
            out.append(d.order_term(d.qualified(alias, f"o{i}"), key.desc, empty_first))
        return [*out, d.qualified(alias, "p")]

    def item(self, level: Level, alias: str) -> str:
        """The JSON text of one row of ``alias``: its document with each include as a member."""
        d = self.d
        doc = d.qualified(alias, "d")
        members = [(name, self.include(child, alias, i)) for i, (name, child) in enumerate(level.children)]
        if level.link is not None:
            members.insert(0, (level.link, d.json_document(d.qualified(alias, "ld"))))
        if not members:
            return d.json_document(doc)
        return d.json_members(doc, members)

    def match(self, child: Level, alias: str, parent: str, index: int) -> str:
        """The condition tying a row of ``alias`` (the child's table) to its parent's row."""
        d = self.d
        rel = child.relation
        assert rel is not None
        if self.composite_many(rel):
            return d.all_of(
                [
                    d.compare(d.qualified(alias, f"c{j}"), "eq", d.qualified(parent, f"q{index}_{j}"))
                    for j in range(len(rel.members))
                ]
            )
        if rel.many:
            return d.compare(d.qualified(alias, "c"), "eq", d.qualified(parent, "k"))
        match = d.compare(d.qualified(alias, "k"), "eq", d.qualified(parent, f"r{index}"))
        if self.reference(rel)[1]:
            match = d.all_of([match, d.qualified(parent, f"g{index}")])
        return match

    def include(self, child: Level, parent: str, index: int) -> str:
        d = self.d
        self.aliases += 1
        alias = f"l{self.aliases}"
        rel = child.relation
        assert rel is not None
        windowed = rel.many and not child.count and (child.take is not None or child.skip)
        if windowed:
            source, match = self.window(child, alias, parent, index), ""
        else:
            source, match = self.derived(child, alias), d.where(self.match(child, alias, parent, index))
        if child.count:
            return d.scalar(d.select_from([d.count_rows()], [source]) + match)
        if not rel.many:
            inner = d.select_from([self.item(child, alias)], [source]) + match
            return d.json_document(d.scalar(inner))
        rows = d.select_from([d.aliased(self.item(child, alias), "x")], [source]) + match
        if not (windowed and d.keeps_window_order):
            rows += d.order_by(self.terms(child, alias))
        return d.json_array(rows)


def select_load(dialect: Dialect, root: Level, specs: Mapping[str, CollectionSpec]) -> Statement:
    """The one statement of a graph load: one row per root document, its item as JSON text."""
    w = _Writer(dialect, specs)
    d = dialect
    source = w.derived(root, "l0")
    text = d.select_from([w.item(root, "l0")], [source])
    text += d.order_by(w.terms(root, "l0")) + w.e.window(root.skip, root.take)
    return w.e.statement(text)
