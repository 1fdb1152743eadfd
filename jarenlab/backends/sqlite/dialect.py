"""SQLite's spelling of the SQL the planner emits (see :mod:`jarenlab.query.planner.sql`).

The planner decides *what* to compute from neutral values (JSON kinds such as ``"string"`` or
``"int"``, operators such as ``"gt"``); every piece of SQL text it writes comes from one method
here. Operands arrive as SQL text already (a bound value is a placeholder marker the emitter
resolves in text order), so a method may place or repeat them freely.

On SQLite documents are JSON text in a ``doc`` column; ``json_type`` tells ``2`` (``integer``) from
``2.0`` (``real``), integers are 64-bit, the JSON functions cut strings at U+0000, and storage order
is the ``rowid``.

>>> d = SQLiteDialect()
>>> d.kind_in(d.json_type("?"), ("int", "float"))
"json_type(doc, ?) IN ('integer', 'real')"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jarenlab.backends.sqlite import paths
from jarenlab.backends.standard import StandardSQL, identifier
from jarenlab.errors import PlanError

#: The planner's JSON kinds -> SQLite's ``json_type`` (and ``typeof``) names.
_NAMES: Mapping[str, str] = {
    "null": "null",
    "true": "true",
    "false": "false",
    "int": "integer",
    "float": "real",
    "string": "text",
    "array": "array",
    "object": "object",
}
#: SQLite's ``json_type`` names -> the planner's JSON kinds (the decoder reads type cells with it).
_KINDS: Mapping[Any, str] = {name: kind for kind, name in _NAMES.items()}
_SCAN = re.compile(r"^SCAN (\S+)")
#: The canonical UTC date-time the planner computes with (what ``jarenlab.query.lang.dates`` writes).
_CANONICAL = "%Y-%m-%dT%H:%M:%SZ"
_PART_FORMATS = {
    "year": "%Y",
    "month": "%m",
    "day": "%d",
    "doy": "%j",
    "hour": "%H",
    "minute": "%M",
    "second": "%S",
}
#: Where a canonical date-time holds each field: (start, length), 1-based as ``substr``.
_PLACES = {
    "year": (1, 4),
    "month": (6, 2),
    "day": (9, 2),
    "hour": (12, 2),
    "minute": (15, 2),
    "second": (18, 2),
}
#: The canonical start of a unit: the first characters of the text, then the rest written out.
_PREFIXES = {
    "minute": (16, ":00Z"),
    "hour": (13, ":00:00Z"),
    "day": (10, "T00:00:00Z"),
    "month": (7, "-01T00:00:00Z"),
    "year": (4, "-01-01T00:00:00Z"),
}


#: The functions :meth:`SQLiteDialect.matches` calls (``$match``, ``$search``).
MATCHERS = {True: "jl_match", False: "jl_search"}


class SQLiteDialect(StandardSQL):
    """SQLite's spelling of the constructs the planner needs (see the module docstring).

    The capabilities the planner consults before it relies on something:

    >>> d = SQLiteDialect()
    >>> d.keeps_integers_apart, d.integer_limit == 2**63, d.strings_hold_nul
    (True, True, False)
    """

    name = "sqlite"
    #: ``json_type`` says ``integer`` for ``2`` and ``real`` for ``2.0``: projections and integer
    #: aggregates can tell them apart (a backend without this keeps those parts in the engine).
    keeps_integers_apart = True
    #: SQLite holds integers in 64 bits and reads a larger JSON integer as a rounded real: a number
    #: compared with members must be below this in magnitude so the rounding cannot change the answer.
    integer_limit = 2**63
    #: SQLite's JSON functions cut strings at U+0000, so a pattern holding it stays in the engine.
    strings_hold_nul = False
    #: A bound TEXT holds U+0000 and compares whole.
    binds_nul = True
    #: ``typeof(?)`` tests a bound value's kind in SQL.
    tests_bound_kinds = True
    #: The UDF hatch: pure host operators run as functions registered on the connection.
    host_functions = True
    #: Floats are bound as REAL, which is what ``json_extract`` reads a JSON number as.
    exact_float: Callable[[float], Any] | None = None
    #: Float sums run as ``jl_fsum``, an aggregate registered on the connection that applies the
    #: engine's own ``$sum`` (correctly rounded, so the order SQLite feeds the rows in is irrelevant).
    sums_floats_exactly = True
    #: ``min``/``max`` of a number member pick no particular one of equal values (``2`` or ``2.0``):
    #: they run in the engine.
    number_extremes = False
    #: An integer-typed member's typed column (``INTEGER`` in a ``STRICT`` table) holds a float
    #: written ``2.0`` as the integer 2 (every integral float below 2^63 converts exactly) and
    #: anything else as a REAL, and ``sum`` of a REAL is a REAL: an integer sum is exact.
    typed_integers_exact = True
    #: An index over typed columns answers a statement that reads only those columns (and the
    #: ``rowid``) without reading a row of the table: explain() suggests covering indexes.
    indexes_cover = True
    #: A window's rows reach the statement around it in order (ordering them again would sort them).
    keeps_window_order = True
    #: No median or standard deviation is computed in SQL as the engine computes it (exactly).
    holistic: frozenset[str] = frozenset()
    #: Conditions over computed values (arithmetic between members, lengths, date parts) run in SQL.
    computes_values = True
    #: REAL arithmetic is IEEE double arithmetic, an INTEGER meeting a REAL is converted as Python
    #: converts an int to a float, and an integer result past 64 bits becomes a rounded REAL.
    computes_floats = True
    #: Numbers compared with a computed value: literals below 2^53 in magnitude.
    computed_limit: int | None = 2**53
    #: The ``$date-part`` parts SQL computes (SQLite 3.40 has no ISO week number, ``%V``).
    date_parts = frozenset(_PART_FORMATS) | {"quarter", "weekday", "millisecond"}
    #: ``json_each`` reads an array member's items: ``$some``/``$every`` are ``EXISTS`` over them.
    quantifies = True
    #: ``$match``/``$search`` call the engine's own matcher, registered on the connection.
    regexes: str | None = "engine"

    # -- names and values -------------------------------------------------------------------------
    def column(self, name: str) -> str:
        """A typed generated column, checked: ``gx_a`` -> ``gx_a``.

        >>> SQLiteDialect().column("gx_a")
        'gx_a'
        """
        return identifier(name)

    def encoded_key(self, parts: Sequence[tuple[str, bool]]) -> str:
        """A composite key's stored text in SQL: a string member with U+0001 doubled as U+0001
        U+0002 and ended by U+0001 U+0001, an integer ``n + 2**63`` as 16 hex digits (``n`` with
        its sign bit flipped: ``(n | m) - (n & m)`` for ``m = -2**63``, printed two's-complement). A
        missing member makes the whole NULL, as on PostgreSQL (``printf`` would print NULL as 0).

        >>> print(SQLiteDialect().encoded_key([("o", False), ("n", True)]))
        (replace(o, char(1), char(1, 2)) || char(1, 1) || CASE WHEN n IS NOT NULL THEN printf('%016x', (n | (-9223372036854775807 - 1)) - (n & (-9223372036854775807 - 1))) END)
        """
        low = "(-9223372036854775807 - 1)"
        terms = [
            f"CASE WHEN {x} IS NOT NULL THEN printf('%016x', ({x} | {low}) - ({x} & {low})) END"
            if integer
            else f"replace({x}, char(1), char(1, 2)) || char(1, 1)"
            for x, integer in parts
        ]
        return "(" + " || ".join(terms) + ")"

    def storage_order(self) -> str:
        """What orders rows in storage order (the engine's order of ``$[*]``): ``rowid``."""
        return "rowid"

    def first_in_storage_order(self) -> str:
        """A group's position in storage order (its first row): ``min(rowid)``."""
        return f"min({self.storage_order()})"

    def kind_in(self, type_expr: str, kinds: Sequence[str]) -> str:
        """A type (from :meth:`json_type`) is one of ``kinds``: ``("string",)`` -> ``... = 'text'``.

        >>> SQLiteDialect().kind_in("json_type(doc, ?)", ("string",))
        "json_type(doc, ?) = 'text'"
        """
        names = self._names(kinds)
        if len(names) == 1:
            return f"{type_expr} = {names[0]}"
        return f"{type_expr} IN ({', '.join(names)})"

    def placeholder(self, position: int) -> str:
        """The ``position``-th bound value (from 1) in statement text: ``?`` (SQLite binds in order)."""
        return "?"

    def json_path(self, steps: Sequence[str | int]) -> str:
        """The bound value that names a member (SQLite's JSON path, :mod:`.paths`): ``("a", 0)`` -> ``$."a"[0]``.

        Member names reach this only when the planner's member-name rule admits them, and the
        path is always bound, never part of the text.

        >>> SQLiteDialect().json_path(("a", 0, "b"))
        '$."a"[0]."b"'
        """
        return paths.json_path(tuple(steps))

    def member(self, steps: Sequence[str | int], bind: Callable[[Any], str]) -> str:
        """The member at a path in statement text: its :meth:`json_path`, bound with ``bind``.

        >>> SQLiteDialect().member(("a", 0), lambda v: f"<{v}>")
        '<$."a"[0]>'
        """
        return bind(self.json_path(steps))

    def truth(self, value: bool) -> str:
        """A constant condition: ``True`` -> ``1``, ``False`` -> ``0``."""
        return "1" if value else "0"

    # -- members ----------------------------------------------------------------------------------
    def json_type(self, path: str) -> str:
        """The JSON type of the member at ``path`` (NULL when missing): ``?`` -> ``json_type(doc, ?)``."""
        return f"json_type({self.document()}, {path})"

    def written_float(self, member: str) -> str:
        """The member holds a number written as a float: ``?`` -> ``json_type(doc, ?) = 'real'``."""
        return self.kind_in(self.json_type(member), ("float",))

    def json_value(self, path: str) -> str:
        """The SQL value of the member at ``path``: ``?`` -> ``json_extract(doc, ?)``."""
        return f"json_extract({self.document()}, {path})"

    def written_number(self, member: str, steps: Sequence[str | int]) -> str:
        """A number member's value: ``json_extract`` reads ``2.0`` and ``1e16`` as REALs, ``2`` as an
        INTEGER (one beyond 64 bits as a REAL, which the columns check for)."""
        return self.json_value(member)

    def member_value(
        self, member: str, steps: Sequence[str | int], family: str, typed: bool, column: str | None
    ) -> str:
        """A member's value compared in ``family``: its typed ``column`` when one holds exactly that
        value, else :meth:`json_value` of the bound path ``member`` (SQLite compares a TEXT with an
        INTEGER as unequal, so the planner's kind guard is all an untyped member needs).

        >>> d = SQLiteDialect()
        >>> d.member_value("?", ("a",), "number", False, None), d.member_value("?", ("a",), "string", True, "gx_a")
        ('json_extract(doc, ?)', 'gx_a')
        """
        return self.column(column) if column is not None else self.json_value(member)

    def bound_kind_in(self, value: str, kinds: Sequence[str]) -> str:
        """A bound value's type is one of ``kinds``: ``?``, ``("int", "float")`` -> ``typeof(?) IN (...)``.

        >>> SQLiteDialect().bound_kind_in("?", ("string",))
        "typeof(?) IN ('text')"
        """
        return f"typeof({value}) IN ({', '.join(self._names(kinds))})"

    def type_kinds(self) -> Mapping[Any, str]:
        """What a :meth:`json_type` cell means as a JSON kind: ``"real"`` -> ``"float"``.

        >>> SQLiteDialect().type_kinds()["real"]
        'float'
        """
        return _KINDS

    # -- conditions -------------------------------------------------------------------------------
    def negate(self, cond: str) -> str:
        """Two-valued NOT (a NULL condition reads as false): ``x`` -> ``(NOT coalesce(x, 0))``."""
        return f"(NOT coalesce({cond}, 0))"

    def truthiness(self, type_expr: str, number: str, string: str) -> str:
        """A member's effective boolean value from its type and value (the EBV table).

        ``true``, arrays and objects are true; numbers and strings by :meth:`nonzero` and
        :meth:`nonempty`; missing, ``null`` and ``false`` are false.

        >>> SQLiteDialect().truthiness("T", "N", "S")
        "(CASE T WHEN 'true' THEN 1 WHEN 'integer' THEN N <> 0 WHEN 'real' THEN N <> 0 WHEN 'text' THEN S <> '' WHEN 'array' THEN 1 WHEN 'object' THEN 1 ELSE 0 END)"
        """
        t, f = self.truth(True), self.truth(False)
        whens = [
            ("true", t),
            ("int", self.nonzero(number)),
            ("float", self.nonzero(number)),
            ("string", self.nonempty(string)),
            ("array", t),
            ("object", t),
        ]
        cases = " ".join(f"WHEN {self._names((kind,))[0]} THEN {then}" for kind, then in whens)
        return f"(CASE {type_expr} {cases} ELSE {f} END)"

    def ends_with(self, value: str, suffix: str) -> str:
        """A string ends with another: ``v``, ``?`` -> ``substr(v, -length(?)) = ?``.

        >>> SQLiteDialect().ends_with("gx_s", "?")
        'substr(gx_s, -length(?)) = ?'
        """
        return f"substr({value}, -length({suffix})) = {suffix}"

    def contains(self, value: str, infix: str) -> str:
        """A string contains another: ``v``, ``?`` -> ``instr(v, ?) > 0``."""
        return f"instr({value}, {infix}) > 0"

    def in_list(self, value: str, items: str, family: str) -> str:
        """``value`` is one of the ``family`` items of a bound JSON list (one parameter, whatever
        its length; ``json_each`` reads it, an index on ``value`` serves the ``IN``).

        >>> SQLiteDialect().in_list("gx_c", "?", "string")
        "gx_c IN (SELECT value FROM json_each(?) WHERE type = 'text')"
        """
        kinds = ("string",) if family == "string" else ("int", "float")
        return f"{value} IN (SELECT value FROM json_each({items}) WHERE {self.kind_in('type', kinds)})"

    def float_sum(self, type_expr: str, value: str) -> str:
        """The engine's ``$sum`` of a number member: ``jl_fsum(type, value)`` (see :attr:`sums_floats_exactly`)."""
        return f"jl_fsum({type_expr}, {value})"

    def ratio(self, a: str, b: str) -> str:
        """A float division (SQLite gives NULL for a zero divisor): ``CAST(a AS REAL) / b``."""
        return f"CAST({a} AS REAL) / {b}"

    # -- date-times -------------------------------------------------------------------------------
    def date_valid(self, value: str) -> str:
        """``value`` is a real instant written ``YYYY-MM-DDTHH:MM:SSZ``: SQLite writes it back the
        same once a modifier made it recompute the fields (``2013-02-30`` becomes March 2nd,
        ``24:00:00`` the next day; other forms other texts, or NULL).

        >>> SQLiteDialect().date_valid("v")
        "strftime('%Y-%m-%dT%H:%M:%SZ', v, '+0 seconds') = v"
        """
        return f"strftime('{_CANONICAL}', {value}, '+0 seconds') = {value}"

    def date_part(self, value: str, part: str) -> str:
        """One field of a canonical date-time (ISO weekday: Monday 1; ISO weeks stay in the engine
        on SQLite before 3.46, which has no ``%V``). The fields a canonical text holds at fixed
        places are read from it (the statement's check sends any other text to the engine).

        >>> SQLiteDialect().date_part("v", "hour"), SQLiteDialect().date_part("v", "quarter")
        ('CAST(substr(v, 12, 2) AS INTEGER)', '((CAST(substr(v, 6, 2) AS INTEGER) + 2) / 3)')
        """
        if part in _PLACES:
            start, length = _PLACES[part]
            return f"CAST(substr({value}, {start}, {length}) AS INTEGER)"
        if part == "quarter":
            return f"(({self.date_part(value, 'month')} + 2) / 3)"
        if part == "weekday":
            return f"((CAST(strftime('%w', {value}) AS INTEGER) + 6) % 7 + 1)"
        if part == "millisecond":  # the canonical form holds whole seconds
            return f"(CASE WHEN {value} IS NOT NULL THEN 0 END)"
        return f"CAST(strftime('{_PART_FORMATS[part]}', {value}) AS INTEGER)"

    def date_trunc(self, value: str, unit: str) -> str:
        """The canonical start of a unit of a canonical date-time.

        >>> SQLiteDialect().date_trunc("v", "week")
        "strftime('%Y-%m-%dT00:00:00Z', v, 'weekday 0', '-6 days')"
        """
        if unit == "week":  # the next Sunday (or this one), then back to its Monday
            return f"strftime('%Y-%m-%dT00:00:00Z', {value}, 'weekday 0', '-6 days')"
        if unit in _PREFIXES:
            length, tail = _PREFIXES[unit]
            return f"(substr({value}, 1, {length}) || '{tail}')"
        if unit == "quarter":
            month = f"((CAST(strftime('%m', {value}) AS INTEGER) - 1) / 3 * 3 + 1)"
            text = f"printf('%s-%02d-01T00:00:00Z', strftime('%Y', {value}), {month})"
            return f"(CASE WHEN {value} IS NOT NULL THEN {text} END)"
        return value  # second, millisecond: a canonical date-time is whole seconds already

    def time_bucket(self, value: str, width: str, origin: str) -> str:
        """The canonical start of the bucket holding a canonical date-time (whole seconds).

        >>> print(SQLiteDialect().time_bucket("v", "?", "?"))
        strftime('%Y-%m-%dT%H:%M:%SZ', unixepoch(v) - ((unixepoch(v) - ?) % ? + ?) % ?, 'unixepoch')
        """
        seconds = f"unixepoch({value})"
        start = f"{seconds} - (({seconds} - {origin}) % {width} + {width}) % {width}"
        return f"strftime('{_CANONICAL}', {start}, 'unixepoch')"

    def epoch_ms(self, value: str) -> str:
        """Milliseconds since the epoch of a canonical date-time: ``unixepoch(v) * 1000``."""
        return f"unixepoch({value}) * 1000"

    def call(self, function: str, argument: str) -> str:
        """A registered function of one argument, checked: ``jl_p_1``, ``doc`` -> ``jl_p_1(doc)``."""
        return f"{identifier(function)}({argument})"

    # -- computed values ----------------------------------------------------------------------------
    def operand(self, member: str, steps: Sequence[str | int], column: str | None) -> str:
        """A number member as an arithmetic operand: ``json_extract(doc, ?)``, never the typed column,
        whose INTEGER holds a ``2.0`` as 2 where the engine computes with the float.

        >>> SQLiteDialect().operand("?", ("a",), "gx_a")
        'json_extract(doc, ?)'
        """
        return self.json_value(member)

    def inexact_operand(self, member: str, value: str) -> str:
        """An integer beyond 64 bits, which SQLite reads as a rounded REAL (the value's type is
        tested first: most values are no REAL, and then the member's JSON type is not read).

        >>> SQLiteDialect().inexact_operand("?", "json_extract(doc, ?)")
        "(typeof(json_extract(doc, ?)) = 'real' AND json_type(doc, ?) = 'integer')"
        """
        return f"(typeof({value}) = 'real' AND {self.kind_in(self.json_type(member), ('int',))})"

    def unless(self, doubt: str, cond: str) -> str:
        """``cond``, or SQLite's integer overflow where ``doubt`` holds (the absolute value of the
        smallest integer; not a constant, so it is computed only on a doubtful row).

        >>> SQLiteDialect().unless("d", "c")
        '(CASE WHEN d THEN abs(-9223372036854775807 - (d)) > 0 ELSE c END)'
        """
        return f"(CASE WHEN {doubt} THEN abs(-9223372036854775807 - ({doubt})) > 0 ELSE {cond} END)"

    def matches(self, value: str, pattern: str, full: bool) -> str:
        """The engine's I-Regexp matcher, registered on the connection as ``jl_match`` (the whole
        string) and ``jl_search`` (some part); a missing member (NULL) is the empty string.

        >>> SQLiteDialect().matches("gx_s", "?", True)
        'jl_match(gx_s, ?)'
        """
        return f"{MATCHERS[full]}({value}, {pattern})"

    def some_item(self, member: str, alias: str, cond: str, containers: bool) -> str:
        """Some item of a member makes ``cond`` true: ``json_each`` reads an array's elements and an
        object's member values, and a scalar as one row without a key, which is no item.

        >>> SQLiteDialect().some_item("?", "jl_i0", "c", False)
        'EXISTS (SELECT 1 FROM json_each(doc, ?) AS jl_i0 WHERE jl_i0.key IS NOT NULL AND c)'
        """
        a = identifier(alias)
        items = "" if containers else f"{a}.key IS NOT NULL AND "
        return f"EXISTS (SELECT 1 FROM json_each({self.document()}, {member}) AS {a} WHERE {items}{cond})"

    def item(self, alias: str) -> SQLiteDialect:
        """The spelling over one item of :meth:`some_item` (see :class:`SQLiteItem`)."""
        return SQLiteItem(alias)

    # -- statements -------------------------------------------------------------------------------
    def order_term(self, expr: str, desc: bool, empty_first: bool) -> str:
        """One ordering key, missing values (NULL) first or last: ``v``, desc, first -> ``v DESC NULLS FIRST``.

        SQLite puts NULLs first ascending and last descending; only the other placement is spelled.

        >>> d = SQLiteDialect()
        >>> d.order_term("v", False, True), d.order_term("v", True, True)
        ('v ASC', 'v DESC NULLS FIRST')
        """
        default_first = not desc
        nulls = "" if empty_first == default_first else (" NULLS FIRST" if empty_first else " NULLS LAST")
        return f"{expr} {'DESC' if desc else 'ASC'}{nulls}"

    def window(self, limit: int | None, offset: int, literal: Callable[[Any], str]) -> str:
        """Skip ``offset`` rows and keep ``limit`` (None: all); ``literal`` binds a value.

        SQLite has no OFFSET without LIMIT, so an open window binds ``-1`` (no limit).

        >>> d = SQLiteDialect()
        >>> d.window(50, 0, repr), d.window(None, 5, repr), d.window(None, 0, repr)
        (' LIMIT 50', ' LIMIT -1 OFFSET 5', '')
        """
        if limit is None and not offset:
            return ""
        lim = literal(-1 if limit is None else limit)
        return f" LIMIT {lim} OFFSET {literal(offset)}" if offset else f" LIMIT {lim}"

    def any_row(self, cond: str) -> str:
        """Whether a condition holds for some row (1, else 0 or NULL): ``c`` -> ``max(c)``."""
        return f"max({cond})"

    # -- JSON built in SQL (graph loads; the text itself: :meth:`StandardSQL.json_members`) ----------
    def all_but_last(self, text: str) -> str:
        """Text without its last character, a JSON text's closing ``}`` (ASCII, its last byte), by
        bytes: ``length`` and ``substr`` of a text count characters, which scans it twice.

        >>> SQLiteDialect().all_but_last("t.d")
        'substr(CAST(t.d AS BLOB), 1, length(CAST(t.d AS BLOB)) - 1)'
        """
        return f"substr(CAST({text} AS BLOB), 1, length(CAST({text} AS BLOB)) - 1)"

    def json_array(self, rows: str) -> str:
        """The rows' JSON texts (their column ``x``) as one array, concatenated in the order they
        arrive (from an ordered subquery):

        >>> SQLiteDialect().json_array("SELECT t.d AS x FROM t ORDER BY t.p")
        "'[' || coalesce((SELECT group_concat(s.x, ',') FROM (SELECT t.d AS x FROM t ORDER BY t.p) AS s), '') || ']'"
        """
        return f"'[' || coalesce((SELECT group_concat(s.x, ',') FROM ({rows}) AS s), '') || ']'"

    # -- the engine's plan ------------------------------------------------------------------------
    def plan_tree(self, rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        """``EXPLAIN QUERY PLAN`` rows (id, parent, notused, detail) as a depth-annotated list.

        >>> SQLiteDialect().plan_tree([(2, 0, 0, "SEARCH t USING INDEX t_a (gx_a=?)"), (5, 2, 0, "USE TEMP B-TREE")])
        [{'id': 2, 'parent': 0, 'depth': 0, 'detail': 'SEARCH t USING INDEX t_a (gx_a=?)'}, {'id': 5, 'parent': 2, 'depth': 1, 'detail': 'USE TEMP B-TREE'}]
        """
        depth: dict[int, int] = {0: -1}
        out = []
        for row in rows:
            ident, parent, detail = int(row[0]), int(row[1]), str(row[-1])
            depth[ident] = depth.get(parent, -1) + 1
            out.append({"id": ident, "parent": parent, "depth": depth[ident], "detail": detail})
        return out

    def full_scans(self, rows: Sequence[Sequence[Any]], table: str) -> list[str]:
        """The plan rows that read ``table`` whole (``SCAN <table>``).

        >>> SQLiteDialect().full_scans([(2, 0, 0, "SCAN t"), (3, 0, 0, "SEARCH t USING INDEX t_a (gx_a=?)")], "t")
        ['SCAN t']
        """
        out = []
        for row in rows:
            m = _SCAN.match(str(row[-1]))
            if m and m.group(1) == table:
                out.append(str(row[-1]))
        return out

    # -- helpers ----------------------------------------------------------------------------------
    def _names(self, kinds: Sequence[str]) -> list[str]:
        try:
            return [f"'{_NAMES[k]}'" for k in kinds]
        except KeyError:
            raise PlanError("JD0010", f"internal: unknown JSON kinds {tuple(kinds)}") from None


class SQLiteItem(SQLiteDialect):
    """SQLite's spelling over one ``json_each`` row (``alias``): the item itself reads as the row's
    ``type`` and ``value`` (``json_type`` names, and the SQL value ``json_extract`` would give), a
    member of it through the JSON functions over the row's value where the item is an object or
    an array (its ``value`` is then the JSON text; a scalar's is not JSON, so it gives NULL).

    >>> d = SQLiteItem("jl_i0")
    >>> d.json_type(d.member((), repr))
    'jl_i0.type'
    >>> print(d.json_value(d.member(("a",), repr)))
    json_extract((CASE WHEN jl_i0.type IN ('object', 'array') THEN jl_i0.value END), '$."a"')
    """

    def __init__(self, alias: str) -> None:
        self.alias = identifier(alias)

    def document(self) -> str:
        return f"(CASE WHEN {self.alias}.type IN ('object', 'array') THEN {self.alias}.value END)"

    def member(self, steps: Sequence[str | int], bind: Callable[[Any], str]) -> str:
        return bind(self.json_path(steps)) if steps else f"{self.alias}.value"

    def json_type(self, path: str) -> str:
        return f"{self.alias}.type" if path == f"{self.alias}.value" else super().json_type(path)

    def json_value(self, path: str) -> str:
        return path if path == f"{self.alias}.value" else super().json_value(path)
