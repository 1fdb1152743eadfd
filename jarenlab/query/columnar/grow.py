"""Appending to held arrays in place: a commit of inserts costs what it adds, not the column's size.

A column, its storage positions and what is kept of it (group codes, instants) grow when a commit
appends rows after every held one. Concatenating copies the whole array on every commit (at a
million rows, a few milliseconds per member); instead each array is written into a buffer with
room after it (an eighth of its length, at least 1,024 values), and an append writes the new
values into that room and makes a longer view of the same buffer. A buffer's room is used only
by an extension of its longest view, so no array ever seen changes: an older, shorter view reads
the same values as before (Arrow arrays are immutable, and stay so), and an extension from a
view that is not the longest (an append computed but not kept) copies into a new buffer. A
buffer without room (a first append, or one that would overflow it) is copied once into a new
one with room.

>>> a = extend_arrow(pa.array([1, None, 3]), pa.array([4]))
>>> b = extend_arrow(a, pa.array([None, 6]))
>>> a.to_pylist(), b.to_pylist(), spare_bytes(b) > 0
([1, None, 3, 4], [1, None, 3, 4, None, 6], True)
>>> extend_arrow(pa.array(["x", None], pa.large_string()), pa.array(["yz"], pa.large_string())).to_pylist()
['x', None, 'yz']
>>> extend(extend(np.arange(3), np.array([7])), np.array([8])).tolist()
[0, 1, 2, 7, 8]
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

#: At least this many values of room after a buffer.
MIN_ROOM = 1024
#: The fixed-width types grown in place (with timestamps, held as int64).
_FIXED = (pa.int64(), pa.float64())


@dataclass
class _Room:
    """A buffer with room: how many of its items the longest view covers (a bitmap's items are
    its bits: ``scale`` 8)."""

    base: weakref.ref[np.ndarray]
    used: int
    scale: int = 1


#: Buffers with room, by the address of their first item (an entry leaves with its buffer).
_ROOMS: dict[int, _Room] = {}


def _roomy(size: int, dtype: np.dtype | type, used: int, scale: int = 1) -> np.ndarray:
    """A new buffer of ``size`` items plus room, registered with ``used`` items written."""
    base = np.empty(size + max(size >> 3, MIN_ROOM), dtype=dtype)
    address = base.ctypes.data
    _ROOMS[address] = _Room(weakref.ref(base), used, scale)
    weakref.finalize(base, _ROOMS.pop, address, None)
    return base


def _room_at(address: int, used: int, more: int) -> np.ndarray | None:
    """The buffer at ``address`` when its longest view covers ``used`` items and ``more`` fit."""
    room = _ROOMS.get(address)
    if room is None or room.used != used:
        return None
    base = room.base()
    if base is None or base.ctypes.data != address or len(base) * room.scale < used + more:
        return None
    room.used = used + more
    return base


def _written(base: np.ndarray, used: int) -> None:
    _ROOMS[base.ctypes.data].used = used


def extend(old: np.ndarray, part: np.ndarray) -> np.ndarray:
    """``old`` followed by ``part`` (one-dimensional, ``part`` cast to ``old``'s type), written
    into the room after ``old`` when it is the longest view of a buffer with room."""
    n, k = len(old), len(part)
    base = old.base if isinstance(old.base, np.ndarray) and old.base.ctypes.data == old.ctypes.data else None
    if base is not None and n and _room_at(base.ctypes.data, n, k) is base:
        base[n : n + k] = part
        return base[: n + k]
    base = _roomy(n + k, old.dtype, n + k)
    base[:n] = old
    base[n : n + k] = part
    return base[: n + k]


def spare_bytes(arr: pa.Array) -> int:
    """The bytes of room held after ``arr``'s values (none unless it was grown here)."""
    total = 0
    for buf in arr.buffers():
        room = None if buf is None else _ROOMS.get(buf.address)
        base = None if room is None else room.base()
        if base is not None:
            total += (len(base) * room.scale - room.used) * base.itemsize // room.scale  # type: ignore[union-attr]
    return total


def _valid(arr: pa.Array) -> np.ndarray:
    """Where ``arr`` holds a value, as booleans."""
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    bitmap = np.frombuffer(arr.buffers()[0], dtype=np.uint8)
    return np.unpackbits(bitmap, bitorder="little")[arr.offset : arr.offset + len(arr)].view(bool)


def _put_bits(base: np.ndarray, at: int, values: np.ndarray) -> None:
    """Write the booleans ``values`` into the bitmap ``base`` from bit ``at`` (bits after them in
    their last byte are not any view's)."""
    lo, hi = at >> 3, (at + len(values) + 7) >> 3
    if lo == hi:
        return
    bits = np.unpackbits(base[lo:hi], bitorder="little")
    bits[at - (lo << 3) : at - (lo << 3) + len(values)] = values
    base[lo:hi] = np.packbits(bits, bitorder="little")


def _fixed(arr: pa.Array) -> np.ndarray:
    """A fixed-width array's values (whatever stands in a null's slot)."""
    dtype = np.dtype(np.int64) if pa.types.is_timestamp(arr.type) else np.dtype(arr.type.to_pandas_dtype())
    data = arr.buffers()[1]
    if data is None:
        return np.zeros(len(arr), dtype=dtype)
    return np.frombuffer(data, dtype=dtype)[arr.offset : arr.offset + len(arr)]


def _grown_bitmap(old: pa.Array, part: pa.Array) -> pa.Buffer | None:
    """The validity bitmap of ``old`` followed by ``part`` (None: no nulls in either)."""
    if old.null_count == 0 and part.null_count == 0:
        return None
    n, k = len(old), len(part)
    base = None
    held = old.buffers()[0]
    if held is not None and old.offset == 0 and n:
        base = _room_at(held.address, n, k)
    if base is None:
        base = _roomy((n + k + 7) >> 3, np.uint8, n + k, scale=8)
        _put_bits(base, 0, _valid(old))
    _put_bits(base, n, _valid(part))
    return pa.py_buffer(base)


def extend_arrow(old: pa.Array, part: pa.Array) -> pa.Array:
    """``old`` followed by ``part`` (cast to ``old``'s type): int64, float64, timestamps and
    large strings are written into the room after ``old`` (see the module docstring); other
    types are concatenated."""
    if part.type != old.type:
        part = part.cast(old.type)
    n, k = len(old), len(part)
    if n == 0 or k == 0:
        return part if n == 0 else old
    nulls = old.null_count + part.null_count
    if pa.types.is_large_string(old.type):
        return _extend_strings(old, part, nulls)
    if old.type not in _FIXED and not pa.types.is_timestamp(old.type):
        return pa.concat_arrays([old, part])
    values = _fixed(old)
    held = old.buffers()[1]
    base = None
    if held is not None and old.offset == 0 and n:
        base = _room_at(held.address, n, k)
    if base is None:
        base = _roomy(n + k, values.dtype, n + k)
        base[:n] = values
    base[n : n + k] = _fixed(part)
    bitmap = _grown_bitmap(old, part)
    return pa.Array.from_buffers(old.type, n + k, [bitmap, pa.py_buffer(base)], nulls)


def _extend_strings(old: pa.Array, part: pa.Array, nulls: int) -> pa.Array:
    n, k = len(old), len(part)
    offsets = np.frombuffer(old.buffers()[1], dtype=np.int64)[old.offset : old.offset + n + 1]
    more = np.frombuffer(part.buffers()[1], dtype=np.int64)[part.offset : part.offset + k + 1]
    chars_old = old.buffers()[2]
    chars_part = part.buffers()[2]
    start, end = int(offsets[0]), int(offsets[-1])
    size = int(more[-1] - more[0])
    held_offsets, base = old.buffers()[1], None
    chars = None
    if old.offset == 0 and n and start == 0:
        base = _room_at(held_offsets.address, n + 1, k)
        if base is not None and chars_old is not None:
            chars = _room_at(chars_old.address, end, size)
            if chars is None:  # the offsets' room is kept; the characters move to a larger buffer
                _written(base, n + 1)
                base = None
    if base is None or chars is None:
        base = _roomy(n + k + 1, np.int64, n + k + 1)
        base[: n + 1] = offsets - start
        chars = _roomy(end - start + size, np.uint8, end - start + size)
        if chars_old is not None and end > start:
            chars[: end - start] = np.frombuffer(chars_old, dtype=np.uint8)[start:end]
        end -= start
    base[n + 1 : n + k + 1] = more[1:] - more[0] + end
    if size:
        assert chars_part is not None
        chars[end : end + size] = np.frombuffer(chars_part, dtype=np.uint8)[int(more[0]) : int(more[-1])]
    bitmap = _grown_bitmap(old, part)
    return pa.Array.from_buffers(old.type, n + k, [bitmap, pa.py_buffer(base), pa.py_buffer(chars)], nulls)
