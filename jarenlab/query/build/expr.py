"""Builder expressions: ``it``, ``param``, ``key``, ``agg`` and :class:`Expr`.

Python operators on an :class:`Expr` record operator phrases; nothing is evaluated.

>>> ((it.origin == "JFK") & (it.dep_delay > param("min_delay"))).document
{'$and': [{'$eq': ['$it.origin', 'JFK']}, {'$gt': ['$it.dep_delay', '$min_delay']}]}
>>> it["odd key"].tags[0].document
"$it['odd key'].tags[0]"
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn

from jarenlab.errors import QueryError
from jarenlab.query.build import habits
from jarenlab.query.build.date_accessor import DateAccessor
from jarenlab.query.build.habits import StrAccessor
from jarenlab.query.lang.path import VAR_NAME, parse_path, path_text
from jarenlab.values import query_value

_LOGIC_HINT = "use & | ~ (with parentheses) instead of and / or / not, which Python cannot overload"


#: What ``int(it.x)`` and ``float(it.x)`` say to write instead.
_CAST = "a query's number is it.x itself; a cast is {'$number': '$it.x'}"


def _python_only(expr: Expr, what: str, advice: str) -> QueryError:
    """JQ0034 for a Python operation an expression cannot be part of (a query runs later, in the
    store), with what to write instead."""
    return QueryError("JQ0034", f"{what} of {expr._shown()} cannot build a query: {advice}")


def lit(value: Any) -> Any:
    """The document form of a Python value or :class:`Expr`.

    >>> lit("$5"), lit(it.a), lit([1, 2])
    ('$$5', '$it.a', {'$const': [1, 2]})
    """
    if isinstance(value, Expr):
        return value.document
    if isinstance(value, StrAccessor):
        raise QueryError("JQ0034", "it.x.str is an accessor, not a value: call one of its methods")
    value = query_value(value, "JQ0010", f"cannot use {value!r} in a query")
    if isinstance(value, str):
        if 'Expr("$' in value or "Expr({" in value:
            raise QueryError(
                "JQ0034", f"{value!r} is Python's text of an expression (str(it.x), or an f-string of "
                "one), which would be a constant: an expression's value as text is the document phrase "
                "$string ({'$string': '$it.x'}), texts joined $concat",
            )  # fmt: skip
        return "$" + value if value.startswith("$") else value
    if isinstance(value, list | dict):
        return {"$const": value}
    return value


def _op(name: str, *args: Any) -> Expr:
    # An expression over an aggregate stays one (``agg.sum(it.x) / agg.count()``), so a select
    # without group_by can tell it aggregates the whole collection.
    kind = Aggregate if any(isinstance(a, Aggregate) for a in args) else Expr
    return kind({f"${name}": [lit(a) for a in args]})


class Expr:
    """A query expression; Python operators build operator phrases.

    ``== != < <= > >=`` build comparisons, ``& | ~`` build ``$and $or $not``,
    ``+ - * / // %`` and unary ``-`` build arithmetic. Member access records a path;
    a member whose name is also a method here (``desc``, ``exists``, ...) is reached
    with ``it["desc"]``.

    >>> (it.a + 1).document
    {'$add': ['$it.a', 1]}
    """

    __slots__ = ("_doc",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, document: Any) -> None:
        self._doc = document

    @property
    def document(self) -> Any:
        """The JSON document of this expression."""
        return self._doc

    def _step(self, step: tuple[str, object]) -> Expr:
        doc = self._doc
        if isinstance(doc, str) and doc.startswith("$") and not doc.startswith("$$"):
            p = parse_path(doc, "")
            return _Member(path_text(p.var, (*p.steps, step)))
        return _op("get", self, step[1])

    def _shown(self) -> str:
        doc = self._doc
        text = doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False)
        return text[1:] if text.startswith("$it") else text

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        habit = habits.on_attribute(self, name, self._shown())
        if habit is not None:
            return habit
        return self._step(("member", name))

    def __getitem__(self, key: str | int) -> Expr:
        if isinstance(key, bool) or not isinstance(key, str | int):
            raise QueryError("JQ0004", f"a member name or integer index is needed, got {key!r}")
        return self._step(("member", key) if isinstance(key, str) else ("index", key))

    def __iter__(self) -> NoReturn:
        raise QueryError(
            "JQ0008", "an expression cannot be iterated in Python; use it.tags[0] or '$it.tags[*]'"
        )

    def __contains__(self, item: object) -> NoReturn:
        raise QueryError("JQ0008", "`in` cannot build a query; use expr.isin([...])")

    def __bool__(self) -> NoReturn:
        raise QueryError("JQ0008", f"an expression has no Python truth value; {_LOGIC_HINT}")

    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        if isinstance(other, type):  # Python's own machinery (inspect) asks `x == type`: not a query
            return NotImplemented
        return _op("eq", self, other)

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        if isinstance(other, type):
            return NotImplemented
        return _op("ne", self, other)

    def __lt__(self, other: Any) -> Expr:
        return _op("lt", self, other)

    def __le__(self, other: Any) -> Expr:
        return _op("le", self, other)

    def __gt__(self, other: Any) -> Expr:
        return _op("gt", self, other)

    def __ge__(self, other: Any) -> Expr:
        return _op("ge", self, other)

    def _logic(self, name: str, other: Any) -> Expr:
        _condition(other, "&" if name == "and" else "|")
        parts: list[Any] = []
        for e in (self, other):
            doc = lit(e)
            if isinstance(doc, dict) and list(doc) == [f"${name}"]:
                parts.extend(doc[f"${name}"])
            else:
                parts.append(doc)
        # A condition over an aggregate stays one, as arithmetic does (see ``_op``).
        kind = Aggregate if isinstance(self, Aggregate) or isinstance(other, Aggregate) else Expr
        return kind({f"${name}": parts})

    def __and__(self, other: Any) -> Expr:
        return self._logic("and", other)

    def __rand__(self, other: Any) -> Expr:
        _condition(other, "&")
        return Expr(lit(other))._logic("and", self)

    def __or__(self, other: Any) -> Expr:
        return self._logic("or", other)

    def __ror__(self, other: Any) -> Expr:
        _condition(other, "|")
        return Expr(lit(other))._logic("or", self)

    def __invert__(self) -> Expr:
        return _op("not", self)

    def __xor__(self, other: Any) -> NoReturn:
        raise _python_only(
            self, "^", "the builder has no exclusive or: for two conditions write (a) != (b), or (a & ~b) | (~a & b)"
        )

    __rxor__ = __xor__

    def __add__(self, other: Any) -> Expr:
        return _op("add", self, other)

    def __radd__(self, other: Any) -> Expr:
        return _op("add", other, self)

    def __sub__(self, other: Any) -> Expr:
        return _op("sub", self, other)

    def __rsub__(self, other: Any) -> Expr:
        return _op("sub", other, self)

    def __mul__(self, other: Any) -> Expr:
        return _op("mul", self, other)

    def __rmul__(self, other: Any) -> Expr:
        return _op("mul", other, self)

    def __truediv__(self, other: Any) -> Expr:
        return _op("div", self, other)

    def __rtruediv__(self, other: Any) -> Expr:
        return _op("div", other, self)

    def __floordiv__(self, other: Any) -> Expr:
        return _op("idiv", self, other)

    def __mod__(self, other: Any) -> Expr:
        return _op("mod", self, other)

    def __pow__(self, other: Any) -> NoReturn:
        raise _python_only(self, "**", "the language has no power: write it.x * it.x for a square")

    __rpow__ = __pow__

    def __int__(self) -> NoReturn:
        raise _python_only(self, "int()", _CAST)

    def __float__(self) -> NoReturn:
        raise _python_only(self, "float()", _CAST)

    def __divmod__(self, other: Any) -> NoReturn:
        raise _python_only(self, "divmod()", "write it.x // n and it.x % n")

    def __rdivmod__(self, other: Any) -> NoReturn:
        raise _python_only(self, "divmod()", "write n // it.x and n % it.x")

    def __matmul__(self, other: Any) -> NoReturn:
        raise _python_only(self, "@", "the language has no matrix product")

    __rmatmul__ = __matmul__

    def __lshift__(self, other: Any) -> NoReturn:
        raise _python_only(self, "<< and >>", "the language has no bit shifts: multiply or divide by a power of 2")

    __rlshift__ = __rshift__ = __rrshift__ = __lshift__

    def __len__(self) -> NoReturn:
        raise _python_only(self, "len()", "a string's or array's length is it.x.length()")

    def __neg__(self) -> Expr:
        return _op("neg", self)

    def asc(self, *, empty: str = "least") -> OrderKey:
        """An ascending ordering key (``empty``: where missing values go)."""
        return OrderKey(self._doc, False, empty, isinstance(self, Aggregate))

    def desc(self, *, empty: str = "least") -> OrderKey:
        """A descending ordering key.

        >>> it.dep_delay.desc().spec()
        {'$key': '$it.dep_delay', '$dir': 'desc'}
        """
        return OrderKey(self._doc, True, empty, isinstance(self, Aggregate))

    def __abs__(self) -> Expr:
        """Python's ``abs(expr)``: :meth:`abs` (the same number either way)."""
        return self.abs()

    def __round__(self, ndigits: int | None = None) -> NoReturn:
        raise QueryError(
            "JQ0034",
            f"round({self._shown()}) cannot build a query: Python's round() rounds halves to even, and the "
            f"language's $round halves away from zero (as SQL); write {self._shown()}.round("
            f"{ndigits or 0}) for that",
        )

    def abs(self) -> Expr:
        """The absolute value of a number: ``$if`` of ``$lt`` and ``$neg`` (non-numbers pass through).

        >>> it.x.abs().document
        {'$if': [{'$lt': ['$it.x', 0]}, {'$neg': ['$it.x']}, '$it.x']}
        """
        return Expr({"$if": [_op("lt", self, 0).document, _op("neg", self).document, self._doc]})

    def round(self, digits: int = 0) -> Expr:
        """``$round``: to ``digits`` decimal places, halves away from zero on the number's decimal
        form (``2.675`` is ``2.68``; see :func:`jarenlab.query.lang.functions.round_half_away`).

        >>> it.close.round(2).document
        {'$round': ['$it.close', 2]}
        """
        return _op("round", self, digits)

    def between(self, low: Any, high: Any) -> Expr:
        """``low <= x <= high`` (pandas' ``between``, both ends included).

        >>> it.x.between(1, 5).document
        {'$and': [{'$ge': ['$it.x', 1]}, {'$le': ['$it.x', 5]}]}
        """
        return (self >= low) & (self <= high)

    def exists(self) -> Expr:
        """True when the value is present (a stored ``null`` is present)."""
        return _op("exists", self)

    def is_empty(self) -> Expr:
        """True when the value is missing."""
        return _op("empty", self)

    def startswith(self, prefix: Any) -> Expr:
        """``$starts-with``."""
        return _op("starts-with", self, prefix)

    def endswith(self, suffix: Any) -> Expr:
        """``$ends-with``."""
        return _op("ends-with", self, suffix)

    def contains(self, part: Any) -> Expr:
        """``$contains`` (substring)."""
        return _op("contains", self, part)

    def matches(self, pattern: str) -> Expr:
        """``$match``: the whole string matches the I-Regexp pattern."""
        return _op("match", self, pattern)

    def search(self, pattern: str) -> Expr:
        """``$search``: the I-Regexp pattern matches somewhere in the string."""
        return _op("search", self, pattern)

    def upper(self) -> Expr:
        """``$upper``."""
        return _op("upper", self)

    def lower(self) -> Expr:
        """``$lower``."""
        return _op("lower", self)

    def length(self) -> Expr:
        """``$string-length`` in code points."""
        return _op("string-length", self)

    @property
    def dt(self) -> DateAccessor:
        """Date functions of a date-time member: ``it.t.dt.hour``, ``it.t.dt.trunc("day")``,
        ``it.t.dt + "PT30M"`` (:class:`jarenlab.query.build.date_accessor.DateAccessor`). A member named ``dt`` is
        ``it["dt"]``."""
        return DateAccessor(self, self._shown())

    def _items(self) -> Any:
        doc = self._doc
        if isinstance(doc, str) and doc.startswith("$") and not doc.startswith("$$"):
            return doc if doc.endswith("[*]") else doc + "[*]"
        return doc

    def _quantified(self, name: str, predicate: Any) -> Expr:
        if not callable(predicate):
            raise QueryError(
                "JQ2010", f"{name[1:]}() takes a function of one item, e.g. lambda leg: leg.d > 30"
            )
        code = getattr(predicate, "__code__", None)
        var = code.co_varnames[0] if code is not None and code.co_argcount >= 1 else "x"
        var = var if VAR_NAME.match(var) else "x"
        cond = predicate(Expr("$" + var))
        if isinstance(cond, bool):
            cond = Expr(cond)
        if not isinstance(cond, Expr):
            raise QueryError("JQ2010", f"the {name[1:]}() condition is not an expression: {cond!r}")
        return Expr({name: {var: self._items(), "$satisfies": cond.document}})

    def any(self, predicate: Any = None) -> Expr:
        """``$some``: some item of this array (or sequence) makes ``predicate`` true; without one,
        whether there is any item.

        >>> it.legs.any(lambda leg: leg.delay > 30).document
        {'$some': {'leg': '$it.legs[*]', '$satisfies': {'$gt': ['$leg.delay', 30]}}}
        >>> it.tags.any().document
        {'$exists': ['$it.tags[*]']}
        """
        if predicate is None:
            return _op("exists", Expr(self._items()))
        return self._quantified("$some", predicate)

    def all(self, predicate: Any) -> Expr:
        """``$every``: every item makes ``predicate`` true (true when there are none).

        >>> it.tags.all(lambda t: t.startswith("a")).document
        {'$every': {'t': '$it.tags[*]', '$satisfies': {'$starts-with': ['$t', 'a']}}}
        """
        return self._quantified("$every", predicate)

    def isin(self, values: Any) -> Expr:
        """Membership: ``$eq`` against a ``$seq`` of the values for a Python list, against ``$p[*]``
        for a param (the planner binds either as one JSON list).

        >>> it.x.isin([1, "$2"]).document
        {'$eq': ['$it.x', {'$seq': [1, '$$2']}]}
        >>> it.x.isin(param("xs")).document
        {'$eq': ['$it.x', '$xs[*]']}
        """
        if isinstance(values, Expr):
            doc = values.document
            is_path = isinstance(doc, str) and doc.startswith("$") and not doc.startswith("$$")
            return _op("eq", self, Expr(doc + "[*]") if is_path else values)
        if isinstance(values, str | bytes | dict) or not hasattr(values, "__iter__"):
            raise QueryError(
                "JQ2010", f"isin() takes a list of values or a param, not {type(values).__name__} {values!r}"
            )
        items = list(values)
        if not items:
            return Expr(False)
        return Expr({"$eq": [self._doc, {"$seq": [lit(v) for v in items]}]})

    def __repr__(self) -> str:
        return f"Expr({json.dumps(self._doc, ensure_ascii=False)})"


