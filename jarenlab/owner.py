"""Owner-scoped views: ``store.as_owner(name)`` reads and writes only that owner's records.

A collection that declares an owner pointer (``"owner": "/owner"``) is *owned*. Through a view:
writes set the owner member (or require it to equal the view's owner: JD2094 otherwise), reads
of another owner's record behave as if it were absent, and counts and exports hold only the
view's records. Queries (``where``/``execute``/``explain``/``live``/``to_pandas``, the builder's
chain) run through the planner with the owner test ANDed into every statement it runs (the view's
``scope``; see :func:`jarenlab.query.planner.run.scope_of`), so no other owner's row is ever read, counted
or handed to the engine. Collections without an owner pass through unchanged.

An interval clash with another owner's record (``scope: "collection"``) raises JD2090 that says
nothing about that record: no key, no owner, no chained cause.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"notes": {"key": "/id", "owner": "/owner",
...     "schema": {"type": "object", "required": ["id", "owner"], "properties": {
...         "id": {"type": "string"}, "owner": {"type": "string"}}}}}}
>>> with jl.open(model=model) as store:
...     store.as_owner("ann")["notes"].insert({"id": "n1"})
...     store.as_owner("bob")["notes"].get("n1"), store.as_owner("ann")["notes"].get("n1")
'n1'
(None, {'id': 'n1', 'owner': 'ann'})
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from jarenlab import frames
from jarenlab.collection import Collection
from jarenlab.errors import IntervalConflict, StoreError
from jarenlab.query.build.builder import Queryable
from jarenlab.query.lang.values import identical
from jarenlab.query.planner.run import narrowed_rows
from jarenlab.store import Subsystem

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from jarenlab.backends.base import StorageOrder
    from jarenlab.store import Store

T = TypeVar("T")


class OwnerView:
    """The store as one owner sees it. Get one with ``store.as_owner(name)``."""

    def __init__(self, store: Store, owner: str | int) -> None:
        if isinstance(owner, bool) or not isinstance(owner, str | int) or owner == "":
            raise StoreError("JD2010", f"an owner is a non-empty string or an integer (got {owner!r})")
        self.store = store
        self.owner = owner

    def collection(self, name: str) -> OwnedCollection | Collection:
        """The collection as this owner sees it (unowned collections are returned as they are)."""
        coll = self.store.collection(name)
        return OwnedCollection(coll, self.owner) if coll.spec.owner else coll

    __getitem__ = collection

    def __contains__(self, name: object) -> bool:
        return name in self.store

    def __repr__(self) -> str:
        return f"<jarenlab.OwnerView {self.owner!r} of {self.store.path!r}>"


class OwnedCollection(Queryable):
    """An owned collection seen through an :class:`OwnerView`: writes, reads, exports and queries
    of this owner's records only."""

    def __init__(self, collection: Collection, owner: str | int) -> None:
        self.collection = collection
        self.owner = owner
        self.name = collection.name
        self.spec = collection.spec
        assert collection.spec.owner is not None
        self._member = collection.spec.owner[1:]
        #: The owner test every query statement carries (a predicate document over ``it``).
        self.scope: dict[str, Any] = {"$eq": [f"$it[{json.dumps(self._member)}]", owner]}
        key = collection.spec.key
        #: The key's members (none: keys by identity); a composite key is the tuple of its members.
        self._key_members = (key[1:],) if isinstance(key, str) else tuple(p[1:] for p in key or ())

    # -- helpers ---------------------------------------------------------------------------------
    def _mine(self, doc: dict[str, Any] | None) -> bool:
        if doc is None or self._member not in doc:
            return False
        value = doc[self._member]
        return identical(value, self.owner)

    def _own(self, doc: Any) -> Any:
        """A copy of ``doc`` with the owner set; JD2094 if it names another owner."""
        if not isinstance(doc, dict):
            return doc  # the collection refuses it with its own error
        if self._member not in doc:
            return {**doc, self._member: self.owner}
        if not self._mine(doc):
            raise StoreError(
                "JD2094",
                f"this view writes only records of owner {self.owner!r} (the document names {doc[self._member]!r})",
                collection=self.name,
            )
        return doc

    def _redacting(self, call: Callable[[], T], key: Any = None) -> T:
        """Run a write; a clash with another owner's record becomes an error that reveals nothing of it."""
        try:
            return call()
        except IntervalConflict as exc:
            other = getattr(exc, "conflict_owner", None)
            if identical(other, self.owner):
                raise
            seen = exc
        redacted = IntervalConflict(
            "JD2090",
            "the interval overlaps a record this view cannot read; nothing was written",
            collection=self.name,
            key=key,
        )
        redacted.conflict = None
        redacted.conflict_owner = None
        del seen  # raised outside the handler, so the original is neither cause nor context
        raise redacted

    def _doc_key(self, doc: Any) -> Any:
        if not self._key_members or not isinstance(doc, dict):
            return None
        values = tuple(doc.get(m) for m in self._key_members)
        return values[0] if len(values) == 1 else values

    def _locked(self, key: Any) -> dict[str, Any] | None:
        """Inside a transaction: the record under ``key``, locked until the transaction ends, so no
        other writer can hand it to another owner between this view's check and its write."""
        return self.collection.locked(key)

    # -- writes ----------------------------------------------------------------------------------
    def insert(self, doc: dict[str, Any]) -> Any:
        """Insert one document owned by this view's owner; return its key."""
        doc = self._own(doc)
        return self._redacting(lambda: self.collection.insert(doc), self._doc_key(doc))

    def insert_many(
        self, docs: Iterable[Any] | pd.DataFrame | pa.Table, *, progress: bool | None = None
    ) -> int:
        """Insert many documents owned by this view's owner, in one transaction; return how many."""
        records = [self._own(d) for d in frames.records_from(docs)]
        return self._redacting(lambda: self.collection.insert_many(records, progress=progress))

    def put(self, doc: dict[str, Any], key: Any = None) -> Any:
        """Insert or replace a document of this owner; JD2094 when the key holds another owner's record."""
        doc = self._own(doc)
        target = self._doc_key(doc) if self._key_members else key

        def write() -> Any:
            with self.store.transaction():
                if target is not None:
                    existing = self._locked(target)
                    if existing is None and self._key_members and (key is None or key == target):
                        # Nothing to lock: insert, so a record another writer puts there meanwhile
                        # is not overwritten unseen (its key is then taken: look again).
                        try:
                            return self.collection.insert(doc)
                        except StoreError as err:
                            if err.condition != "duplicate":
                                raise
                        existing = self._locked(target)
                    if existing is not None and not self._mine(existing):
                        raise StoreError(
                            "JD2094", "this view cannot write that record", collection=self.name, key=target
                        )
                return self.collection.put(doc, key)

        return self._redacting(write, target)

    def patch(self, key: Any, ops: list[dict[str, Any]] | dict[str, Any]) -> dict[str, Any]:
        """Patch one of this owner's records (another owner's is JD2006, as if absent)."""

        def write() -> dict[str, Any]:
            with self.store.transaction():
                if not self._mine(self._locked(key)):
                    raise StoreError("JD2006", "no document to patch", collection=self.name, key=key)
                new = self.collection.patch(key, ops)
                if not self._mine(new):
                    raise StoreError(
                        "JD2094",
                        "a patch cannot hand the record to another owner",
                        collection=self.name,
                        key=key,
                    )
                return new

        return self._redacting(write, key)

    def delete(self, key: Any) -> bool:
        """Delete one of this owner's records; False when none (another owner's counts as none)."""
        with self.store.transaction():
            if not self._mine(self._locked(key)):
                return False
            return self.collection.delete(key)

    # -- reads -----------------------------------------------------------------------------------
    def get(self, key: Any) -> dict[str, Any] | None:
        """This owner's record under ``key``, or None (also when another owner holds the key)."""
        doc = self.collection.get(key)
        return doc if self._mine(doc) else None

    def count(self) -> int:  # type: ignore[override]
        """How many records this owner has: one statement narrowed by the owner test, which an
        index on the owner member serves (other owners' rows are not read, so their number does
        not show in the time it takes)."""
        return Queryable.count(self)

    def __len__(self) -> int:
        return self.count()

    def to_list(self) -> list[dict[str, Any]]:  # type: ignore[override]
        """This owner's records as a list of dicts."""
        return [orjson.loads(text) for text in self.texts()[1]]

    def to_pandas(self, *, flatten: bool = False) -> pd.DataFrame:
        """This owner's records as a DataFrame indexed by key."""
        frames.check_flags("to_pandas", flatten=flatten)
        keys, texts = self.texts()
        if flatten:
            frame = frames.texts_to_frame(texts, keys, self.collection.spec.schema, flatten=True)
        else:
            frame = frames.pages_to_frame([list(zip(keys, texts))], self.collection.spec.schema)
        return self.collection.keyed_frame(frame)

    def to_arrow(self, *, flatten: bool = False) -> pa.Table:
        """This owner's records as a pyarrow Table."""
        frames.check_flags("to_arrow", flatten=flatten)
        return frames.texts_to_arrow(self.texts()[1], self.collection.spec.schema, flatten=flatten)

    def texts(self) -> tuple[list[Any], list[str]]:
        """This owner's keys and document texts, in storage order, read by the owner test as the
        planner writes it (an index on the owner member serves it)."""
        rows = narrowed_rows(self, _EVERY, {})
        if rows is None:  # (the database could not decide it: the collection's own owner scan)
            return self.collection.owned_texts(self.owner)
        return [key for key, _ in rows], [text for _, text in rows]

    def keys(self) -> list[Any]:
        """This owner's keys, in storage order (a composite key as its tuple)."""
        return [self.collection.shown(k) for k in self.stored_keys()]

    def stored_keys(self) -> list[Any]:
        """This owner's keys as statements and the change log hold them, in storage order."""
        return self.texts()[0]

    def positions(self, keys: list[Any] | None = None) -> dict[Any, int]:
        """Storage positions of this owner's records (see
        :meth:`jarenlab.collection.Collection.positions`); another owner's keys are not answered."""
        if keys is None:
            return self.collection.positions(self.stored_keys())
        found = self.collection.positions(keys)
        shown = self.collection.shown
        return {key: pos for key, pos in found.items() if self._mine(self.collection.get(shown(key)))}

    def owns(self, doc: dict[str, Any] | None) -> bool:
        """Whether ``doc`` is this owner's record (a live query shows no other: another owner's
        record reads as absent)."""
        return self._mine(doc)

    @property
    def storage_order(self) -> StorageOrder:
        """The collection's storage order (see :attr:`jarenlab.collection.Collection.storage_order`)."""
        return self.collection.storage_order

    # -- queries ---------------------------------------------------------------------------------
    # The collection's own query methods, run with this view as the source: it reads like its
    # collection (name, spec, store, texts, keys, storage_order) plus its scope, which the planner
    # ANDs into every statement (jarenlab.query.planner.run.scope_of) and a live query applies to changes.
    execute = Collection.execute
    _run_query = Collection._run_query
    explain = Collection.explain
    live = Collection.live
    _page = Collection._page
    _matching = Collection._matching
    _update_where = Collection._update_where
    _delete_where = Collection._delete_where

    @property
    def store(self) -> Store:
        """The store the collection belongs to."""
        return self.collection.store

    def __repr__(self) -> str:
        return f"<jarenlab.OwnedCollection {self.name!r} as {self.owner!r}>"


#: Every record of a view (its scope narrows it to the owner's).
_EVERY = {"$for": {"it": "$[*]"}, "$return": "$it"}

#: ``store.as_owner(name)`` calls the function this makes.
SUBSYSTEM = Subsystem("owner", create=lambda store: functools.partial(OwnerView, store))
