"""Filters over columns: the rows a plan's total predicate keeps, as a boolean array (:func:`mask`).

Every predicate the planner pushes (:mod:`jarenlab.query.planner.preds`) is two-valued as the
engine's: a missing member, or one of the other family, compares false. Strings compare by code
point (Arrow compares UTF-8 bytes, which order as code points do); numbers compare exactly as Python
compares an int with a float (an integer member against ``2.5``, a float member against an integer
beyond 2^53, two number members of different kinds), declining where Arrow could not. A number
computed from members (``$add``, ``$sub``, ``$mul``, a string's length, a date part) is computed as
the engine computes it and compared the same way.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jarenlab.query.columnar.columns import Column, Decline, bits, numbers
from jarenlab.query.columnar.keys import date_key
from jarenlab.query.planner.preds import (
    And,
    Arith,
    Compare,
    CompareAny,
    ComparePaths,
    CompareValue,
    Const,
    DateKey,
    Exists,
    Field,
    Infix,
    InList,
    Length,
    Not,
    Or,
    Pred,
    Prefix,
    Slot,
    Suffix,
    Truthy,
    Types,
)
from jarenlab.query.planner.translate import successor

_OPS = {
    "eq": pc.equal,
    "ne": pc.not_equal,
    "lt": pc.less,
    "le": pc.less_equal,
    "gt": pc.greater,
    "ge": pc.greater_equal,
}


_NUMPY_OPS = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


def mask(p: Pred, cols: dict[Field, Column], ext: dict[str, Any], n: int) -> np.ndarray:
    """The rows a total predicate keeps, as a boolean array."""
    if isinstance(p, Const):
        return np.full(n, p.value, dtype=bool)
    if isinstance(p, And):
        out = mask(p.items[0], cols, ext, n)
        for x in p.items[1:]:
            out &= mask(x, cols, ext, n)
        return out
    if isinstance(p, Or):
        out = mask(p.items[0], cols, ext, n)
        for x in p.items[1:]:
            out |= mask(x, cols, ext, n)
        return out
    if isinstance(p, Not):
        return ~mask(p.item, cols, ext, n)
    if isinstance(p, CompareValue):
        return _compare_value(p, cols, ext, n)
    col = cols[p.field]  # type: ignore[union-attr]
    family = "string" if col.field.family == "string" else "number"
    if isinstance(p, Exists):
        return bits(col.values.is_valid())
    if isinstance(p, Types):
        kinds = set(p.types)
        valid = bits(col.values.is_valid())
        if family == "string":
            return valid if "string" in kinds else np.zeros(n, dtype=bool)
        ints = _ints(col)
        return valid & ((ints & ("int" in kinds)) | (~ints & ("float" in kinds)))
    if isinstance(p, Truthy):
        if family == "string":
            return bits(pc.greater(pc.binary_length(col.values), 0))
        return bits(pc.not_equal(col.values, 0))
    if isinstance(p, Compare):
        return _compare(col, p.op, _slot(p.slot, ext), p.family, n)
    if isinstance(p, CompareAny):
        v = ext[p.slot.value]
        if type(v) is str:
            return _compare(col, p.op, v, "string", n)
        if type(v) in (int, float):
            return _compare(col, p.op, v, "number", n)
        raise Decline(f"external ${p.slot.value} is {type(v).__name__}")
    if isinstance(p, ComparePaths):
        other = cols[p.other]
        if family != p.family or ("string" if other.field.family == "string" else "number") != p.family:
            return np.zeros(n, dtype=bool)
        if family == "number" and not _safe_pair(col, other):
            raise Decline("two number members beyond 2^53 compared")
        return bits(_OPS[p.op](col.values, other.values))
    if isinstance(p, InList):
        items = _slot(p.slot, ext)
        if family == "string":
            strs = [x for x in items if type(x) is str]
            return bits(pc.is_in(col.values, value_set=pa.array(strs, type=col.values.type)))
        nums = [x for x in items if type(x) in (int, float)]
        out = np.zeros(n, dtype=bool)
        for x in nums:
            out |= _compare(col, "eq", x, "number", n)
        return out
    if family != "string":
        return np.zeros(n, dtype=bool)
    if isinstance(p, Prefix):
        low = _slot(p.low, ext)
        out = _compare(col, "ge", low, "string", n) if type(low) is str else np.zeros(n, dtype=bool)
        if p.high is not None:
            high = _slot(p.high, ext)
            out &= _compare(col, "lt", high, "string", n) if type(high) is str else False
        return out
    if isinstance(p, Suffix | Infix):
        v = _slot(p.slot, ext)
        if type(v) is not str:
            return np.zeros(n, dtype=bool)
        fn = pc.ends_with if isinstance(p, Suffix) else pc.match_substring
        return bits(fn(col.values, pattern=v))
    raise Decline(f"no columnar form for {type(p).__name__}")


def _slot(slot: Slot, ext: dict[str, Any]) -> Any:
    """A slot's value as the engine compares it (an external's, a literal, a prefix's successor)."""
    kind = slot.kind
    if kind in ("literal", "list"):
        return slot.value
    v = ext[slot.value]
    if kind == "successor":
        return successor(v) if type(v) is str else None
    if kind == "string-external":
        return v if type(v) is str else None
    if kind == "number-external":
        return v if type(v) in (int, float) else None
    return v


