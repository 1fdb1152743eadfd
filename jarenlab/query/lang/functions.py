"""The operator library: functions from evaluated argument sequences to a sequence.

Each entry of :data:`FUNCTIONS` takes the list of argument sequences and the
operator's ``doc_path`` (for errors) and returns a new list. Operators that must not
evaluate every argument (``$and``, ``$if``, ...) and the comparisons live in the
engine instead.

>>> FUNCTIONS["add"]([[1], [2]], "/")
[3]
>>> FUNCTIONS["avg"]([[]], "/"), FUNCTIONS["sum"]([[]], "/")
([], [0])
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from jarenlab.errors import QueryError
from jarenlab.query.lang.dates import DATE_FUNCTIONS
from jarenlab.query.lang.iregexp import check_pattern
from jarenlab.query.lang.values import ebv, hash_key, is_num, json_eq, kind, number_text

Seqs = list[list[Any]]
Function = Callable[[Seqs, str], list[Any]]
_MISSING: Any = object()
_NUMBER = re.compile(r"\s*(-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)\s*\Z")
_SPACE = re.compile(r"[ \t\r\n]+")


def _one(seq: list[Any], where: str, what: str) -> Any:
    if not seq:
        return _MISSING
    if len(seq) > 1:
        raise QueryError("JQ2001", f"{what} takes one item, got {len(seq)}", doc_path=where)
    return seq[0]


def _number(seq: list[Any], where: str, what: str) -> Any:
    x = _one(seq, where, what)
    if x is not _MISSING and not is_num(x):
        raise QueryError("JQ2004", f"{what} takes numbers, got {kind(x)}", doc_path=where)
    return x


def _integer(seq: list[Any], where: str, what: str) -> Any:
    x = _number(seq, where, what)
    if type(x) is float:
        if not x.is_integer():
            raise QueryError("JQ2004", f"{what} takes an integer, got {number_text(x)}", doc_path=where)
        return int(x)
    return x


def integer(seq: list[Any], where: str, what: str) -> int | None:
    """The one item of ``seq`` as an int (``2.0`` is 2), None when ``seq`` is empty; JQ2001 for more
    than one item, JQ2004 for a non-number or a fraction (``what`` names the argument).

    >>> integer([3.0], "/", "a bound"), integer([], "/", "a bound")
    (3, None)
    """
    x = _integer(seq, where, what)
    return None if x is _MISSING else x


def _text(seq: list[Any], where: str, what: str) -> str:
    x = _one(seq, where, what)
    if x is _MISSING:
        return ""
    if type(x) is not str:
        raise QueryError("JQ2004", f"{what} takes strings, got {kind(x)}", doc_path=where)
    return x


def as_string(x: Any, where: str, code: str = "JQ2007") -> str:
    """The ``$string`` cast of one item (arrays and objects fail with ``code``).

    >>> as_string(2.0, "/"), as_string(None, "/"), as_string(True, "/")
    ('2', 'null', 'true')
    """
    t = type(x)
    if t is str:
        return x
    if t is bool:
        return "true" if x else "false"
    if x is None:
        return "null"
    if t is int or t is float:
        return number_text(x)
    raise QueryError(code, f"cannot make a string of a {kind(x)}", doc_path=where)


#: The largest integer arithmetic gives (the largest float, exactly): beyond it a result is JQ2010,
#: as a float result beyond it is, instead of an integer of thousands of digits that no later
#: step can print, compare or sum.
LARGEST_INT = int(1.7976931348623157e308)


def _arith(op: Callable[[Any, Any], Any], what: str) -> Function:
    def run(args: Seqs, where: str) -> list[Any]:
        values = [_number(a, where, what) for a in args]
        if any(v is _MISSING for v in values):
            return []
        acc = values[0]
        try:
            for v in values[1:]:
                acc = op(acc, v)
                if type(acc) is int and not -LARGEST_INT <= acc <= LARGEST_INT:
                    raise OverflowError
        except OverflowError:
            raise QueryError("JQ2010", f"{what} result is out of range", doc_path=where) from None
        return [acc]

    return run


def _div(a: Any, b: Any) -> float:
    a, b = float(a), float(b)
    if b == 0.0:
        if a == 0.0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _idiv(a: Any, b: Any) -> int:
    if b == 0:
        raise ZeroDivisionError
    if type(a) is int and type(b) is int:
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if not math.isfinite(a) or b != b:
        raise OverflowError
    return 0 if math.isinf(b) else math.trunc(a / b)


def _mod(a: Any, b: Any) -> Any:
    if b == 0:
        raise ZeroDivisionError
    if type(a) is int and type(b) is int:
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    if not math.isfinite(a):
        return math.nan
    return math.fmod(a, b)


def _by_zero(op: Callable[[Any, Any], Any], what: str) -> Function:
    inner = _arith(op, what)

    def run(args: Seqs, where: str) -> list[Any]:
        try:
            return inner(args, where)
        except ZeroDivisionError:
            raise QueryError("JQ2002", f"{what} by zero", doc_path=where) from None

    return run


def _neg(args: Seqs, where: str) -> list[Any]:
    x = _number(args[0], where, "$neg")
    return [] if x is _MISSING else [-x]


def _concat(args: Seqs, where: str) -> list[Any]:
    parts = []
    for a in args:
        x = _one(a, where, "$concat")
        if x is not _MISSING:
            parts.append(as_string(x, where, "JQ2004"))
    return ["".join(parts)]


def _string_join(args: Seqs, where: str) -> list[Any]:
    sep = _text(args[1], where, "$string-join") if len(args) > 1 else ""
    return [sep.join(as_string(x, where, "JQ2004") for x in args[0])]


def _substring(args: Seqs, where: str) -> list[Any]:
    s = _text(args[0], where, "$substring")
    start = _integer(args[1], where, "$substring start")
    if start is _MISSING:
        raise QueryError("JQ2004", "$substring needs a start position", doc_path=where)
    if len(args) < 3:
        return [s[max(start, 0) :]]
    length = _integer(args[2], where, "$substring length")
    if length is _MISSING:
        raise QueryError("JQ2004", "$substring length is empty", doc_path=where)
    return [s[max(start, 0) : max(start + length, 0)]]


def _two_strings(test: Callable[[str, str], bool], what: str) -> Function:
    def run(args: Seqs, where: str) -> list[Any]:
        return [test(_text(args[0], where, what), _text(args[1], where, what))]

    return run


def _one_string(fn: Callable[[str], Any], what: str) -> Function:
    return lambda args, where: [fn(_text(args[0], where, what))]


def _regex(full: bool) -> Function:
    what = "$match" if full else "$search"

    def run(args: Seqs, where: str) -> list[Any]:
        s = _text(args[0], where, what)
        p = check_pattern(_text(args[1], where, what), where)
        return [(p.fullmatch(s) if full else p.search(s)) is not None]

    return run


def _replace(args: Seqs, where: str) -> list[Any]:
    s = _text(args[0], where, "$replace")
    p = check_pattern(_text(args[1], where, "$replace"), where)
    rep = _text(args[2], where, "$replace")
    if p.fullmatch(""):
        raise QueryError("JQ2010", "the $replace pattern matches the empty string", doc_path=where)
    return [p.sub(lambda _m: rep, s)]


def exact_sum(items: list[Any], where: str) -> Any:
    """``$sum``: integers add exactly (an int); with any float, the result is the float nearest the
    exact sum of every item's value (correctly rounded, as ``math.fsum``), so it does not depend on
    the order of the items. Infinities add as IEEE does (``inf + -inf`` is NaN); a sum beyond the
    largest float is an infinity.

    >>> exact_sum([0.1, 0.2, 0.3], "/"), exact_sum([1e16, 1.0, -1e16], "/"), exact_sum([2**60 + 1, 0.0], "/")
    (0.6, 1.0, 1.152921504606847e+18)
    """
    ints = 0
    floats: list[float] = []
    for x in items:
        t = type(x)
        if t is int:
            ints += x
        elif t is float:
            floats.append(x)
        else:
            raise QueryError("JQ2004", f"$sum takes numbers, got {kind(x)}", doc_path=where)
    if not floats:
        return ints
    try:
        hi = float(ints)
    except OverflowError:
        raise QueryError("JQ2010", "$sum overflowed", doc_path=where) from None
    parts = [*floats, hi, float(ints - int(hi))]  # the integer total, exactly, as two floats
    special = [f for f in floats if not math.isfinite(f)]
    if special:
        try:
            return math.fsum(special)  # inf, -inf, or NaN
        except ValueError:  # inf + -inf
            return math.nan
    try:
        return math.fsum(parts)
    except OverflowError:
        return math.copysign(math.inf, sum(parts))


def _sum(args: Seqs, where: str) -> list[Any]:
    return [exact_sum(args[0], where)]


def _avg(args: Seqs, where: str) -> list[Any]:
    seq = args[0]
    if not seq:
        return []
    try:
        return [_sum(args, where)[0] / len(seq)]
    except OverflowError:
        raise QueryError("JQ2010", "$avg overflowed", doc_path=where) from None


def order_key(items: list[Any], where: str) -> Callable[[Any], Any]:
    """A sort key for items that are all numbers or all strings (else ``JQ2005``); NaN sorts first.

    >>> sorted([3, float("nan"), 1], key=order_key([3, 1], "/"))
    [nan, 1, 3]
    """
    kinds = {kind(x) for x in items}
    if kinds == {"string"}:
        return lambda x: x
    if kinds == {"number"}:
        return lambda x: (0, 0) if x != x else (1, x)
    raise QueryError("JQ2005", f"cannot order {', '.join(sorted(kinds))} together", doc_path=where)


def _extreme(pick: Callable[..., Any]) -> Function:
    def run(args: Seqs, where: str) -> list[Any]:
        seq = args[0]
        return [pick(seq, key=order_key(seq, where))] if seq else []

    return run


def round_half_away(x: int | float, digits: int, where: str = "/") -> int | float:
    """``$round``: ``x`` rounded to ``digits`` decimal places, halves away from zero, on the number's
    decimal form (the shortest text that reads back as the same float, which is what a document
    stores), so ``2.675`` rounds to ``2.68`` and ``0.49999999999999994`` to ``0.0``. An integer
    stays an integer (``digits < 0`` rounds it to tens, hundreds, ...); a float gives the float
    nearest the rounded decimal, and a zero is ``0.0`` (a decimal zero has no sign, so ``-0.4``
    rounds to ``0.0``, not ``-0.0``); infinities and NaN are themselves; JQ2010 when the rounded
    value is beyond the largest float.

    >>> round_half_away(2.675, 2), round_half_away(-2.5, 0), round_half_away(1250, -2), round_half_away(0.5, 0)
    (2.68, -3.0, 1300, 1.0)
    >>> round_half_away(-0.4, 0), round_half_away(-0.0, 2), round_half_away(-1.5, -2)
    (0.0, 0.0, 0.0)
    """
    if type(x) is int:
        if digits >= 0:
            return x
        unit = 10**-digits
        q, r = divmod(abs(x), unit)
        q += 2 * r >= unit
        return q * unit if x >= 0 else -q * unit
    if not math.isfinite(x):
        return x
    d = decimal.Decimal(repr(x))
    if d.as_tuple().exponent >= -digits:  # type: ignore[operator]
        return x + 0.0  # no more places than that: nothing to round (+ 0.0: -0.0 is 0.0)
    if digits < -400:  # every float is below half of 10**400
        return 0.0
    ctx = decimal.Context(prec=1000, rounding=decimal.ROUND_HALF_UP)  # ROUND_HALF_UP: away from zero
    out = float(d.quantize(decimal.Decimal(1).scaleb(-digits), context=ctx))
    if math.isinf(out):
        raise QueryError("JQ2010", "$round result is out of range", doc_path=where)
    return out + 0.0


def _round(args: Seqs, where: str) -> list[Any]:
    x = _number(args[0], where, "$round")
    digits = _integer(args[1], where, "$round digits") if len(args) > 1 else 0
    if digits is _MISSING:
        raise QueryError("JQ2004", "$round digits is empty", doc_path=where)
    return [] if x is _MISSING else [round_half_away(x, digits, where)]


def _numbers(seq: list[Any], where: str, what: str) -> list[Any]:
    for x in seq:
        if not is_num(x):
            raise QueryError("JQ2004", f"{what} takes numbers, got {kind(x)}", doc_path=where)
    return seq


def _median(args: Seqs, where: str) -> list[Any]:
    """``$median``: the middle item of the sorted numbers, or the mean of the two middle ones, as a
    float (the float nearest the exact value; empty for no items). ``JQ2010`` when that value is
    beyond the largest float (an integer of more than 309 digits), as ``$avg`` of one is.

    >>> _median([[3, 1, 2]], "/"), _median([[1, 2, 4, 8]], "/"), _median([[]], "/")
    ([2.0], [3.0], [])
    >>> _median([[10**400, -(10**400)]], "/"), _median([[float("inf"), 10**400]], "/")
    ([0.0], [inf])
    """
    seq = _numbers(args[0], where, "$median")
    if not seq:
        return []
    s = sorted(seq, key=order_key(seq, where))
    mid = len(s) // 2
    middle = s[mid : mid + 1] if len(s) % 2 else s[mid - 1 : mid + 1]
    special = [x for x in middle if type(x) is float and not math.isfinite(x)]
    if special:  # inf, -inf or NaN decide it, whatever the other middle item
        return [sum(special) / len(special)]
    try:
        return [float(sum(Fraction(x) for x in middle) / len(middle))]
    except OverflowError:
        raise QueryError("JQ2010", "$median result is out of range", doc_path=where) from None


def _stddev(args: Seqs, where: str) -> list[Any]:
    """``$stddev``: the sample standard deviation (``ddof`` 1, pandas' default; a second argument
    ``0`` gives the population one), as a float; empty when there are ``ddof`` items or fewer.
    Computed from the exact sums, so the order of the items cannot change it; NaN when an item is
    infinite or NaN.

    >>> _stddev([[2, 4, 4, 4, 5, 5, 7, 9]], "/"), _stddev([[2, 4, 4, 4, 5, 5, 7, 9], [0]], "/")
    ([2.138089935299395], [2.0])
    """
    seq = _numbers(args[0], where, "$stddev")
    ddof = _integer(args[1], where, "$stddev ddof") if len(args) > 1 else 1
    if ddof is _MISSING or ddof < 0:
        raise QueryError("JQ2004", "$stddev ddof is a whole number, 0 or more", doc_path=where)
    n = len(seq)
    if n <= ddof:
        return []
    if any(type(x) is float and not math.isfinite(x) for x in seq):  # (an int is finite, of any size)
        return [math.nan]
    ratios = [x.as_integer_ratio() for x in seq]
    scale = max(q for _, q in ratios)  # a power of two: every item is an integer count of 1/scale
    units = [p * (scale // q) for p, q in ratios]
    s1, s2 = sum(units), sum(u * u for u in units)
    try:
        return [math.sqrt((n * s2 - s1 * s1) / (n * (n - ddof) * scale * scale))]
    except OverflowError:
        raise QueryError("JQ2010", "$stddev result is out of range", doc_path=where) from None


def _distinct(args: Seqs, where: str) -> list[Any]:
    seen: set[Any] = set()
    out = []
    for x in args[0]:
        k = hash_key(x)
        if k not in seen:
            seen.add(k)
            out.append(x)
    return out


def _sort(args: Seqs, where: str) -> list[Any]:
    seq = args[0]
    return sorted(seq, key=order_key(seq, where)) if seq else []


def _subsequence(args: Seqs, where: str) -> list[Any]:
    start = _integer(args[1], where, "$subsequence start")
    if start is _MISSING:
        raise QueryError("JQ2004", "$subsequence needs a start position", doc_path=where)
    seq = args[0]
    if len(args) < 3:
        return seq[max(start, 0) :]
    length = _integer(args[2], where, "$subsequence length")
    if length is _MISSING:
        raise QueryError("JQ2004", "$subsequence length is empty", doc_path=where)
    return seq[max(start, 0) : max(start + length, 0)]


def range_bounds(args: Seqs, where: str) -> tuple[int, int] | None:
    """The integer bounds of ``$range [start, end]`` (half-open), or None if one is empty.

    >>> range_bounds([[0], [3.0]], "/")
    (0, 3)
    """
    lo = _integer(args[0], where, "$range")
    hi = _integer(args[1], where, "$range")
    return None if lo is _MISSING or hi is _MISSING else (lo, hi)


def _get(args: Seqs, where: str) -> list[Any]:
    c = _one(args[0], where, "$get")
    k = _one(args[1], where, "$get key")
    if type(c) is dict and type(k) is str:
        return [c[k]] if k in c else []
    if type(c) is list and is_num(k) and float(k).is_integer():
        i = int(k)
        return [c[i]] if -len(c) <= i < len(c) else []
    return []


def _index_of(args: Seqs, where: str) -> list[Any]:
    y = _one(args[1], where, "$index-of")
    if y is _MISSING:
        return []
    return [i for i, x in enumerate(args[0]) if json_eq(x, y)]


def _entries(args: Seqs, where: str) -> list[Any]:
    obj = _one(args[0], where, "$entries")
    if obj is _MISSING:
        return []
    if type(obj) is not dict:
        raise QueryError("JQ2004", f"$entries takes an object, got {kind(obj)}", doc_path=where)
    return [{"key": k, "value": v} for k, v in obj.items()]


def _from_entries(args: Seqs, where: str) -> list[Any]:
    out = {}
    for e in args[0]:
        if type(e) is not dict or type(e.get("key")) is not str or "value" not in e:
            raise QueryError("JQ2004", "$from-entries takes {key: string, value} objects", doc_path=where)
        out[e["key"]] = e["value"]
    return [out]


def _is(name: str) -> Function:
    return lambda args, where: [len(args[0]) == 1 and kind(args[0][0]) == name]


def _cast_string(args: Seqs, where: str) -> list[Any]:
    x = _one(args[0], where, "$string")
    return [] if x is _MISSING else [as_string(x, where)]


def _cast_number(args: Seqs, where: str) -> list[Any]:
    x = _one(args[0], where, "$number")
    t = type(x)
    if x is _MISSING or t is int or t is float:
        return [] if x is _MISSING else [x]
    if t is bool:
        return [1 if x else 0]
    if t is str:
        m = _NUMBER.match(x)
        # An integer text beyond the largest float (or of more digits than Python reads) is as
        # out of range as "1e999" is.
        if m and (m.group(2) or m.group(3) or len(m.group(1).lstrip("-")) <= 309):
            value = float(m.group(1)) if m.group(2) or m.group(3) else int(m.group(1))
            if math.isfinite(value) and -LARGEST_INT <= value <= LARGEST_INT:
                return [value]
    raise QueryError("JQ2007", f"cannot cast {kind(x)} {x!r} to a number", doc_path=where)


def _cast_boolean(args: Seqs, where: str) -> list[Any]:
    x = _one(args[0], where, "$boolean")
    t = type(x)
    if x is _MISSING or t is bool:
        return [] if x is _MISSING else [x]
    if t is int or t is float:
        return [ebv([x])]
    if t is str and x in ("true", "false"):
        return [x == "true"]
    raise QueryError("JQ2007", f"cannot cast {kind(x)} {x!r} to a boolean", doc_path=where)


FUNCTIONS: dict[str, Function] = {
    "add": _arith(lambda a, b: a + b, "$add"),
    "sub": _arith(lambda a, b: a - b, "$sub"),
    "mul": _arith(lambda a, b: a * b, "$mul"),
    "div": _arith(_div, "$div"),
    "idiv": _by_zero(_idiv, "$idiv"),
    "mod": _by_zero(_mod, "$mod"),
    "neg": _neg,
    "round": _round,
    "concat": _concat,
    "string-join": _string_join,
    "substring": _substring,
    "contains": _two_strings(lambda s, t: t in s, "$contains"),
    "starts-with": _two_strings(str.startswith, "$starts-with"),
    "ends-with": _two_strings(str.endswith, "$ends-with"),
    "upper": _one_string(str.upper, "$upper"),
    "lower": _one_string(str.lower, "$lower"),
    "string-length": _one_string(len, "$string-length"),
    "normalize-space": _one_string(lambda s: _SPACE.sub(" ", s).strip(" "), "$normalize-space"),
    "match": _regex(True),
    "search": _regex(False),
    "replace": _replace,
    "count": lambda args, where: [len(args[0])],
    "sum": _sum,
    "avg": _avg,
    "min": _extreme(min),
    "max": _extreme(max),
    "median": _median,
    "stddev": _stddev,
    "distinct": _distinct,
    "reverse": lambda args, where: args[0][::-1],
    "sort": _sort,
    "head": lambda args, where: args[0][:1],
    "tail": lambda args, where: args[0][1:],
    "subsequence": _subsequence,
    "get": _get,
    "index-of": _index_of,
    "entries": _entries,
    "from-entries": _from_entries,
    **{f"is-{k}": _is(k) for k in ("string", "number", "boolean", "null", "array", "object")},
    "string": _cast_string,
    "number": _cast_number,
    "boolean": _cast_boolean,
    **DATE_FUNCTIONS,
}
