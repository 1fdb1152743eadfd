"""pandas habits in the builder: understood where the language has them, refused with advice otherwise.

An analyst writes ``it.name.str.contains("x")``, ``it.date.dt.year``, ``it.close.mean()``. The
first is the language's ``$contains`` (through :class:`StrAccessor`), the second its ``$date-part``
(through :class:`jarenlab.query.build.date_accessor.DateAccessor`); the others are names the builder must never
quietly turn into member paths (``$it.close.mean`` would read a member ``mean`` and find nothing). :data:`REFUSED` lists the pandas method names that are refused on
sight with ``JQ0034``, each with what to write instead; a member with such a name is still
reached with ``it["name"]``. Any other call of a member (``it.x.count()``) is refused the same way.

>>> from jarenlab.query.build.expr import it
>>> it.name.str.contains("x").document
{'$contains': ['$it.name', 'x']}
>>> it.name.str.lower().document
{'$lower': ['$it.name']}
"""

from __future__ import annotations

from typing import Any, Generic, NoReturn, Protocol, TypeVar

from jarenlab.errors import QueryError


class Textual(Protocol):
    """What the string habits need of an expression: the language's string functions, each giving
    an expression of the same kind (the builder's ``Expr``; named here so habits need not import it)."""

    def lower(self: E) -> E: ...
    def upper(self: E) -> E: ...
    def length(self: E) -> E: ...
    def startswith(self: E, prefix: Any) -> E: ...
    def endswith(self: E, suffix: Any) -> E: ...
    def contains(self: E, part: Any) -> E: ...
    def search(self: E, pattern: Any) -> E: ...
    def matches(self: E, pattern: Any) -> E: ...


E = TypeVar("E", bound=Textual)

_TO_PANDAS = "run the query into pandas first (q.to_pandas()) and use pandas there"

#: pandas method names refused on an expression, with what to write instead.
REFUSED: dict[str, str] = {
    "isna": "a missing member is it.x.is_empty(); a stored null is it.x == None",
    "isnull": "a missing member is it.x.is_empty(); a stored null is it.x == None",
    "notna": "a present member is it.x.exists() (a stored null is present)",
    "notnull": "a present member is it.x.exists() (a stored null is present)",
    "fillna": "a default for a missing value is the document phrase {'$default': ['$it.x', value]}",
    "dropna": "keep rows that have the member: where(it.x.exists())",
    "astype": "casts are the document phrases $string, $number, $boolean ({'$number': '$it.x'})",
    "apply": "register a host operator (jl.open(..., operators={'f': fn})) and call {'$f': ['$it.x']}",
    "mean": "the mean is q.avg(it.x), or agg.avg(it.x) per group",
    "median": "the median is q.median(it.x), or agg.median(it.x) per group",
    "std": "the standard deviation is q.std(it.x), or agg.std(it.x) per group",
    "var": "the variance is q.std(it.x) squared, or agg.std(it.x) * agg.std(it.x) per group",
    "unique": "distinct values are q.select(it.x).distinct()",
    "nunique": "the number of distinct values is agg.count_distinct(it.x) per group, or q.select(it.x).distinct().count()",
    "value_counts": "counts per value are q.group_by(it.x).select({'x': key('key'), 'n': agg.count()})",
    "sort_values": "order with q.order_by(it.x) or q.order_by(it.x.desc())",
    "groupby": "group with q.group_by(it.x)",
    "agg": "aggregate with q.group_by(...).select({'n': agg.count(), 'mean': agg.avg(it.x)})",
    "aggregate": "aggregate with q.group_by(...).select({'n': agg.count(), 'mean': agg.avg(it.x)})",
    "to_list": "run the query: q.to_list(), or q.select(it.x).to_list() for one member",
    "tolist": "run the query: q.to_list(), or q.select(it.x).to_list() for one member",
    "to_numpy": "run the query: q.select(it.x).to_pandas()['value'].to_numpy()",
    "iloc": "positions are q.skip(n).take(m); array items are it.x[0]",
    "loc": "filter with q.where(...); members are it.x or it['x']",
    "cat": _TO_PANDAS,
    "cumsum": "a running sum is a window: q.window(order_by=it.t, total=win.sum(it.x))",
    "cumprod": _TO_PANDAS,
    "idxmax": _TO_PANDAS,
    "idxmin": _TO_PANDAS,
    "quantile": _TO_PANDAS,
    "rolling": "a moving aggregate over time is q.rolling(it.t, 'P7D', avg=agg.avg(it.x))",
    "resample": "a series per interval is q.resample(it.t, 'PT1H', n=agg.count(), fill=0)",
    "shift": _TO_PANDAS,
    "diff": _TO_PANDAS,
    "clip": _TO_PANDAS,
    "describe": _TO_PANDAS,
    "drop_duplicates": "drop repeated results with q.distinct()",
}