def _ints(col: Column) -> np.ndarray:
    """Where the member is written as an integer."""
    if col.values.type == pa.int64():
        return np.ones(len(col.values), dtype=bool)
    if col.ints is None:
        return np.zeros(len(col.values), dtype=bool)
    return col.ints


def _safe_pair(a: Column, b: Column) -> bool:
    """Two number columns compare exactly in Arrow (int64 against float64 casts the integers)."""
    if a.values.type == b.values.type:
        return True
    ints = a if a.values.type == pa.int64() else b
    top = pc.max(pc.abs(ints.values)).as_py()
    return top is None or top < 2**53


def _compare(col: Column, op: str, value: Any, family: str, n: int) -> np.ndarray:
    """``member op value`` in ``family``: false where the member is missing or of the other family."""
    col_family = "string" if col.field.family == "string" else "number"
    if value is None or col_family != family:
        return np.zeros(n, dtype=bool)
    if family == "string":
        if type(value) is not str:
            return np.zeros(n, dtype=bool)
        return bits(_OPS[op](col.values, pa.scalar(value, type=col.values.type)))
    kind = col.values.type
    if (kind == pa.int64() and type(value) is int and -(2**63) <= value < 2**63) or (
        kind == pa.float64()
        and ((type(value) is float and not math.isnan(value)) or (type(value) is int and abs(value) <= 2**53))
    ):
        # Exactly as Python compares (an int within 2^53 is a float exactly): one numpy pass.
        data, present = numbers(col)
        out: np.ndarray = _NUMPY_OPS[op](data, value)
        if present is not None:
            out &= present
        return out
    return _compare_numbers(col.values, op, value, n)


def _compare_numbers(values: pa.Array, op: str, value: Any, n: int) -> np.ndarray:
    """Numbers (int64 or float64, null where empty) ``op`` a number, exactly as Python compares an
    int with a float: false where empty."""
    if type(value) not in (int, float) or (type(value) is float and math.isnan(value)):
        return np.zeros(n, dtype=bool)
    if values.type == pa.int64() and type(value) is int and -(2**63) <= value < 2**63:
        return bits(_OPS[op](values, pa.scalar(value, type=pa.int64())))
    valid = bits(values.is_valid())
    if values.type == pa.int64():
        if type(value) is float:
            if math.isinf(value):
                below = value > 0  # every integer is below +inf
                return valid & (
                    below if op in ("lt", "le", "ne") else (not below) if op in ("gt", "ge", "ne") else False
                )
            if value != math.floor(value):
                if op == "eq":
                    return np.zeros(n, dtype=bool)
                if op == "ne":
                    return valid
                # x < 2.5 is x <= 2; x > 2.5 is x >= 3.
                value, op = (math.floor(value), "le") if op in ("lt", "le") else (math.ceil(value), "ge")
            value = int(value)
        if not -(2**63) <= value < 2**63:
            above = value > 0
            if op == "eq":
                return np.zeros(n, dtype=bool)
            if op == "ne":
                return valid
            return valid & ((op in ("lt", "le")) == above)
        return bits(_OPS[op](values, pa.scalar(value, type=pa.int64())))
    if type(value) is int and abs(value) > 2**53:
        if float(value) != value:
            raise Decline("an integer beyond 2^53 compared with a float member")
        value = float(value)
    return bits(_OPS[op](values, pa.scalar(float(value), type=pa.float64())))