class _Member(Expr):
    """A path ending in a member step: calling it (``it.x.count()``) names the missing method."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        habits.not_callable(self._shown())


def _condition(other: Any, sign: str) -> None:
    """Refuse a Python value beside ``&`` or ``|`` that is not a condition (``JQ0008``):
    ``(it.x > 1) & 5`` would be true wherever it.x > 1 (5 is a true value), and in
    ``~5 & (it.x > 1)`` Python computes ~5, -6, before the builder sees it.

    >>> _condition(it.x > 1, "&"), _condition(True, "|")
    (None, None)
    >>> _condition(5, "&")
    Traceback (most recent call last):
    ...
    jarenlab.errors.QueryError: JQ0008 unsupported: & combines conditions such as (it.x > 1) & (it.g == 'a'), or True/False, not 5: compare it (it.y == 5)
    """
    if not isinstance(other, Expr | bool) and getattr(other, "dtype", None) != bool:  # (numpy's bool too)
        raise QueryError(
            "JQ0008",
            f"{sign} combines conditions such as (it.x > 1) {sign} (it.g == 'a'), or True/False, "
            f"not {other!r}: compare it (it.y == {other!r})",
        )


@dataclass(frozen=True)
class OrderKey:
    """An ``$orderby`` spec made by :meth:`Expr.asc` / :meth:`Expr.desc`."""

    key: Any
    descending: bool
    empty: str = "least"
    #: Whether the key is an aggregate (``agg.count().desc()``): it orders groups, not items.
    aggregate: bool = False

    def spec(self) -> dict[str, Any]:
        """The ``$orderby`` spec document."""
        if self.empty not in ("least", "greatest"):
            raise QueryError("JQ0007", "empty= is 'least' or 'greatest'")
        out: dict[str, Any] = {"$key": self.key}
        if self.descending:
            out["$dir"] = "desc"
        if self.empty == "greatest":
            out["$empty"] = "greatest"
        return out

    def asc(self, **_: Any) -> NoReturn:
        """Refused (JQ0034): the key is ordered already."""
        raise self._again("asc")

    def desc(self, **_: Any) -> NoReturn:
        """Refused (JQ0034): the key is ordered already.

        >>> it.x.desc().desc()
        Traceback (most recent call last):
        ...
        jarenlab.errors.QueryError: JQ0034 builder_habit: it.x.desc().desc(): an ordering key takes one direction: write it.x.desc() or it.x.asc() once
        """
        raise self._again("desc")

    def _again(self, name: str) -> QueryError:
        key = Expr(self.key)._shown()
        return QueryError(
            "JQ0034", f"{key}.{'desc' if self.descending else 'asc'}().{name}(): an ordering key takes "
            f"one direction: write {key}.desc() or {key}.asc() once",
        )  # fmt: skip


it = Expr("$it")


def param(name: str) -> Expr:
    """An external parameter ``$name``, bound at run time (``to_list(name=...)``).

    >>> param("min_delay").document
    '$min_delay'
    """
    if not isinstance(name, str) or not VAR_NAME.match(name) or name == "it":
        raise QueryError("JQ0004", f"{name!r} is not a usable parameter name")
    return Expr("$" + name)


class GroupKey(Expr):
    """A group key bound by ``group_by`` (what :func:`key` returns); outside a group-by's
    ``select`` it is refused (``JQ0006``) rather than read as an external without a value."""

    __slots__ = ()

    @property
    def name(self) -> str:
        """The key's name."""
        return str(self._doc)[1:]