_AGG_LIST = "the aggregates are agg.count, count_distinct, sum, avg, min, max, median, std"
_WIN_LIST = "the window functions are win.row_number, rank, dense_rank, lag, lead, count, sum, avg, min, max"

#: pandas and SQL names that are not aggregates of ``agg``, with what to write instead.
AGG_REFUSED: dict[str, str] = {
    "mean": "the mean is agg.avg(it.x)",
    "average": "the mean is agg.avg(it.x)",
    "nunique": "the number of distinct values is agg.count_distinct(it.x)",
    "size": "the number of items is agg.count()",
    "var": "the variance is agg.std(it.x) * agg.std(it.x)",
    "stddev": "the standard deviation is agg.std(it.x) (ddof=1, as pandas)",
    "quantile": f"the median is agg.median(it.x); for other quantiles {_TO_PANDAS}",
}

#: pandas and SQL names that are not window functions of ``win``, with what to write instead.
WIN_REFUSED: dict[str, str] = {
    "shift": "pandas' shift(n) is win.lag(it.x, n), shift(-n) win.lead(it.x, n)",
    "mean": "the mean over the frame is win.avg(it.x)",
    "cumsum": "a running sum is win.sum(it.x) in an ordered window",
    "cumcount": "positions from 0 are win.row_number() - 1",
}


def refuse_namespace(shown: str, name: str) -> NoReturn:
    """``agg.mean`` or ``win.ntile``: a name the namespace does not have (``JQ0034``), with what to
    write instead (never Python's ``type object 'agg' has no attribute 'mean'``).

    >>> refuse_namespace("agg", "mean")
    Traceback (most recent call last):
    ...
    jarenlab.errors.QueryError: JQ0034 builder_habit: agg.mean: the mean is agg.avg(it.x); the aggregates are agg.count, count_distinct, sum, avg, min, max, median, std
    """
    table, listed = (AGG_REFUSED, _AGG_LIST) if shown == "agg" else (WIN_REFUSED, _WIN_LIST)
    advice = table.get(name, f"there is no {shown}.{name}")
    refuse(shown, name, f"{advice}; {listed}", member=False)


def refuse(shown: str, name: str, advice: str, *, member: bool = True) -> NoReturn:
    """Raise the builder's ``JQ0034`` for ``shown.name`` (``member``: say how to reach such a member)."""
    tail = f" (a member named {name!r} is {shown}[{name!r}])" if member else ""
    raise QueryError("JQ0034", f"{shown}.{name}: {advice}{tail}")


def on_attribute(expr: Textual, name: str, shown: str) -> Any:
    """What ``expr.<name>`` means when ``name`` is a pandas habit, or None when it is a member."""
    if name == "str":
        return StrAccessor(expr, shown)
    if name in REFUSED:
        refuse(shown, name, REFUSED[name])
    return None


