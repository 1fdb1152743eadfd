"""A store's columns: Arrow copies of schema-typed members, current as of the change log's newest record.

A collection's :class:`Table` holds its rows' storage positions and keys and one :class:`Column` per
member a query has read, all in storage order and all as of one change-log record (``seq``). Before
a query reads them, :meth:`Columns.current` brings the table to the newest committed record as of one
snapshot of the database (:mod:`.fresh`: one statement when nothing or only this store's own commits
came since; else the records since its ``seq`` name the keys that changed, every commit's, other
processes' included): the changed rows are read again by key and merged in by storage position
(appended rows grow the arrays in place, :mod:`.grow`), and a record that names no keys (a bulk load
or a migration, written compact) or one the log no longer holds rebuilds the table. A column's first read scans the member from the database, a batch at a
time. The columns live within a budget of bytes; the least recently used go first.

"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.errors import StoreError
from jarenlab.pointer import split
from jarenlab.query.columnar.grow import extend, extend_arrow, spare_bytes
from jarenlab.query.columnar.reads import FAMILIES
from jarenlab.query.planner.preds import Field
from jarenlab.query.planner.sql import select_members
from jarenlab.query.planner.translate import schema_family

#: Rows read from the database at a time while a column is built.
BATCH = 65_536

if TYPE_CHECKING:
    from jarenlab.query.planner.source import Readable


class Decline(Exception):
    """The columns cannot give the engine's exact answer for these values: SQL answers instead."""


@dataclass
class Column:
    """One member's values in storage order: ``values`` (a string member as text, an integer one as
    int64, a number one as int64 when every value is written as an integer, else as float64 with
    ``ints`` marking the integers), null where the member is missing. ``inexact`` says why the copy
    cannot give the engine's answer (the planner's SQL then answers)."""

    field: Field
    values: pa.Array
    ints: np.ndarray | None = None
    inexact: str | None = None
    hits: int = 0
    builds: int = 1
    patches: int = 0
    used: float = 0.0
    #: What is computed from ``values`` once per version of them (:class:`Kept`, by name).
    derived: dict[Any, Kept] = dataclasses.field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        """Its bytes: values, integer marks, and what is kept of them (key codes, instants)."""
        kept = sum(_bytes(k.value) for k in self.derived.values())
        ints = 0 if self.ints is None else int(self.ints.nbytes)
        return int(self.values.nbytes) + spare_bytes(self.values) + ints + kept


def values_at(col: Column, rows: np.ndarray | None) -> pa.Array:
    """A column's values at ``rows`` (positions in the table; all of them when None)."""
    return col.values if rows is None else col.values.take(pa.array(rows))


def pylist(col: Column, idx: np.ndarray | None = None) -> list[Any]:
    """The members at ``idx`` (all of them when None) as the engine holds them (None: missing; an
    integer written in a number member as an ``int``)."""
    whole = idx is None or (len(idx) == len(col.values) and bool(np.array_equal(idx, np.arange(len(idx)))))
    taken = col.values if whole else col.values.take(pa.array(idx))
    if not taken.null_count and taken.type in (pa.int64(), pa.float64()):
        values = taken.to_numpy().tolist()  # (numpy's tolist: several times Arrow's to_pylist)
    else:
        values = taken.to_pylist()
    if col.ints is None:
        return values
    ints = col.ints if idx is None else col.ints[idx]
    return [int(v) if v is not None and ints[i] else v for i, v in enumerate(values)]


#: The field of a member a ``$window`` or a ``$rolling`` computes, held as a :class:`Column`.
COMPUTED = Field((), None, None)


def computed(
    values: np.ndarray | pa.Array, missing: np.ndarray | None = None, ints: np.ndarray | None = None
) -> Column:
    """A computed member's values, one per row, as a column is held (so the items and the Arrow
    forms read it as they read a member): numbers from numpy without a copy, null where ``missing``
    (the row gets no member), ``ints`` marking the integers among floats."""
    if isinstance(values, np.ndarray):
        values = pa.array(values, mask=missing if missing is not None and missing.any() else None)
    return Column(COMPUTED, values, ints)