def key(name: str) -> Expr:
    """A group key bound by ``group_by(name=...)`` (``group_by(expr)`` names it ``key``).

    >>> key("carrier").document
    '$carrier'
    >>> key(3)
    Traceback (most recent call last):
    ...
    jarenlab.errors.QueryError: JQ0004 bad_path: key() takes the name of a key group_by binds (group_by(expr) binds key('key'), group_by(carrier=expr) key('carrier')), not 3
    """
    if not isinstance(name, str) or not VAR_NAME.match(name) or name == "it":
        raise QueryError(
            "JQ0004",
            "key() takes the name of a key group_by binds (group_by(expr) binds key('key'), "
            f"group_by(carrier=expr) key('carrier')), not {name!r}",
        )
    return GroupKey("$" + name)


class Aggregate(Expr):
    """An expression holding an aggregate of :class:`agg`: per group after ``group_by``, else over
    every item (``select({"n": agg.count()})`` is one row, as SQL and pandas answer)."""

    __slots__ = ()


def refuse_item_aggregate(value: Any, what: str) -> None:
    """Refuse an aggregate where items are taken one at a time (JQ0006): a ``where`` keeps or drops
    one item, an ``order_by`` without ``group_by`` orders single items, so ``agg.count()`` there
    would read one item (``where(agg.count() > 1)`` keeps nothing) instead of a group.

    >>> refuse_item_aggregate(it.x > 1, "where()")
    >>> refuse_item_aggregate(agg.count() > 1, "where()")
    Traceback (most recent call last):
    ...
    jarenlab.errors.QueryError: JQ0006 bad_flwor: where() takes items one at a time, ...
    """
    if isinstance(value, Aggregate) or (isinstance(value, OrderKey) and value.aggregate):
        raise QueryError(
            "JQ0006",
            f"{what} takes items one at a time, so an aggregate there (agg.count(), agg.sum(...)) would "
            "read one item, not a group; an aggregate orders groups after group_by "
            "(group_by(...).order_by(agg.count().desc())), and groups are filtered on their results "
            "(SQL's HAVING): group_by(...).select({..., 'n': agg.count()}).where(it.n > 1)",
        )


