"""Links of a many-to-many relation: ``store["students"].relation("courses")``.

A many-to-many relation links documents of two collections through a join collection, one join
document per link holding both keys (and members of its own, such as a grade). The handle writes
and removes those join documents with the checks a notebook user expects:

- ``link(key, other, **members)`` writes one join document, in one transaction (a savepoint of an
  open ``store.transaction()``, so it commits or rolls back with the caller's writes). Both ends
  are read locked first: a missing one is JD2190 and nothing is written. Linking a linked pair
  again is idempotent (it writes nothing and returns the join document's key) unless ``members``
  disagree with the stored ones (JD2192).
- ``unlink(key, other)`` deletes the pair's join documents; how many there were.
- ``of(key)`` lists the join documents of one end, in link order.

An end with a composite key has one join member per key member (``"from": ["/origin",
"/time_hour"]``); its key is passed as everywhere else, a tuple or a dict naming the members
(JD2200, JD2201 before anything is read or written), and each member goes into its join member.

>>> import jarenlab as jl
>>> S = {"type": "string"}
>>> model = {"$model": "0.1", "collections": {
...     "students": {"schema": {"type": "object", "required": ["name"], "properties": {"name": S}}, "key": "/name",
...                  "relations": {"courses": {"to": "courses", "on_delete": "cascade",
...                      "through": {"collection": "enrollments", "from": "/student", "to": "/course"}}}},
...     "courses": {"schema": {"type": "object", "required": ["code"], "properties": {"code": S}}, "key": "/code"},
...     "enrollments": {"schema": {"type": "object", "properties": {"student": S, "course": S, "grade": S}},
...                     "key": None, "identity": "integer"}}}
>>> with jl.open(model=model) as store:
...     _ = store["students"].insert({"name": "ada"}); _ = store["courses"].insert({"code": "math"})
...     courses = store["students"].relation("courses")
...     first = courses.link("ada", "math", grade="A")
...     print(first == courses.link("ada", "math"), courses.of("ada"))
...     print(courses.unlink("ada", "math"), courses.of("ada"))
True [{'student': 'ada', 'course': 'math', 'grade': 'A'}]
1 []
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.errors import StoreError
from jarenlab.query.planner.run import narrowed_rows

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.model.relations import Relation
    from jarenlab.store import Store

_MISSING = object()


class Links:
    """The links of one many-to-many relation, read from its declaring collection (see the module)."""

    def __init__(self, store: Store, collection: str, name: str) -> None:
        rel = store.model.relations.get(collection, {}).get(name)
        if rel is None or rel.through is None or rel.other is None:
            declared = [n for n, r in store.model.relations.get(collection, {}).items() if r.through]
            raise StoreError(
                "JD2193",
                f"{collection!r} declares no many-to-many relation {name!r} "
                f"(its many-to-many relations: {', '.join(declared) or 'none'})",
                collection=collection,
            )
        self.store = store
        self.relation: Relation = rel
        #: The join members holding the two ends' keys (one per member of a composite key), this
        #: side's first.
        self.members = (*rel.members, *rel.others)

    def _key(self, collection: str, key: Any) -> Any:
        """A key of ``collection`` as its users pass it, checked: a composite key's tuple (from a
        tuple or a dict; JD2200, JD2201), any other key as given."""
        coll = self.store[collection]
        return coll.shown(coll.stored_key(key))

    def _pair(self, key: Any, other: Any = _MISSING) -> dict[str, Any]:
        """The join members ``key`` (and ``other``) fill: ``{member: value}``."""
        rel = self.relation
        out = self._fill(rel.members, self._key(rel.collection, key))
        if other is not _MISSING:
            out.update(self._fill(rel.others, self._key(rel.to, other)))
        return out

    @staticmethod
    def _fill(members: tuple[str, ...], key: Any) -> dict[str, Any]:
        return dict(zip(members, key)) if len(members) > 1 else {members[0]: key}

    def _rows(self, pair: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]]:
        """The join documents (key, document) holding every member of ``pair``, in storage order."""
        externals = {f"k{i}": v for i, v in enumerate(pair.values())}
        conds = [{"$eq": [f"$d.{m}", f"$k{i}"]} for i, m in enumerate(pair)]
        document = {"$for": {"d": "$[*]"}, "$where": {"$and": conds}, "$return": "$d"}
        join = self.store[self.relation.holder]
        rows = narrowed_rows(join, document, externals)
        if rows is None:  # nothing narrows (an unusual member name): read the collection
            keys, texts = join.texts()
            rows = list(zip(keys, texts))
        found = [(k, orjson.loads(text)) for k, text in rows]
        return [(k, d) for k, d in found if all(_same(d.get(m, _MISSING), v) for m, v in pair.items())]

    def link(self, key: Any, other: Any, /, **members: Any) -> Any:
        """Link ``key`` (of the declaring collection) to ``other`` (of the related one); return the
        join document's key. A composite key is a tuple or a dict naming its members, as in every
        call (JD2200, JD2201). ``members`` go into a new join document. JD2190 when either end is
        missing, JD2192 when the pair is linked with other ``members`` or ``members`` name the
        link's key members; linking a linked pair again writes nothing."""
        rel, store = self.relation, self.store
        clash = sorted(set(members) & set(self.members))
        if clash:
            raise StoreError(
                "JD2192",
                f"{clash[0]!r} holds a key of the link; pass the two keys as link's arguments",
                collection=rel.holder,
            )
        pair = self._pair(key, other)
        key, other = self._key(rel.collection, key), self._key(rel.to, other)
        # Both handles of one relation lock the two ends in one order (no deadlock between them).
        ends = sorted(
            [(rel.collection, key), (rel.to, other)], key=lambda e: (e[0], type(e[1]).__name__, e[1])
        )
        with store.transaction():
            for collection, k in ends:
                if store[collection].locked(k) is None:
                    raise StoreError(
                        "JD2190",
                        f"cannot link {rel.collection} {key!r} to {rel.to} {other!r}: {collection} has no "
                        f"document {k!r}; nothing was written",
                        collection=collection,
                        key=k,
                    )
            found = self._rows(pair)
            if found:
                link_key, doc = found[0]
                differ = sorted(m for m, v in members.items() if doc.get(m, _MISSING) != v)
                if differ:
                    raise StoreError(
                        "JD2192",
                        f"{rel.collection} {key!r} is already linked to {rel.to} {other!r} "
                        f"({rel.holder} {link_key!r}) with another {differ[0]!r}; patch that document",
                        collection=rel.holder,
                        key=link_key,
                    )
                return link_key
            return store[rel.holder].insert({**pair, **members})

    def unlink(self, key: Any, other: Any, /) -> int:
        """Remove the link between ``key`` and ``other``: how many join documents were deleted
        (0 when they were not linked)."""
        join = self.store[self.relation.holder]
        pair = self._pair(key, other)
        with self.store.transaction():
            found = self._rows(pair)
            for link_key, _ in found:
                join.delete(link_key)
        return len(found)

    def of(self, key: Any) -> list[dict[str, Any]]:
        """The join documents linking ``key``, in the order they were written. (A graph load,
        ``load({"include": {name: True}})``, reads the linked documents themselves.)"""
        return [d for _, d in self._rows(self._pair(key))]

    def to_pandas(self) -> pd.DataFrame:
        """Every link: the join collection as a DataFrame (its key members first)."""
        frame = self.store[self.relation.holder].to_pandas()
        first = [m for m in self.members if m in frame.columns]
        return frame[first + [c for c in frame.columns if c not in first]]

    def __repr__(self) -> str:
        rel = self.relation
        return (
            f"<links {rel.collection}.{rel.name}: {rel.collection} <-> {rel.to} through {rel.holder} "
            f"({rel.join_members}), on_delete {rel.on_delete or 'none'}>"
        )

    def _repr_html_(self) -> str:
        rel = self.relation
        count = self.store[rel.holder].count()
        return (
            f"<div><b>many-to-many</b> <code>{html.escape(rel.collection)}.{html.escape(rel.name)}</code>: "
            f"<code>{html.escape(rel.collection)}</code> &harr; <code>{html.escape(rel.to)}</code> through "
            f"<code>{html.escape(rel.holder)}</code> (<code>{html.escape(rel.join_members)}</code>), "
            f"on_delete {html.escape(rel.on_delete or 'none')}: "
            f"{count:,} links</div>"
        )


def _same(stored: Any, value: Any) -> bool:
    """Whether a join document's member holds a key member's value (``True`` is not ``1``)."""
    return bool(stored == value) and (type(stored) is bool) == (type(value) is bool)