def taken(col: Column, idx: np.ndarray, missing: np.ndarray | None = None) -> Column:
    """``col`` at positions ``idx`` (no member where ``missing``), integer marks included.

    >>> c = taken(computed(np.array([1.5, 2.0]), ints=np.array([False, True])), np.array([1, 0, 9]), np.array([False, False, True]))
    >>> pylist(c)
    [2, 1.5, None]
    """
    at = idx if missing is None else np.where(missing, 0, idx)
    values = col.values.take(pa.array(at, mask=missing if missing is not None and missing.any() else None))
    ints = None
    if col.ints is not None:
        ints = col.ints[at] if len(col.ints) else np.zeros(len(at), dtype=bool)
        if missing is not None:
            ints &= ~missing
    return Column(col.field, values, ints, col.inexact)


def _bytes(value: Any) -> int:
    """The bytes of what a column keeps: arrays, or objects holding them (their ``codes``)."""
    if isinstance(value, pa.Array | np.ndarray):
        return int(value.nbytes)
    codes = getattr(value, "codes", None)
    return int(codes.nbytes) if isinstance(codes, np.ndarray) else 0


@dataclass
class Kept:
    """What is computed from a column's values once per version of them (the codes of a group key,
    the instants of date-times), and how it grows when rows are appended: ``grow(value, part)``
    with ``part`` a :class:`Column` of the appended rows (None: it is computed again)."""

    value: Any
    grow: Callable[[Any, Column], Any] | None = None


@dataclass
class Table:
    """A collection's columns, as of change-log record ``seq``."""

    name: str
    seq: int
    pos: np.ndarray
    #: The rows' keys; None where each row's key is its storage position (integer keys on both
    #: backends: SQLite's rowid and PostgreSQL's ``pos`` are the key), which is then not held twice.
    keys: pa.Array | None
    columns: dict[Field, Column] = field(default_factory=dict)
    #: The integer keys, sorted (made on the first patch): whether a changed key is held already.
    sorted_keys: np.ndarray | None = None
    #: The statement reading changed rows of these columns (:func:`read_changed`), and its fields.
    reader: tuple[tuple[Field, ...], Any] | None = None

    def key_array(self) -> pa.Array:
        return pa.array(self.pos) if self.keys is None else self.keys

    @property
    def nbytes(self) -> int:
        keys = 0 if self.keys is None else int(self.keys.nbytes)
        return int(self.pos.nbytes) + keys + sum(c.nbytes for c in self.columns.values())

    def __len__(self) -> int:
        return len(self.pos)


def frozen(table: Table, fields: Iterable[Field]) -> Table:
    """A copy of ``table`` holding ``fields`` as they are now: the same arrays, which later commits
    replace (:func:`merge_rows`) and never change in place, so the copy stays as of ``table.seq``."""
    cols = {
        f: Column(f, table.columns[f].values, table.columns[f].ints, table.columns[f].inexact) for f in fields
    }
    return Table(table.name, table.seq, table.pos, table.keys, cols)


def typed_fields(schema: Any, members: Iterable[str] | None, collection: str) -> list[Field]:
    """Fields of named members (names, or JSON pointers), each schema-typed as a string, integer or
    number; all top-level typed members when ``members`` is None. JD2161 names a member that is not."""
    if members is None:
        props = (schema or {}).get("properties", {}) if isinstance(schema, dict) else {}
        steps_list: list[tuple[str | int, ...]] = [
            (name,) for name in props if schema_family(schema, (name,)) in FAMILIES
        ]
    else:
        if isinstance(members, str):
            members = [members]
        steps_list = [tuple(split(m)) if m.startswith("/") else (m,) for m in members]
    out = []
    for steps in steps_list:
        family = schema_family(schema, steps)
        if family not in FAMILIES:
            raise StoreError(
                "JD2161",
                f"/{'/'.join(map(str, steps))} is not schema-typed as one string, integer or number: "
                "it has no column (declare its type in the schema)",
                collection=collection,
            )
        out.append(Field(steps, family, None))
    return out


# -- reading and merging ----------------------------------------------------------------------------
def read_rows(
    coll: Readable, fields: tuple[Field, ...], keyed: tuple[str, list[Any]] | None, bar: Any = None
) -> tuple[np.ndarray, pa.Array, list[Column]]:
    """Storage positions, keys and a column per field of every row (``keyed``: of those keys);
    ``bar`` (a progress bar) is told each batch's rows."""
    dialect = coll.store.backend.dialect
    stmt = select_members(
        dialect, coll.name, fields, None if keyed is None else keyed[0], positioned=positioned(coll)
    )
    params = stmt.bind({} if keyed is None else {"keys": keyed[1]})
    db = coll.store.db
    batches = db.stream(stmt.sql, params, BATCH) if keyed is None else iter([db.query(stmt.sql, params)])
    return decode_rows(coll, fields, batches, bar)


