"""The declared non-overlap constraint on intervals.

A collection may declare ``intervals: [{start, end, within?, scope?, when?}]``. Among the records
that match ``when``, no two with equal ``within`` values (and, with ``scope: "owner"``, the same
owner) may overlap as half-open ``[start, end)``; touching is allowed. Bounds are both numbers or
both UTC date-times ending in ``Z``, compared as epoch milliseconds.

Each declaration gets one partial expression index keyed by (owner?, within..., start). Stored
intervals never overlap, so the only record a write can clash with is the one that starts last
before the new end: one indexed lookup inside the write transaction. The backend builds the index
and the lookup from the declaration (``backend.interval_statements``, for SQLite in
``jarenlab/backends/sqlite/intervals.py``); the declarations are the model's
(:mod:`jarenlab.model.intervals`); this module reads bounds and runs the check.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"rooms": {"key": "/id",
...     "schema": {"type": "object", "required": ["id", "start", "end"], "properties": {
...         "id": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"}}},
...     "intervals": [{"start": "/start", "end": "/end"}]}}}
>>> with jl.open(model=model) as store:
...     store["rooms"].insert({"id": "a", "start": 0, "end": 10})
...     store["rooms"].insert({"id": "b", "start": 10, "end": 20})
...     try:
...         store["rooms"].insert({"id": "c", "start": 5, "end": 12})
...     except jl.JarenlabError as err:
...         print(err.code, err.conflict["key"])
'a'
'b'
JD2090 b
"""

from __future__ import annotations

import datetime
import operator
import re
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.errors import IntervalConflict, StoreError
from jarenlab.model.intervals import IntervalSpec, Segments
from jarenlab.pointer import of as pointer_of

if TYPE_CHECKING:
    from jarenlab.backends.base import IntervalStatements
    from jarenlab.database import Database
    from jarenlab.model import CollectionSpec

#: Called inside the write transaction after each row is written: (key, doc or None for a delete).
WriteCheck = Callable[[Any, "dict[str, Any] | None"], None]

_UTC = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]+))?Z\Z")
_from_iso = datetime.datetime.fromisoformat
_EPOCH = datetime.datetime(1970, 1, 1)


# -- values ----------------------------------------------------------------------------------------
def _pointer(segments: Segments) -> str:
    return pointer_of(segments)


def _get(doc: Any, segments: Segments) -> Any:
    for seg in segments:
        doc = doc[seg]
    return doc


def instant(value: Any, kind: str, *, doc_path: str = "") -> int | float:
    """A bound as a comparable value: the number itself, or UTC date-time as epoch milliseconds.

    >>> instant("1970-01-01T00:00:01.5Z", "date-time"), instant("1970-01-01T00:00:01.500000Z", "date-time")
    (1500, 1500)
    """
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise StoreError("JD2091", f"bound {value!r} must be a number", doc_path=doc_path)
        return value
    m = _UTC.match(value) if type(value) is str else None
    if m is None:
        raise StoreError(
            "JD2091",
            f"bound {value!r} must be a UTC date-time ending in Z (YYYY-MM-DDTHH:MM:SS[.sss]Z); offsets are refused",
            doc_path=doc_path,
        )
    try:
        since = _from_iso(m[1]) - _EPOCH
    except ValueError as exc:
        raise StoreError(
            "JD2091", f"bound {value!r} is not a valid date-time ({exc})", doc_path=doc_path
        ) from None
    ms, frac = 0, m[2]
    if frac:
        if frac[3:].strip("0"):
            raise StoreError(
                "JD2091", f"bound {value!r} has more than millisecond precision", doc_path=doc_path
            )
        ms = int(frac[:3].ljust(3, "0"))
    return since.days * 86_400_000 + since.seconds * 1000 + ms


def _bound(doc: dict[str, Any], decl: IntervalSpec, segments: Segments) -> int | float:
    try:
        return instant(_get(doc, segments), decl.kind)
    except StoreError as err:
        raise StoreError(err.code, err.reason, doc_path=_pointer(segments)) from None


