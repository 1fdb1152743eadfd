"""pandas and Arrow conversion: documents in (DataFrame, Arrow) and out (fast NDJSON decode).

Export decodes all documents at once with Arrow's multithreaded JSON reader instead of one
``json.loads`` per row; columns the JSON Schema types are read with that type.

pandas and pyarrow load when a function here first needs them, not when a store opens (together
they took ~430 ms of a first ``jl.open``).
"""

from __future__ import annotations

import functools
import io
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.arguments import is_flag
from jarenlab.errors import StoreError, ValidationError
from jarenlab.lazy import Module
from jarenlab.values import NO_SPAN, is_missing

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.json as pa_json
else:
    np = Module("numpy")
    pd = Module("pandas")
    pa = Module("pyarrow")
    pa_json = Module("pyarrow.json")


@functools.cache
def _nullable_int() -> dict[Any, Any]:
    """Arrow's integer types -> pandas' nullable ``Int64`` (a missing member is ``<NA>``, not a float NaN)."""
    return {t: pd.Int64Dtype() for t in (pa.int8(), pa.int16(), pa.int32(), pa.int64())}


@functools.cache
def _arrow_types() -> dict[str, Any]:
    """A JSON Schema type -> the Arrow type its typed column is read as."""
    return {"string": pa.string(), "integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}


def records_from(data: Any, *, index_as: str | None = None) -> list[Any]:
    """Documents from a DataFrame, an Arrow table or an iterable (nulls in a table mean "absent").

    A DataFrame's named index becomes members named by its levels (as ``reset_index()`` would make
    them); ``index_as`` names the member for the index whatever its name. A default or unnamed
    index is not data and is left out.

    >>> records_from(pd.DataFrame({"a": [1, None], "b": ["x", "y"]}))
    [{'a': 1.0, 'b': 'x'}, {'b': 'y'}]
    >>> records_from(pd.DataFrame({"a": [1]}, index=pd.Index(["k"], name="id")))
    [{'id': 'k', 'a': 1}]
    """
    if isinstance(data, list):
        return data
    if is_frame(data):
        return frame_records(data, index_as)
    if "pyarrow" not in sys.modules:  # no Arrow table exists before pyarrow is imported
        return _iterable(data)
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        # Column by column, then zipped into rows: about twice as fast as Table.to_pylist().
        names = data.column_names
        for name, column in zip(names, data.columns):
            if isinstance(column.type, pa.BaseExtensionType):
                raise _extension_error(name, column.type)
        if not names:
            return [{} for _ in range(data.num_rows)]
        columns = [
            [_drop_nulls(v) if type(v) is dict else v for v in column.to_pylist()]
            if pa.types.is_struct(column.type)
            else column.to_pylist()
            for column in data.columns
        ]
        return [{k: v for k, v in zip(names, row) if v is not None} for row in zip(*columns)]
    return _iterable(data)


def check_flags(call: str, **flags: Any) -> None:
    """Refuse an export switch that is not ``True`` or ``False`` (``JD2010`` naming the call and the
    switch): ``to_pandas(flatten="x")`` would otherwise flatten on the string's truth.

    >>> check_flags("to_pandas", flatten=False, keys=True)
    >>> check_flags("to_pandas", flatten="x")
    Traceback (most recent call last):
    ...
    jarenlab.errors.StoreError: JD2010 invalid_argument: to_pandas() takes flatten=True or flatten=False, not 'x'
    """
    for name, value in flags.items():
        if not is_flag(value):
            raise StoreError("JD2010", f"{call}() takes {name}=True or {name}=False, not {value!r}")


def _iterable(data: Any) -> list[Any]:
    if isinstance(data, (dict, str | bytes)) or not isinstance(data, Iterable):
        raise StoreError(
            "JD2010", "insert_many takes an iterable of documents, a DataFrame or an Arrow table"
        )
    return list(data)


def is_frame(data: Any) -> bool:
    """True for a pandas DataFrame (pandas is not imported to say no)."""
    return "pandas" in sys.modules and isinstance(data, pd.DataFrame)


def frame_records(frame: pd.DataFrame, index_as: str | None = None) -> list[dict[str, Any]]:
    """A DataFrame's rows as documents, each cell as the same Python value a dict would hold.

    Columns of one dtype (numbers, booleans, timestamps with or without a zone, nullable
    integers, categories) convert through Arrow, column by column; ``object`` columns keep their
    Python values, so a column mixing kinds, zone-aware and naive timestamps, or nested dicts
    stores what one ``insert`` per row would store. A null cell (None, NaN, NA, NaT) is an absent
    member. Column names must be unique strings (JD2135 names the column).
    """
    names = [str(n) if type(n) is str else n for n in frame.columns]
    data = frame
    index_names = [n for n in frame.index.names if n is not None]
    if index_as is not None or (index_names and len(index_names) == frame.index.nlevels):
        if index_as is not None:
            if frame.index.nlevels != 1:
                raise _column_error(index_as, "key_from_index takes a DataFrame with a one-level index")
            data = frame.rename_axis(index_as)
            index_names = [index_as]
        for n in index_names:
            if n in frame.columns:
                raise _column_error(n, "is both the index's name and a column")
        data = data.reset_index()
        names = [str(n) if type(n) is str else n for n in data.columns]
    seen: set[Any] = set()
    for n in names:
        if type(n) is not str:
            raise _column_error(n, f"is a {type(n).__name__}: member names are strings")
        if n in seen:
            raise _column_error(n, "appears twice: each column becomes one member")
        seen.add(n)
    columns = [_column_values(data.iloc[:, i]) for i in range(len(names))]
    if not names:
        return [{} for _ in range(len(frame))]
    return [{k: v for k, v in zip(names, row) if v is not None} for row in zip(*columns)]


def _column_values(column: pd.Series) -> list[Any]:
    dtype = column.dtype
    inner = dtype.categories.dtype if isinstance(dtype, pd.CategoricalDtype) else dtype
    if isinstance(inner, pd.PeriodDtype | pd.IntervalDtype):
        # Arrow hands these over as their storage (a Period's ordinal, an Interval's two ends).
        what = "Period" if isinstance(inner, pd.PeriodDtype) else "Interval"
        raise ValidationError(
            "JD2008", f"column {column.name!r} holds pandas {what}s, which have no JSON form: {NO_SPAN}"
        )
    if column.dtype == object:
        return [None if is_missing(v) else v for v in column.tolist()]
    try:
        return pa.array(column, from_pandas=True).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return [None if is_missing(v) else v for v in column.tolist()]


def _extension_error(name: str, kind: pa.BaseExtensionType) -> ValidationError:
    """JD2008 for an Arrow column of an extension type, whose values would be read as its storage
    (``pa.Table.from_pandas`` makes a Period column ``pandas.period``, int64 ordinals)."""
    return ValidationError(
        "JD2008",
        f"column {name!r} is of the Arrow extension type {kind.extension_name}, whose values would be "
        f"stored as their storage ({kind.storage_type}): convert the column to a plain type first "
        f"({NO_SPAN})",
    )


def _column_error(name: Any, why: str) -> StoreError:
    return StoreError("JD2135", f"column {name!r} {why}")


def _drop_nulls(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (_drop_nulls(v) if type(v) is dict else v) for k, v in row.items() if v is not None}


def arrow_schema(schema: dict[str, Any]) -> pa.Schema:
    """Arrow fields for the top-level members a JSON Schema types as one scalar type."""
    fields = []
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict) and isinstance(sub.get("type"), str) and sub["type"] in _arrow_types():
            fields.append(pa.field(name, _arrow_types()[sub["type"]]))
    return pa.schema(fields)


