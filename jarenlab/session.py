"""The unit of work: read documents as tracked snapshots, stage replacements, save them in one transaction.

``with store.session() as s:`` opens one. Reads through it are **snapshots**: plain JSON values
(``dict``, ``list``, ...) that refuse to change (JD2042), one object per tracked document. Mutation is
replacement: ``s.put(collection, {**doc, "n": 2})`` stages a new version of a tracked document,
``s.add(collection, doc)`` a new one (validated at once), ``s.remove(collection, key)`` a delete, and
``s.discard(collection, key)`` forgets a document and whatever was staged for it. Nothing reaches the
database until :meth:`Session.save`, which diffs each snapshot against its replacement and writes the
minimum, all in one transaction:

- one statement per changed document: its changed members alone where the backend can (an RFC 7386
  merge patch computed with :func:`jarenlab.patch.merge_diff`), else the whole document;
- new documents of a collection in batches (one statement per batch of rows of the same shape);
- inserts parent-first and deletes child-first over the model's declared relations (relations
  that form a cycle among the collections a save inserts into, or deletes from, are JD2041);
- for a collection that declares a ``version`` member, every update and delete is checked against
  the version its snapshot holds and writes it one higher: a document changed or deleted since it
  was read is JD2040 naming the collection and key.

A save that fails for any reason rolls back whole and leaves the session exactly as it was, so it
can be retried (after ``s.discard`` and a fresh read of a document that lost a race, say). A save
that commits makes every written document a clean snapshot of what was stored, and returns a
:class:`SaveReport`.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"notes": {"schema": {"type": "object",
...     "required": ["id", "rev"], "properties": {"id": {"type": "string"}, "n": {"type": "integer"},
...     "rev": {"type": "integer"}}}, "key": "/id", "version": "/rev"}}}
>>> with jl.open(model=model) as store:
...     with store.session() as s:
...         s.add("notes", {"id": "a", "n": 1})
...         print(s.save().counts)
...         note = s.get("notes", "a")
...         _ = s.put("notes", {**note, "n": 2})
...         print(s.save().counts)
...     store["notes"].get("a")
'a'
{'inserted': 1, 'updated': 0, 'deleted': 0}
{'inserted': 0, 'updated': 1, 'deleted': 0}
{'id': 'a', 'n': 2, 'rev': 2}
"""

from __future__ import annotations

import html
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from jarenlab.errors import StoreError
from jarenlab.patch import diff
from jarenlab.reprs import table

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.collection import Collection
    from jarenlab.model import Model
    from jarenlab.store import Store

__all__ = ["FrozenDict", "FrozenList", "SaveReport", "Session", "freeze", "thaw"]

#: New documents of one collection written per statement (a batch of rows of one shape).
BATCH = 5_000


def _frozen(*_: Any, **__: Any) -> NoReturn:
    raise StoreError(
        "JD2042",
        "a document read through a session is an immutable snapshot: build a replacement "
        "({**doc, 'member': value}) and s.put(collection, it)",
    )


class FrozenDict(dict[str, Any]):
    """A JSON object read through a session: a ``dict`` that refuses every change (JD2042).
    ``{**doc, ...}``, ``dict(doc)`` and ``copy.deepcopy(doc)`` give mutable copies."""

    __slots__ = ("__weakref__",)
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _frozen

    def __deepcopy__(self, memo: Any) -> dict[str, Any]:
        return thaw(self)

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A JSON array read through a session: a ``list`` that refuses every change (JD2042)."""

    __slots__ = ("__weakref__",)
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = _frozen
    sort = reverse = __iadd__ = __imul__ = _frozen

    def __deepcopy__(self, memo: Any) -> list[Any]:
        return thaw(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


def freeze(value: Any) -> Any:
    """A JSON value as a snapshot: objects and arrays (at every depth) refuse changes.

    >>> doc = freeze({"a": [1, {"b": 2}]})
    >>> doc, isinstance(doc, dict), type(doc["a"][1]).__name__
    ({'a': [1, {'b': 2}]}, True, 'FrozenDict')
    """
    kind = type(value)
    if kind is dict or kind is FrozenDict:
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if kind is list or kind is FrozenList:
        return FrozenList([freeze(v) for v in value])
    return value


def thaw(value: Any) -> Any:
    """A snapshot as plain, mutable JSON values (a deep copy)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw(v) for v in value]
    return value


