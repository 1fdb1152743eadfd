"""What this store's own commits told the columns: their keys, by change-log record.

After a commit the store knows which keys it changed; reading the change log back for them is a
statement (a round trip to a server) that tells it nothing new. :class:`OwnCommits` keeps, per
change-log record this store committed, the keys each collection's rows changed (handed over by
the change hub after the COMMIT: a rolled-back transaction is never recorded). It can stand in
for the log only where the log position proves nothing else was committed in between: every
record from just after a table's record up to the newest one must be this store's own
(:meth:`OwnCommits.since`), and the statement that reads the changed rows reads the log's newest
record in the same snapshot (:func:`jarenlab.query.columnar.columns.read_rows`): when that is not
the last own record, another store or process committed since, and the columns catch up from the
log as before. Records are numbered in commit order with no gaps among committed ones, so a
record this store did not commit (another's, or one that took the number of a rolled-back
transaction of ours) is a gap in what is kept here, and a gap is never guessed over.

>>> own = OwnCommits()
>>> own.record(4, [("t", 1, {"n": 1}, None), ("t", 2, None, '{"n": 2}')])
>>> own.record(5, [("u", "a", {}, None)])
>>> own.since(3, "t"), own.since(4, "t"), own.since(2, "t")
((5, {1, 2}, False), (5, set(), True), None)
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from jarenlab.database import Change, net_states
from jarenlab.errors import JarenlabError

if TYPE_CHECKING:
    from jarenlab.query.columnar.columns import Table
    from jarenlab.query.planner.source import Readable

#: Records kept (the oldest go first); a table further behind reads the log.
KEEP = 256
#: A commit changing more keys than this is not kept: reading its rows back by key would not pay
#: (the log's record of it is compact, and the table is built again).
MOST_KEYS = 10_000


class OwnCommits:
    """Per change-log record this store committed: per collection, the keys it changed and
    whether every one of them was new (written where no document was: no table holds them)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: seq -> collection -> (keys, all new); None for a record whose keys are not known.
        self.records: dict[int, dict[str, tuple[set[Any], bool]] | None] = {}

    def record(self, seq: int, changes: list[Change] | None) -> None:
        """The commit of record ``seq`` changed ``changes`` (None: unknown, a migration's)."""
        keys: dict[str, tuple[set[Any], bool]] | None = None
        if changes is not None and len(changes) <= MOST_KEYS:
            keys = {}
            for coll, states in net_states(changes).items():
                new = all(old is None and doc is not None for old, doc, _ in states.values())
                keys[coll] = (set(states), new)
        with self.lock:
            self.records[seq] = keys
            while len(self.records) > KEEP:
                del self.records[next(iter(self.records))]

    def since(self, seq: int, collection: str) -> tuple[int, set[Any], bool] | None:
        """``(last, keys, all new)`` when every record after ``seq`` this store knows of is its own
        with known keys, up to ``last``: the keys of ``collection`` they changed. None when the
        record after ``seq`` is not known here (a table brought current by the log instead)."""
        with self.lock:
            changed: set[Any] = set()
            new = True
            at = seq + 1
            while at in self.records:
                rec = self.records[at]
                if rec is None:
                    return None
                keys, fresh = rec.get(collection, (set(), True))
                if keys:
                    new = new and fresh and not (keys & changed)
                    changed |= keys
                at += 1
        return None if at == seq + 1 else (at - 1, changed, new)


def probe(own: OwnCommits, counters: dict[str, int], coll: Readable, table: Table, hub: Any) -> bool:
    """Bring a warm ``table`` current with one statement, outside any transaction (a statement
    reads one snapshot): the change log's newest record alone when it is the table's, or with the
    rows this store's own commits changed since when the records since are all its own. False
    when another store or process committed since: the log must be read (:func:`catch_up`)."""
    since = own.since(table.seq, coll.name)
    if since is None:
        return bool(hub.high_watermark() == table.seq)
    last, keys, new = since
    if not keys:
        if hub.high_watermark() != last:
            return False
    else:
        from jarenlab.query.columnar.columns import merge_rows

        high, (pos, key_array, values) = read_changed(coll, table, sorted(keys))
        if high != last:
            return False
        merge_rows(table, pos, key_array, values, keys, fresh=new)
        counters["patches"] += 1
    table.seq = last
    return True


def read_changed(coll: Readable, table: Table, keys: list[Any]) -> tuple[int, Any]:
    """The change log's newest record and the rows of ``keys`` with ``table``'s columns (as
    :func:`~jarenlab.query.columnar.columns.read_rows` gives them), read by one statement, so in
    one snapshot: the rows are as of that record. The statement is made once per set of columns."""
    from jarenlab.query.columnar.columns import decode_rows, positioned
    from jarenlab.query.planner.sql import select_members

    db = coll.store.db
    fields = tuple(table.columns)
    if table.reader is None or table.reader[0] != fields:
        newest = db.backend.catalogue("live").text("high_watermark", quote=db.backend.quote)
        family = "integer" if coll.spec.key_type is int else "string"
        stmt = select_members(
            db.backend.dialect, coll.name, fields, family, probe=newest, positioned=positioned(coll)
        )
        table.reader = (fields, stmt)
    stmt = table.reader[1]
    rows = db.query(stmt.sql, stmt.bind({"keys": keys}))
    return int(rows[0][0]), decode_rows(coll, fields, [[r[1:] for r in rows if r[1] is not None]])


def catch_up(counters: dict[str, int], coll: Readable, table: Table, hub: Any, high: int) -> bool:
    """Inside a snapshot at record ``high``: patch ``table`` with the records after its ``seq``,
    read from the change log (False: rebuild it instead)."""
    from jarenlab.query.columnar.columns import patch

    changed: set[Any] = set()
    after = table.seq
    while after < high:
        try:
            records = hub.read(after=after, limit=1000)
        except JarenlabError:  # JD2128: the log no longer holds the next record
            return False
        if not records:
            return False
        for rec in records:
            if coll.name in rec.collections:
                if rec.changes is None:
                    return False  # compact: a bulk load or a migration names no keys
                changed.update(rec.changes.get(coll.name, {}))
            after = rec.seq
    if changed:
        patch(coll, table, changed)
        counters["patches"] += 1
    table.seq = high
    return True