# -- computed values ----------------------------------------------------------------------------
def _compare_value(p: CompareValue, cols: dict[Field, Column], ext: dict[str, Any], n: int) -> np.ndarray:
    """A number computed from members ``op`` a number, as the engine compares them (false where
    the value is empty; ``ne`` true wherever it is not equal)."""
    v = _slot(p.slot, ext)
    if type(v) not in (int, float):
        raise Decline("a computed value compared with an external that is not a number")
    values = _computed(p.value, cols, n)
    if p.op == "ne":
        return bits(values.is_valid()) & ~_compare_numbers(values, "eq", v, n)
    return _compare_numbers(values, p.op, v, n)


def _computed(v: Arith | Length | DateKey, cols: dict[Field, Column], n: int) -> pa.Array:
    """A computed value per row (int64 or float64; null where the engine's value is empty)."""
    if isinstance(v, Length):
        return pc.cast(pc.fill_null(pc.utf8_length(cols[v.field].values), 0), pa.int64())
    if isinstance(v, DateKey):
        return date_key(cols[v.field], None, v)[0]
    return _arith(v, cols, n)


_ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def _arith(v: Arith, cols: dict[Field, Column], n: int) -> pa.Array:
    """``$add``/``$sub``/``$mul`` per row as the engine computes them: integers exactly (declined
    where 64 bits, or a double's 53 for integers held beside floats, may not hold the result), an
    integer with a float as the float nearest it with that float, floats as IEEE doubles."""
    valid = np.ones(n, dtype=bool)
    operands: list[tuple[np.ndarray, np.ndarray]] = []
    for x in (v.left, v.right):
        if isinstance(x, Field):
            col = cols[x]
            valid &= bits(col.values.is_valid())
            operands.append((pc.fill_null(col.values, 0).to_numpy(zero_copy_only=False), _ints(col)))
        else:
            kind = np.int64 if type(x.value) is int else np.float64
            operands.append((np.full(n, x.value, dtype=kind), np.full(n, type(x.value) is int)))
    (a, a_ints), (b, b_ints) = operands
    if a.dtype == np.int64 and b.dtype == np.int64:
        if v.fn == "mul":
            _bounded(v.fn, a[valid], b[valid], 2**63 - 1)
        with np.errstate(over="ignore"):
            out = _ARITH[v.fn](a, b)
        # a sum passes 64 bits where both operands' signs differ from its; a difference where the
        # operands' signs differ and its sign differs from the first's
        wrapped = (((a ^ out) & (b ^ out)) if v.fn == "add" else ((a ^ b) & (a ^ out))) < 0
        if (wrapped & valid).any():
            raise Decline("integer arithmetic whose result passes 64 bits")
        return pa.array(out, mask=~valid)
    both = a_ints & b_ints & valid  # integers the engine computes exactly
    _bounded(v.fn, a[both], b[both], 2**53)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _ARITH[v.fn](a.astype(np.float64), b.astype(np.float64))
    return pa.array(out, mask=~valid)


def _bounded(fn: str, a: np.ndarray, b: np.ndarray, bound: int) -> None:
    """:class:`Decline` unless every result of the integers ``a`` and ``b`` (int64, or floats
    holding integers) is at most ``bound`` in magnitude (computed exactly, as Python integers)."""
    if a.size == 0:
        return
    top_a = max(abs(int(a.max())), abs(int(a.min())))
    top_b = max(abs(int(b.max())), abs(int(b.min())))
    if (top_a * top_b if fn == "mul" else top_a + top_b) > bound:
        raise Decline("integer arithmetic whose result may pass what the columns hold exactly")