@dataclass
class _Entry:
    """One tracked document: what the database held when read (``snapshot``; None for a new one)
    and what the session will write (``current``; None for a delete), with its prepared forms."""

    state: str  # "clean", "modified", "added", "removed"
    snapshot: Any
    current: Any
    plain: dict[str, Any] | None = None  # current as prepared (JSON-safe, validated)
    text: str | None = None  # current's JSON text


@dataclass(frozen=True)
class Statement:
    """One statement a save ran: its name in the collection catalogue, the collection, and the
    rows it wrote."""

    statement: str
    collection: str
    rows: int


@dataclass(frozen=True)
class SaveReport:
    """What :meth:`Session.save` wrote: ``inserted``, ``updated``, ``deleted`` (``(collection,
    key)`` pairs, in the order written), every ``statement`` with its row count, and the updates
    and deletes ``checked`` against a version vs ``unversioned`` (their collection declares none).
    ``elapsed_ms`` is the save's time. ``to_pandas()`` has one row per written document."""

    inserted: tuple[tuple[str, Any], ...] = ()
    updated: tuple[tuple[str, Any], ...] = ()
    deleted: tuple[tuple[str, Any], ...] = ()
    statements: tuple[Statement, ...] = ()
    checked: tuple[tuple[str, Any], ...] = ()
    unversioned: tuple[tuple[str, Any], ...] = ()
    elapsed_ms: float = 0.0

    @property
    def counts(self) -> dict[str, int]:
        """How many documents were inserted, updated and deleted."""
        return {"inserted": len(self.inserted), "updated": len(self.updated), "deleted": len(self.deleted)}

    def to_pandas(self) -> pd.DataFrame:
        """One row per written document: collection, key, action, checked (against a version)."""
        import pandas as pd

        checked = set(self.checked)
        rows = [
            {"collection": c, "key": k, "action": action, "checked": (c, k) in checked}
            for action, pairs in (
                ("insert", self.inserted),
                ("update", self.updated),
                ("delete", self.deleted),
            )
            for c, k in pairs
        ]
        return pd.DataFrame(rows, columns=["collection", "key", "action", "checked"])

    def __repr__(self) -> str:
        c = self.counts
        return (
            f"<SaveReport inserted={c['inserted']} updated={c['updated']} deleted={c['deleted']} "
            f"statements={len(self.statements)} checked={len(self.checked)} "
            f"unversioned={len(self.unversioned)}>"
        )

    def _repr_html_(self) -> str:
        c = self.counts
        head = (
            f"<b>saved</b>: {c['inserted']:,} inserted, {c['updated']:,} updated, {c['deleted']:,} deleted "
            f"in {len(self.statements):,} statements; {len(self.checked):,} checked against a version, "
            f"{len(self.unversioned):,} unversioned"
        )
        per: dict[tuple[str, str], list[int]] = {}
        for s in self.statements:
            n = per.setdefault((s.collection, s.statement), [0, 0])
            n[0] += 1
            n[1] += s.rows
        rows = "".join(
            f"<tr><td>{html.escape(c)}</td><td><code>{html.escape(s)}</code></td><td>{n:,}</td><td>{r:,}</td></tr>"
            for (c, s), (n, r) in per.items()
        )
        return head + table(("collection", "statement", "statements", "rows"), rows)