def decode_rows(
    coll: Readable, fields: tuple[Field, ...], batches: Iterable[Sequence[Any]], bar: Any = None
) -> tuple[np.ndarray, pa.Array, list[Column]]:
    """Positions, keys and a column per field from batches of ``select_members`` rows (of
    :func:`positioned` form where the collection's keys are their own positions)."""
    dialect = coll.store.backend.dialect
    own = positioned(coll)
    first = 1 if own else 2  # (the first member's cell)
    positions: list[np.ndarray] = []
    keys: list[pa.Array] = []
    parts: list[list[tuple[pa.Array, np.ndarray | None, str | None]]] = [[] for _ in fields]
    key_type = pa.int64() if coll.spec.key_type is int else pa.large_string()
    for rows in batches:
        if not rows:
            continue
        cells = list(zip(*rows))
        positions.append(np.asarray(cells[0], dtype=np.int64))
        if not own:
            keys.append(pa.array(cells[1], type=key_type))
        for i, f in enumerate(fields):
            parts[i].append(_cells(f, cells[first + i], dialect.integer_limit))
        if bar is not None:
            bar.update(len(rows))
    pos = np.concatenate(positions) if positions else np.empty(0, dtype=np.int64)
    if own:
        key_array = pa.array(pos, type=key_type)
    else:
        key_array = pa.concat_arrays(keys) if keys else pa.array([], type=key_type)
    return pos, key_array, [_joined(f, p) for f, p in zip(fields, parts)]


def positioned(coll: Readable) -> bool:
    """Whether the collection's keys are their own storage positions (integer keys, on both
    backends): its rows are read with the key once (:func:`select_members`' ``positioned``)."""
    return bool(coll.store.backend.storage_order(coll.spec.key_type) == "key")


def _cells(f: Field, cells: Sequence[Any], limit: int) -> tuple[pa.Array, np.ndarray | None, str | None]:
    """One batch of a member's values: (array, integer marks of a float array, why inexact).

    A backend that hands numbers over as the database read them (SQLite's ``json_extract``) reads
    an integer beyond 64 bits as a rounded real: a real at the dialect's ``limit`` or beyond may be
    one, so the column cannot answer. One that hands over the JSON text as the document writes it
    (PostgreSQL) is read here as the engine reads it."""
    if f.family == "string":
        return pa.array(cells, type=pa.large_string()), None, None
    # A backend hands over every number as its text (jsonb) or none: the first present one says.
    texts = next((type(c) is str for c in cells if c is not None), False)
    if texts:
        cells = _numbers(cells)
    try:
        arr = pa.array(cells)
    except OverflowError:
        return pa.nulls(len(cells), pa.int64()), None, "a number beyond 64 bits"
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # integers beside floats a double cannot hold
        arr = None
    if arr is not None and (arr.type == pa.null() or arr.type == pa.int64()):
        return arr.cast(pa.int64()), None, None
    if arr is not None and arr.type != pa.float64():
        return pa.nulls(len(cells), pa.int64()), None, f"a value of type {arr.type} in a {f.family} member"
    if f.family == "integer":
        return (
            pa.nulls(len(cells), pa.int64()),
            None,
            "a number written as a float (2.0) in an integer member",
        )
    if arr is None:
        if any(type(v) is int and float(v) != v for v in cells):
            return pa.nulls(len(cells), pa.float64()), None, "an integer a double cannot hold beside floats"
        arr = pa.array([None if v is None else float(v) for v in cells], type=pa.float64())
    raw = arr.to_numpy(zero_copy_only=False)
    # Only a whole value can have been written as an integer: look at those alone.
    whole = np.flatnonzero(raw == np.floor(raw))
    ints = np.zeros(len(cells), dtype=bool)
    if whole.size:
        ints[whole] = np.fromiter(
            (type(cells[i]) is int for i in whole.tolist()), dtype=bool, count=whole.size
        )
    if not texts and (np.abs(raw) >= float(limit)).any():  # (an infinity too; NaN compares false)
        return arr, ints, "a number of the database's integer limit or more (it may be a rounded integer)"
    return arr, (ints if ints.any() else None), None


def _numbers(texts: Sequence[str | None]) -> list[Any]:
    """Numbers' JSON texts (None: missing) as the engine reads them: parsed as one JSON array
    (one call, not one per value), or one at a time where that fails (beyond 64 bits)."""
    try:
        got = orjson.loads("[" + ",".join("null" if t is None else t for t in texts) + "]")
    except orjson.JSONDecodeError:
        got = None
    if got is None or len(got) != len(texts):
        return [None if t is None else _number(t) for t in texts]
    return list(got)


