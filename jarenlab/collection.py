"""Collection: validated writes, reads by key, whole-collection export, and queries."""

from __future__ import annotations

import contextlib
import html
import uuid
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import jsonschema_rs
import orjson

from jarenlab import frames
from jarenlab.arguments import is_progress
from jarenlab.errors import StoreError, ValidationError
from jarenlab.intervals import Refusal, WriteCheck, WriteLock
from jarenlab.intervals import refusal as interval_refusal
from jarenlab.intervals import write_check as interval_check
from jarenlab.intervals import write_lock as interval_lock
from jarenlab.keys import user_key
from jarenlab.model import CollectionSpec, summarize, validation_errors
from jarenlab.patch import apply_patch, merge_diff, merge_patch
from jarenlab.query.build.builder import Queryable
from jarenlab.query.lang.values import identical
from jarenlab.values import days, to_json

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from jarenlab.backends.base import StorageOrder
    from jarenlab.live.live import LiveQuery
    from jarenlab.store import Store
    from jarenlab.typed import Typed

_BATCH = 5_000
T = TypeVar("T")
_PROGRESS_FROM = 50_000


class Collection(Queryable):
    """A declared collection. Get one with ``store["name"]``."""

    def __init__(self, store: Store, spec: CollectionSpec) -> None:
        self.store = store
        self._db = store.db
        self._statement_atomic = store.backend.statement_atomic
        self.bind(spec)

    def bind(self, spec: CollectionSpec) -> None:
        """Take a new declaration of this collection (after a migration, the store rebinds every
        collection it keeps, so handles already taken validate against the new schema)."""
        self.spec = spec
        self.name = spec.name
        #: Allocating integer keys (max + 1) is serialised per collection on a shared server.
        self._key_lock = f"keys/{spec.name}"
        #: Formats are enforced (``date``, ``date-time``, ``email``, ...: what jsonschema-rs knows).
        self._validator = jsonschema_rs.validator_for(spec.schema, validate_formats=True)
        #: Members declared ``"format": "date"``: a midnight timestamp written there is its date.
        self._days = frames.date_members(spec.schema)
        self._key_member = spec.key[1:] if isinstance(spec.key, str) else None
        #: A composite key's codec: documents hold its members, statements bind its stored text.
        self._composite = spec.composite
        #: The version member a session checks and bumps (a new document without it starts at 1).
        self._version_member = spec.version[1:] if spec.version else None
        self._version_path = (
            None if self._version_member is None else self.store.backend.json_path((self._version_member,))
        )
        self._key_type = spec.key_type
        #: An integer-typed owner member holds an int exactly (JSON Schema also takes 1.0): owner
        #: views compare owners exactly, in Python and in every query's SQL alike.
        self._integer_owner: str | None = None
        if spec.owner is not None:
            member = spec.owner[1:]
            if (spec.schema.get("properties") or {}).get(member, {}).get("type") == "integer":
                self._integer_owner = member
        #: Checks run inside the write transaction for every written or deleted row.
        self.write_checks: list[WriteCheck] = []
        #: Names what the database refused by a declaration's own constraint (an error with condition
        #: "exclusion"), given the written (key, doc) rows once the write is undone.
        self.refusal: Refusal | None = None
        #: Takes turns with other writers of the same interval groups, before rows are written
        #: (only where the database enforces the declarations itself).
        self._write_lock: WriteLock | None = None
        if spec.intervals:
            self.write_checks.append(interval_check(spec, self._db, self.owner_of))
            self.refusal = interval_refusal(spec, self._db, self.owner_of)
            self._write_lock = interval_lock(spec, self._db)

    # -- preparing documents ---------------------------------------------------------------------
    def _prepare(self, doc: Any, position: int | None = None) -> tuple[Any, dict[str, Any], str]:
        """(key or None, JSON-safe document, JSON text); raises JD2003/JD2008/JD2002."""
        if self._days and type(doc) is dict:
            doc = days(doc, self._days)
        version = self._version_member
        if version is not None and isinstance(doc, dict) and version not in doc:
            doc = {**doc, version: 1}
        try:
            doc = to_json(doc, absent=True)
        except RecursionError:
            raise _at(
                ValidationError("JD2008", "the document is nested too deeply", collection=self.name), position
            ) from None
        except ValidationError as err:
            err.collection = self.name
            _at(err, position)
            raise
        if type(doc) is not dict:
            raise _at(
                StoreError(
                    "JD2010", f"a document must be an object, not {type(doc).__name__}", collection=self.name
                ),
                position,
            )
        try:
            valid = self._validator.is_valid(doc)
            errors = [] if valid else validation_errors(self._validator, doc)
        except UnicodeEncodeError:  # (the validator reads names and strings as UTF-8)
            raise _at(
                ValidationError(
                    "JD2008",
                    "a member name or string holds a lone surrogate (U+D800 to U+DFFF)",
                    collection=self.name,
                ),
                position,
            ) from None
        except ValueError:  # its messages' paths recurse: a deep document it refuses
            raise _at(
                ValidationError("JD2008", "the document is nested too deeply", collection=self.name), position
            ) from None
        if not valid:
            where = f"document {position}: " if position is not None else ""
            raise _at(
                ValidationError("JD2003", f"{where}{summarize(errors)}", collection=self.name, errors=errors),
                position,
            )
        owner = self._integer_owner
        if owner is not None and type(doc.get(owner)) is not int:
            raise _at(
                ValidationError(
                    "JD2003",
                    f"the owner member /{owner} is an integer, written without a fraction or exponent "
                    f"(not {doc.get(owner)!r})",
                    collection=self.name,
                ),
                position,
            )
        key = None
        if self._composite is not None:
            try:
                key = self._composite.of(doc)
            except StoreError as err:
                raise _at(err, position) from None
        elif self._key_member is not None:
            key = doc.get(self._key_member)
            if type(key) is not self._key_type:
                raise _at(
                    StoreError(
                        "JD2002",
                        f"key {self.spec.key} must be a {self._key_type.__name__}",
                        collection=self.name,
                        key=key,
                    ),
                    position,
                )
            try:
                self._storable_key(key)
            except ValidationError as err:
                raise _at(err, position) from None
        try:
            text = orjson.dumps(doc).decode()
        except TypeError as exc:  # an integer beyond 64 bits, or nesting deeper than 255 levels
            why = (
                "the document is nested too deeply"
                if "ecursion" in str(exc)
                else "an integer beyond 64 bits: a document's integers run from -2^63 to 2^64 - 1"
            )
            raise _at(ValidationError("JD2008", why, collection=self.name), position) from exc
        if "\\u0000" in text:
            _refuse_nul(doc, self.name, position)
        return key, doc, text

    def prepare(self, doc: Any, position: int | None = None) -> tuple[Any, dict[str, Any], str]:
        """Check a document as every write does: ``(key or None, JSON-safe document, JSON text)``;
        raises the write's coded error (JD2003 with ``errors``, JD2002, JD2008, JD2010)."""
        return self._prepare(doc, position)

    def _check_key(self, key: Any) -> Any:
        """The stored form of a key a caller passes (a composite key's text), checked."""
        if self._composite is not None:
            return self._composite.coerce(key)
        if type(key) is not self._key_type:
            raise StoreError(
                "JD2002",
                f"keys of {self.name!r} are {self._key_type.__name__}s, not {type(key).__name__}",
                collection=self.name,
                key=key,
            )
        return self._storable_key(key)

    def _storable_key(self, key: Any) -> Any:
        """``key`` when every backend can store it, else JD2008: the same refusal on each (PostgreSQL
        compares a wider integer with its ``bigint`` keys and finds nothing, SQLite cannot bind it;
        PostgreSQL's driver refuses U+0000, SQLite would find nothing)."""
        if type(key) is str and "\x00" in key:
            raise ValidationError(
                "JD2008", "a key holding U+0000 cannot be stored, so none is", collection=self.name, key=key
            )
        if type(key) is int and not -(2**63) <= key < 2**63:
            raise ValidationError(
                "JD2008",
                "an integer key beyond 64 bits (keys run from -2^63 to 2^63 - 1) cannot be stored, so none is",
                collection=self.name,
                key=key,
            )
        return key

    def stored_key(self, key: Any) -> Any:
        """The key as statements and the change log hold it, from what a caller passes: a composite
        key's text from its tuple or dict (JD2200, JD2201); any other key as given."""
        return key if self._composite is None else self._composite.coerce(key)

    def shown(self, key: Any) -> Any:
        """The key a user sees for a stored one (a composite key's tuple; others as stored)."""
        return user_key(self._composite, key)

    def _one_write(self) -> contextlib.AbstractContextManager[Any]:
        """The transaction around one write: its own, or a savepoint inside an open one.

        Inside an open transaction a single-statement write needs no savepoint of its own where the
        backend undoes a failed statement by itself (SQLite), unless a write check could fail after
        the row is written. Where a failed statement aborts the whole transaction (PostgreSQL), the
        savepoint keeps a caught error from spoiling the caller's transaction.
        """
        if self._db.in_transaction and self._statement_atomic and not self.write_checks:
            return contextlib.nullcontext()
        return self._db.transaction()

    def _written(
        self, key: Any, doc: dict[str, Any] | None, old: str | None, *, old_known: bool = True
    ) -> None:
        """After a row was written: run the write checks and record the change (``old``: the
        document's JSON text before the write, None when there was none; ``old_known=False``: the
        writer does not know it, and the change feed publishes the whole document)."""
        for check in self.write_checks:
            check(key, doc)
        self._db.record((self.name, key, doc, old) if old_known else (self.name, key, doc))

    def _bumped(self, doc: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """``doc`` with the version member one past ``old``'s (a replacement of a stored document of
        a versioned collection; unchanged otherwise)."""
        member = self._version_member
        if member is None or old is None or type(old.get(member)) is not int:
            return doc
        return {**doc, member: old[member] + 1}

    # -- writes ----------------------------------------------------------------------------------
    def insert(self, doc: dict[str, Any]) -> Any:
        """Validate and insert one document; return its key. JD2001 if the key is taken."""
        key, doc, text = self._prepare(doc)
        if self.spec.identity == "uuid":
            key = str(uuid.uuid4())
        db = self._db
        try:
            with self._one_write(), db.translating(collection=self.name, key=self.shown(key)):
                if self._write_lock is not None:
                    self._write_lock((doc,))
                if key is None:
                    db.serialize(self._key_lock)
                    key = db.value(
                        "collection.insert", {"collection": self.name, "doc": text}, table=self.name
                    )
                else:
                    db.run("collection.insert_keyed", {"key": key, "doc": text}, table=self.name)
                self._written(key, doc, None)
        except StoreError as err:
            if err.condition != "exclusion" or self.refusal is None:
                raise
        else:
            return self.shown(key)
        raise self.refusal([(key, doc)])  # outside the handler: the database's error is not its context

    def insert_many(
        self,
        docs: Iterable[Any] | pd.DataFrame | pa.Table,
        *,
        progress: bool | None = None,
        key_from_index: bool = False,
    ) -> int:
        """Validate and insert many documents in ONE transaction; return how many.

        ``docs`` is an iterable of dicts, a pandas DataFrame or a pyarrow Table (a null cell means
        the member is absent). A DataFrame's named index becomes members (so an index named like the
        key is the key); ``key_from_index=True`` takes the index as the key whatever its name (the
        key member, or an identity collection's keys). Nothing is written if any document fails; the
        error names its position (``err.position``). A progress bar shows for long batches
        (``progress=None``: from 50,000 documents).
        """
        _progress(progress)
        records, keys = self._records(docs, key_from_index)
        return self._write_many(records, keys, progress, upsert=False)

    def put_many(
        self,
        docs: Iterable[Any] | pd.DataFrame | pa.Table,
        *,
        progress: bool | None = None,
        key_from_index: bool = False,
    ) -> int:
        """Insert or replace many documents (a bulk upsert) in ONE transaction; return how many.

        Running a loading cell twice leaves one copy of each document. Keys come from the documents
        (a key pointer) or, for an identity collection, from a DataFrame's index
        (``key_from_index=True``). Validation, positions and progress as in :meth:`insert_many`.
        """
        _progress(progress)
        records, keys = self._records(docs, key_from_index)
        if keys is None and self.spec.key is None:
            raise StoreError(
                "JD2010",
                f"put_many on {self.name!r} (keys by identity) needs the keys: a DataFrame indexed by "
                "them with key_from_index=True",
                collection=self.name,
            )
        return self._write_many(records, keys, progress, upsert=True)

    def _records(self, docs: Any, key_from_index: bool) -> tuple[list[Any], list[Any] | None]:
        """The documents to write, and the keys an identity collection takes from a DataFrame's index."""
        _flags(key_from_index=key_from_index)
        if not key_from_index:
            return frames.records_from(docs), None
        if not frames.is_frame(docs):
            raise StoreError("JD2010", "key_from_index=True takes a DataFrame", collection=self.name)
        if self._composite is not None:
            members = list(self._composite.members)
            if docs.index.nlevels != len(members):
                raise StoreError(
                    "JD2200",
                    f"key_from_index=True on {self.name!r} takes an index of {len(members)} levels "
                    f"({self._composite.described}), not {docs.index.nlevels}",
                    collection=self.name,
                )
            return frames.records_from(docs.rename_axis(members)), None
        if self._key_member is not None:
            return frames.records_from(docs, index_as=self._key_member), None
        keys = [self._check_key(to_json(k)) for k in docs.index.tolist()]
        return frames.records_from(docs.reset_index(drop=True)), keys

    def _write_many(
        self, records: list[Any], keys: list[Any] | None, progress: bool | None, *, upsert: bool
    ) -> int:
        total = len(records)
        bar = frames.progress(
            total,
            f"{'put' if upsert else 'insert'} into {self.name}",
            progress is True or (progress is None and total >= _PROGRESS_FROM),
        )
        identity = self.spec.identity if keys is None else None
        statement = "collection.put" if upsert else "collection.insert_keyed"
        # A put reads what it replaces (locked on a server), so the change log says what changed,
        # unless it writes more documents than a record holds inline: that record is compact and
        # says nothing of them, so they are recorded as replacing what they do not know.
        reads = upsert and total <= self.store.changes.log.inline_limit
        db = self._db
        seen: set[Any] = set()
        with db.transaction(), db.translating(collection=self.name):
            next_key = None
            if identity == "integer":
                db.serialize(self._key_lock)
                next_key = db.value("collection.next_key", {"collection": self.name}, table=self.name)
            for start in range(0, total, _BATCH):
                prepared = [
                    self._prepare(d, start + i) for i, d in enumerate(records[start : start + _BATCH])
                ]
                if keys is not None:
                    rows = [(keys[start + i], p[2]) for i, p in enumerate(prepared)]
                elif identity == "integer":
                    assert next_key is not None
                    rows = [(next_key + start + i, p[2]) for i, p in enumerate(prepared)]
                elif identity == "uuid":
                    rows = [(str(uuid.uuid4()), p[2]) for p in prepared]
                else:
                    rows = [(p[0], p[2]) for p in prepared]
                if upsert:
                    _refuse_repeats(rows, start, self, seen)
                if self._write_lock is not None:
                    self._write_lock(p[1] for p in prepared)
                olds = self._texts_of([key for key, _ in rows]) if reads else {}
                refused = False
                try:
                    with db.transaction():  # a savepoint, so a failed batch can be inspected
                        db.many(statement, [{"key": key, "doc": text} for key, text in rows], table=self.name)
                except StoreError as err:
                    if err.condition == "duplicate":
                        self._find_duplicate(rows, start)
                    if err.condition != "exclusion" or self.refusal is None:
                        raise
                    refused = True
                if refused and self.refusal is not None:
                    raise self.refusal([(key, p[1]) for (key, _), p in zip(rows, prepared)])
                for (key, _), (_, doc, _) in zip(rows, prepared):
                    self._written(key, doc, olds.get(key), old_known=reads or not upsert)
                bar.update(len(rows))
        bar.close()
        return total

    def _texts_of(self, keys: list[Any]) -> dict[Any, str]:
        """Inside the write transaction: the stored text of each of ``keys`` that holds a document
        (locked until the transaction ends on a server)."""
        rows = self._db.all("collection.texts_of_for_update", {"keys": keys}, table=self.name, keys=len(keys))
        return dict(rows)

    def _find_duplicate(self, rows: list[tuple[Any, str]], start: int) -> None:
        """Name the first duplicate of a failed batch (inside the transaction that will roll back)."""
        seen: set[Any] = set()
        for i, (key, _) in enumerate(rows):
            dup = key in seen or self._db.one("collection.exists", {"key": key}, table=self.name)
            if dup:
                raise _at(
                    StoreError(
                        "JD2001",
                        f"document {start + i}: duplicate key {self.shown(key)!r}",
                        collection=self.name,
                        key=self.shown(key),
                    ),
                    start + i,
                )
            seen.add(key)

    def put(self, doc: dict[str, Any], key: Any = None) -> Any:
        """Insert or replace a document (upsert); return its key.

        With a key pointer, the key comes from the document (a different ``key`` argument is
        JD2002). With an allocated identity, ``put(doc)`` allocates and ``put(doc, key)`` replaces.
        """
        own, doc, text = self._prepare(doc)
        key = self.key_of(own, key)
        if key is None:
            return self.insert(doc)
        db = self._db
        try:
            with self._one_write(), db.translating(collection=self.name, key=self.shown(key)):
                if self._write_lock is not None:
                    self._write_lock((doc,))
                # The document it replaces (locked on a server), so the change log can say what changed.
                old = db.value("collection.get_for_update", {"key": key}, table=self.name)
                if old is not None and self._version_member is not None:
                    _, doc, text = self._prepare(self._bumped(doc, orjson.loads(old)))
                db.run("collection.put", {"key": key, "doc": text}, table=self.name)
                self._written(key, doc, old)
        except StoreError as err:
            if err.condition != "exclusion" or self.refusal is None:
                raise
        else:
            return self.shown(key)
        raise self.refusal([(key, doc)])  # outside the handler: the database's error is not its context

    def key_of(self, own: Any, key: Any) -> Any:
        """The key a replacement is stored under, given the key its document holds (``own``, from
        :meth:`prepare`) and a ``key`` argument: with a key pointer the document's own (a different
        argument is JD2002); with an allocated identity the argument, checked (None: none given)."""
        if self.spec.key is None:
            return None if key is None else self._check_key(key)
        if key is not None and self.stored_key(key) != own:
            raise StoreError(
                "JD2002",
                f"key argument {key!r} differs from the document's {self.shown(own)!r}",
                collection=self.name,
                key=key,
            )
        return own

    def patch(self, key: Any, ops: list[dict[str, Any]] | dict[str, Any]) -> dict[str, Any]:
        """Patch a stored document and return the result, which is validated before it is written.

        ``ops`` is an RFC 6902 list (``[{"op": "replace", "path": "/a", "value": 1}]``) or a dict,
        taken as an RFC 7386 merge patch. JD2006 if nothing is stored under ``key``.
        """
        key = self._check_key(key)
        if not isinstance(ops, list | dict):
            raise StoreError(
                "JD2009",
                "a patch is an RFC 6902 list or an RFC 7386 merge-patch object",
                collection=self.name,
                key=self.shown(key),
            )
        db = self._db
        try:
            with self._one_write(), db.translating(collection=self.name, key=self.shown(key)):
                row = db.one("collection.get_for_update", {"key": key}, table=self.name)
                if row is None:
                    raise StoreError(
                        "JD2006", "no document to patch", collection=self.name, key=self.shown(key)
                    )
                old = orjson.loads(row[0])
                try:
                    new = apply_patch(old, ops) if isinstance(ops, list) else merge_patch(old, ops)
                except StoreError as err:
                    err.collection, err.key = self.name, self.shown(key)
                    raise
                own, new, text = self._prepare(self._bumped(new, old))
                if self.spec.key is not None and own != key:
                    raise StoreError(
                        "JD2002",
                        f"a patch cannot change the key (to {self.shown(own)!r})",
                        collection=self.name,
                        key=self.shown(key),
                    )
                if self._write_lock is not None:
                    self._write_lock((new,))
                db.run("collection.update", {"doc": text, "key": key}, table=self.name)
                self._written(key, new, row[0])
        except StoreError as err:
            if err.condition != "exclusion" or self.refusal is None:
                raise
        else:
            return new
        raise self.refusal([(key, new)])  # outside the handler: the database's error is not its context

    def delete(self, key: Any) -> bool:
        """Delete the document under ``key``; return whether one was stored."""
        key = self._check_key(key)
        db = self._db
        # Two statements for an allocated identity (the delete and its key's record): one unit.
        unit = db.transaction() if self.spec.identity == "integer" else self._one_write()
        with unit, db.translating(collection=self.name, key=self.shown(key)):
            old = db.value("collection.delete", {"key": key}, table=self.name)
            gone = old is not None
            if gone:
                if self.spec.identity == "integer":
                    db.run(
                        "collection.keys_seen", {"collection": self.name, "last": key}
                    )  # never allocated again
                self._written(key, None, old)
        return gone

    # -- a session's writes (jarenlab.session) ---------------------------------------------------------
    def _at_version(self, version: int | None) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The parameters and fragment of a write checked against a version (none: unchecked)."""
        if version is None:
            return {}, ()
        assert self._version_path is not None, "only a versioned collection checks versions"
        return {"path": self._version_path, "version": version}, ("at_version",)

    def save_update(
        self, key: Any, old: dict[str, Any], new: dict[str, Any], text: str, version: int | None
    ) -> tuple[str, dict[str, Any] | None]:
        """One statement that writes a changed document, inside the caller's transaction: its
        changed members alone where the backend can (``merge``), else the whole ``text``
        (``save_update``); ``version``: the version ``old`` holds, checked (None: unchecked).
        Returns the statement's name and the document now stored, or None when no row matched
        (the version moved, or the document is gone). ``new`` comes from :meth:`prepare`.

        An unchecked merge may meet members another writer changed since ``old`` was read: the
        stored result is then validated as a whole (JD2003) and is what is returned."""
        params, check = self._at_version(version)
        patch = merge_diff(old, new) if self.store.backend.merges_members else None
        db = self._db
        try:
            with self._one_write(), db.translating(collection=self.name, key=self.shown(key)):
                if self._write_lock is not None:
                    self._write_lock((new,))
                if patch is not None:
                    name = "merge"
                    args = {"patch": orjson.dumps(patch).decode(), "key": key, **params}
                    row = db.one("collection.merge", args, table=self.name, check=check)
                    # A checked merge wrote onto the snapshot itself: the result is ``new``.
                    stored = (
                        None if row is None else new if version is not None else self._stored(row[0], new)
                    )
                else:
                    name = "save_update"
                    args = {"doc": text, "key": key, **params}
                    changed = db.run("collection.save_update", args, table=self.name, check=check)
                    stored = new if changed else None
                if stored is not None:
                    before = orjson.dumps(old).decode() if version is not None else None
                    self._written(key, stored, before, old_known=version is not None)
        except StoreError as err:
            if err.condition != "exclusion" or self.refusal is None:
                raise
        else:
            return name, stored
        raise self.refusal([(key, new)])  # outside the handler: the database's error is not its context

    def _stored(self, text: str, expected: dict[str, Any]) -> dict[str, Any]:
        """The document a merge stored: ``expected``, or (other members changed meanwhile) the
        stored one, validated as a whole."""
        doc = orjson.loads(text)
        if identical(doc, expected, decoded=True):
            return expected
        return self._prepare(doc)[1]

    def save_delete(self, key: Any, version: int | None) -> bool:
        """One statement that deletes a document, inside the caller's transaction, checked against
        ``version`` (None: unchecked); whether a row was deleted."""
        params, check = self._at_version(version)
        db = self._db
        unit = db.transaction() if self.spec.identity == "integer" else self._one_write()
        with unit, db.translating(collection=self.name, key=self.shown(key)):
            old = db.value("collection.save_delete", {"key": key, **params}, table=self.name, check=check)
            if old is None:
                return False
            if self.spec.identity == "integer":
                db.run("collection.keys_seen", {"collection": self.name, "last": key})
            self._written(key, None, old)
        return True

    # -- reads -----------------------------------------------------------------------------------
    def get(self, key: Any) -> dict[str, Any] | None:
        """The document stored under ``key``, or None."""
        key = self._check_key(key)
        with self._db.translating(collection=self.name, key=self.shown(key)):
            text = self._db.value("collection.get", {"key": key}, table=self.name)
        return None if text is None else orjson.loads(text)

    def locked(self, key: Any) -> dict[str, Any] | None:
        """Inside a transaction: the document under ``key`` (None: none), locked until the
        transaction ends, so no other writer changes it between a caller's check and its write."""
        key = self._check_key(key)
        with self._db.translating(collection=self.name, key=self.shown(key)):
            text = self._db.value("collection.get_for_update", {"key": key}, table=self.name)
        return None if text is None else orjson.loads(text)

    def _owner_path(self) -> str:
        """The owner member as the backend's JSON path (an owned collection's owner is a top member)."""
        assert self.spec.owner is not None, "only an owned collection has owners"
        return self.store.backend.json_path((self.spec.owner[1:],))

    def _owned(self, statement: str, owner: str | int) -> list[Any]:
        path = self._owner_path()
        owned = ("owned_by_string",) if isinstance(owner, str) else ("owned_by_integer",)
        with self._db.translating(collection=self.name):
            return self._db.all(statement, {"path": path, "owner": owner}, table=self.name, owned=owned)

    def owned_count(self, owner: str | int) -> int:
        """How many documents of an owned collection ``owner`` holds (owner views count with it)."""
        return int(self._owned("collection.owned_count", owner)[0][0])

    def owned_texts(self, owner: str | int) -> tuple[list[Any], list[str]]:
        """The keys and document texts ``owner`` holds in an owned collection, in storage order."""
        rows = self._owned("collection.owned_scan", owner)
        return [r[0] for r in rows], [r[1] for r in rows]

    def owner_of(self, key: Any) -> Any:
        """The owner member of the document under ``key`` (None: no such document, or the
        collection is not owned)."""
        if self.spec.owner is None:
            return None
        path = self._owner_path()
        with self._db.translating(collection=self.name, key=self.shown(key)):
            text = self._db.value("collection.owner_of", {"path": path, "key": key}, table=self.name)
        return None if text is None else orjson.loads(text)

    def count(self) -> int:  # type: ignore[override]
        """How many documents are stored."""
        with self._db.translating(collection=self.name):
            return int(self._db.value("collection.count", table=self.name))

    def __len__(self) -> int:
        return self.count()

    def texts(self) -> tuple[list[Any], list[str]]:
        """Every key and document text, in storage order."""
        with self._db.translating(collection=self.name):
            rows = self._db.all("collection.scan", table=self.name)
        return [r[0] for r in rows], [r[1] for r in rows]

    def pages(self, size: int = _BATCH) -> Iterator[list[tuple[Any, str]]]:
        """Every key and document text in storage order, ``size`` at a time (a walk over a
        collection that never holds all of it)."""
        after: Any = None
        while True:
            with self._db.translating(collection=self.name):
                if after is None:
                    rows = self._db.all("collection.first_page", {"limit": size}, table=self.name)
                else:
                    rows = self._db.all("collection.page", {"after": after, "limit": size}, table=self.name)
            if not rows:
                return
            yield [(r[1], r[2]) for r in rows]
            after = rows[-1][0]

    def rewrite(self, updates: list[tuple[Any, str, dict[str, Any]]], deletes: list[Any]) -> None:
        """Inside an open transaction: store prepared documents under their keys (``(key, text,
        doc)`` from :meth:`prepare`, keys already stored) and delete ``deletes``, recording the
        changes like any write. A migration's transform writes through here."""
        db = self._db
        with db.translating(collection=self.name):
            if updates:
                db.many(
                    "collection.update",
                    [{"doc": text, "key": key} for key, text, _ in updates],
                    table=self.name,
                )
            if deletes:
                db.many("collection.delete", [{"key": key} for key in deletes], table=self.name)
        for key, _, doc in updates:
            db.record((self.name, key, doc))
        for key in deletes:
            db.record((self.name, key, None))

    def positions(self, keys: list[Any] | None = None) -> dict[Any, int]:
        """The storage position of each of ``keys`` that is stored (of every key for None): the
        numbers the storage order sorts by (:attr:`storage_order`), which live queries read where
        writers commit side by side (a row inserted first may commit last)."""
        db = self._db
        with db.translating(collection=self.name):
            if keys is None:
                rows = db.all("collection.positions", table=self.name)
            else:
                rows = []
                for i in range(0, len(keys), _BATCH):
                    part = keys[i : i + _BATCH]
                    rows += db.all("collection.positions_of", {"keys": part}, table=self.name, keys=len(part))
        return {key: int(pos) for key, pos in rows}

    def keys(self) -> list[Any]:
        """Every key, in storage order (a composite key as its tuple)."""
        return [self.shown(k) for k in self.stored_keys()]

    def stored_keys(self) -> list[Any]:
        """Every key as statements and the change log hold it (see :meth:`stored_key`), in storage order."""
        with self._db.translating(collection=self.name):
            return [r[0] for r in self._db.all("collection.keys", table=self.name)]

    @property
    def storage_order(self) -> StorageOrder:
        """How :meth:`texts`, :meth:`keys` and a query without ``$orderby`` order the rows (the
        backend decides): ``"key"`` (ascending key) or ``"insertion"`` (a new key goes after every
        stored one and keeps its place through updates)."""
        return self.store.backend.storage_order(self._key_type)

    def _documents(self) -> list[dict[str, Any]]:
        """Every stored document, in storage order (the reference engine's input)."""
        loads = orjson.loads
        return [loads(t) for t in self.texts()[1]]

    def to_list(self) -> list[dict[str, Any]]:  # type: ignore[override]
        """Every document as a list of dicts."""
        return self._documents()

    def to_arrow(self, *, flatten: bool = False) -> pa.Table:
        """Every document as a pyarrow Table (``flatten=True``: nested members as dotted columns)."""
        frames.check_flags("to_arrow", flatten=flatten)
        _, texts = self.texts()
        return frames.texts_to_arrow(texts, self.spec.schema, flatten=flatten)

    def to_pandas(self, *, flatten: bool = False) -> pd.DataFrame:
        """Every document as a DataFrame indexed by key, its cells the values that were stored
        (integers stay integers; nested objects, lists and columns of mixed kinds are ``object``
        columns of the values themselves), read a page at a time. ``flatten=True``: nested members
        as dotted columns, through Arrow, which unifies the kinds of a column."""
        frames.check_flags("to_pandas", flatten=flatten)
        if flatten:
            keys, texts = self.texts()
            frame = frames.texts_to_frame(texts, keys, self.spec.schema, flatten=True)
        else:
            with self._db.snapshot():
                frame = frames.pages_to_frame(self.pages(), self.spec.schema)
        return self.keyed_frame(frame)

    def keyed_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (indexed by stored keys) as users see it: a composite key's frame is indexed by
        a ``MultiIndex`` of its members, as a frame loaded into it would be; others as they are."""
        if self._composite is None:
            return frame
        import pandas as pd

        tuples = [self._composite.decode(k) for k in frame.index]
        frame.index = pd.MultiIndex.from_tuples(tuples, names=list(self._composite.members))
        return frame

    # -- queries ---------------------------------------------------------------------------------
    def execute(
        self,
        document: Any,
        externals: dict[str, Any] | None = None,
        *,
        pushdown: bool = True,
        strict: bool = False,
        profile: Any = None,
        columns: bool | None = None,
    ) -> Any:
        """Run a query document; return the engine's result shape (None, the one item, or a list).

        The planner runs what the database answers exactly and the reference engine the rest
        (``explain()`` shows which). ``pushdown=False`` runs the reference engine over the whole
        collection; ``strict=True`` refuses any residual (JD0010); ``profile`` replaces the
        store's safe profile for this call; ``columns=True`` answers from the columnar path
        wherever it can, ``False`` never (None: where the planner chooses it; ``docs/columns.md``).
        """
        from jarenlab.query import shape

        return shape(
            self._run_query(
                document, externals or {}, pushdown=pushdown, strict=strict, profile=profile, columns=columns
            )
        )

    def _run_query(
        self,
        document: Any,
        externals: dict[str, Any],
        *,
        pushdown: bool = True,
        strict: bool = False,
        profile: Any = None,
        columns: bool | None = None,
    ) -> list[Any]:
        """The flat result sequence of a query document over this collection (through the planner)."""
        from jarenlab.query.planner.run import run_query

        _flags(pushdown=pushdown, strict=strict, **({} if columns is None else {"columns": columns}))
        chosen = self.store.profile if profile is None else profile
        return run_query(
            self, document, externals, pushdown=pushdown, strict=strict, profile=chosen, columns=columns
        )[0]

    def explain(
        self,
        document: Any,
        externals: dict[str, Any] | None = None,
        *,
        analyze: bool = False,
        pushdown: bool = True,
        strict: bool = False,
        profile: Any = None,
        columns: bool | None = None,
    ) -> Any:
        """How the planner runs a document (:class:`jarenlab.query.planner.explain.Explain`); ``analyze`` runs it."""
        from jarenlab.query.planner.explain import explain

        _flags(
            analyze=analyze,
            pushdown=pushdown,
            strict=strict,
            **({} if columns is None else {"columns": columns}),
        )
        chosen = self.store.profile if profile is None else profile
        return explain(
            self,
            document,
            externals,
            analyze=analyze,
            pushdown=pushdown,
            strict=strict,
            profile=chosen,
            columns=columns,
        )

    def _stream_batches(
        self, document: Any, externals: dict[str, Any], size: int, columns: list[str] | None
    ) -> Iterator[pa.RecordBatch]:
        """Arrow record batches of a query's results, ``size`` results at a time (see
        :meth:`jarenlab.query.build.builder.Query.iter_batches`; the store's profile applies)."""
        from jarenlab.query.planner.run import stream_query

        for kind, chunk in stream_query(self, document, externals, size):
            yield from frames.chunk_to_arrow(kind, chunk, self.spec.schema, columns).to_batches(
                max_chunksize=size
            )

    def load(self, spec: dict[str, Any], externals: dict[str, Any] | None = None) -> Any:
        """Documents with their declared relations, nested, from ONE SQL statement (a graph load).

        ``spec``: ``where``, ``order_by``, ``take``, ``skip``, ``max_depth`` (3) and ``include``
        (relation name -> True or a spec of its own, ``count: True`` for a count); see
        :mod:`jarenlab.query.loads.plan`. JD0032 for what one statement cannot answer.
        """
        from jarenlab.query.loads.run import load

        return load(self, spec, externals)

    def explain_load(self, spec: dict[str, Any], externals: dict[str, Any] | None = None) -> Any:
        """The one statement a graph load runs, its includes and pagination (:class:`LoadExplain`)."""
        from jarenlab.query.loads.run import explain_load

        return explain_load(self, spec, externals)

    def relation(self, name: str) -> Any:
        """The links of this collection's many-to-many relation ``name``: ``link``, ``unlink``,
        ``of`` (:class:`jarenlab.relations.links.Links`; JD2193 for another relation)."""
        return self.store.subsystem("relations").relation(self.name, name)

    def _page(self, document: Any, limit: int, after: str | None, externals: dict[str, Any]) -> Any:
        from jarenlab.query.planner.pages import page

        return page(self, document, limit, after, externals)

    def _matching(self, conditions: tuple[Any, ...], externals: dict[str, Any]) -> list[tuple[Any, Any]]:
        from jarenlab.query.planner.keyed import matching

        return matching(self, conditions, externals)

    def _update_where(
        self,
        conditions: tuple[Any, ...],
        ops: Any,
        externals: dict[str, Any],
        assign: dict[str, Any] | None = None,
    ) -> int:
        from jarenlab.query.planner.keyed import update

        return update(self, conditions, ops, externals, assign)

    def _delete_where(self, conditions: tuple[Any, ...], externals: dict[str, Any]) -> int:
        from jarenlab.query.planner.keyed import delete

        return delete(self, conditions, externals)

    def typed(self, cls: type[T]) -> Typed[T]:
        """This collection as a handle whose reads return ``cls``'s instances (a ``TypedDict``, or a
        dataclass built from each document): ``store["flights"].typed(Flight).get(1)`` is a
        ``Flight`` for mypy and the editor (see :mod:`jarenlab.typed`)."""
        from jarenlab.typed import Typed

        return Typed(self, cls)

    def live(self, document: Any, *, columns: bool | None = None, **externals: Any) -> LiveQuery:
        """A live query of a raw query document (see :mod:`jarenlab.live`); externals as keywords.

        ``columns``: where its seed (the first rows, and each re-seed) may come from the columnar
        path, as for a run: None where the planner chooses the columns, True wherever they can
        answer, False never (``live.seeded`` says where it came from)."""
        from jarenlab.live.live import LiveQuery

        return LiveQuery(self, document, externals, columns=columns)

    def __repr__(self) -> str:
        return f"<jarenlab.Collection {self.name!r}>"

    def _repr_html_(self) -> str:
        if self.store.closed:
            return f"<b>collection</b> <code>{html.escape(self.name)}</code> (the store is closed)"
        return (
            f"<b>collection</b> <code>{html.escape(self.name)}</code>: {self.count():,} documents, key "
            f"<code>{html.escape(_key_text(self.spec))}</code>"
        )


def _flags(**flags: Any) -> None:
    """Refuse a switch that is not a bool (``analyze="no"`` would otherwise count as true)."""
    for name, value in flags.items():
        if type(value) is not bool:
            raise StoreError("JD0006", f"{name} must be True or False, not {value!r}")


def _progress(progress: Any) -> None:
    """Refuse a ``progress=`` that is not True, False or None (``"yes"`` would quietly show no bar)."""
    if not is_progress(progress):
        raise StoreError(
            "JD0006",
            f"progress must be True (always a bar), False (never) or None (from {_PROGRESS_FROM:,} "
            f"documents), not {progress!r}",
        )


def _refuse_nul(value: Any, collection: str, position: int | None, path: str = "") -> None:
    """Refuse U+0000 in any string or member name: SQLite's JSON functions cut strings there."""
    if isinstance(value, str) and "\x00" in value:
        reason = f"U+0000 cannot be stored (SQLite's JSON functions end strings there) at {path or '/'}"
        raise _at(ValidationError("JD2008", reason, collection=collection), position)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        _refuse_nul(k, collection, position, path)
        _refuse_nul(v, collection, position, f"{path}/{k}")


def _refuse_repeats(rows: list[tuple[Any, str]], start: int, coll: Collection, seen: set[Any]) -> None:
    """An upsert names each key once (a repeat would make the stored one depend on order)."""
    for i, (key, _) in enumerate(rows):
        if key in seen:
            raise _at(
                StoreError(
                    "JD2001",
                    f"document {start + i}: key {coll.shown(key)!r} appears twice",
                    collection=coll.name,
                    key=coll.shown(key),
                ),
                start + i,
            )
        seen.add(key)


def _key_text(spec: CollectionSpec) -> str:
    """How a collection's key is described: ``/id``, ``/date + /origin``, ``identity integer``."""
    if isinstance(spec.key, tuple):
        return " + ".join(spec.key)
    return spec.key or f"identity {spec.identity}"


def _at(err: StoreError, position: int | None) -> StoreError:
    err.position = position
    return err
