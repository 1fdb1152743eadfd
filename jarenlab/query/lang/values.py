"""The item model: JSON values as engine items, and the rules that compare them.

Items are plain Python JSON values: ``None``, ``bool``, ``int``, ``float``, ``str``,
``list`` and ``dict``. ``bool`` is never a number here even though Python says
``True == 1``; every check below looks at the exact type.

Two equalities, each defined here only:

- :func:`json_eq` is JSON equality (the query language's ``$eq``, RFC 6902 ``test``): numbers
  compare by value, so ``1`` equals ``1.0``; member order does not count.
- :func:`identical` is exact sameness (a value that must round-trip exactly, a live row that must
  not change): ``1`` and ``1.0`` differ, and so does member order.

>>> json_eq(1, 1.0), json_eq(True, 1), json_eq(float("nan"), float("nan"))
(True, False, False)
>>> identical({"a": 1}, {"a": 1}), identical(1, 1.0), identical({"a": 1, "b": 2}, {"b": 2, "a": 1})
(True, False, False)
>>> ebv(["x"]), ebv([0]), ebv([])
(True, False, False)
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

import orjson

from jarenlab.errors import QueryError

NUMBER_TYPES = (int, float)
_NUM = {int, float}


def is_num(x: Any) -> bool:
    """True for an ``int`` or ``float`` item (never a ``bool``).

    >>> is_num(2), is_num(2.5), is_num(True)
    (True, True, False)
    """
    t = type(x)
    return t is int or t is float


#: the JSON kind of each item type.
TYPE_KINDS: dict[type, str] = {
    type(None): "null",
    bool: "boolean",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def kind(x: Any) -> str:
    """The JSON kind of an item: null, boolean, number, string, array or object.

    >>> kind(None), kind(True), kind(1.5), kind([])
    ('null', 'boolean', 'number', 'array')
    """
    t = type(x)
    return TYPE_KINDS.get(t) or t.__name__


def json_eq(a: Any, b: Any) -> bool:
    """Deep JSON equality: ``1 == 1.0``, booleans are not numbers, NaN equals nothing.

    >>> json_eq({"a": [1, 2]}, {"a": [1.0, 2]})
    True
    """
    ta = type(a)
    tb = type(b)
    if ta is str:
        return tb is str and a == b
    if ta in _NUM:
        return tb in _NUM and a == b
    if ta is bool:
        return tb is bool and a == b
    if a is None:
        return b is None
    if ta is list:
        return tb is list and len(a) == len(b) and all(json_eq(x, y) for x, y in zip(a, b))
    if ta is dict:
        return tb is dict and a.keys() == b.keys() and all(json_eq(v, b[k]) for k, v in a.items())
    return False


def identical(a: Any, b: Any, *, decoded: bool = False) -> bool:
    """Exact sameness: the same types all the way down (``1`` is not ``1.0``, ``True`` is not ``1``,
    a tuple is not a list), members in the same order, and ``-0.0`` is not ``0.0``.

    ``decoded=True`` says both values were decoded from JSON text (so they hold no tuple): then
    their serialisations, compared byte for byte, decide it in a tenth of the time (a live window
    asks this of every maintained row).

    >>> identical([1, {"a": None}], [1, {"a": None}]), identical([1], (1,)), identical(0.0, -0.0)
    (True, False, False)
    >>> identical({"a": 1, "b": 2.0}, {"a": 1, "b": 2}, decoded=True)
    False
    """
    if a is b:
        return True
    if decoded:
        try:
            return orjson.dumps(a) == orjson.dumps(b)
        except TypeError:  # an integer beyond 64 bits (computed, never stored): the general path
            pass
    t = type(a)
    if t is not type(b):
        return False
    if t is dict:
        return len(a) == len(b) and all(
            ka == kb and identical(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items())
        )
    if t is list or t is tuple:
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b))
    if t is float:
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def json_lt(a: Any, b: Any) -> bool:
    """Ordering for comparisons: number-number or string-string (code points), else false.

    >>> json_lt(1, 2), json_lt("😀", "\\uffff"), json_lt(None, 1)
    (True, False, False)
    """
    ta = type(a)
    if ta is str:
        return type(b) is str and a < b
    if ta in _NUM:
        return type(b) in _NUM and a < b
    return False


def hash_key(x: Any) -> Hashable:
    """A hashable stand-in for deep equality where NaN equals NaN (grouping, distinct).

    >>> hash_key(1) == hash_key(1.0), hash_key(True) == hash_key(1)
    (True, False)
    """
    t = type(x)
    if t is str:
        return ("s", x)
    if t is int:
        return ("n", x)
    if t is float:
        return ("nan",) if x != x else ("n", x)
    if t is bool:
        return ("b", x)
    if x is None:
        return ("z",)
    if t is list:
        return ("a", tuple(hash_key(v) for v in x))
    if t is dict:
        return ("o", frozenset((k, hash_key(v)) for k, v in x.items()))
    return ("?", id(x))


def ebv(seq: list[Any], doc_path: str | None = None) -> bool:
    """The effective boolean value of a sequence (several items is ``JQ2003``).

    >>> ebv([float("nan")]), ebv([None]), ebv([{}]), ebv([""])
    (False, False, True, False)
    """
    n = len(seq)
    if n == 0:
        return False
    if n > 1:
        raise QueryError("JQ2003", f"the boolean value of {n} items is undefined", doc_path=doc_path)
    x = seq[0]
    t = type(x)
    if t is bool:
        return x
    if t is int:
        return x != 0
    if t is float:
        return x == x and x != 0.0
    if t is str:
        return x != ""
    return x is not None


def number_text(x: int | float) -> str:
    """The string form of a number: integral floats print without ``.0``.

    >>> number_text(2.0), number_text(0.5), number_text(float("inf")), number_text(7)
    ('2', '0.5', 'Infinity', '7')
    """
    if not isinstance(x, float):
        return str(x)
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x)) if x != 0 or math.copysign(1.0, x) > 0 else "-0"
    return repr(x)


def check_json(value: Any, depth: int = 0) -> str | None:
    """Why ``value`` is not a JSON value (finite numbers, str keys), or ``None`` if it is.

    >>> check_json({"a": [1, None]}), check_json(float("nan"))
    (None, 'non-finite number nan')
    """
    t = type(value)
    if value is None or t is bool or t is int or t is str:
        return None
    if t is float:
        return None if math.isfinite(value) else f"non-finite number {value!r}"
    if depth > 200:
        return "nesting deeper than 200 levels"
    if t is list:
        for v in value:
            why = check_json(v, depth + 1)
            if why:
                return why
        return None
    if t is dict:
        for k, v in value.items():
            if type(k) is not str:
                return f"object key {k!r} is not a string"
            why = check_json(v, depth + 1)
            if why:
                return why
        return None
    return f"{t.__name__} is not a JSON type"