def _number(text: str) -> Any:
    """A number's JSON text as the engine reads it (an integer beyond 64 bits included)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _joined(f: Field, parts: list[tuple[pa.Array, np.ndarray | None, str | None]]) -> Column:
    """One column from its batches: int64 when every batch is, else float64 with integer marks."""
    why = next((w for _, _, w in parts if w), None)
    if not parts:
        kind = pa.large_string() if f.family == "string" else pa.int64()
        return Column(f, pa.array([], type=kind))
    if f.family == "string" or all(a.type == pa.int64() for a, _, _ in parts):
        return Column(f, pa.concat_arrays([a for a, _, _ in parts]), None, why)
    arrays, marks = [], []
    for a, ints, _ in parts:
        if a.type == pa.int64():
            values = pc.fill_null(a, 0).to_numpy(zero_copy_only=False)
            if (values.astype(np.float64).astype(np.int64) != values).any():
                why = why or "an integer a double cannot hold beside floats"
            arrays.append(a.cast(pa.float64(), safe=False))
            marks.append(np.ones(len(a), dtype=bool))
        else:
            arrays.append(a)
            marks.append(ints if ints is not None else np.zeros(len(a), dtype=bool))
    ints = np.concatenate(marks)
    return Column(f, pa.concat_arrays(arrays), ints if ints.any() else None, why)


def scan(coll: Readable, fields: tuple[Field, ...], seq: int, bar: Any = None) -> Table:
    """A table of ``fields`` over every row, as of change-log record ``seq`` (read in one snapshot);
    ``bar`` is told the rows as they are read."""
    pos, keys, values = read_rows(coll, fields, None, bar)
    held = None if _keyed_by_position(pos, keys) else keys
    return Table(coll.name, seq, pos, held, dict(zip(fields, values)))


def _keyed_by_position(pos: np.ndarray, keys: pa.Array) -> bool:
    """Every row's key is its storage position."""
    return keys.type == pa.int64() and np.array_equal(pos, keys.to_numpy(zero_copy_only=False))


def patch(coll: Readable, table: Table, changed: set[Any]) -> None:
    """Bring ``table`` up to date for the ``changed`` keys: their rows read again and merged in."""
    family = "integer" if coll.spec.key_type is int else "string"
    pos, keys, values = read_rows(coll, tuple(table.columns), (family, sorted(changed)))
    merge_rows(table, pos, keys, values, changed)


def bits(arr: Any) -> np.ndarray:
    """A boolean Arrow array as a numpy bool array, null read as false (unpacked from its bitmap:
    a hundred times faster than ``to_numpy`` on a million values)."""
    if arr.null_count:
        arr = pc.fill_null(arr, False)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 0:
        return np.zeros(0, dtype=bool)
    unpacked = np.unpackbits(np.frombuffer(arr.buffers()[1], dtype=np.uint8), bitorder="little")
    return unpacked[arr.offset : arr.offset + len(arr)].view(bool)


def numbers(col: Column) -> tuple[np.ndarray, np.ndarray | None]:
    """An int64 or float64 column as numpy: its values (a view of the Arrow buffer, whatever stands in
    a missing member's slot) and where members are present (None: everywhere). Kept per version of
    the values, so a comparison is one numpy pass.

    >>> f = Field(("n",), "integer", None)
    >>> values, present = numbers(Column(f, pa.array([4, None, 6])))
    >>> values[[0, 2]].tolist(), present.tolist()
    ([4, 6], [True, False, True])
    """
    got = col.derived.get("numbers")
    if got is None:
        v = col.values
        data = np.frombuffer(v.buffers()[1], dtype=v.type.to_pandas_dtype())[v.offset : v.offset + len(v)]
        present = bits(v.is_valid()) if v.null_count else None
        got = col.derived["numbers"] = Kept((data, present))
    return got.value


def _held(table: Table, changed: set[Any]) -> np.ndarray | None:
    """Where the table holds rows of the ``changed`` keys (None: it holds none of them); integer
    keys are looked up in a sorted copy, not hashed again."""
    keys = table.key_array()
    if keys.type == pa.int64():
        if table.sorted_keys is None:
            table.sorted_keys = (
                table.pos if table.keys is None else np.sort(keys.to_numpy(zero_copy_only=False))
            )
        wanted = np.fromiter(changed, dtype=np.int64, count=len(changed))
        at = np.searchsorted(table.sorted_keys, wanted)
        inside = at < len(table.sorted_keys)
        if not (table.sorted_keys[at[inside]] == wanted[inside]).any():
            return None
    gone = bits(pc.is_in(keys, value_set=pa.array(list(changed), type=keys.type)))
    return gone if gone.any() else None


