"""Change capture: one change record per commit, written in the data's own transaction.

Each top-level commit that wrote collection documents adds one row to ``_jl_changes``:
``seq`` (from a durable counter, never reused), ``at_ms``, ``source`` (a per-store id),
``collections`` (JSON array) and ``patch``: RFC 6902 operations with pointers
``/<collection>/<key>``, one net operation per key (the last write wins): ``add`` with the full
new document for an insert, put or patch (``add`` on an existing member replaces it), ``remove``
for a delete. A commit with more than ``inline_limit`` operations is written in **compact** form:
``patch`` is NULL and readers re-seed every live query on the named ``collections`` (a bulk load
does not pay for serialising every document twice; local live queries still receive the
in-memory changes). Retention is a count of records, pruned in the writing transaction.

>>> to_ops([("notes", "a", {"id": "a"}), ("notes", "b", None), ("notes", "a", {"id": "a", "n": 1})])
[{'op': 'add', 'path': '/notes/a', 'value': {'id': 'a', 'n': 1}}, {'op': 'remove', 'path': '/notes/b'}]
>>> parse_pointer("/notes/a~1b")
('notes', 'a/b')
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from jarenlab.pointer import escape, unescape

CHANGES_DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS _jl_changes (
        seq INTEGER PRIMARY KEY,
        at_ms INTEGER NOT NULL,
        source TEXT NOT NULL,
        collections TEXT NOT NULL,
        patch TEXT
    )""",
)

#: A change as the store records it: (collection, key, document or None when deleted).
Change = tuple[str, Any, "dict[str, Any] | None"]
#: Net changes of one record: collection -> key -> document (None: deleted).
NetChanges = dict[str, dict[Any, "dict[str, Any] | None"]]


def parse_pointer(path: str) -> tuple[str, str]:
    """Split ``/<collection>/<key>`` into its two unescaped tokens."""
    _, coll, key = path.split("/", 2)
    return unescape(coll), unescape(key)


def net_changes(changes: Iterable[Change]) -> NetChanges:
    """One net change per (collection, key): the last write wins, in first-touched order."""
    net: NetChanges = {}
    for coll, key, doc in changes:
        net.setdefault(coll, {})[key] = doc
    return net


def to_ops(changes: Iterable[Change]) -> list[dict[str, Any]]:
    """The RFC 6902 operations of a commit's changes (one per key, first-touched order)."""
    ops: list[dict[str, Any]] = []
    for coll, keys in net_changes(changes).items():
        prefix = "/" + escape(coll) + "/"
        for key, doc in keys.items():
            path = prefix + escape(key)
            ops.append(
                {"op": "remove", "path": path} if doc is None else {"op": "add", "path": path, "value": doc}
            )
    return ops


@dataclass(frozen=True)
class Record:
    """One committed change record. ``changes`` is None for a compact record (re-seed ``collections``)."""

    seq: int
    at_ms: int
    source: str
    collections: tuple[str, ...]
    changes: NetChanges | None = field(default=None, compare=False)


class ChangeLog:
    """Writes and reads the change log of one store.

    ``key_types`` maps each collection to ``int`` or ``str`` (pointer tokens are text; integer
    keys are turned back into ints when a record is read). ``clock`` stamps ``at_ms``.

    >>> import sqlite3
    >>> conn = sqlite3.connect(":memory:", isolation_level=None)
    >>> log = ChangeLog({"t": int}, retention=2, clock=lambda: 1.0)
    >>> for s in CHANGES_DDL: _ = conn.execute(s)
    >>> [log.write(conn, [("t", k, {"k": k})]) for k in (1, 2, 3)]
    [1, 2, 3]
    >>> log.bounds(conn), [r.seq for r in log.read(conn, after=0)]
    ((2, 3), [2, 3])
    >>> log.read(conn, after=2)[0].changes
    {'t': {3: {'k': 3}}}
    """

    def __init__(
        self,
        key_types: dict[str, type],
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

    def write(self, conn: sqlite3.Connection, changes: list[Change]) -> int | None:
        """Append the record of ``changes`` inside the open transaction; return its seq (None: no changes)."""
        if not changes:
            return None
        collections = list(dict.fromkeys(c for c, _, _ in changes))
        patch = None if len(changes) > self.inline_limit else orjson.dumps(to_ops(changes)).decode()
        if patch is not None and len(patch) > 64 * self.inline_limit:
            patch = None  # a few huge documents: the compact form too
        # seq is the rowid: SQLite gives max(rowid) + 1, and pruning never removes the newest record,
        # so the sequence only grows (and costs no counter row of its own on every commit).
        seq = conn.execute(
            "INSERT INTO _jl_changes(at_ms, source, collections, patch) VALUES (?, ?, ?, ?) RETURNING seq",
            (int(self.clock() * 1000), self.source, orjson.dumps(collections).decode(), patch),
        ).fetchone()[0]
        # Prune in steps (about every retention/16 commits, at most 64): a DELETE on every commit would
        # write one more page each time. The newest ``retention`` records are always kept.
        step = max(1, min(64, self.retention // 16))
        if seq > self.retention and seq % step == 0:
            conn.execute("DELETE FROM _jl_changes WHERE seq <= ?", (seq - self.retention,))
        return int(seq)

    def bounds(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """(earliest available seq, high watermark); (0, 0) for an empty log."""
        lo, hi = conn.execute("SELECT min(seq), max(seq) FROM _jl_changes").fetchone()
        return (int(lo or 0), int(hi or 0))

    def high_watermark(self, conn: sqlite3.Connection) -> int:
        """The newest committed seq (0 if nothing was ever recorded)."""
        return int(conn.execute("SELECT coalesce(max(seq), 0) FROM _jl_changes").fetchone()[0])

    def read(self, conn: sqlite3.Connection, *, after: int, limit: int = 1000) -> list[Record]:
        """Records with ``seq > after`` in order (at most ``limit``); callers check for gaps."""
        rows = conn.execute(
            "SELECT seq, at_ms, source, collections, patch FROM _jl_changes WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, limit),
        ).fetchall()
        return [self._record(*row) for row in rows]

    def _record(self, seq: int, at_ms: int, source: str, collections: str, patch: str | None) -> Record:
        colls = tuple(orjson.loads(collections))
        if patch is None:
            return Record(seq, at_ms, source, colls, None)
        net: NetChanges = {}
        for op in orjson.loads(patch):
            coll, token = parse_pointer(op["path"])
            key: Any = int(token) if self.key_types.get(coll) is int else token
            net.setdefault(coll, {})[key] = op.get("value") if op["op"] != "remove" else None
        return Record(seq, at_ms, source, colls, net)
