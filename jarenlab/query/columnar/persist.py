"""Columns saved beside the database, so a reopened store starts warm.

``store.columns.save()`` writes each collection's table as one Arrow IPC file (``<name>.arrow`` in the
folder: ``<database file>.columns`` for a SQLite store, a folder given for PostgreSQL), stamped with
what it reflects: the change-log record (its number, time and source, so a record of another history
with the same number does not pass), the collection's schema, and the file format. A reopened store
reads the file the first time a question needs the collection's columns, checks the stamp against
its own database, and patches the table forward from the change log as after any commit. A stamp
that does not match, a log that no longer holds the stamped record, or a file that cannot be read
is never trusted: the table is built again from the database and ``stats()["restored"]`` says why.
A file is written whole to a temporary name and then renamed, so a save cut short leaves the old
file or none, never half of one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.ipc as ipc

from jarenlab.errors import JarenlabError
from jarenlab.query.columnar.columns import Column, Table
from jarenlab.query.planner.preds import Field

#: The layout of a saved table; a file of another layout is rebuilt.
FORMAT = 1
_STAMP = b"jarenlab.columns"


class Untrusted(Exception):
    """A saved table that cannot be used (the reason is the message); the table is built again."""


def stamp(store: Any, collection: str, seq: int) -> dict[str, Any]:
    """What a table as of change-log record ``seq`` reflects (see the module docstring)."""
    record = None
    if seq > 0:
        try:
            found = store.subsystem("live").read(after=seq - 1, limit=1)
        except JarenlabError:  # the log no longer holds it
            found = []
        if found and found[0].seq == seq:
            rec = found[0]
            record = [rec.at_ms, rec.source, list(rec.collections)]
    spec = store[collection].spec
    return {
        "format": FORMAT,
        "collection": collection,
        "seq": seq,
        "record": record,
        "schema": orjson.dumps(spec.schema, option=orjson.OPT_SORT_KEYS).decode(),
        "key": spec.key_type.__name__,
    }


def _name(f: Field) -> str:
    return orjson.dumps([list(f.steps), f.family]).decode()


def saved_file(folder: Path, collection: str) -> Path:
    """Where ``collection``'s table is saved in ``folder``: ``<collection>.arrow``."""
    return folder / f"{collection}.arrow"


def save(table: Table, folder: Path, stamped: dict[str, Any]) -> Path:
    """Write ``table`` to ``folder/<collection>.arrow`` (whole, then renamed into place)."""
    arrays: list[pa.Array] = [pa.array(table.pos)]
    names = ["pos"]
    if table.keys is not None:
        arrays.append(table.keys)
        names.append("key")
    fields = []
    for f, col in table.columns.items():
        arrays.append(col.values)
        names.append("v" + _name(f))
        if col.ints is not None:
            arrays.append(pa.array(col.ints))
            names.append("i" + _name(f))
        fields.append({"steps": list(f.steps), "family": f.family, "inexact": col.inexact})
    meta = {**stamped, "fields": fields}
    batch = pa.RecordBatch.from_arrays(arrays, names=names)
    schema = batch.schema.with_metadata({_STAMP: orjson.dumps(meta)})
    folder.mkdir(parents=True, exist_ok=True)
    path = saved_file(folder, table.name)
    temporary = folder / f".{path.name}.{os.getpid()}.tmp"
    try:
        with pa.OSFile(str(temporary), "wb") as sink, ipc.new_file(sink, schema) as writer:
            writer.write_batch(batch.replace_schema_metadata(schema.metadata))
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    return path


def load(path: Path, expected_for: Callable[[int], dict[str, Any]]) -> Table:
    """The table saved at ``path``, if its stamp equals ``expected_for(its record number)`` (the
    stamp this database gives that record); else :class:`Untrusted` saying why."""
    try:
        with pa.memory_map(str(path)) as source:
            reader = ipc.open_file(source)
            meta = orjson.loads((reader.schema.metadata or {})[_STAMP])
            seq = int(meta["seq"])
            data = reader.read_all()
    except (OSError, pa.ArrowException, KeyError, TypeError, ValueError, orjson.JSONDecodeError) as exc:
        raise Untrusted(f"{path.name} cannot be read ({exc.__class__.__name__}: {exc})") from None
    expected = expected_for(seq)
    if seq > 0 and expected["record"] is None:
        raise Untrusted(f"the change log no longer holds record {seq}, which {path.name} reflects")
    for what in ("format", "collection", "key", "schema", "record"):
        if meta.get(what) != expected.get(what):
            why = {
                "format": "it was written in another format",
                "collection": "it holds another collection",
                "key": "the collection's keys changed type",
                "schema": "the collection's schema changed since",
                "record": f"this database's change-log record {meta.get('seq')} is not the one it reflects "
                "(another store, an earlier copy, or a log that no longer holds that record)",
            }[what]
            raise Untrusted(f"{path.name}: {why}")
    try:
        columns = data.combine_chunks()
        pos = columns.column("pos").to_numpy()
        keys = columns.column("key").chunk(0) if "key" in columns.column_names else None
        table = Table(meta["collection"], seq, pos, keys)
        for f in meta["fields"]:
            field = Field(tuple(f["steps"]), f["family"], None)
            name = _name(field)
            values = columns.column("v" + name).chunk(0)
            ints = columns.column("i" + name).to_numpy() if "i" + name in columns.column_names else None
            table.columns[field] = Column(field, values, ints, f["inexact"], builds=0)
    except (KeyError, IndexError, TypeError, pa.ArrowException) as exc:
        raise Untrusted(f"{path.name} is not a table of columns ({exc.__class__.__name__}: {exc})") from None
    if any(len(c.values) != len(pos) for c in table.columns.values()) or (
        keys is not None and len(keys) != len(pos)
    ):
        raise Untrusted(f"{path.name} holds columns of different lengths")
    return table
