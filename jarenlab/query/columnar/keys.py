"""Group keys and date values over columns: the codes a group-by groups by.

A key is a typed member's values numbered in order of first appearance (``dictionary_encode``: the
groups' order is their first row's) or a date function of a canonical UTC date-time member (its
instants, computed once per version of the column, then the date part, truncation or bucket the
engine computes); several keys are combined into one code per row. What is computed from a whole
column is kept with it (:class:`~jarenlab.query.columnar.columns.Kept`) and grown when rows are
appended.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.query.columnar.columns import Column, Decline, Kept, bits, values_at
from jarenlab.query.columnar.grow import extend, extend_arrow
from jarenlab.query.planner.preds import DateKey

#: The canonical date-time a date function reads (as SQL does: any other form goes to the engine).
CANONICAL = "%Y-%m-%dT%H:%M:%SZ"
_PARTS: dict[str, Any] = {
    "year": pc.year,
    "month": pc.month,
    "day": pc.day,
    "doy": pc.day_of_year,
    "hour": pc.hour,
    "minute": pc.minute,
    "second": pc.second,
    "quarter": pc.quarter,
    "week": pc.iso_week,
    "weekday": lambda t: pc.day_of_week(t, count_from_zero=False, week_start=1),
}
_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute")


def instants(col: Column) -> pa.Array:
    """A string column's values as whole-second instants (``timestamp[s]``), computed once per
    version of the column; :class:`Decline` when a present value is not written
    ``YYYY-MM-DDTHH:MM:SSZ`` as a real instant (the engine reads every form; SQL and the columns
    only this one, as written back by a parse: ``2013-02-30`` is not one)."""
    got = col.derived.get("instants")
    if got is None:
        got = col.derived["instants"] = Kept(_parsed(col.values), _grow_instants)
    if isinstance(got.value, str):
        raise Decline("a date-time not written YYYY-MM-DDTHH:MM:SSZ (the engine reads every form)")
    stamps: pa.Array = got.value
    return stamps


def _parsed(texts: pa.Array) -> pa.Array | str:
    stamps = pc.strptime(texts, format=CANONICAL, unit="s", error_is_null=True)
    same = bits(pc.equal(pc.strftime(stamps, format=CANONICAL), pc.cast(texts, pa.string())))
    return "not canonical" if (bits(pc.is_valid(texts)) & ~same).any() else stamps


def _grow_instants(old: pa.Array | str, part: Column) -> pa.Array | str:
    new = _parsed(part.values)
    return old if isinstance(old, str) else new if isinstance(new, str) else extend_arrow(old, new)


def date_key(
    col: Column, rows: np.ndarray | None, key: DateKey
) -> tuple[pa.Array, Callable[[Any], Any] | None]:
    """A date function of a column of canonical UTC date-times, as the engine computes it, for
    grouping: the key array and how a group's key becomes the engine's value (None: as it is). A
    part is an integer, the epoch milliseconds; a unit's or a bucket's start groups as an instant
    and is written back as canonical text, once per group."""
    stamps = instants(col)
    if rows is not None:
        stamps = stamps.take(pa.array(rows))
    if key.fn == "date-part":
        if key.arg == "millisecond":
            return pc.if_else(pc.is_valid(stamps), 0, pa.scalar(None, pa.int64())), None
        return pc.cast(_PARTS[key.arg](stamps), pa.int64()), None
    if key.fn == "epoch":
        return pc.multiply(pc.cast(stamps, pa.int64()), 1000), None
    if key.fn == "date-trunc":
        if key.arg not in _UNITS:  # a second or a millisecond: a canonical text is whole seconds
            return values_at(col, rows), None
        options = {"week_starts_monday": True} if key.arg == "week" else {}
        seconds = pc.cast(pc.floor_temporal(stamps, unit=key.arg, **options), pa.int64())
        return seconds, _canonical
    width, origin = key.arg
    seconds = pc.cast(stamps, pa.int64()).to_numpy(zero_copy_only=False)
    valid = bits(pc.is_valid(stamps))
    start = np.where(valid, seconds - (((seconds - origin) % width) + width) % width, 0)
    return pa.array(start, mask=~valid), _canonical


def _canonical(seconds: int | None) -> str | None:
    """Epoch seconds as the canonical UTC text ``YYYY-MM-DDTHH:MM:SSZ``."""
    if seconds is None:
        return None
    t = _EPOCH + dt.timedelta(seconds=seconds)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}Z"


_EPOCH = dt.datetime(1970, 1, 1)


@dataclass
class Codes:
    """A key's codes per row (numbered in order of first appearance; a null is a value too), the
    values they stand for, and (made when rows are first appended) each value's code."""

    codes: np.ndarray
    values: list[Any]
    index: dict[Any, int] | None = None

    def grown(self, raw: list[Any]) -> Codes:
        """With the codes of appended rows' values (new values numbered after the others)."""
        index = self.index if self.index is not None else {v: n for n, v in enumerate(self.values)}
        values = self.values
        added = []
        for v in raw:
            code = index.get(v)
            if code is None:
                if values is self.values:
                    values = list(values)
                code = index[v] = len(values)
                values.append(v)
            added.append(code)
        return Codes(extend(self.codes, np.array(added, dtype=np.int64)), values, index)


