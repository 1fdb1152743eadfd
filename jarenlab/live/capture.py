"""Change capture: one change record per commit, written in the data's own transaction.

Each top-level commit that changed collection documents adds one record to the change log (the
backend's ``live`` statements): ``seq`` (only grows: the newest record is never pruned),
``at_ms``, ``source`` (a per-store id), ``collections`` (JSON array) and ``patch``: RFC 6902
operations with pointers ``/<collection>/<key>``, one per changed document, net over the commit
(its state before the commit against its state after): ``add`` with the document for a new one,
``remove`` for one that is gone, and for a changed one ``replace`` with the whole new document and,
in ``diff``, the minimal patch from the old one (:func:`jarenlab.live.diff.diff`; an extra member
RFC 6902 says to ignore). A write that changed nothing (a put of the same document) and a document
inserted and deleted in one commit leave no operation, and a commit of only such writes no record.
A document deleted and written again in one commit is a ``replace`` (with an empty ``diff`` when it
is the same document) marked ``"moved": true`` (one more member RFC 6902 ignores): it has a new place
in storage order, after every stored row (insertion order; in key order the key is its place), which
live queries (:attr:`Record.moved`) and the columns follow. The operations are listed in the order
the rows now lie: a moved or new document where it was (last) written, any other where the commit
first touched it.
Live queries read the whole documents; the change feed (:mod:`jarenlab.live.feed`) the minimal
patches. A change whose earlier state the writer did not give (``(collection, key, doc)`` without
the old text) is recorded as ``replace`` without ``diff``: the feed publishes it as an ``add`` of
the whole document.

A commit with more than ``inline_limit`` operations is written in **compact** form: ``patch`` is
NULL and readers re-seed every live query on the named ``collections`` (a bulk load does not pay
for serialising every document twice; local live queries still receive the in-memory changes).
Retention is a count of records, pruned in the writing transaction.

>>> to_ops([("notes", "a", {"id": "a"}, None), ("notes", "b", None, '{"id":"b"}'),
...         ("notes", "a", {"id": "a", "n": 1}, None), ("notes", "c", {"id": "c"}, '{"id":"c"}')])
[{'op': 'add', 'path': '/notes/a', 'value': {'id': 'a', 'n': 1}}, {'op': 'remove', 'path': '/notes/b'}]
>>> to_ops([("notes", "a", {"id": "a", "n": 2}, '{"id":"a","n":1}')])[0]["diff"]
[{'op': 'replace', 'path': '/n', 'value': 2}]
>>> [(op["path"], op.get("moved")) for op in to_ops([("notes", "a", None, '{"id":"a"}'),
...     ("notes", "b", {"id": "b"}, None), ("notes", "a", {"id": "a"}, None)])]
[('/notes/b', None), ('/notes/a', True)]
>>> parse_pointer("/notes/a~1b")
('notes', 'a/b')
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.database import UNKNOWN, Change, Moves, NetChanges, net_states
from jarenlab.keys import KeyKind, pointer_token, stored_key
from jarenlab.live.diff import diff
from jarenlab.pointer import escape, unescape

if TYPE_CHECKING:
    from jarenlab.database import Database


def parse_pointer(path: str) -> tuple[str, str]:
    """Split ``/<collection>/<key>`` into its two unescaped tokens."""
    _, coll, key = path.split("/", 2)
    if "~" not in path:
        return coll, key
    return unescape(coll), unescape(key)


def to_ops(changes: Iterable[Change], key_types: Mapping[str, KeyKind] | None = None) -> list[dict[str, Any]]:
    """The RFC 6902 operations of a commit's changes (one per changed document, first-touched
    order; none for a document that ends as it began); ``key_types`` names composite keys'
    codecs, whose pointer token is the members' JSON array."""
    ops: list[dict[str, Any]] = []
    dumps, loads = orjson.dumps, orjson.loads
    for coll, keys in net_states(changes).items():
        prefix = "/" + escape(coll) + "/"
        kind = (key_types or {}).get(coll)
        for key, (old, doc, moved) in keys.items():
            path = prefix + escape(pointer_token(kind, key))
            op: dict[str, Any] | None = None
            if doc is None:
                if old is not None:
                    op = {"op": "remove", "path": path}
            elif old is UNKNOWN:
                op = {"op": "replace", "path": path, "value": doc}
            elif old is None:
                op = {"op": "add", "path": path, "value": doc}
            elif moved or dumps(doc) != old.encode():
                steps = diff(loads(old), doc)
                if steps or moved:  # (deleted and written again: the same document, in a new place)
                    op = {"op": "replace", "path": path, "value": doc, "diff": steps}
            if op is not None:
                if moved:
                    op["moved"] = True
                ops.append(op)
    return ops


@dataclass(frozen=True)
class Record:
    """One committed change record. ``changes`` is None for a compact record (re-seed ``collections``)."""

    seq: int
    at_ms: int
    source: str
    collections: tuple[str, ...]
    changes: NetChanges | None = field(default=None, compare=False)
    #: The stored RFC 6902 operations (None for a compact record or one delivered from memory).
    ops: list[dict[str, Any]] | None = field(default=None, compare=False)
    #: Per collection, the keys deleted and written again in the commit: each goes after every
    #: stored row in storage order (insertion order), where ``changes`` lists it.
    moved: Moves = field(default_factory=dict, compare=False)