def bounds(decl: IntervalSpec, doc: dict[str, Any]) -> tuple[int | float, int | float]:
    """(start, end) of a record as comparable values; JD2091 unless both are valid and start < end."""
    lo, hi = _bound(doc, decl, decl.start), _bound(doc, decl, decl.end)
    if not lo < hi:
        raise StoreError(
            "JD2091",
            f"start {_get(doc, decl.start)!r} must be before end {_get(doc, decl.end)!r}",
            doc_path=_pointer(decl.start),
        )
    return lo, hi


def _matches(decl: IntervalSpec, doc: dict[str, Any]) -> bool:
    """Does this record count (the ``when`` filter, as the declaration's partial index reads it)?"""
    for (member,), want in decl.when:
        if member not in doc:
            return False
        have = doc[member]
        if want is None or isinstance(want, bool | str):
            if type(have) is not type(want) or have != want:
                return False
        elif isinstance(have, bool) or not isinstance(have, int | float) or have != want:
            return False
    return True


# -- the check -------------------------------------------------------------------------------------
def _values_of(pointers: list[Segments]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A function reading these members of a document as a tuple (top-level ones with one lookup)."""
    if all(len(p) == 1 for p in pointers):
        members = [p[0] for p in pointers]
        if len(members) == 1:
            (member,) = members
            return lambda doc: (doc[member],)
        if len(members) > 1:
            return operator.itemgetter(*members)
    return lambda doc: tuple(_get(doc, p) for p in pointers)


def _fast_ms(value: Any) -> int | None:
    """:func:`instant` for a plainly valid date-time (no fraction or exactly milliseconds); None otherwise."""
    m = _UTC.match(value) if type(value) is str else None
    if m is None:
        return None
    frac = m[2]
    if frac is not None and len(frac) != 3:
        return None
    try:
        since = _from_iso(m[1]) - _EPOCH
    except ValueError:
        return None
    return since.days * 86_400_000 + since.seconds * 1000 + (int(frac) if frac else 0)


def _fast_number(value: Any) -> int | float | None:
    """:func:`instant` for an int or float bound; None for anything else (the full check decides)."""
    return value if type(value) is int or type(value) is float else None


def _grouping(decl: IntervalSpec) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """The values a record's group is compared by: its owner (scope ``"owner"``), then ``within``."""
    return _values_of(([decl.owner] if decl.owner else []) + list(decl.within))


#: The owner of a stored record by its key (None: unowned, or no such record): the collection's
#: :meth:`~jarenlab.collection.Collection.owner_of`, so the check never reads its table itself.
OwnerOf = Callable[[Any], Any]


def write_check(spec: CollectionSpec, db: Database, owner_of: OwnerOf) -> WriteCheck:
    """The check :class:`~jarenlab.collection.Collection` runs after each written row.

    Raises JD2091 for invalid bounds and :class:`IntervalConflict` (JD2090) for a clash; the
    write transaction then rolls back. ``err.conflict`` is ``{"key", "declaration"}`` and
    ``err.conflict_owner`` the other record's owner (owner views redact both). The backend builds
    each declaration's lookup once, here. Where the database enforces a declaration itself
    (``IntervalStatements.enforced``) the check only reads the bounds: an overlapping write has
    already been refused, and :func:`refusal` names the clash. ``owner_of`` reads the other
    record's owner (:data:`OwnerOf`).
    """
    plans = []
    for decl in spec.intervals:
        statements = db.backend.interval_statements(spec.name, decl)
        plans.append(
            (
                decl,
                None if statements.enforced else statements.conflict,
                _grouping(decl),
                _values_of([decl.start, decl.end]),
                _fast_ms if decl.kind == "date-time" else _fast_number,
            )
        )
    one_built = db.one_built

    def check(key: Any, doc: dict[str, Any] | None) -> None:
        if doc is None:
            return
        for decl, sql, grouping, ends, fast in plans:
            lo, hi = ends(doc)
            lo, hi = fast(lo), fast(hi)
            if lo is None or hi is None or not lo < hi:  # not plainly valid: the full check decides
                try:
                    lo, hi = bounds(decl, doc)
                except StoreError as err:
                    raise StoreError(
                        err.code, err.reason, doc_path=err.doc_path, collection=spec.name, key=key
                    ) from None
            if sql is None or (decl.when and not _matches(decl, doc)):
                continue
            row = one_built(sql, (*grouping(doc), hi, key, lo))
            if row is not None:
                raise conflict_error(spec.name, key, row[0], decl, owner_of(row[0]), doc)

    return check


#: Locks the groups of the rows about to be written (see :func:`write_lock`).
WriteLock = Callable[[Iterable["dict[str, Any]"]], None]

#: Each declaration's groups share this many locks (a write takes one per declaration it counts for).
_LOCKS = 64


def _lock_value(value: Any) -> Any:
    """A group value as its lock reads it: numbers as floats, so 1 and 1.0 take the same lock."""
    return float(value) if type(value) is int or type(value) is float else value


def write_lock(spec: CollectionSpec, db: Database) -> WriteLock | None:
    """Where the database enforces a collection's declarations itself: what the collection calls
    inside the write transaction *before* writing rows, with their documents (None elsewhere).

    It takes a transaction-scoped lock (``db.serialize``) on each group the rows count for, in a
    fixed order, so writers of one group take turns: the second waits for the first to commit,
    then finds its row and is refused, or writes. Without it two writers of overlapping intervals
    could each write their row and then wait for the other's (a deadlock the database breaks by
    failing one, again and again while more writers arrive). The groups of a declaration share
    :data:`_LOCKS` locks, so a batch takes at most that many per declaration; two groups that
    share a lock only take turns.
    """
    decls = [
        (decl, _grouping(decl))
        for decl in spec.intervals
        if db.backend.interval_statements(spec.name, decl).enforced
    ]
    if not decls:
        return None
    serialize = db.serialize
    prefix = f"intervals/{spec.name}/"

    def lock(docs: Iterable[dict[str, Any]]) -> None:
        names = set()
        for doc in docs:
            for decl, grouping in decls:
                if decl.when and not _matches(decl, doc):
                    continue
                group = orjson.dumps([_lock_value(v) for v in grouping(doc)])
                names.add(f"{prefix}{decl.position}/{zlib.crc32(group) % _LOCKS}")
        for name in sorted(names):
            serialize(name)

    return lock


#: Names the clash of rows the database refused (see :func:`refusal`).
Refusal = Callable[[Sequence[tuple[Any, "dict[str, Any]"]]], IntervalConflict]


def refusal(spec: CollectionSpec, db: Database, owner_of: OwnerOf) -> Refusal:
    """What names the clash when the database itself refused a write (an error with condition
    ``"exclusion"``: a declaration it enforces), called with the written ``(key, doc)`` rows once
    the write was undone. Returns the JD2090 :class:`IntervalConflict` that :func:`write_check`
    would have raised: the first row (in order) that overlaps a stored record, found by the
    declaration's lookup, else two rows of the write that overlap each other.

    The database's own error is never passed on: it prints the other record's values, which an
    owner view must not show. If the other record changed before it could be named, the error
    names none (``err.conflict is None``).
    """
    plans = [
        (decl, db.backend.interval_statements(spec.name, decl).conflict, _grouping(decl))
        for decl in spec.intervals
    ]
    owner_member = spec.owner[1:] if spec.owner else None

    def refused(written: Sequence[tuple[Any, dict[str, Any]]]) -> IntervalConflict:
        counted: list[tuple[IntervalSpec, tuple[Any, ...], int | float, int | float, int]] = []
        for i, (key, doc) in enumerate(written):
            for decl, sql, grouping in plans:
                if decl.when and not _matches(decl, doc):
                    continue
                try:
                    lo, hi = bounds(decl, doc)
                except StoreError:
                    continue  # invalid bounds hold no slot
                group = grouping(doc)
                row = db.one_built(sql, (*group, hi, key, lo))
                if row is not None:
                    return conflict_error(spec.name, key, row[0], decl, owner_of(row[0]), doc)
                counted.append((decl, group, lo, hi, i))
        clash = _first_overlap(counted)
        if clash is not None:
            decl, mine, other = clash
            (key, doc), (other_key, other_doc) = written[mine], written[other]
            other_owner = other_doc.get(owner_member) if owner_member else None
            return conflict_error(spec.name, key, other_key, decl, other_owner, doc)
        err = IntervalConflict(
            "JD2090",
            "the interval overlaps a record that changed before it could be named; nothing was written",
            collection=spec.name,
            key=written[0][0] if len(written) == 1 else None,
        )
        err.conflict = None
        err.conflict_owner = None
        return err

    return refused


def _first_overlap(
    counted: list[tuple[IntervalSpec, tuple[Any, ...], int | float, int | float, int]],
) -> tuple[IntervalSpec, int, int] | None:
    """Two overlapping intervals among ``(decl, group, start, end, row)``: (decl, the later row, the
    earlier row), or None. One sort and one sweep per group, whatever the batch's size."""
    groups: dict[tuple[int, tuple[Any, ...]], list[tuple[int | float, int | float, int]]] = {}
    decls = {}
    for decl, group, lo, hi, row in counted:
        groups.setdefault((decl.position, group), []).append((lo, hi, row))
        decls[decl.position] = decl
    for (position, _), spans in groups.items():
        spans.sort()
        reach: tuple[int | float, int] | None = None  # the furthest end so far, and its row
        for lo, hi, row in spans:
            if reach is not None and lo < reach[0]:
                return decls[position], max(row, reach[1]), min(row, reach[1])
            if reach is None or hi > reach[0]:
                reach = (hi, row)
    return None


def describe(decl: IntervalSpec, doc: dict[str, Any]) -> str:
    """The written record's interval in words: its bounds and the ``within`` values it shares.

    >>> d = IntervalSpec(0, ("start",), ("end",), "number", (("gate",),), "collection", (), None)
    >>> describe(d, {"start": 1, "end": 3, "gate": "A1"})
    "[1, 3) with gate='A1'"
    """
    text = f"[{_get(doc, decl.start)}, {_get(doc, decl.end)})"
    shared = [f"{'/'.join(map(str, segs))}={_get(doc, segs)!r}" for segs in decl.within]
    return text + (f" with {', '.join(shared)}" if shared else "")


def conflict_error(
    collection: str,
    key: Any,
    other: Any,
    decl: IntervalSpec,
    other_owner: Any = None,
    doc: dict[str, Any] | None = None,
) -> IntervalConflict:
    """The JD2090 error naming the written interval and the record it overlaps."""
    mine = f"the interval {describe(decl, doc)}" if doc is not None else "the interval"
    err = IntervalConflict(
        "JD2090",
        f"{mine} overlaps record {other!r}; nothing was written",
        collection=collection,
        key=key,
    )
    err.conflict = {"key": other, "declaration": decl.position}
    err.conflict_owner = other_owner
    return err


def check_existing(db: Database, spec: CollectionSpec, collection: str | None = None) -> None:
    """Check every stored record against the collection's declarations (activation check).

    Raises JD2091 naming the first record with invalid bounds, or IntervalConflict naming two
    overlapping records. ``store.migrate`` runs this when a migration adds a declaration to a
    collection (or transforms one that has declarations), before it creates the declaration's
    index or constraint; ``spec`` is then the collection's new declaration (its table already
    under ``spec.name``), where the store still holds the old one; ``collection`` names it in errors
    (``spec.name`` when not given).
    """
    for decl in spec.intervals:
        statements = db.backend.interval_statements(spec.name, decl)
        with db.translating(collection=collection or spec.name):
            _check_stored(db, spec, decl, statements)


def _check_stored(
    db: Database, spec: CollectionSpec, decl: IntervalSpec, statements: IntervalStatements
) -> None:
    bad = db.one_built(statements.invalid)
    if bad is not None:
        try:
            bounds(decl, orjson.loads(bad[1]))
        except StoreError as err:
            raise StoreError(
                err.code,
                f"stored record {bad[0]!r}: {err.reason}",
                doc_path=err.doc_path,
                collection=spec.name,
                key=bad[0],
            ) from None
    row = db.one_built(statements.overlap)
    if row is not None:
        clash = IntervalConflict(
            "JD2090",
            f"stored records {row[1]!r} and {row[0]!r} overlap (declaration {decl.position})",
            collection=spec.name,
            key=row[0],
        )
        clash.conflict = {"key": row[1], "declaration": decl.position}
        raise clash