def _dictionary(values: pa.Array) -> Codes:
    d = pc.dictionary_encode(values, null_encoding="encode")
    return Codes(d.indices.to_numpy(zero_copy_only=False).astype(np.int64), d.dictionary.to_pylist())


def date_codes(col: Column, rows: np.ndarray | None, key: DateKey) -> tuple[np.ndarray, list[Any]]:
    """A date key's codes over a column (computed once per version of the column) at ``rows``."""
    name = ("date", key.fn, key.arg)
    got = col.derived.get(name)
    if got is None:
        got = col.derived[name] = Kept(
            _date_dictionary(col, key), lambda old, part: _grow_dates(old, part, key)
        )
    return _at(got.value, rows)


def _date_dictionary(col: Column, key: DateKey) -> Codes:
    array, output = date_key(col, None, key)
    codes = _dictionary(array)
    return codes if output is None else Codes(codes.codes, [output(v) for v in codes.values])


def _grow_dates(old: Codes, part: Column, key: DateKey) -> Codes:
    array, output = date_key(part, None, key)
    raw = array.to_pylist()
    return old.grown(raw if output is None else [output(v) for v in raw])


def member_codes(col: Column, rows: np.ndarray | None) -> tuple[np.ndarray, list[Any]]:
    """A key column's codes (computed once per version of the column) at ``rows``."""
    got = col.derived.get("codes")
    if got is None:
        got = col.derived["codes"] = Kept(
            _dictionary(col.values), lambda old, part: old.grown(part.values.to_pylist())
        )
    return _at(got.value, rows)


def _at(codes: Codes, rows: np.ndarray | None) -> tuple[np.ndarray, list[Any]]:
    return (codes.codes if rows is None else codes.codes[rows]), codes.values


def encode(
    keys: list[tuple[np.ndarray, list[Any]]], whole: bool = False
) -> tuple[np.ndarray, list[list[Any]], int]:
    """Group codes in the order of each group's first row, and each key's value per group.
    ``whole``: the codes are of every row (no filter), so one key's codes are that order already."""
    if whole and len(keys) == 1:
        codes, values = keys[0]
        return codes, [values], len(values)
    combined = np.zeros(len(keys[0][0]), dtype=np.int64)
    span, renumbered = 1, False
    for codes, values in keys:
        size = max(len(values), 1)
        if span * size >= 2**62:  # renumber the keys so far, so the product stays in 64 bits
            d = pc.dictionary_encode(pa.array(combined))
            combined = d.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            span, renumbered = len(d.dictionary), True
        combined = combined * size + codes
        span *= size
    joint = pc.dictionary_encode(pa.array(combined))
    groups = joint.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    count = len(joint.dictionary)
    if renumbered:  # each key's value at its group's first row
        first = np.full(count, len(groups), dtype=np.int64)
        np.minimum.at(first, groups, np.arange(len(groups)))
        return groups, [[values[c] for c in codes[first].tolist()] for codes, values in keys], count
    rest = joint.dictionary.to_numpy(zero_copy_only=False)
    per_key: list[list[Any]] = []
    for _, values in reversed(keys):
        size = max(len(values), 1)
        per_key.append([values[i] for i in (rest % size).tolist()])
        rest = rest // size
    per_key.reverse()
    return groups, per_key, count


def point_ranks(values: pa.Array) -> np.ndarray:
    """Each string's dense rank by code point among the present values, from 0 (UTF-8 bytes sort
    as code points; a missing value's rank is past them all: mask it).

    >>> point_ranks(pa.array(["b", None, "a", "é", "b"], type=pa.large_string())).tolist()
    [1, 3, 0, 2, 1]
    """
    return pc.rank(values, tiebreaker="dense").to_numpy(zero_copy_only=False).astype(np.int64) - 1