class Session:
    """A unit of work over a store (see the module docstring). Make one with ``store.session()``;
    it is meant for one thread."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._entries: dict[tuple[str, Any], _Entry] = {}
        #: New documents of collections whose keys the store allocates: (collection, prepared, text).
        self._new: list[tuple[str, dict[str, Any], str]] = []
        self._closed = False

    # -- the context -----------------------------------------------------------------------------
    def __enter__(self) -> Session:
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        pending = self.pending
        self.close()
        if kind is None and pending:
            warnings.warn(
                f"the session closed with {pending} unsaved changes (call s.save() to write them)",
                UserWarning,
                stacklevel=2,
            )

    def close(self) -> None:
        """Forget every snapshot and staged change; later calls are JD2010."""
        self._entries.clear()
        self._new.clear()
        self._closed = True

    def _collection(self, name: str) -> Collection:
        if self._closed:
            raise StoreError("JD2010", "the session is closed; open another with store.session()")
        return self._store.collection(name)

    # -- reads -----------------------------------------------------------------------------------
    def get(self, collection: str, key: Any, *, track: bool = True) -> Any:
        """The document under ``key`` as a snapshot (None: none stored). A staged replacement,
        addition or removal is what the session returns for its key. Reading a clean tracked
        document again refreshes its snapshot. ``track=False`` reads without retaining anything."""
        coll = self._collection(collection)
        _switch(track)
        asked, key = key, coll.stored_key(key)
        entry = self._entries.get((collection, key))
        if entry is not None and entry.state != "clean":
            return entry.current
        doc = coll.get(asked)
        if not track:
            return None if doc is None else freeze(doc)
        return self._track(collection, key, doc)

    def get_many(self, collection: str, keys: Iterable[Any], *, track: bool = True) -> list[Any]:
        """:meth:`get` of each key, in order."""
        return [self.get(collection, k, track=track) for k in keys]

    def all(self, collection: str, *, track: bool = True) -> list[Any]:
        """Every document of ``collection`` as snapshots, in storage order (what the session
        stages for a key replaces what is stored; staged removals are left out, staged additions
        not yet saved are not included)."""
        coll = self._collection(collection)
        _switch(track)
        keys, texts = coll.texts()
        out = []
        for key, text in zip(keys, texts):
            entry = self._entries.get((collection, key))
            if entry is not None and entry.state != "clean":
                if entry.current is not None:
                    out.append(entry.current)
                continue
            doc = orjson.loads(text)
            out.append(self._track(collection, key, doc) if track else freeze(doc))
        return out

    def _track(self, collection: str, key: Any, doc: dict[str, Any] | None) -> Any:
        if doc is None:
            self._entries.pop((collection, key), None)
            return None
        frozen = freeze(doc)
        self._entries[(collection, key)] = _Entry("clean", frozen, frozen)
        return frozen

    # -- staged writes ---------------------------------------------------------------------------
    def put(self, collection: str, doc: dict[str, Any], key: Any = None) -> Any:
        """Stage ``doc`` as the replacement of a tracked document (read through this session, or
        added to it), validated now; returns its key. The key comes from the document (a
        collection with a key pointer) or ``key`` (one whose keys the store allocates). JD2006
        when the session does not track the key. A versioned collection's replacement carries the
        version the save writes: one past the snapshot's."""
        coll = self._collection(collection)
        own, plain, text = coll.prepare(doc)
        key = coll.key_of(own, key)
        if key is None:
            raise StoreError(
                "JD2002",
                f"{collection!r} has keys the store allocates: put(collection, doc, key) names the one replaced",
                collection=collection,
            )
        entry = self._tracked(
            collection,
            key,
            "put replaces a document this session tracks: read it with s.get first, or s.add a new one",
        )
        if entry.state == "added":
            entry.plain, entry.text, entry.current = plain, text, freeze(plain)
        else:
            self._stage(coll, entry, plain, text)
        return coll.shown(key)

    def add(self, collection: str, doc: dict[str, Any]) -> Any:
        """Stage a new document, validated now (the write's coded errors: JD2003, JD2002, ...);
        returns its key, or None for a collection whose keys the store allocates (the save's
        report names them). A versioned collection's new document starts at version 1 when it
        has none. Adding a key the session has staged for removal replaces the stored document;
        adding one it tracks otherwise is JD2001 (a key stored but not tracked is JD2001 at save)."""
        coll = self._collection(collection)
        key, plain, text = coll.prepare(doc)
        if coll.spec.key is None:
            self._new.append((collection, plain, text))
            return None
        entry = self._entries.get((collection, key))
        if entry is None:
            self._entries[(collection, key)] = _Entry("added", None, freeze(plain), plain, text)
        elif entry.state == "removed":
            self._stage(coll, entry, plain, text)
        else:
            raise StoreError(
                "JD2001",
                "the session already tracks this key: put a replacement instead",
                collection=collection,
                key=coll.shown(key),
            )
        return coll.shown(key)

    def remove(self, collection: str, key: Any) -> None:
        """Stage the delete of a tracked document (one only added is simply dropped); JD2006 when
        the session does not track the key."""
        key = self._collection(collection).stored_key(key)
        entry = self._tracked(
            collection, key, "remove deletes a document this session tracks: read it with s.get first"
        )
        if entry.state == "added":
            del self._entries[(collection, key)]
        else:
            entry.state, entry.current, entry.plain, entry.text = "removed", None, None, None

    def discard(self, collection: str, key: Any) -> bool:
        """Stop tracking a document and drop what was staged for it; whether it was tracked."""
        key = self._collection(collection).stored_key(key)
        return self._entries.pop((collection, key), None) is not None

    def _tracked(self, collection: str, key: Any, why: str) -> _Entry:
        """The entry of a tracked key; JD2006 saying ``why`` for one the session does not track."""
        entry = self._entries.get((collection, key))
        if entry is None:
            raise StoreError("JD2006", why, collection=collection, key=key)
        return entry

    def _stage(self, coll: Collection, entry: _Entry, plain: dict[str, Any], text: str) -> None:
        """Stage a prepared document as the replacement of ``entry``'s snapshot (clean again when it
        says what the snapshot says; a versioned one carries the snapshot's version + 1)."""
        member = coll.spec.version[1:] if coll.spec.version else None
        snapshot = entry.snapshot
        if member is not None and type(snapshot.get(member)) is int:
            plain = {**plain, member: snapshot[member]}
            if _same(plain, snapshot):
                entry.state, entry.current, entry.plain, entry.text = "clean", snapshot, None, None
                return
            _, plain, text = coll.prepare({**plain, member: snapshot[member] + 1})
        elif _same(plain, snapshot):
            entry.state, entry.current, entry.plain, entry.text = "clean", snapshot, None, None
            return
        entry.state, entry.current, entry.plain, entry.text = "modified", freeze(plain), plain, text

    # -- what is staged --------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """How many documents the next save writes."""
        return len(self._new) + sum(1 for e in self._entries.values() if e.state != "clean")

    @property
    def tracked(self) -> int:
        """How many documents the session tracks (new ones of allocated keys not counted)."""
        return len(self._entries)

    def changes(self) -> list[tuple[str, str, Any]]:
        """What the next save writes: ``(action, collection, key)`` (key None: allocated at save)."""
        action = {"added": "insert", "modified": "update", "removed": "delete"}
        out = [(action[e.state], c, k) for (c, k), e in self._entries.items() if e.state != "clean"]
        return out + [("insert", c, None) for c, _, _ in self._new]

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self.tracked} tracked, {self.pending} pending"
        return f"<jarenlab.Session {state}>"

    # -- save ------------------------------------------------------------------------------------
    def save(self) -> SaveReport:
        """Write every staged change in one transaction (see the module docstring); returns a
        :class:`SaveReport`. On any error nothing is written and the session is unchanged.
        A save is a transaction of its own: inside ``store.transaction()`` it is JD2010."""
        if self._closed:
            raise StoreError("JD2010", "the session is closed; open another with store.session()")
        store = self._store
        if store.db.in_transaction:
            raise StoreError(
                "JD2010",
                "a session's save is a transaction of its own: call it outside store.transaction()",
            )
        started = time.perf_counter()
        adds: dict[str, list[tuple[Any, _Entry]]] = {}
        updates: list[tuple[str, Any, _Entry]] = []
        removes: dict[str, list[tuple[Any, _Entry]]] = {}
        for (c, k), e in self._entries.items():
            if e.state == "added":
                adds.setdefault(c, []).append((k, e))
            elif e.state == "modified":
                updates.append((c, k, e))
            elif e.state == "removed":
                removes.setdefault(c, []).append((k, e))
        allocated: dict[str, list[tuple[dict[str, Any], str]]] = {}
        for c, plain, text in self._new:
            allocated.setdefault(c, []).append((plain, text))
        log = _Log()
        new_keys: list[tuple[str, Any, dict[str, Any]]] = []
        stored: dict[tuple[str, Any], dict[str, Any]] = {}
        with store.db.transaction():
            for c in parent_first(store.model, {*adds, *allocated}):
                coll = store[c]
                rows = adds.get(c, [])
                for start in range(0, len(rows), BATCH):
                    chunk = rows[start : start + BATCH]
                    n = coll.insert_many([e.plain for _, e in chunk], progress=False)
                    log.ran("insert_keyed", c, n)
                    log.inserted += [(c, k) for k, _ in chunk]
                for plain, _ in allocated.get(c, []):
                    key = coll.insert(plain)
                    log.ran("insert", c, 1)
                    log.inserted.append((c, key))
                    new_keys.append((c, key, plain))
            colls = {c: store[c] for c in {c for c, _, _ in updates}}
            for c, k, e in updates:
                coll = colls[c]
                version = _version(coll, e.snapshot)
                assert e.plain is not None and e.text is not None
                name, doc = coll.save_update(k, thaw(e.snapshot), e.plain, e.text, version)
                log.ran(name, c, 0 if doc is None else 1)
                if doc is None:
                    _lost(c, k, version)
                stored[(c, k)] = doc
                log.updated.append((c, k))
                log.concurrency(c, k, version)
            for c in reversed(parent_first(store.model, set(removes))):
                coll = store[c]
                for k, e in removes[c]:
                    version = _version(coll, e.snapshot)
                    gone = coll.save_delete(k, version)
                    log.ran("save_delete", c, int(gone))
                    if not gone and version is not None:
                        _lost(c, k, version)
                    log.deleted.append((c, k))
                    log.concurrency(c, k, version)
        # Committed: every written document is a clean snapshot of what was stored.
        for c, k in log.inserted:
            entry = self._entries.get((c, k))
            if entry is not None:
                entry.state, entry.snapshot, entry.plain, entry.text = "clean", entry.current, None, None
        for c, k, plain in new_keys:
            frozen = freeze(plain)
            self._entries[(c, k)] = _Entry("clean", frozen, frozen)
        for (c, k), doc in stored.items():
            frozen = self._entries[(c, k)].current if doc is self._entries[(c, k)].plain else freeze(doc)
            self._entries[(c, k)] = _Entry("clean", frozen, frozen)
        for c, k in log.deleted:
            del self._entries[(c, k)]
        self._new.clear()
        return log.report((time.perf_counter() - started) * 1000)