def not_callable(shown: str) -> NoReturn:
    """``it.x.count()``: the last member was taken for a method (``JQ0034``); ``it.t.dt.year()``:
    a value (shown as its document) was called.

    >>> not_callable('{"$date-part": ["$it.t", "year"]}')
    Traceback (most recent call last):
    ...
    jarenlab.errors.QueryError: JQ0034 builder_habit: {"$date-part": ["$it.t", "year"]} is a value, not a method: drop the () (date parts such as it.t.dt.year are properties)
    """
    if not shown.startswith("it"):
        raise QueryError(
            "JQ0034",
            f"{shown} is a value, not a method: drop the () (date parts such as it.t.dt.year are properties)",
        )
    name = shown.rpartition(".")[2]
    raise QueryError(
        "JQ0034",
        f"{shown}(): the builder has no method {name!r}, so {shown} reads a member {name!r} and cannot "
        f"be called; methods are: {', '.join(METHODS)}; aggregates are q.count(), q.sum(it.x), "
        "agg.avg(it.x), ...",
    )


#: The builder's methods on an expression (named in advice).
METHODS = (
    "asc",
    "desc",
    "exists",
    "is_empty",
    "isin",
    "between",
    "abs",
    "round",
    "startswith",
    "endswith",
    "contains",
    "matches",
    "search",
    "upper",
    "lower",
    "length",
    "str.*",
    "dt.*",
)


class StrAccessor(Generic[E]):
    """``it.x.str``: pandas' string methods, as the language's string functions.

    ``contains(pat, case=True, regex=True)`` (pandas' defaults: a pattern with regular-expression
    characters is an I-Regexp ``$search``; plain text is ``$contains``), ``startswith``,
    ``endswith``, ``lower``, ``upper``, ``len``, ``fullmatch`` (``$match``). Others are refused
    with advice.
    """

    __slots__ = ("_expr", "_shown")

    def __init__(self, expr: E, shown: str) -> None:
        self._expr = expr
        self._shown = shown

    def contains(self, pat: Any, case: bool = True, flags: int = 0, na: Any = None, regex: bool = True) -> E:
        """Substring test (``$contains``), or ``$search`` for a regular expression.

        pandas' ``na`` is what a missing value gives: a member that is missing (or not a string)
        never contains anything here, so ``na=False`` (and ``None``) is what the language does;
        ``na=True`` is refused with what to write.
        """
        for flag, given in (("case", case), ("regex", regex)):
            if not isinstance(given, bool):
                raise QueryError(
                    "JQ2010", f"{self._shown}.str.contains({flag}=...) takes True or False, not {given!r}"
                )
        if na is True:
            why = f"na=True: write ({self._shown}.is_empty() | {self._shown}.str.contains(...))"
            refuse(self._shown + ".str", "contains", why, member=False)
        if na not in (None, False) or flags:
            why = "na is False or None (a missing member contains nothing), and flags are not taken"
            refuse(self._shown + ".str", "contains", why, member=False)
        target = self._expr if case else self._expr.lower()
        if isinstance(pat, str) and not case:
            pat = pat.lower()
        if regex and isinstance(pat, str) and any(c in pat for c in ".^$*+?{}[]\\|()"):
            if not case:
                why = "case=False with a regular expression is not supported"
                refuse(self._shown + ".str", "contains", why, member=False)
            return target.search(pat)
        return target.contains(pat)

    def startswith(self, prefix: Any) -> E:
        """``$starts-with``."""
        return self._expr.startswith(prefix)

    def endswith(self, suffix: Any) -> E:
        """``$ends-with``."""
        return self._expr.endswith(suffix)

    def lower(self) -> E:
        """``$lower``."""
        return self._expr.lower()

    def upper(self) -> E:
        """``$upper``."""
        return self._expr.upper()

    def len(self) -> E:
        """``$string-length`` (code points)."""
        return self._expr.length()

    def fullmatch(self, pattern: str) -> E:
        """``$match``: the whole string matches the I-Regexp pattern."""
        return self._expr.matches(pattern)

    def __getitem__(self, index: Any) -> NoReturn:
        raise QueryError(
            "JQ0034",
            f"{self._shown}.str[{index!r}]: characters by position are the document phrase "
            "{'$substring': ['$it.x', start, length]}",
        )

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("_"):
            raise AttributeError(name)
        refuse(
            self._shown + ".str",
            name,
            "the string methods here are contains, startswith, endswith, lower, upper, len, fullmatch "
            "(and replace/substring as document phrases $replace, $substring)",
            member=False,
        )