#: The language's aggregate functions :class:`agg` calls.
AGGREGATES = frozenset({"count", "sum", "avg", "min", "max", "median", "stddev"})


class _Namespace(type):
    """The class of ``agg`` and ``win``: a name they do not have (``agg.mean``) is ``JQ0034`` with
    what to write instead, as ``it.x.mean()`` is."""

    def __getattr__(cls, name: str) -> NoReturn:
        if name.startswith("_"):
            raise AttributeError(name)
        habits.refuse_namespace(cls.__name__, name)


def _aggregate(name: str, *args: Any) -> Aggregate:
    return Aggregate({f"${name}": [lit(a) for a in args]})


class agg(metaclass=_Namespace):
    """Aggregates over the current group (after ``group_by``), e.g. ``agg.avg(it.dep_delay)``;
    without ``group_by``, ``select`` aggregates every item into one row."""

    @staticmethod
    def count(expr: Any = None) -> Expr:
        """The number of items (``agg.count()`` counts the group)."""
        return _aggregate("count", it if expr is None else expr)

    @staticmethod
    def count_distinct(expr: Any) -> Expr:
        """The number of distinct values (``$count`` of ``$distinct``; pandas' ``nunique``): a
        missing member counts for none, ``2`` and ``2.0`` are one value."""
        return Aggregate({"$count": [{"$distinct": [lit(expr)]}]})

    @staticmethod
    def sum(expr: Any) -> Expr:
        """``$sum`` (0 when empty)."""
        return _aggregate("sum", expr)

    @staticmethod
    def avg(expr: Any) -> Expr:
        """``$avg`` (missing when empty)."""
        return _aggregate("avg", expr)

    @staticmethod
    def min(expr: Any) -> Expr:
        """``$min``."""
        return _aggregate("min", expr)

    @staticmethod
    def max(expr: Any) -> Expr:
        """``$max``."""
        return _aggregate("max", expr)

    @staticmethod
    def median(expr: Any) -> Expr:
        """``$median`` (a float; missing when empty)."""
        return _aggregate("median", expr)

    @staticmethod
    def std(expr: Any, *, ddof: int = 1) -> Expr:
        """``$stddev``: the sample standard deviation (``ddof=0``: the population one)."""
        return _aggregate("stddev", expr, ddof)