@dataclass
class _Log:
    """What a save has written so far (a report once it commits)."""

    inserted: list[tuple[str, Any]] = field(default_factory=list)
    updated: list[tuple[str, Any]] = field(default_factory=list)
    deleted: list[tuple[str, Any]] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)
    checked: list[tuple[str, Any]] = field(default_factory=list)
    unversioned: list[tuple[str, Any]] = field(default_factory=list)

    def ran(self, statement: str, collection: str, rows: int) -> None:
        self.statements.append(Statement(statement, collection, rows))

    def concurrency(self, collection: str, key: Any, version: int | None) -> None:
        (self.unversioned if version is None else self.checked).append((collection, key))

    def report(self, elapsed_ms: float) -> SaveReport:
        return SaveReport(
            tuple(self.inserted),
            tuple(self.updated),
            tuple(self.deleted),
            tuple(self.statements),
            tuple(self.checked),
            tuple(self.unversioned),
            elapsed_ms,
        )


def _version(coll: Collection, snapshot: Any) -> int | None:
    """The version a versioned collection's snapshot holds (None: unversioned, nothing to check)."""
    member = coll.spec.version
    if member is None:
        return None
    value = snapshot.get(member[1:])
    return value if type(value) is int else None


def _lost(collection: str, key: Any, version: int | None) -> NoReturn:
    if version is None:
        raise StoreError(
            "JD2006",
            "the document was deleted since this session read it; nothing was saved",
            collection=collection,
            key=key,
        )
    raise StoreError(
        "JD2040",
        f"the document changed or was deleted since this session read it at version {version}; nothing "
        "was saved (discard it and read it again, then save)",
        collection=collection,
        key=key,
    )


