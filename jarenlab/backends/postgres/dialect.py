"""PostgreSQL's spelling of the SQL the planner emits (see :mod:`jarenlab.query.planner.sql`).

A collection's table holds ``doc json`` (the exact text the store wrote, which is what every answer is
read from) and ``body jsonb`` generated from it, which is what conditions, orderings and indexes read
(:mod:`jarenlab.backends.postgres.ddl`). What that means for the SQL written here:

- **Paths are written into the text** as quoted literals (``body->'a'->0``), never bound: PostgreSQL
  uses an expression index only where the query repeats the indexed expression, and the typed
  expressions are exactly :func:`~jarenlab.backends.postgres.ddl.typed`'s (``((body->>'s') COLLATE
  "C")``, ``((body->'n')::numeric)``).
- **Every string comparison, order, min and max is collated** ``"C"`` (code-point order, the engine's),
  whatever the database's default collation; ``NULLS FIRST``/``LAST`` is always written out.
- ``jsonb_typeof`` says ``number`` for ``2`` and ``2.0`` alike (jsonb even writes ``1e16`` as an
  integer), so :attr:`PostgresDialect.keeps_integers_apart` is False: number projections and integer
  aggregates run in the engine, over ``doc``.
- PostgreSQL may evaluate an ``AND`` in any order, so a cast that could fail (a jsonb string to
  ``numeric``) sits inside a ``CASE`` on the member's type, never behind an ``AND``.
- Numbers are compared as ``numeric``: floats are bound as ``Decimal(repr(x))`` (float8 cast to numeric
  keeps 15 digits), and a number of magnitude 2^53 or more is left to the engine (numeric compares a
  stored float's shortest decimal, Python its exact binary value).
- There is no kind test for a bound value in SQL: an external compared with a member is bound into the
  string branch or the number branch only where it is of that kind (NULL elsewhere).
- The database runs on a server and cannot call this process's functions: no UDF hatch.

>>> d = PostgresDialect()
>>> print(d.member_value(d.member(("o", "t"), repr), ("o", "t"), "string", True, None))
((body->'o'->>'t') COLLATE "C")
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from jarenlab.backends.postgres import ddl
from jarenlab.backends.standard import StandardSQL, identifier
from jarenlab.errors import PlanError

#: ``$date-part`` parts -> PostgreSQL's ``extract`` fields (``week`` and ``isodow`` are ISO's).
_PARTS = {
    "year": "year",
    "quarter": "quarter",
    "month": "month",
    "week": "week",
    "day": "day",
    "doy": "doy",
    "weekday": "isodow",
    "hour": "hour",
    "minute": "minute",
    "second": "second",
}
_CANONICAL_PATTERN = (
    "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z$"
)
_CANONICAL_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS"Z"'
#: The planner's JSON kinds -> the names :meth:`PostgresDialect.json_type` gives.
_NAMES: Mapping[str, str] = {
    "null": "null",
    "true": "true",
    "false": "false",
    "int": "number",
    "float": "number",
    "string": "string",
    "array": "array",
    "object": "object",
}
#: What a type cell means as a kind. ``number`` is absent: it does not say ``int`` or ``float``, and
#: with :attr:`PostgresDialect.keeps_integers_apart` False the planner never projects a number here.
_KINDS: Mapping[Any, str] = {name: kind for kind, name in _NAMES.items() if name != "number"}


def _text(sql: str) -> str:
    """Statement text as psycopg takes it with parameters: a literal ``%`` is written ``%%``."""
    return sql.replace("%", "%%")


def _member(steps: Sequence[str | int], root: str) -> str:
    """The jsonb value at a path, an index step read only from an array (``->`` of an index reads
    a scalar as an array of itself: ``'1'::jsonb -> 0`` is ``1``, where the engine finds nothing).

    >>> print(_member(("a", 0), "body"))
    (CASE WHEN jsonb_typeof(body->'a') = 'array' THEN body->'a' END)->0
    """
    out = root
    for i, step in enumerate(steps):
        if isinstance(step, int):
            out = f"(CASE WHEN jsonb_typeof({out}) = 'array' THEN {out} END)->{step}"
        else:
            out = ddl.member(tuple(steps[i : i + 1]), out)
    return _text(out)


def _decimal(value: float) -> Decimal:
    """A float as the exact decimal it is written as (its shortest repr), for a ``numeric`` comparison.

    >>> _decimal(0.30000000000000004)
    Decimal('0.30000000000000004')
    """
    return Decimal(repr(value))


class PostgresDialect(StandardSQL):
    """PostgreSQL's spelling of the constructs the planner needs (see the module docstring).

    The capabilities the planner consults before it relies on something:

    >>> d = PostgresDialect()
    >>> d.keeps_integers_apart, d.integer_limit == 2**53, d.tests_bound_kinds, d.host_functions
    (False, True, False, False)
    """

    name = "postgresql"
    #: ``jsonb_typeof`` says ``number`` for ``2`` and ``2.0``: number projections and integer
    #: aggregates run in the engine, which reads ``doc``.
    keeps_integers_apart = False
    #: Members compare as ``numeric`` and a stored float as the decimal it was written as; within one
    #: ulp of a float that is not what Python compares, and floats are 2^53 apart or less only beyond it.
    integer_limit = 2**53
    #: jsonb refuses U+0000 altogether (the store does too); the string functions do not cut strings.
    strings_hold_nul = True
    #: PostgreSQL's text cannot hold U+0000: a literal with it stays in the engine, an external diverts.
    binds_nul = False
    #: A parameter has one type for the whole statement: no ``typeof(?)``; externals are bound per kind.
    tests_bound_kinds = False
    #: The database is a server: it cannot call this process's functions.
    host_functions = False
    #: Floats are bound as the decimal they are written as (float8 to numeric would keep 15 digits).
    exact_float: Callable[[float], Any] | None = staticmethod(_decimal)
    #: numeric sums the decimals as written, the engine the floats they are read as: float sums stay
    #: in the engine.
    sums_floats_exactly = False
    #: ``min``/``max`` of a number member pick no particular one of equal values (``2`` or ``2.0``):
    #: they run in the engine.
    number_extremes = False
    #: An integer-typed member reads as the ``numeric`` of its text: ``1e23`` is 10^23 exactly, not
    #: the float the engine reads, so an average checks that its members are below 2^53.
    typed_integers_exact = False
    #: An index over expressions never answers alone (an index-only scan needs the table's own
    #: columns, here ``body``): explain() suggests no covering index.
    indexes_cover = False
    #: A window's rows are ordered again around it (to be sure of the order; the planner adds no sort).
    keeps_window_order = False
    #: No median or standard deviation is computed in SQL as the engine computes it (exactly).
    holistic: frozenset[str] = frozenset()
    #: Conditions over computed values (arithmetic between members, lengths, date parts) run in the engine.
    computes_values = True
    #: ``numeric`` computes the decimals as written, not the floats the engine reads: arithmetic
    #: conditions take integer members and integer literals only (exact in both).
    computes_floats = False
    #: Numbers compared with a computed value: literals below 2^53 in magnitude.
    computed_limit: int | None = 2**53
    #: The ``$date-part`` parts SQL computes.
    date_parts = frozenset(_PARTS) | {"millisecond"}
    #: ``jsonb_array_elements`` and ``jsonb_each`` read an array member's items.
    quantifies = True
    #: ``$match``/``$search`` run as PostgreSQL's ``~`` with the I-Regexp's exact ARE.
    regexes: str | None = "are"

    # -- names and values -------------------------------------------------------------------------
    def column(self, name: str) -> str:
        """Never called: there are no typed columns here (:meth:`member_value` writes the typed
        expression the declared indexes are built on). Raises JD0010 (an internal error)."""
        raise PlanError("JD0010", f"internal: PostgreSQL stores no typed column {name!r}")

    def encoded_key(self, parts: Sequence[tuple[str, bool]]) -> str:
        """A composite key's stored text in SQL (:mod:`jarenlab.keys`): a string member with U+0001
        doubled as U+0001 U+0002 and ended by U+0001 U+0001, an integer ``n + 2**63`` as 16 hex
        digits (``n`` with its sign bit flipped, printed two's-complement), in ``"C"`` collation.

        >>> print(PostgresDialect().encoded_key([("o", False), ("n", True)]))
        (replace(o, chr(1), chr(1) || chr(2)) || chr(1) || chr(1) || lpad(to_hex((n)::bigint # (-9223372036854775807 - 1)::bigint), 16, '0')) COLLATE "C"
        """
        terms = [
            f"lpad(to_hex(({x})::bigint # (-9223372036854775807 - 1)::bigint), 16, '0')"
            if integer
            else f"replace({x}, chr(1), chr(1) || chr(2)) || chr(1) || chr(1)"
            for x, integer in parts
        ]
        return "(" + " || ".join(terms) + ') COLLATE "C"'

    def storage_order(self) -> str:
        """What orders rows in storage order: ``pos`` (the key for integer keys, an identity taken
        at insert for text keys)."""
        return "pos"

    def first_in_storage_order(self) -> str:
        """A group's position in storage order (its first row): ``min(pos)``."""
        return f"min({self.storage_order()})"

    def kind_in(self, type_expr: str, kinds: Sequence[str]) -> str:
        """A type (from :meth:`json_type`) is one of ``kinds``: ``("string",)`` -> ``... = 'string'``.

        >>> PostgresDialect().kind_in("jsonb_typeof(body->'a')", ("string",))
        "jsonb_typeof(body->'a') = 'string'"
        """
        names = self._names(kinds)
        if len(names) == 1:
            return f"{type_expr} = {names[0]}"
        return f"{type_expr} IN ({', '.join(names)})"

    def placeholder(self, position: int) -> str:
        """The ``position``-th bound value (from 1) in statement text: ``%s`` (psycopg binds in order)."""
        return "%s"

    def json_path(self, steps: Sequence[str | int]) -> list[str]:
        """A member's path as a value, for ``#>`` (a text array): ``("a", 0)`` -> ``['a', '0']``.

        Statements the planner emits write paths into their text instead (:meth:`member`).

        >>> PostgresDialect().json_path(("a", 0))
        ['a', '0']
        """
        return [str(s) for s in steps]

    def member(self, steps: Sequence[str | int], bind: Callable[[Any], str]) -> str:
        """The member at a path, written into the text (nothing is bound): ``("a", "b")`` ->
        ``body->'a'->'b'``; an index step reads only an array (see :func:`_member`).

        >>> PostgresDialect().member(("a", "b%"), repr)
        "body->'a'->'b%%'"
        """
        return _member(steps, "body")

    def truth(self, value: bool) -> str:
        """A constant condition: ``True`` -> ``true``, ``False`` -> ``false``."""
        return "true" if value else "false"

    # -- members ----------------------------------------------------------------------------------
    def json_type(self, path: str) -> str:
        """The JSON type of a member (NULL when missing), booleans told apart by value:
        ``body->'a'`` -> ``(CASE jsonb_typeof(body->'a') WHEN 'boolean' THEN (body->'a')::text ELSE
        jsonb_typeof(body->'a') END)``, one of ``null true false number string array object``.

        >>> PostgresDialect().json_type("m")
        "(CASE jsonb_typeof(m) WHEN 'boolean' THEN (m)::text ELSE jsonb_typeof(m) END)"
        """
        return f"(CASE jsonb_typeof({path}) WHEN 'boolean' THEN ({path})::text ELSE jsonb_typeof({path}) END)"

    def written_float(self, member: str) -> str:
        """The member holds a number written as a float. ``jsonb`` keeps a decimal's scale (``2.0``
        has scale 1) but reads an exponent as an integer (``1e16`` is 10000000000000000); the store
        writes every float with a point or an exponent, and with an exponent only from 1e16 up or
        below 1e-4 (which has a scale), so a float is a scale or a magnitude of 2^53 or more (an
        integer that large is flagged too: the engine then decides, which is never wrong).

        >>> print(PostgresDialect().written_float("body->'n'"))
        (CASE WHEN jsonb_typeof(body->'n') = 'number' THEN scale((body->'n')::numeric) > 0 OR abs((body->'n')::numeric) >= 9007199254740992 END)
        """
        value = f"({member})::numeric"
        return (
            f"(CASE WHEN jsonb_typeof({member}) = 'number' THEN scale({value}) > 0 "
            f"OR abs({value}) >= {2**53} END)"
        )

    def json_value(self, path: str) -> str:
        """The member itself, a jsonb value (NULL when missing): ``body->'a'`` -> ``(body->'a')``.

        Projections read it next to :meth:`json_type`; only booleans are projected that way here,
        and their type cell already says which.
        """
        return f"({path})"

    def written_number(self, member: str, steps: Sequence[str | int]) -> str:
        """A number member's JSON text as the document writes it: ``jsonb``'s, which keeps ``2.0``
        apart from ``2`` but loses two things the engine reads: an exponent is written in digits
        (``1e+16`` as 10000000000000000, a float read as an integer) and a negative zero has no sign
        (``-0.0`` as ``0.0``). The store writes a positive exponent (``e+``) only in floats from 1e16
        up, and ``-0.0`` only in a negative zero or a float from -0.1 to 0 (``-0.05``), so in a
        document whose text holds either the member's text is read from ``doc``, which ``json``
        keeps as written; every other row keeps ``jsonb``'s speed. The two searches cost about a
        quarter of the statement per member (``docs/benchmarks.md``).

        >>> print(PostgresDialect().written_number("body->'n'", ("n",)))
        (CASE WHEN strpos(doc::text, 'e+') > 0 OR strpos(doc::text, '-0.0') > 0 THEN (doc->'n')::text ELSE (body->'n')::text END)
        """
        written = _text(ddl.member(tuple(steps), "doc"))
        lost = "strpos(doc::text, 'e+') > 0 OR strpos(doc::text, '-0.0') > 0"
        return f"(CASE WHEN {lost} THEN ({written})::text ELSE ({member})::text END)"

    def member_value(
        self, member: str, steps: Sequence[str | int], family: str, typed: bool, column: str | None
    ) -> str:
        """A member's value compared in ``family``, NULL when missing (``column`` is not used).

        A string reads as text collated ``"C"`` (another kind reads as its text, which the planner's
        kind guard rules out); a number of a ``typed`` path as the bare ``numeric`` cast (the schema
        guarantees a number there), any other as a ``numeric`` cast inside a ``CASE`` on its type,
        so a string member is never cast. The string and typed forms are the declared indexes'
        expressions.

        >>> d = PostgresDialect()
        >>> d.member_value("body->'n'", ("n",), "number", True, "gx_n")
        "((body->'n')::numeric)"
        >>> d.member_value("body->'x'", ("x",), "number", False, None)
        "(CASE WHEN jsonb_typeof(body->'x') = 'number' THEN (body->'x')::numeric END)"
        >>> print(d.member_value("body->'x'", ("x",), "string", False, None))
        ((body->>'x') COLLATE "C")
        """
        if family == "string":
            if not steps:  # the document itself: never a string, but the text must still be valid
                return f"(({member} #>> '{{}}') COLLATE \"C\")"
            return _text(ddl.typed(tuple(steps), "string") or "")
        if typed:
            return _text(ddl.typed(tuple(steps), "number") or "")
        return f"(CASE WHEN jsonb_typeof({member}) = 'number' THEN ({member})::numeric END)"

    def bound_kind_in(self, value: str, kinds: Sequence[str]) -> str:
        """A bound value's kind is one of ``kinds``: ``true``, because it was decided when the values
        were bound (:attr:`tests_bound_kinds` is False: a value of another kind is bound as NULL,
        and the comparison it takes part in reads as false).

        >>> PostgresDialect().bound_kind_in("%s", ("string",))
        'true'
        """
        return self.truth(True)

    def type_kinds(self) -> Mapping[Any, str]:
        """What a :meth:`json_type` cell means as a JSON kind: ``"true"`` -> ``"true"`` (``number``
        is not one: numbers are never projected here).

        >>> PostgresDialect().type_kinds()["string"]
        'string'
        """
        return _KINDS

    # -- conditions -------------------------------------------------------------------------------
    def negate(self, cond: str) -> str:
        """Two-valued NOT (a NULL condition reads as false): ``x`` -> ``(NOT coalesce(x, false))``."""
        return f"(NOT coalesce({cond}, false))"

    def truthiness(self, type_expr: str, number: str, string: str) -> str:
        """A member's effective boolean value from its type and value (the EBV table); each value is
        read only in its own branch, so no cast meets a member of another kind.

        >>> PostgresDialect().truthiness("T", "N", "S")
        "(CASE T WHEN 'true' THEN true WHEN 'number' THEN N <> 0 WHEN 'string' THEN S <> '' WHEN 'array' THEN true WHEN 'object' THEN true ELSE false END)"
        """
        t, f = self.truth(True), self.truth(False)
        whens = [
            ("'true'", t),
            ("'number'", self.nonzero(number)),
            ("'string'", self.nonempty(string)),
            ("'array'", t),
            ("'object'", t),
        ]
        cases = " ".join(f"WHEN {name} THEN {then}" for name, then in whens)
        return f"(CASE {type_expr} {cases} ELSE {f} END)"

    def ends_with(self, value: str, suffix: str) -> str:
        """A string ends with another, counting code points: ``v``, ``%s`` ->
        ``right(v, char_length(%s::text)) = %s``.

        >>> PostgresDialect().ends_with("v", "%s")
        'right(v, char_length(%s::text)) = %s'
        """
        return f"right({value}, char_length({suffix}::text)) = {suffix}"

    def contains(self, value: str, infix: str) -> str:
        """A string contains another: ``v``, ``%s`` -> ``strpos(v, %s::text) > 0``."""
        return f"strpos({value}, {infix}::text) > 0"

    def in_list(self, value: str, items: str, family: str) -> str:
        """``value`` is one of the ``family`` items of a bound JSON list (one ``jsonb`` parameter,
        whatever its length): strings as text collated ``"C"``, numbers as ``numeric`` (the list's
        numbers are read as written, as the members are). ``integer``: a list the store made of its
        own integer keys, read as ``bigint`` so the key's index serves.

        >>> print(PostgresDialect().in_list("v", "%s", "number"))
        v IN (SELECT (e.v)::numeric FROM jsonb_array_elements(%s::jsonb) AS e(v) WHERE jsonb_typeof(e.v) = 'number')
        """
        if family == "string":
            item, kind = "((e.v #>> '{}') COLLATE \"C\")", "string"
        elif family == "integer":
            item, kind = "(e.v)::bigint", "number"
        else:
            item, kind = "(e.v)::numeric", "number"
        source = f"jsonb_array_elements({items}::jsonb) AS e(v)"
        return f"{value} IN (SELECT {item} FROM {source} WHERE jsonb_typeof(e.v) = '{kind}')"

    def float_sum(self, type_expr: str, value: str) -> str:
        """Never called (:attr:`sums_floats_exactly` is False). Raises JD0010 (an internal error)."""
        raise PlanError("JD0010", "internal: PostgreSQL has no exact float sum here")

    def ratio(self, a: str, b: str) -> str:
        """A float division, NULL for a zero divisor: ``(a)::float8 / NULLIF(b, 0)``."""
        return f"({a})::float8 / NULLIF({b}, 0)"

    # -- date-times -------------------------------------------------------------------------------
    def date_valid(self, value: str) -> str:
        """``value`` is a real instant written ``YYYY-MM-DDTHH:MM:SSZ`` (year 0010 on), decided
        without a cast that could raise: the shape by a pattern, the day by the month's length.

        >>> "~ '^[0-9]{4}-(0[1-9]|1[0-2])-" in PostgresDialect().date_valid("v")
        True
        """
        y, m, d = (f"substr({value}, {i}, {n})::int" for i, n in ((1, 4), (6, 2), (9, 2)))
        leap = f"(mod({y}, 4) = 0 AND mod({y}, 100) <> 0 OR mod({y}, 400) = 0)"
        length = (
            f"CASE {m} WHEN 2 THEN CASE WHEN {leap} THEN 29 ELSE 28 END "
            f"WHEN 4 THEN 30 WHEN 6 THEN 30 WHEN 9 THEN 30 WHEN 11 THEN 30 ELSE 31 END"
        )
        # Years before 0010 stay in the engine: a week or bucket of year 1 can start in year 0,
        # which PostgreSQL writes as 1 BC.
        shape = f"{value} ~ '{_CANONICAL_PATTERN}' AND {value} NOT LIKE '000%%'"
        return f"(CASE WHEN {shape} THEN {d} <= {length} ELSE false END)"

    def _timestamp(self, value: str) -> str:
        return f"(CASE WHEN {self.date_valid(value)} THEN left({value}, 19)::timestamp END)"

    def date_part(self, value: str, part: str) -> str:
        """One field of a canonical date-time (NULL where it is not one).

        >>> PostgresDialect().date_part("v", "weekday").startswith("(extract(isodow FROM (CASE WHEN")
        True
        """
        if part == "millisecond":
            return f"(CASE WHEN {self.date_valid(value)} THEN 0 END)"
        return f"(extract({_PARTS[part]} FROM {self._timestamp(value)}))::int"

    def date_trunc(self, value: str, unit: str) -> str:
        """The canonical start of a unit (PostgreSQL's ``date_trunc``; its weeks start on Monday)."""
        unit = "second" if unit == "millisecond" else unit
        return f"to_char(date_trunc('{unit}', {self._timestamp(value)}), '{_CANONICAL_FORMAT}')"

    def time_bucket(self, value: str, width: str, origin: str) -> str:
        """The canonical start of the bucket (``date_bin`` from the origin, in whole seconds)."""
        origin_ts = f"(timestamp '1970-01-01' + make_interval(secs => {origin}))"
        binned = f"date_bin(make_interval(secs => {width}), {self._timestamp(value)}, {origin_ts})"
        return f"to_char({binned}, '{_CANONICAL_FORMAT}')"

    def epoch_ms(self, value: str) -> str:
        """Milliseconds since the epoch of a canonical date-time."""
        return f"(extract(epoch FROM {self._timestamp(value)}) * 1000)::bigint"

    def call(self, function: str, argument: str) -> str:
        """Never called (:attr:`host_functions` is False: the planner keeps host operators in the
        engine). Raises JD0010 (an internal error)."""
        raise PlanError("JD0010", f"internal: PostgreSQL cannot call the host function {function!r}")

    # -- computed values ----------------------------------------------------------------------------
    def operand(self, member: str, steps: Sequence[str | int], column: str | None) -> str:
        """An integer member as an arithmetic operand: its ``numeric`` value (exact, never overflows).

        >>> PostgresDialect().operand("body->'a'", ("a",), None)
        "((body->'a')::numeric)"
        """
        return self.member_value(member, steps, "number", True, column)

    def inexact_operand(self, member: str, value: str) -> str:
        """A magnitude of 2^53 or more: below it an integer member's value is the engine's number
        (a float written ``2.0`` is exactly 2, and their sum, difference or product then compares
        with a literal below 2^53 as the engine's float result does); above it a float's decimal
        may not be the float.

        >>> PostgresDialect().inexact_operand("body->'a'", "v")
        'abs(v) >= 9007199254740992'
        """
        return f"abs({value}) >= {2**53}"

    def unless(self, doubt: str, cond: str) -> str:
        """``cond``, or PostgreSQL's ``bigint out of range`` (SQLSTATE 22003) where ``doubt`` holds
        (computed only on a doubtful row: it reads the row, so it is never folded as a constant).

        >>> PostgresDialect().unless("d", "c")
        '(CASE WHEN d THEN 9223372036854775807 + (d)::int > 0 ELSE c END)'
        """
        return f"(CASE WHEN {doubt} THEN 9223372036854775807 + ({doubt})::int > 0 ELSE {cond} END)"

    def matches(self, value: str, pattern: str, full: bool) -> str:
        """A string matches a bound ARE (the I-Regexp's exact form, anchored for ``$match``: the
        planner binds it), a missing member (NULL) read as the empty string, as the engine does.

        >>> PostgresDialect().matches("v", "%s", True)
        "coalesce(v, '') ~ %s"
        """
        return f"coalesce({value}, '') ~ {pattern}"

    def some_item(self, member: str, alias: str, cond: str, containers: bool) -> str:
        """Some item of a member makes ``cond`` true: an array's elements (``jsonb_array_elements``)
        and, unless the schema says only arrays are stored there, an object's member values
        (``jsonb_each``); each function is given its member only where it is of its kind (NULL,
        no rows, elsewhere), so a scalar has no items and nothing raises.

        >>> print(PostgresDialect().some_item("body->'t'", "jl_i0", "c", True))
        EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(body->'t') = 'array' THEN body->'t' END) AS jl_i0(v) WHERE c)
        """
        a = identifier(alias)
        elements = f"jsonb_array_elements(CASE WHEN jsonb_typeof({member}) = 'array' THEN {member} END)"
        if containers:
            return f"EXISTS (SELECT 1 FROM {elements} AS {a}(v) WHERE {cond})"
        values = f"jsonb_each(CASE WHEN jsonb_typeof({member}) = 'object' THEN {member} END)"
        both = f"SELECT e.v FROM {elements} AS e(v) UNION ALL SELECT o.v FROM {values} AS o(k, v)"
        return f"EXISTS (SELECT 1 FROM ({both}) AS {a}(v) WHERE {cond})"

    def item(self, alias: str) -> PostgresDialect:
        """The spelling over one item of :meth:`some_item` (see :class:`PostgresItem`)."""
        return PostgresItem(alias)

    # -- statements -------------------------------------------------------------------------------
    def order_term(self, expr: str, desc: bool, empty_first: bool) -> str:
        """One ordering key with its NULLs placement always written (PostgreSQL puts NULLs last
        ascending, the other way from SQLite): ``v``, asc, first -> ``v ASC NULLS FIRST``.

        >>> d = PostgresDialect()
        >>> d.order_term("v", False, True), d.order_term("v", True, False)
        ('v ASC NULLS FIRST', 'v DESC NULLS LAST')
        """
        return f"{expr} {'DESC' if desc else 'ASC'} NULLS {'FIRST' if empty_first else 'LAST'}"

    def window(self, limit: int | None, offset: int, literal: Callable[[Any], str]) -> str:
        """Skip ``offset`` rows and keep ``limit`` (None: all); ``literal`` binds a value.

        >>> d = PostgresDialect()
        >>> d.window(50, 0, repr), d.window(None, 5, repr), d.window(3, 5, repr), d.window(None, 0, repr)
        (' LIMIT 50', ' OFFSET 5', ' LIMIT 3 OFFSET 5', '')
        """
        out = "" if limit is None else f" LIMIT {literal(limit)}"
        return out + (f" OFFSET {literal(offset)}" if offset else "")

    def any_row(self, cond: str) -> str:
        """Whether a condition holds for some row (true, else false or NULL): ``c`` -> ``bool_or(c)``."""
        return f"bool_or({cond})"

    def regroup(self, fn: str, partial: str) -> str:
        """``fn`` over per-group results of ``fn``; counts add as a ``bigint`` (a sum of bigints
        is ``numeric``): ``count``, ``g.c`` -> ``(sum(g.c))::bigint``.

        >>> PostgresDialect().regroup("count", "g.c"), PostgresDialect().regroup("min", "g.m")
        ('(sum(g.c))::bigint', 'min(g.m)')
        """
        out = super().regroup(fn, partial)
        return f"({out})::bigint" if fn == "count" else out

    # -- JSON built in SQL (graph loads) ----------------------------------------------------------
    def json_text(self, value: str) -> str:
        """A stored ``doc`` (``json``, its text exactly as written) as text: ``t.d`` -> ``t.d::text``.
        Loads build text, never ``json`` (whose input parses it again at every level) or ``jsonb``
        (which would rewrite ``1e16`` as an integer)."""
        return f"{value}::text"

    def json_array(self, rows: str) -> str:
        """The rows' JSON texts (their column ``x``) as one array, in the order they arrive, which an
        array built from a subquery keeps (an ordered aggregate would sort every parent's rows):

        >>> PostgresDialect().json_array("SELECT t.d AS x FROM t ORDER BY t.p")
        "'[' || array_to_string(ARRAY(SELECT t.d AS x FROM t ORDER BY t.p), ',') || ']'"
        """
        return f"'[' || array_to_string(ARRAY({rows}), ',') || ']'"

    # -- the database's plan ----------------------------------------------------------------------
    def plan_tree(self, rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        """``EXPLAIN (FORMAT JSON)`` (one row, one JSON document) as a depth-annotated list of nodes,
        each ``detail`` naming the node, its index and table, and its conditions.

        >>> plan = [{"Plan": {"Node Type": "Sort", "Sort Key": ["v"], "Plans": [{"Node Type": "Index Scan",
        ...     "Index Name": "t_a", "Relation Name": "t", "Index Cond": "(a = 'x')"}]}}]
        >>> PostgresDialect().plan_tree([(json.dumps(plan),)])
        [{'id': 1, 'parent': 0, 'depth': 0, 'detail': 'Sort (Sort Key: v)'}, {'id': 2, 'parent': 1, 'depth': 1, 'detail': "Index Scan using t_a on t (Index Cond: (a = 'x'))"}]
        """
        out: list[dict[str, Any]] = []

        def visit(node: Mapping[str, Any], parent: int, depth: int) -> None:
            ident = len(out) + 1
            out.append({"id": ident, "parent": parent, "depth": depth, "detail": _detail(node)})
            for child in node.get("Plans", ()):
                visit(child, ident, depth + 1)

        for top in _documents(rows):
            visit(top["Plan"], 0, 0)
        return out

    def full_scans(self, rows: Sequence[Sequence[Any]], table: str) -> list[str]:
        """The plan nodes that read ``table`` whole: a ``Seq Scan`` on it, or an index scan with no
        index condition (a walk of the whole index, as SQLite's ``SCAN t USING INDEX i``).

        >>> scan = [{"Plan": {"Node Type": "Seq Scan", "Relation Name": "t", "Filter": "(a > 1)"}}]
        >>> walk = [{"Plan": {"Node Type": "Index Scan", "Index Name": "t_pos", "Relation Name": "t"}}]
        >>> d = PostgresDialect()
        >>> d.full_scans([(json.dumps(scan),)], "t"), d.full_scans([(json.dumps(walk),)], "t")
        (['Seq Scan on t (Filter: (a > 1))'], ['Index Scan using t_pos on t'])
        """
        found: list[str] = []

        def visit(node: Mapping[str, Any]) -> None:
            kind = node.get("Node Type")
            whole = kind == "Seq Scan" or (kind in _INDEX_SCANS and not node.get("Index Cond"))
            if whole and node.get("Relation Name") == table:
                found.append(_detail(node))
            for child in node.get("Plans", ()):
                visit(child)

        for top in _documents(rows):
            visit(top["Plan"])
        return found

    # -- helpers ----------------------------------------------------------------------------------
    def _names(self, kinds: Sequence[str]) -> list[str]:
        try:
            names = [_NAMES[k] for k in kinds]
        except KeyError:
            raise PlanError("JD0010", f"internal: unknown JSON kinds {tuple(kinds)}") from None
        if ("int" in kinds) != ("float" in kinds):
            raise PlanError("JD0010", f"internal: jsonb does not tell {tuple(kinds)} from the other numbers")
        return [f"'{n}'" for n in dict.fromkeys(names)]


#: Plan nodes that read a table through one index (without an index condition: all of it).
_INDEX_SCANS = frozenset({"Index Scan", "Index Only Scan"})
#: The conditions a plan node shows, in this order.
_CONDITIONS = ("Index Cond", "Recheck Cond", "Filter", "Sort Key", "Group Key", "Join Filter")


def _documents(rows: Sequence[Sequence[Any]]) -> list[Mapping[str, Any]]:
    """The plan documents of ``EXPLAIN (FORMAT JSON)`` rows (JSON text, or already decoded)."""
    out: list[Mapping[str, Any]] = []
    for row in rows:
        value = row[0]
        out.extend(json.loads(value) if isinstance(value, str | bytes) else value)
    return out


def _detail(node: Mapping[str, Any]) -> str:
    """One node as a line: ``Index Scan using t_a on t (Index Cond: (a = 'x'))``."""
    text = str(node.get("Node Type", "?"))
    if node.get("Index Name"):
        text += f" using {node['Index Name']}"
    if node.get("Relation Name"):
        text += f" on {node['Relation Name']}"
    conds = []
    for name in _CONDITIONS:
        value = node.get(name)
        if value:
            conds.append(f"{name}: {', '.join(value) if isinstance(value, list) else value}")
    return text + (f" ({'; '.join(conds)})" if conds else "")


class PostgresItem(PostgresDialect):
    """PostgreSQL's spelling over one item of :meth:`PostgresDialect.some_item` (``alias.v``, a
    jsonb value): paths start there instead of at ``body`` (``->`` of a member another kind has
    gives NULL, never an error), and a member's value is read from it (no index expression to
    repeat: a string as its text collated ``"C"``, a number cast only where it is one).

    >>> d = PostgresItem("jl_i0")
    >>> print(d.member_value(d.member(("a",), repr), ("a",), "string", True, None))
    ((jl_i0.v->'a' #>> '{}') COLLATE "C")
    """

    def __init__(self, alias: str) -> None:
        self.alias = identifier(alias)

    def member(self, steps: Sequence[str | int], bind: Callable[[Any], str]) -> str:
        return _member(steps, f"{self.alias}.v")

    def member_value(
        self, member: str, steps: Sequence[str | int], family: str, typed: bool, column: str | None
    ) -> str:
        if family == "string":
            return f"(({member} #>> '{{}}') COLLATE \"C\")"
        return f"(CASE WHEN jsonb_typeof({member}) = 'number' THEN ({member})::numeric END)"
