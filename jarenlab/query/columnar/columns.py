"""A store's columns: Arrow copies of schema-typed members, current as of the change log's newest record.

A collection's :class:`Table` holds its rows' storage positions and keys and one :class:`Column` per
member a query has read, all in storage order and all as of one change-log record (``seq``). Before
a query reads them, :meth:`Columns.current` brings the table to the newest committed record inside one
snapshot of the database: the records since its ``seq`` name the keys that changed (every commit's,
other processes' included), their rows are read again by key and merged in by storage position, and
a record that names no keys (a bulk load or a migration, written compact) or one the log no longer
holds rebuilds the table. A column's first read scans the member from the database, a batch at a
time. The columns live within a budget of bytes; the least recently used go first.

"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.errors import StoreError
from jarenlab.pointer import split
from jarenlab.query.columnar.reads import FAMILIES
from jarenlab.query.planner.preds import Field
from jarenlab.query.planner.sql import select_members
from jarenlab.query.planner.translate import schema_family

#: Rows read from the database at a time while a column is built.
BATCH = 65_536

if TYPE_CHECKING:
    from jarenlab.query.planner.source import Readable


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

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes) + (0 if self.ints is None else int(self.ints.nbytes))


@dataclass
class Table:
    """A collection's columns, as of change-log record ``seq``."""

    name: str
    seq: int
    pos: np.ndarray
    keys: pa.Array
    columns: dict[Field, Column] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        return int(self.pos.nbytes) + int(self.keys.nbytes) + sum(c.nbytes for c in self.columns.values())

    def __len__(self) -> int:
        return len(self.pos)


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
    coll: Readable, fields: tuple[Field, ...], keyed: tuple[str, list[Any]] | None
) -> tuple[np.ndarray, pa.Array, list[Column]]:
    """Storage positions, keys and a column per field of every row (``keyed``: of those keys)."""
    dialect = coll.store.backend.dialect
    stmt = select_members(dialect, coll.name, fields, None if keyed is None else keyed[0])
    params = stmt.bind({} if keyed is None else {"keys": keyed[1]})
    positions: list[np.ndarray] = []
    keys: list[pa.Array] = []
    parts: list[list[tuple[pa.Array, np.ndarray | None, str | None]]] = [[] for _ in fields]
    key_type = pa.int64() if coll.spec.key_type is int else pa.large_string()
    for rows in coll.store.db.stream(stmt.sql, params, BATCH):
        cells = list(zip(*rows))
        positions.append(np.asarray(cells[0], dtype=np.int64))
        keys.append(pa.array(cells[1], type=key_type))
        for i, f in enumerate(fields):
            parts[i].append(_cells(f, cells[2 + i], dialect.integer_limit))
    pos = np.concatenate(positions) if positions else np.empty(0, dtype=np.int64)
    key_array = pa.concat_arrays(keys) if keys else pa.array([], type=key_type)
    return pos, key_array, [_joined(f, p) for f, p in zip(fields, parts)]


def _cells(f: Field, cells: Sequence[Any], limit: int) -> tuple[pa.Array, np.ndarray | None, str | None]:
    """One batch of a member's values: (array, integer marks of a float array, why inexact).

    A backend that hands numbers over as the database read them (SQLite's ``json_extract``) reads
    an integer beyond 64 bits as a rounded real: a real at the dialect's ``limit`` or beyond may be
    one, so the column cannot answer. One that hands over the JSON text (PostgreSQL's ``jsonb``) is
    read here as the engine reads it."""
    if f.family == "string":
        return pa.array(cells, type=pa.large_string()), None, None
    texts = any(type(c) is str for c in cells)
    if texts:
        cells = [None if c is None else _number(c) for c in cells]
    try:
        arr = pa.array(cells)
    except OverflowError:
        return pa.nulls(len(cells), pa.int64()), None, "a number beyond 64 bits"
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # integers beside floats that a double cannot hold
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
    ints = np.fromiter((type(v) is int for v in cells), dtype=bool, count=len(cells))
    if arr is None:
        if any(type(v) is int and float(v) != v for v in cells):
            return pa.nulls(len(cells), pa.float64()), None, "an integer a double cannot hold beside floats"
        arr = pa.array([None if v is None else float(v) for v in cells], type=pa.float64())
    values = np.abs(np.nan_to_num(arr.to_numpy(zero_copy_only=False)))
    if not texts and (values >= float(limit)).any():
        return arr, ints, "a number of the database's integer limit or more (it may be a rounded integer)"
    return arr, (ints if ints.any() else None), None


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


def scan(coll: Readable, fields: tuple[Field, ...], seq: int) -> Table:
    """A table of ``fields`` over every row, as of change-log record ``seq`` (read in one snapshot)."""
    pos, keys, values = read_rows(coll, fields, None)
    return Table(coll.name, seq, pos, keys, dict(zip(fields, values)))


def patch(coll: Readable, table: Table, changed: set[Any]) -> None:
    """Bring ``table`` up to date for the ``changed`` keys: their rows read again and merged in."""
    family = "number" if coll.spec.key_type is int else "string"
    pos, keys, values = read_rows(coll, tuple(table.columns), (family, sorted(changed)))
    merge_rows(table, pos, keys, values, changed)


def merge_rows(
    table: Table, pos: np.ndarray, keys: pa.Array, values: list[Column], changed: set[Any]
) -> None:
    """Replace the rows of the ``changed`` keys with their rows read again (``pos``, ``keys``,
    ``values``: those still present, in storage order), each at its storage position."""
    gone = pc.is_in(table.keys, value_set=pa.array(list(changed), type=table.keys.type))
    kept = np.flatnonzero(~gone.to_numpy(zero_copy_only=False))
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
    new_keys = pa.concat_arrays([table.keys, keys.cast(table.keys.type)]).take(taking)
    merged = []
    for (f, col), new in zip(table.columns.items(), values):
        both = _joined(f, [(col.values, col.ints, col.inexact), (new.values, new.ints, new.inexact)])
        merged.append(
            (col, both.values.take(taking), None if both.ints is None else both.ints[order], both.inexact)
        )
    # Everything computed: now the table changes, all at once.
    table.pos, table.keys = new_pos, new_keys
    for col, values_, ints, inexact in merged:
        col.values, col.ints, col.inexact = values_, ints, inexact
        col.patches += 1