class ChangeLog:
    """Writes and reads the change log of one store.

    ``key_types`` maps each collection to ``int``, ``str`` or a composite key's codec (pointer
    tokens are text; integer and composite keys are turned back into stored keys when a record is read). ``clock`` stamps ``at_ms``. Every
    method takes the store's :class:`~jarenlab.database.Database`; ``write`` runs inside the
    committing transaction.

    >>> import jarenlab as jl
    >>> model = {"$model": "0.1", "collections": {"t": {"key": None, "identity": "integer",
    ...     "schema": {"type": "object"}}}}
    >>> with jl.open(model=model) as store:
    ...     log = ChangeLog({"t": int}, retention=2, clock=lambda: 1.0)
    ...     for k in (1, 2, 3):
    ...         with store.db.transaction():
    ...             _ = log.write(store.db, [("t", k, {"k": k})])
    ...     log.bounds(store.db), [r.seq for r in log.read(store.db, after=0)], log.read(store.db, after=2)[0].changes
    ((2, 3), [2, 3], {'t': {3: {'k': 3}}})
    """

    def __init__(
        self,
        key_types: dict[str, KeyKind],
        *,
        retention: int = 1000,
        inline_limit: int = 10_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if retention < 1:
            raise ValueError("retention keeps at least one record")
        self.key_types = key_types
        self.retention = retention
        self.inline_limit = inline_limit
        self.clock = clock
        self.source = uuid.uuid4().hex[:12]

    def write(self, db: Database, changes: list[Change], *, compact: set[str] | None = None) -> int | None:
        """Append the record of ``changes`` inside the open transaction; return its seq (None: no
        changes). ``compact`` (a migration's commit): write it compact, naming these collections too."""
        if not changes and compact is None:
            return None
        if compact is not None or len(changes) > self.inline_limit:
            patch = None
            collections = list(dict.fromkeys([*(c[0] for c in changes), *sorted(compact or ())]))
        else:
            ops = to_ops(changes, self.key_types)
            if not ops:
                return None  # nothing changed after all: no record
            collections = list(dict.fromkeys(parse_pointer(op["path"])[0] for op in ops))
            patch = orjson.dumps(ops).decode()
            if len(patch) > 64 * self.inline_limit:
                patch = None  # a few huge documents: the compact form too
        # Appends are serialised so records land in commit order (a single-writer engine already is).
        db.serialize("live")
        seq = db.value(
            "live.append",
            {
                "at_ms": int(self.clock() * 1000),
                "source": self.source,
                "collections": orjson.dumps(collections).decode(),
                "patch": patch,
            },
        )
        db.notify("live")  # other processes' live queries wake at the commit
        # Prune in steps (about every retention/16 commits, at most 64): a DELETE on every commit would
        # write one more page each time. The newest ``retention`` records are always kept.
        step = max(1, min(64, self.retention // 16))
        if seq > self.retention and seq % step == 0:
            db.run("live.prune", {"through": seq - self.retention})
        return int(seq)

    def bounds(self, db: Database) -> tuple[int, int]:
        """(earliest available seq, high watermark); (0, 0) for an empty log."""
        lo, hi = db.one("live.bounds") or (0, 0)
        return (int(lo or 0), int(hi or 0))

    def high_watermark(self, db: Database) -> int:
        """The newest committed seq (0 if nothing was ever recorded)."""
        return int(db.value("live.high_watermark"))

    def pruned(self, db: Database, after: int) -> bool:
        """True when records after ``after`` were committed but ``after + 1`` is gone (pruned).

        One statement, so a commit that lands between a reader's empty read and this check is
        not taken for a gap: the log holds one contiguous run of seqs.
        """
        lo, hi = self.bounds(db)
        return hi > after and lo > after + 1

    def read(self, db: Database, *, after: int, limit: int = 1000) -> list[Record]:
        """Records with ``seq > after`` in order (at most ``limit``); callers check for gaps."""
        rows = db.all("live.read", {"after": after, "limit": limit})
        return [self._record(*row) for row in rows]

    def read_ops(self, db: Database, *, after: int, limit: int = 1000) -> list[tuple[int, int, Any]]:
        """``(seq, at_ms, stored operations or None for a compact record)`` with ``seq > after``, in
        order (the change feed's read: no per-key documents are gathered)."""
        loads = orjson.loads
        return [
            (seq, at_ms, None if patch is None else loads(patch))
            for seq, at_ms, _, _, patch in db.all("live.read", {"after": after, "limit": limit})
        ]

    def _record(self, seq: int, at_ms: int, source: str, collections: str, patch: str | None) -> Record:
        colls = tuple(orjson.loads(collections))
        if patch is None:
            return Record(seq, at_ms, source, colls, None)
        net: NetChanges = {}
        moved: dict[str, set[Any]] = {}
        ops = orjson.loads(patch)
        for op in ops:
            coll, token = parse_pointer(op["path"])
            key = stored_key(self.key_types.get(coll), token)
            net.setdefault(coll, {})[key] = op.get("value") if op["op"] != "remove" else None
            if "moved" in op:
                moved.setdefault(coll, set()).add(key)
        moves = {coll: frozenset(keys) for coll, keys in moved.items()}
        return Record(seq, at_ms, source, colls, net, ops, moves)