def texts_to_arrow(
    texts: list[str], schema: dict[str, Any] | None = None, *, flatten: bool = False
) -> pa.Table:
    """Decode JSON texts (one document each) into an Arrow table."""
    if not texts:
        table = pa.table({})
    else:
        try:
            table = pa_json.read_json(
                io.BytesIO("\n".join(texts).encode()),
                read_options=pa_json.ReadOptions(block_size=1 << 24),
                parse_options=pa_json.ParseOptions(
                    explicit_schema=arrow_schema(schema or {}), unexpected_field_behavior="infer"
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            # Mixed kinds in one member: fall back to Python decoding, mixed columns as JSON text.
            table = records_to_arrow([orjson.loads(t) for t in texts])
        table = with_utc_columns(table, date_time_members(schema))
    return flatten_table(table) if flatten else table


def date_time_members(schema: dict[str, Any] | None) -> set[str]:
    """The top-level members a JSON Schema declares as ``"format": "date-time"`` strings."""
    return set(_formatted(schema, "date-time"))


def date_members(schema: dict[str, Any] | None) -> tuple[str, ...]:
    """The top-level members a JSON Schema declares as ``"format": "date"`` strings."""
    return _formatted(schema, "date")


def _formatted(schema: dict[str, Any] | None, fmt: str) -> tuple[str, ...]:
    props = (schema or {}).get("properties") or {}
    return tuple(
        name
        for name, sub in props.items()
        if isinstance(sub, dict) and sub.get("format") == fmt and sub.get("type", "string") == "string"
    )


def as_utc(column: Any) -> Any:
    """A column of RFC 3339 text as UTC timestamps (Arrow ``timestamp[ns, UTC]``), or None when any
    value does not parse as one with a zone (then the column stays text: nothing is guessed).

    >>> as_utc(pa.array(["2013-01-01T05:00:00Z", None, "2013-01-01T06:00:00+01:00"])).to_pylist()[2]
    Timestamp('2013-01-01 05:00:00+0000', tz='UTC')
    >>> as_utc(pa.array(["2013-01-01T05:00:00"])) is None
    True
    """
    import pyarrow.compute as pc

    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return None
    try:
        return pc.cast(column, pa.timestamp("ns", tz="UTC"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def with_utc_columns(table: pa.Table, names: set[str]) -> pa.Table:
    """``table`` with each named text column that parses as zoned RFC 3339 made UTC timestamps."""
    for name in names:
        i = table.schema.get_field_index(name)
        if i >= 0:
            stamped = as_utc(table.column(i))
            if stamped is not None:
                table = table.set_column(i, name, stamped)
    return table


def flatten_table(table: pa.Table) -> pa.Table:
    """Nested members as dotted columns (struct columns flattened, repeatedly)."""
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def texts_to_frame(
    texts: list[str],
    keys: list[Any] | None = None,
    schema: dict[str, Any] | None = None,
    *,
    flatten: bool = False,
) -> pd.DataFrame:
    """Decode JSON texts into a DataFrame, indexed by ``keys`` when given.

    Integer columns with gaps become pandas' nullable ``Int64`` (not float64 with NaN).
    """
    return arrow_to_frame(texts_to_arrow(texts, schema, flatten=flatten), keys)


def pages_to_frame(
    pages: Iterable[list[tuple[Any, str]]], schema: dict[str, Any] | None = None
) -> pd.DataFrame:
    """Stored documents, a page of ``(key, text)`` at a time, as a DataFrame indexed by key whose
    cells are the values that were stored (see :class:`_Column`): a page is decoded and made into
    its columns' arrays before the next is read, so the peak is near the frame's own size.

    >>> pages_to_frame([[(1, '{"n": 1, "m": {"a": 1}}'), (2, '{"n": 2, "l": [1, 2]}')]]).to_dict("records")
    [{'n': 1, 'm': {'a': 1}, 'l': None}, {'n': 2, 'm': None, 'l': [1, 2]}]
    """
    columns: dict[str, _Column] = {}
    keys: list[Any] = []
    loads = orjson.loads
    for page in pages:
        docs = [loads(text) for _, text in page]
        start = len(keys)
        keys += [key for key, _ in page]
        names = dict.fromkeys(name for d in docs for name in d)
        for name in names:
            column = columns.get(name)
            if column is None:
                column = columns[name] = _Column(start)
            column.add([d.get(name, _ABSENT) for d in docs])
        for name, column in columns.items():
            if name not in names:
                column.add_absent(len(docs))
    stamped = date_time_members(schema)
    declared = _declared(schema)
    index = pd.Index(keys, name="key")
    data = {}
    for name in [*declared, *(n for n in columns if n not in declared)]:
        column = columns.get(name) or _Column(len(keys))
        values = column.series(name in stamped, declared.get(name))
        data[name] = (
            values.set_axis(index) if isinstance(values, pd.Series) else pd.Series(values, index=index)
        )
    return pd.DataFrame(data, index=index, copy=False)


_ABSENT = object()


class _Column:
    """One member's values over the pages read so far, as arrays of one kind per page: integers
    (``int64``), floats, booleans, strings, or anything else as the Python values themselves.

    The frame gives back what was stored: a column of integers is integers (``Int64`` where some
    documents lack the member), of floats floats (NaN where missing), a column that mixes kinds
    (integers with floats, nested objects, lists, ``null``) is an ``object`` column holding each
    value as stored, a missing member ``None``. Nothing is unified or invented.
    """

    def __init__(self, absent: int = 0) -> None:
        self.parts: list[tuple[str, Any, Any]] = []  # (kind, values, missing mask or None)
        if absent:
            self.add_absent(absent)

    def add_absent(self, count: int) -> None:
        self.parts.append(("absent", count, None))

    def add(self, values: list[Any]) -> None:
        present = [v for v in values if v is not _ABSENT]
        kinds = {_kind(v) for v in present}
        kind = kinds.pop() if len(kinds) == 1 else "object"
        missing = None
        if len(present) < len(values):
            missing = np.array([v is _ABSENT for v in values])
        if kind == "int":
            filled = [0 if v is _ABSENT else v for v in values]
            try:
                self.parts.append(("int", np.array(filled, dtype=np.int64), missing))
                return
            except OverflowError:
                kind = "object"
        if kind == "float":
            self.parts.append(("float", np.array([np.nan if v is _ABSENT else v for v in values]), missing))
            return
        self.parts.append((kind, [None if v is _ABSENT else v for v in values], missing))

    def series(self, stamped: bool, declared: str | None = None) -> Any:
        """The column's values; ``declared``: the JSON Schema type of a top-level member, which
        types a column no document fills, and makes a ``number`` column floats."""
        if not self.parts:  # no rows at all
            self.add_absent(0)
        kinds = {kind for kind, _, _ in self.parts if kind != "absent"}
        length = sum(_length(p) for p in self.parts)
        missing = any(kind == "absent" or mask is not None for kind, _, mask in self.parts)
        if not kinds and declared in ("integer", "number"):
            kinds = {"int" if declared == "integer" else "float"}
        if declared == "number" and kinds == {"int", "float"}:
            kinds = {"float"}
        if kinds == {"int"}:
            values = np.concatenate([_ints(p) for p in self.parts])
            if not missing:
                return values
            mask = np.concatenate([_mask(p) for p in self.parts])
            return pd.arrays.IntegerArray(values, mask)
        if kinds == {"float"}:
            return np.concatenate([_floats(p) for p in self.parts])
        out = np.empty(length, dtype=object)
        i = 0
        for part in self.parts:
            n = _length(part)
            kind, values, mask = part
            if kind == "absent":
                out[i : i + n] = None
            elif kind in ("int", "float"):
                items = values.tolist()  # Python ints and floats, as stored
                out[i : i + n] = (
                    [None if m else v for v, m in zip(items, mask)] if mask is not None else items
                )
            else:
                out[i : i + n] = values
            i += n
        if kinds == {"bool"} and not missing:
            return out.astype(bool)
        if kinds == {"str"}:
            stamps = as_utc(pa.array(out, type=pa.string())) if stamped else None
            return out if stamps is None else stamps.to_pandas().array
        return pd.Series(
            out, dtype=object, copy=False
        )  # as it is: pandas would read strings and None as text


def _declared(schema: dict[str, Any] | None) -> dict[str, str]:
    """The top-level members a JSON Schema types as one scalar type, in its order: their columns
    come first, and exist when no document has the member (as Arrow's typed reading gives them)."""
    props = (schema or {}).get("properties") or {}
    return {
        name: sub["type"]
        for name, sub in props.items()
        if isinstance(sub, dict) and sub.get("type") in ("string", "integer", "number", "boolean")
    }


def _kind(v: Any) -> str:
    t = type(v)
    return (
        "int"
        if t is int
        else "float"
        if t is float
        else "bool"
        if t is bool
        else "str"
        if t is str
        else "object"
    )


def _length(part: tuple[str, Any, Any]) -> int:
    return part[1] if part[0] == "absent" else len(part[1])


def _ints(part: tuple[str, Any, Any]) -> Any:
    return np.zeros(part[1], dtype=np.int64) if part[0] == "absent" else part[1]


def _floats(part: tuple[str, Any, Any]) -> Any:
    if part[0] == "absent":
        return np.full(part[1], np.nan)
    values = part[1].astype(np.float64)
    if part[2] is not None:
        values[part[2]] = np.nan
    return values


def _mask(part: tuple[str, Any, Any]) -> Any:
    if part[0] == "absent":
        return np.ones(part[1], dtype=bool)
    return np.zeros(len(part[1]), dtype=bool) if part[2] is None else part[2]


def arrow_to_frame(table: pa.Table, keys: list[Any] | None = None) -> pd.DataFrame:
    """An Arrow table as a DataFrame; integer columns with nulls stay integers (``Int64``)."""
    frame = table.to_pandas()
    for field, column in zip(table.schema, table.columns):
        if pa.types.is_integer(field.type) and column.null_count:
            frame[field.name] = column.to_pandas(types_mapper=_nullable_int().get)
    if keys is not None:
        frame.index = pd.Index(keys, name="key")
    return frame


def records_to_arrow(items: list[Any], *, flatten: bool = False) -> pa.Table:
    """Query results (dicts, or other items as a ``value`` column) as an Arrow table."""
    if not all(type(i) is dict for i in items):
        items = [{"value": i} for i in items]
    # from_pylist takes its columns from the FIRST row: give every row every member (absent is null).
    names = list(dict.fromkeys(k for i in items for k in i))
    if any(len(i) != len(names) for i in items):
        items = [{k: i.get(k) for k in names} for i in items]
    try:
        table = pa.Table.from_pylist(items)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        mixed, widened = _mixed_members(items)
        table = pa.Table.from_pylist([_mixed_as_text(i, mixed, widened) for i in items])
    return flatten_table(table) if flatten else table


def chunk_to_arrow(
    kind: str, chunk: Any, schema: dict[str, Any] | None, columns: list[str] | None
) -> pa.Table:
    """One streamed chunk (:func:`jarenlab.query.planner.run.stream_query`) as a table: ``texts`` through
    Arrow's JSON reader (typed by the JSON Schema), ``items`` like :func:`records_to_arrow`,
    ``arrow`` (taken from the columns) as it is, with a select's ``columns`` first and in order."""
    if kind == "arrow":
        table = chunk
    else:
        table = texts_to_arrow(chunk, schema) if kind == "texts" else records_to_arrow(chunk)
    if columns is not None and table.num_columns:
        names = table.column_names
        table = table.select([c for c in columns if c in names] + [c for c in names if c not in columns])
    return table


def slices(table: pa.Table, size: int) -> Iterator[pa.Table]:
    """``table`` in slices of at most ``size`` rows, each without the columns it holds no value of,
    as :func:`records_to_arrow` builds a batch from items (a member missing from every result of a
    batch is not a column of it).

    >>> [p.column_names for p in slices(pa.table({"a": [1, 2, 3], "b": [None, None, "x"]}), 2)]
    [['a'], ['a', 'b']]
    """
    for start in range(0, table.num_rows, size):
        part = table.slice(start, size)
        yield part.select([i for i, c in enumerate(part.columns) if c.null_count < part.num_rows])


def concat_batches(batches: Iterable[pa.RecordBatch], columns: list[str] | None = None) -> pa.Table:
    """One table from streamed batches whose schemas may differ (a member absent from a whole
    batch, an integer column that is a float column in another): columns are unified, widened
    (``promote_options="permissive"``) and missing cells are nulls.

    >>> b1 = pa.RecordBatch.from_pylist([{"a": 1}])
    >>> b2 = pa.RecordBatch.from_pylist([{"a": 1.5, "b": "x"}])
    >>> concat_batches([b1, b2]).to_pylist()
    [{'a': 1.0, 'b': None}, {'a': 1.5, 'b': 'x'}]
    """
    tables = [pa.Table.from_batches([b]) for b in batches]
    if not tables:
        return pa.table({c: pa.nulls(0) for c in columns or ()})
    return pa.concat_tables(tables, promote_options="permissive")


def _mixed_members(items: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """The members holding several kinds of values or nested ones (kept as JSON text), and those
    holding integers beside floats (widened to floats, as Arrow's JSON reader widens them: Arrow
    refuses by itself an integer beyond 2^53, which no float holds exactly)."""
    kinds: dict[str, set[type]] = {}
    for item in items:
        for k, v in item.items():
            if v is not None:
                kinds.setdefault(k, set()).add(type(v))
    numbers = {int, float}
    mixed = {k for k, ks in kinds.items() if len(ks - numbers) + bool(ks & numbers) > 1 or ks & {list, dict}}
    return mixed, {k for k, ks in kinds.items() if ks == numbers}


def _mixed_as_text(item: dict[str, Any], mixed: set[str], widened: set[str]) -> dict[str, Any]:
    return {
        k: (
            orjson.dumps(v).decode()
            if k in mixed and v is not None
            else float(v)
            if k in widened and type(v) is int
            else v
        )
        for k, v in item.items()
    }


def records_to_frame(items: list[Any], *, flatten: bool = False) -> pd.DataFrame:
    """Query results as a DataFrame (dicts become rows; other items a ``value`` column)."""
    if not all(type(i) is dict for i in items):
        return pd.DataFrame({"value": items})
    if flatten:
        return pd.json_normalize(items)
    return pd.DataFrame.from_records(items) if items else pd.DataFrame()


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def progress(total: int, description: str, show: bool) -> Any:
    """A tqdm progress bar (a notebook widget in Jupyter) when ``show``, else a silent stand-in."""
    if not show:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=description, unit="doc")