class win(metaclass=_Namespace):
    """Window functions for :meth:`jarenlab.query.build.builder.Query.window`, e.g. ``rank=win.rank()``.

    >>> win.lag(it.d, 2).document, win.sum(it.d, frame=(-2, 0)).document
    ({'$lag': ['$it.d', 2]}, {'$sum': ['$it.d'], '$frame': [-2, 0]})
    """

    @staticmethod
    def row_number() -> Expr:
        """1, 2, ... in the window's order."""
        return Expr({"$row-number": []})

    @staticmethod
    def rank() -> Expr:
        """Ties share a rank; the next rank skips."""
        return Expr({"$rank": []})

    @staticmethod
    def dense_rank() -> Expr:
        """Ties share a rank; no gaps."""
        return Expr({"$dense-rank": []})

    @staticmethod
    def _offset(fn: str, expr: Any, offset: int, default: Any) -> Expr:
        if isinstance(offset, bool):  # (True == 1: it would read as one row)
            raise QueryError("JQ2010", f"win.{fn}() takes a number of rows as its offset, not {offset!r}")
        args = [lit(expr)] + ([offset] if offset != 1 or default is not None else [])
        return Expr({f"${fn}": args + ([lit(default)] if default is not None else [])})

    @staticmethod
    def lag(expr: Any, offset: int = 1, default: Any = None) -> Expr:
        """``expr`` of the row ``offset`` rows before (``default`` beyond the start)."""
        return win._offset("lag", expr, offset, default)

    @staticmethod
    def lead(expr: Any, offset: int = 1, default: Any = None) -> Expr:
        """``expr`` of the row ``offset`` rows after (``default`` beyond the end)."""
        return win._offset("lead", expr, offset, default)

    @staticmethod
    def _framed(fn: str, expr: Any, frame: tuple[int | None, int | None] | None) -> Expr:
        doc: dict[str, Any] = {f"${fn}": [lit(expr)]}
        if frame is not None:
            doc["$frame"] = list(frame)
        return Expr(doc)

    @staticmethod
    def count(expr: Any = None, *, frame: tuple[int | None, int | None] | None = None) -> Expr:
        """Rows (or ``expr`` items) in the frame (running by default when ordered)."""
        return win._framed("count", it if expr is None else expr, frame)

    @staticmethod
    def sum(expr: Any, *, frame: tuple[int | None, int | None] | None = None) -> Expr:
        """Sum over the frame (``frame=(-2, 0)``: this row and the two before)."""
        return win._framed("sum", expr, frame)

    @staticmethod
    def avg(expr: Any, *, frame: tuple[int | None, int | None] | None = None) -> Expr:
        """Mean over the frame."""
        return win._framed("avg", expr, frame)

    @staticmethod
    def min(expr: Any, *, frame: tuple[int | None, int | None] | None = None) -> Expr:
        """Least over the frame."""
        return win._framed("min", expr, frame)

    @staticmethod
    def max(expr: Any, *, frame: tuple[int | None, int | None] | None = None) -> Expr:
        """Greatest over the frame."""
        return win._framed("max", expr, frame)