def _same(plain: dict[str, Any], snapshot: Any) -> bool:
    """Whether a replacement says what the snapshot says (member order aside)."""
    return not diff(thaw(snapshot), plain)


def _switch(track: Any) -> None:
    if type(track) is not bool:
        raise StoreError("JD0006", f"track must be True or False, not {track!r}")


def parent_first(model: Model, names: set[str]) -> list[str]:
    """``names`` ordered so that a collection whose documents are referenced (a relation's target)
    comes before the collections holding the references; JD2041 naming the cycle when the
    relations among ``names`` form one (a collection referencing itself is not ordered: its rows
    are written in the order they were staged).

    >>> from jarenlab.model import load_model
    >>> m = load_model({"$model": "0.1", "collections": {
    ...     "a": {"schema": {"type": "object", "required": ["c"], "properties": {"c": {"type": "string"}}}, "key": "/c"},
    ...     "f": {"schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"},
    ...           "c": {"type": "string"}}}, "key": "/id", "relations": {"airline": {"to": "a", "via": "/c"}}}}})
    >>> parent_first(m, {"f", "a"})
    ['a', 'f']
    """
    children: dict[str, set[str]] = {n: set() for n in names}
    for rels in model.relations.values():
        for rel in rels.values():
            if rel.target in names and rel.holder in names and rel.target != rel.holder:
                children[rel.target].add(rel.holder)
    parents = {n: sum(n in kids for kids in children.values()) for n in names}
    ready = sorted(n for n, count in parents.items() if count == 0)
    order: list[str] = []
    while ready:  # Kahn's order, by name among collections that are ready together
        node = ready.pop(0)
        order.append(node)
        for child in children[node]:
            parents[child] -= 1
            if parents[child] == 0:
                ready.append(child)
        ready.sort()
    if len(order) < len(names):
        raise _cycle(children, sorted(n for n in names if n not in order))
    return order


def _cycle(children: dict[str, set[str]], left: list[str]) -> StoreError:
    """JD2041 naming one cycle among the collections ``left`` (each has a parent among them)."""
    path = [left[0]]
    while True:
        nxt = min(p for p in left if path[-1] in children[p])  # walk from child to parent
        if nxt in path:
            cycle = [*path[path.index(nxt) :], nxt][::-1]
            return StoreError(
                "JD2041",
                f"the relations {' -> '.join(cycle)} form a cycle, so no order writes every parent "
                "before its children; save the collections of the cycle in separate saves",
                collection=cycle[0],
            )
        path.append(nxt)
