"""On-delete actions of declared relations, enforced inside the write transaction.

When a document of a relation's target is deleted, the documents whose member holds its key are
found (through the planner: an indexed member is one index search) and, by the declared action:

- ``restrict``: the delete is refused with JD2115 naming both keys, and nothing is written;
- ``cascade``: they are deleted too (their own relations apply in turn);
- ``set_null``: their member is set to ``null`` (the result is validated like any patch).

A many-to-many relation's join documents are such references too, from the join collection to
each end: deleting either end deletes its links (``cascade``) or is refused while it has any
(``restrict``, JD2191, naming the join document).

It all happens in the transaction of the delete (a savepoint of it), so a refusal undoes every
write the delete made. Only deletes are checked: inserting a reference to a missing document is
allowed (a graph load reads it as ``None``).

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {
...     "a": {"schema": {"type": "object", "required": ["c"], "properties": {"c": {"type": "string"}}}, "key": "/c"},
...     "f": {"schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"},
...           "c": {"type": "string"}}}, "key": "/id",
...           "relations": {"airline": {"to": "a", "via": "/c", "on_delete": "restrict"}}}}}
>>> with jl.open(model=model) as store:
...     _ = store["a"].insert({"c": "AA"}); _ = store["f"].insert({"id": 1, "c": "AA"})
...     try:
...         store["a"].delete("AA")
...     except jl.JarenlabError as err:
...         print(err.code, err.key, store["a"].get("AA"))
JD2115 AA {'c': 'AA'}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.errors import StoreError
from jarenlab.model.relations import actions, links
from jarenlab.query.lang.engine import compile_query
from jarenlab.query.lang.values import ebv
from jarenlab.query.planner.run import narrowed_rows
from jarenlab.relations.links import Links
from jarenlab.store import Subsystem

if TYPE_CHECKING:
    from jarenlab.collection import Collection
    from jarenlab.model import Model
    from jarenlab.store import Store


def referencing(holder: Collection, members: Sequence[str], values: Sequence[Any]) -> list[Any]:
    """The keys of ``holder``'s documents whose ``members`` hold ``values`` (one member holding a
    key, or one per member of a composite key), in storage order."""
    externals = {f"k{i}": v for i, v in enumerate(values)}
    terms: list[Any] = [{"$eq": [f"$d.{m}", f"$k{i}"]} for i, m in enumerate(members)]
    where = terms[0] if len(terms) == 1 else {"$and": terms}
    rows = narrowed_rows(holder, {"$for": {"d": "$[*]"}, "$where": where, "$return": "$d"}, externals)
    if rows is None:  # nothing narrows (an unusual member name): test every document in the engine
        keys, texts = holder.texts()
        rows = list(zip(keys, texts))
    test = compile_query(where)
    return [k for k, text in rows if ebv(test.run(None, {"d": orjson.loads(text), **externals}))]


def _on_delete(
    store: Store, holder: str, via: str, target: str, action: str, linked: bool
) -> Callable[[Any, Any], None]:
    members = via.split("/")

    def check(key: Any, doc: Any) -> None:
        if doc is not None:
            return
        coll = store[holder]
        # A composite target's stored key is its members' tuple, one per holder member.
        key = store[target].shown(key)
        values = key if len(members) > 1 else (key,)
        # (a composite-keyed holder's keys as its own calls take them: their tuples)
        found = [coll.shown(k) for k in referencing(coll, members, values)]
        if not found:
            return
        member = ", /".join(members)
        if action == "restrict":
            more = f" and {len(found) - 1} more" if len(found) > 1 else ""
            if linked:
                raise StoreError(
                    "JD2191",
                    f"{target} {key!r} is still linked by {holder} {found[0]!r}{more} through /{member} "
                    "(on_delete restrict); unlink it first",
                    collection=target,
                    key=key,
                )
            raise StoreError(
                "JD2115",
                f"{target} {key!r} is still referenced by {holder} {found[0]!r}{more} through /{member} "
                "(on_delete restrict); delete or repoint those first",
                collection=target,
                key=key,
            )
        for k in found:
            if action == "cascade":
                coll.delete(k)
            else:
                coll.patch(k, [{"op": "replace", "path": f"/{m}", "value": None} for m in members])

    return check


class RelationActions:
    """Hooks the declared on-delete actions into the target collections' write checks."""

    def __init__(self, store: Store) -> None:
        self.store = store
        #: (holder, via, target) -> action, for every reference with an on-delete action.
        self.actions: dict[tuple[str, str, str], str] = {}
        self._attach(store.model)
        # A migration rebinds the collections (their write checks start afresh): hook the new model's.
        store.on_model(lambda old, new: self._attach(new))

    def _attach(self, model: Model) -> None:
        store = self.store
        self.actions = actions(model.relations)
        linked = links(model.relations)
        for (holder, via, target), action in self.actions.items():
            check = _on_delete(store, holder, via, target, action, (holder, via, target) in linked)
            store[target].write_checks.append(check)

    def relation(self, collection: str, name: str) -> Links:
        """The handle of ``collection``'s many-to-many relation ``name`` (JD2193 for another)."""
        return Links(self.store, collection, name)


#: Registered by :mod:`jarenlab.assembly`: every store enforces its relations' on-delete actions.
SUBSYSTEM = Subsystem("relations", RelationActions, eager=True)