def _append(table: Table, pos: np.ndarray, keys: pa.Array, values: list[Column]) -> bool:
    """Append rows that come after every held row (a commit of inserts): the columns and what is
    kept of them grow, nothing is read or hashed again. False when a column's type would change."""
    grown = []
    for (f, col), new in zip(table.columns.items(), values):
        if new.values.type != col.values.type and len(new.values) != new.values.null_count:
            return False
        cast = new.values if new.values.type == col.values.type else new.values.cast(col.values.type)
        part = Column(f, cast, new.ints, new.inexact)
        ints = col.ints
        if ints is not None or part.ints is not None:
            old = ints if ints is not None else np.zeros(len(col.values), dtype=bool)
            ints = extend(old, part.ints if part.ints is not None else np.zeros(len(part.values), dtype=bool))
        derived = {}
        for name, kept in col.derived.items():
            if kept.grow is not None:
                derived[name] = Kept(kept.grow(kept.value, part), kept.grow)
        grown.append((col, extend_arrow(col.values, part.values), ints, col.inexact or part.inexact, derived))
    if table.keys is not None or not _keyed_by_position(pos, keys):
        table.keys = extend_arrow(table.key_array(), keys.cast(table.key_array().type))
    table.pos = extend(table.pos, pos)
    if table.keys is None:
        table.sorted_keys = table.pos
    elif table.sorted_keys is not None:
        added = np.sort(keys.cast(pa.int64()).to_numpy(zero_copy_only=False))
        if not len(added) or not len(table.sorted_keys) or added[0] > table.sorted_keys[-1]:
            table.sorted_keys = extend(table.sorted_keys, added)
        else:
            at = np.searchsorted(table.sorted_keys, added)
            table.sorted_keys = np.insert(table.sorted_keys, at, added)
    for col, values_, ints, inexact, derived in grown:
        col.values, col.ints, col.inexact, col.derived = values_, ints, inexact, derived
        col.patches += 1
    return True


def merge_rows(
    table: Table,
    pos: np.ndarray,
    keys: pa.Array,
    values: list[Column],
    changed: set[Any],
    *,
    fresh: bool = False,
) -> None:
    """Replace the rows of the ``changed`` keys with their rows read again (``pos``, ``keys``,
    ``values``: those still present, in storage order), each at its storage position. New rows
    after every held one are appended (:func:`_append`). ``fresh``: the keys are known to be new
    (inserted where no document was), so the table holds none of them."""
    held = None if fresh else _held(table, changed)
    after = len(table.pos) == 0 or len(pos) == 0 or pos[0] > table.pos[-1]
    if held is None and after and _append(table, pos, keys, values):
        return
    kept = np.arange(len(table.pos)) if held is None else np.flatnonzero(~held)
    kept_pos = table.pos[kept]
    at = np.searchsorted(kept_pos, pos) + np.arange(len(pos))  # each new row's place in the result
    n = len(kept) + len(pos)
    from_new = np.zeros(n, dtype=bool)
    from_new[at] = True
    # An index into (kept rows, then new rows) for each place of the result.
    order = np.empty(n, dtype=np.int64)
    order[~from_new] = kept
    order[from_new] = len(table.pos) + np.arange(len(pos))
    taking = pa.array(order)
    new_pos = np.concatenate([table.pos, pos])[order]
    held_keys = table.key_array()
    new_keys: pa.Array | None = pa.concat_arrays([held_keys, keys.cast(held_keys.type)]).take(taking)
    if table.keys is None and _keyed_by_position(pos, keys):
        new_keys = None
    merged = []
    for (f, col), new in zip(table.columns.items(), values):
        both = _joined(f, [(col.values, col.ints, col.inexact), (new.values, new.ints, new.inexact)])
        merged.append(
            (col, both.values.take(taking), None if both.ints is None else both.ints[order], both.inexact)
        )
    # Everything computed: now the table changes, all at once.
    table.pos, table.keys, table.sorted_keys = new_pos, new_keys, None
    for col, values_, ints, inexact in merged:
        col.values, col.ints, col.inexact = values_, ints, inexact
        col.derived = {}
        col.patches += 1
