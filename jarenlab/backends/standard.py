"""The spellings every SQL dialect here shares (ANSI SQL): the dialects of :mod:`jarenlab.backends`
inherit them and spell the rest (JSON access, types, windows, plans) in their own words.

>>> StandardSQL().all_of(["a", "b"])
'(a AND b)'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jarenlab.backends.base import IDENTIFIER
from jarenlab.errors import PlanError

_OPS = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_AGGREGATES = frozenset({"count", "sum", "min", "max"})
#: How per-group results of each aggregate combine: counts and sums add, minima and maxima of them.
_REGROUP = {"count": "sum", "sum": "sum", "min": "min", "max": "max"}
_RANKINGS = {"row-number": "row_number", "rank": "rank", "dense-rank": "dense_rank"}


def identifier(name: str) -> str:
    """``name`` if it may reach SQL text as a plain identifier (the one rule, :data:`IDENTIFIER`); JD0010
    otherwise (the planner only ever writes names it checked)."""
    if not IDENTIFIER.match(name):
        raise PlanError("JD0010", f"internal: {name!r} is not an identifier")
    return name


#: The arithmetic a condition computes (:meth:`StandardSQL.arith`).
_ARITH = {"add": "+", "sub": "-", "mul": "*"}


class StandardSQL:
    """Clauses, logic, comparisons and aggregates as standard SQL writes them (a dialect inherits
    them and spells the rest: JSON access, type names, storage order, windows, plans)."""

    def table(self, name: str) -> str:
        """A collection's table, checked and quoted: ``flights`` -> ``"flights"``.

        >>> StandardSQL().table("flights")
        '"flights"'
        """
        return f'"{identifier(name)}"'

    def document(self) -> str:
        """The column holding a row's document text: ``doc``."""
        return "doc"

    def key(self) -> str:
        """The column holding a row's key: ``key``."""
        return "key"

    def is_present(self, expr: str) -> str:
        """``expr`` is not NULL: ``gx_a`` -> ``gx_a IS NOT NULL``."""
        return f"{expr} IS NOT NULL"

    def is_missing(self, expr: str) -> str:
        """``expr`` is NULL, as an index seeks it: ``gx_a`` -> ``gx_a IS NULL``."""
        return f"{expr} IS NULL"

    def compare(self, left: str, op: str, right: str) -> str:
        """``left op right`` for ``eq ne lt le gt ge`` (NULL where either is: read as false, so
        ``ne`` is the engine's existential one): ``gx_a``, ``gt``, ``?`` -> ``gx_a > ?``.

        >>> StandardSQL().compare("gx_a", "gt", "?")
        'gx_a > ?'
        """
        return f"{left} {_OPS[op]} {right}"

    def all_of(self, parts: Sequence[str]) -> str:
        """Every condition holds: ``[a, b]`` -> ``(a AND b)`` (one part is parenthesised too)."""
        return "(" + " AND ".join(parts) + ")"

    def any_of(self, parts: Sequence[str]) -> str:
        """Some condition holds: ``[a, b]`` -> ``(a OR b)``."""
        return "(" + " OR ".join(parts) + ")"

    def nonzero(self, value: str) -> str:
        """A number's effective boolean value: ``v`` -> ``v <> 0``."""
        return f"{value} <> 0"

    def nonempty(self, value: str) -> str:
        """A string's effective boolean value: ``v`` -> ``v <> ''``."""
        return f"{value} <> ''"

    def arith(self, fn: str, left: str, right: str) -> str:
        """``add``/``sub``/``mul`` of two numbers, NULL when either is.

        >>> StandardSQL().arith("sub", "a", "b")
        '(a - b)'
        """
        return f"({left} {_ARITH[fn]} {right})"

    def text_length(self, value: str) -> str:
        """A string's length in characters (code points in a UTF-8 text), 0 when NULL (a missing member:
        the engine's ``$string-length`` of nothing is that of the empty string).

        >>> StandardSQL().text_length("v")
        'coalesce(length(v), 0)'
        """
        return f"coalesce(length({value}), 0)"

    def select(self, columns: Sequence[str], table: str) -> str:
        """``SELECT`` columns of a table: ``["doc"]``, ``t`` -> ``SELECT doc FROM "t"``.

        >>> StandardSQL().select(["key", "doc"], "t")
        'SELECT key, doc FROM "t"'
        """
        return f"SELECT {', '.join(columns)} FROM {self.table(table)}"

    def where(self, cond: str) -> str:
        """A filter clause: ``x`` -> `` WHERE x``."""
        return f" WHERE {cond}"

    def having(self, cond: str) -> str:
        """A filter over a group-by's groups: ``x`` -> `` HAVING x``."""
        return f" HAVING {cond}"

    def group_by_leading(self, n: int) -> str:
        """Group by the first ``n`` selected columns (the keys): ``2`` -> `` GROUP BY 1, 2``.

        >>> StandardSQL().group_by_leading(2)
        ' GROUP BY 1, 2'
        """
        return " GROUP BY " + ", ".join(self.column_at(i + 1) for i in range(n))

    def or_zero(self, expr: str) -> str:
        """``expr``, or 0 where it is NULL (the engine's sum of nothing): ``coalesce(expr, 0)``."""
        return f"coalesce({expr}, 0)"

    def column_at(self, position: int) -> str:
        """A selected column by position (from 1; a group's key in ``ORDER BY``): ``1``."""
        return str(int(position))

    def row(self, parts: Sequence[str]) -> str:
        """A row value, compared member by member in order (a keyset page's position): ``[a, key]``
        -> ``(a, key)``; ``(a, key) > (?, ?)`` is one range an index on ``a`` seeks.

        >>> StandardSQL().compare(StandardSQL().row(["gx_a", "key"]), "gt", "(?, ?)")
        '(gx_a, key) > (?, ?)'
        """
        return "(" + ", ".join(parts) + ")"

    def order_by(self, terms: Sequence[str]) -> str:
        """The ordering clause: ``[a, rowid]`` -> `` ORDER BY a, rowid``."""
        return " ORDER BY " + ", ".join(terms)

    def beside(self, first: str, rows: str) -> str:
        """One statement: the one row of ``first`` beside each row of ``rows``, in ``rows``' order
        by its first column (one row, NULLs beside it, when ``rows`` has none). Both are read in
        the statement's one snapshot.

        >>> StandardSQL().beside("SELECT 7", "SELECT a FROM t ORDER BY a")
        'SELECT f.*, r.* FROM (SELECT 7) AS f LEFT JOIN (SELECT a FROM t ORDER BY a) AS r ON 1 = 1 ORDER BY 2'
        """
        return f"SELECT f.*, r.* FROM ({first}) AS f LEFT JOIN ({rows}) AS r ON 1 = 1 ORDER BY 2"

    def count_rows(self) -> str:
        """Rows counted: ``count(*)``."""
        return "count(*)"

    # -- several collections in one statement (joins, graph loads) ------------------------------
    def aliased(self, expr: str, name: str) -> str:
        """A selected value under a checked name: ``gx_a``, ``j0`` -> ``gx_a AS j0``."""
        return f"{expr} AS {identifier(name)}"

    def derived(self, select: str, alias: str) -> str:
        """A statement read as a table under a checked alias: ``SELECT ...``, ``t0`` -> ``(SELECT ...) AS t0``."""
        return f"({select}) AS {identifier(alias)}"

    def qualified(self, alias: str, name: str) -> str:
        """A column of an aliased table: ``t0``, ``d`` -> ``t0.d``.

        >>> StandardSQL().qualified("t0", "d")
        't0.d'
        """
        return f"{identifier(alias)}.{identifier(name)}"

    def select_from(self, columns: Sequence[str], sources: Sequence[str]) -> str:
        """``SELECT`` columns of several sources (an inner join whose conditions follow in WHERE):
        ``["t0.d", "t1.d"]``, ``["(...) AS t0", "(...) AS t1"]`` -> ``SELECT t0.d, t1.d FROM (...) AS t0, (...) AS t1``."""
        return f"SELECT {', '.join(columns)} FROM {', '.join(sources)}"

    # -- JSON built as text (graph loads) ----------------------------------------------------------
    # A stored document is valid JSON text already: loads concatenate it, never parse it again.
    def json_text(self, value: str) -> str:
        """A stored document or a subquery's JSON as text: itself (``doc`` is text)."""
        return value

    def json_document(self, value: str) -> str:
        """A stored document or a subquery's JSON as JSON text, its text kept exactly (``2.0`` stays
        ``2.0``); NULL (a subquery that found no row) as ``null``: ``t.d`` -> ``coalesce(t.d, 'null')``.

        >>> StandardSQL().json_document("t.d")
        "coalesce(t.d, 'null')"
        """
        return f"coalesce({self.json_text(value)}, 'null')"

    def all_but_last(self, text: str) -> str:
        """Text without its last character, one call that scans it once: ``t`` -> ``left(t, -1)``
        (SQLite has no ``left``: it cuts by bytes instead)."""
        return f"left({text}, -1)"

    def json_members(self, document: str, members: Sequence[tuple[str, str]]) -> str:
        """A stored document's JSON object text with ``members`` ((name, JSON text) pairs) after its
        own. A name the document has already is then written twice, and read as the appended value
        in the member's first place (what a JSON parser that keeps a repeated member's last value,
        such as the one loads use, makes of it; the same as setting the member in Python):

        >>> print(StandardSQL().json_members("t.d", [("n", "x")]))
        CASE WHEN t.d = '{}' THEN '{' ELSE left(t.d, -1) || ',' END || '"n":' || x || '}'
        """
        text = self.json_text(document)
        out = f"CASE WHEN {text} = '{{}}' THEN '{{' ELSE {self.all_but_last(text)} || ',' END"
        for i, (name, value) in enumerate(members):
            out += f" || '{',' if i else ''}\"{identifier(name)}\":' || {value}"
        return out + " || '}'"

    def scalar(self, select: str) -> str:
        """A statement giving one value, used as a value: ``SELECT ...`` -> ``(SELECT ...)``."""
        return f"({select})"

    def ranking(self, fn: str, partition: Sequence[str], order: Sequence[str]) -> str:
        """A row's rank within its partition (``row-number``, ``rank`` or ``dense-rank``; peers are
        rows equal on every ``order`` term): ``rank``, ``["c"]``, ``["a DESC", "k"]`` ->
        ``rank() OVER (PARTITION BY c ORDER BY a DESC, k)``.

        >>> StandardSQL().ranking("row-number", [], ["a DESC", "k"])
        'row_number() OVER (ORDER BY a DESC, k)'
        >>> StandardSQL().ranking("dense-rank", ["c", "d"], ["a"])
        'dense_rank() OVER (PARTITION BY c, d ORDER BY a)'
        """
        if fn not in _RANKINGS:
            raise PlanError("JD0010", f"internal: no ranking {fn!r}")
        return f"{_RANKINGS[fn]}() OVER ({_window(partition, ', '.join(order))})"

    def offset_value(
        self, fn: str, args: Sequence[str], partition: Sequence[str], order: Sequence[str]
    ) -> str:
        """``lag``/``lead`` of ``args`` (value, offset rows, default or NULL beyond the ends) in the
        partition's order: ``lag``, ``["v", "?"]`` -> ``lag(v, ?) OVER (ORDER BY ...)``.

        >>> StandardSQL().offset_value("lead", ["v", "?", "?"], ["c"], ["a", "k"])
        'lead(v, ?, ?) OVER (PARTITION BY c ORDER BY a, k)'
        """
        if fn not in ("lag", "lead"):
            raise PlanError("JD0010", f"internal: no offset function {fn!r}")
        return f"{fn}({', '.join(args)}) OVER ({_window(partition, ', '.join(order))})"

    def framed(
        self,
        aggregate: str,
        partition: Sequence[str],
        order: Sequence[str],
        start: int | None,
        end: int | None,
        literal: Callable[[Any], str],
    ) -> str:
        """An aggregate over a frame of rows, ``start`` to ``end`` rows from the current one in the
        partition's order (None: unbounded; the bounds are bound with ``literal``):
        ``sum(v)``, ``["c"]``, ``["a", "k"]``, None, 0 -> ``sum(v) OVER (PARTITION BY c ORDER BY a,
        k ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)``.

        >>> StandardSQL().framed("count(*)", [], ["k"], -2, 1, lambda v: "?")
        'count(*) OVER (ORDER BY k ROWS BETWEEN ? PRECEDING AND ? FOLLOWING)'
        """

        def bound(n: int | None, unbounded: str) -> str:
            if n is None:
                return f"UNBOUNDED {unbounded}"
            if n == 0:
                return "CURRENT ROW"
            return f"{literal(abs(n))} {'PRECEDING' if n < 0 else 'FOLLOWING'}"

        rows = f"ROWS BETWEEN {bound(start, 'PRECEDING')} AND {bound(end, 'FOLLOWING')}"
        return f"{aggregate} OVER ({_window(partition, ', '.join(order), rows)})"

    def ranged(self, aggregate: str, window: str) -> str:
        """An aggregate over a named window (see :meth:`range_window`): ``sum(v) OVER w``."""
        return f"{aggregate} OVER {window}"

    def range_window(
        self, name: str, partition: Sequence[str], order: str, span: int, literal: Callable[[Any], str]
    ) -> str:
        """A named window (after the WHERE clause) of the rows whose integer ``order`` value is at most
        ``span`` below the current row's and not above it (the row, its peers, the ``span`` before;
        the span bound as a 64-bit integer with ``literal``); every aggregate over it shares one pass.

        >>> StandardSQL().range_window("w", ["c"], "t", 9, lambda v: "?")
        ' WINDOW w AS (PARTITION BY c ORDER BY t RANGE BETWEEN CAST(? AS BIGINT) PRECEDING AND CURRENT ROW)'
        """
        frame = f"RANGE BETWEEN CAST({literal(span)} AS BIGINT) PRECEDING AND CURRENT ROW"
        return f" WINDOW {name} AS ({_window(partition, order, frame)})"

    def only_where(self, cond: str, expr: str) -> str:
        """``expr`` where ``cond`` holds, else NULL: ``CASE WHEN cond THEN expr END``."""
        return f"CASE WHEN {cond} THEN {expr} END"

    def over_all(self, aggregate: str) -> str:
        """An aggregate over every row of the statement, on each row: ``max(c)`` -> ``max(c) OVER ()``."""
        return f"{aggregate} OVER ()"

    def aggregate(self, fn: str, expr: str) -> str:
        """An aggregate over non-NULL values (``count sum min max``): ``sum``, ``v`` -> ``sum(v)``.

        >>> StandardSQL().aggregate("max", "gx_a")
        'max(gx_a)'
        """
        if fn not in _AGGREGATES:
            raise PlanError("JD0010", f"internal: no aggregate {fn!r}")
        return f"{fn}({expr})"

    def count_distinct(self, expr: str) -> str:
        """The number of distinct non-NULL values, by the database's equality of them:
        ``gx_a`` -> ``count(DISTINCT gx_a)``."""
        return f"count(DISTINCT {expr})"

    def regroup(self, fn: str, partial: str) -> str:
        """``fn`` over a column of per-group results of ``fn`` (the outer level of a two-level
        group-by): counts and sums add, the minimum of minima, the maximum of maxima.

        >>> StandardSQL().regroup("count", "g.c"), StandardSQL().regroup("max", "g.m")
        ('sum(g.c)', 'max(g.m)')
        """
        if fn not in _REGROUP:
            raise PlanError("JD0010", f"internal: no aggregate {fn!r}")
        return f"{_REGROUP[fn]}({partial})"


def _window(partition: Sequence[str], order: str, frame: str = "") -> str:
    """A window's specification: ``PARTITION BY c ORDER BY a, k [frame]`` (no PARTITION BY when there
    is no partition)."""
    by = f"PARTITION BY {', '.join(partition)} " if partition else ""
    return f"{by}ORDER BY {order}{' ' + frame if frame else ''}"
