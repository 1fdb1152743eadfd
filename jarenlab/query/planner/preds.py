"""The planner's value types: fields, bound slots, predicates, outputs. No SQL text lives here.

Every predicate is *total* once emitted (two-valued, §4.3 of the reference): the emitter
guards each atom with the JSON kind of the member, so missing, ``null`` and wrongly typed
members behave as in the engine. Kinds are the planner's own names (:data:`KINDS`); the
backend's dialect spells them.

>>> f = Field(("a", 0), None, None)
>>> And((Exists(f), Const(True))).items[0]
Exists(field=Field(steps=('a', 0), family=None, column=None))
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The JSON kinds of a stored member: JSON's types, with ``true``/``false`` apart and numbers
#: split as their text is written (``2`` is ``int``, ``2.0`` is ``float``, as the engine loads them).
KINDS = ("null", "true", "false", "int", "float", "string", "array", "object")
NUMBER_KINDS = ("int", "float")
STRING_KINDS = ("string",)
BOOLEAN_KINDS = ("true", "false")


@dataclass(frozen=True, slots=True)
class Field:
    """A singular path from the binding: its steps, schema family and usable typed column.

    ``family`` is the schema's guaranteed JSON type at the path (``string``, ``integer``,
    ``number``, ``boolean``) or None; ``column`` is set only where the typed generated column
    holds exactly the member's value (strings, and integers). The dialect spells the path
    (:meth:`~jarenlab.backends.base.Dialect.json_path`), always as a bound value.
    """

    steps: tuple[str | int, ...]
    family: str | None
    column: str | None


#: Slot kinds bound from an external value (the slot's value is the external's name): the value
#: itself, its prefix successor, or the value where it is a string / a number and NULL elsewhere.
EXTERNAL_SLOTS = frozenset({"external", "successor", "string-external", "number-external", "list-external"})
_DERIVED = {
    "successor": "prefix successor",
    "string-external": "string or NULL",
    "number-external": "number or NULL",
    "list-external": "one JSON list",
}


@dataclass(frozen=True, slots=True)
class Slot:
    """A bound parameter: a literal value, an external by name, or a value derived from one
    (:data:`EXTERNAL_SLOTS`); the emitter also binds ``path`` slots (a dialect's path value)."""

    kind: str  # "literal" | "path" | "list" (literal values bound as one JSON list) | one of EXTERNAL_SLOTS
    value: Any

    def describe(self) -> dict[str, Any]:
        """The slot as ``explain().params`` shows it.

        >>> Slot("number-external", "v").describe()
        {'derived': {'external': 'v', 'as': 'number or NULL'}}
        """
        if self.kind == "literal":
            return {"literal": self.value}
        if self.kind == "external":
            return {"external": self.value}
        if self.kind == "path":
            return {"path": self.value}
        if self.kind == "list":
            return {"list": list(self.value)}
        return {"derived": {"external": self.value, "as": _DERIVED[self.kind]}}


@dataclass(frozen=True, slots=True)
class Const:
    value: bool


@dataclass(frozen=True, slots=True)
class Types:
    """The member's JSON kind is one of ``types`` (:data:`KINDS`)."""

    field: Field
    types: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Exists:
    field: Field


@dataclass(frozen=True, slots=True)
class Compare:
    """``member op value`` where both are in ``family`` (``number`` or ``string``)."""

    field: Field
    op: str
    slot: Slot
    family: str


@dataclass(frozen=True, slots=True)
class CompareAny:
    """``member op external``: the family is the external's type at bind time (str or number)."""

    field: Field
    op: str
    slot: Slot


@dataclass(frozen=True, slots=True)
class ComparePaths:
    """``member op member`` where the schema puts both in one ``family`` (``string`` or ``number``):
    each is its value or NULL when missing, so the comparison is the engine's existential one."""

    field: Field
    op: str
    other: Field
    family: str


@dataclass(frozen=True, slots=True)
class Arith:
    """``$add``/``$sub``/``$mul`` (``fn``) of two operands, each a number-typed member or a number
    literal, at least one a member: empty where a member is missing, as the engine's arithmetic."""

    fn: str
    left: Field | Slot
    right: Field | Slot


@dataclass(frozen=True, slots=True)
class Length:
    """``$string-length`` of a string-typed member: its code points, 0 where it is missing (the
    engine reads an empty argument as the empty string)."""

    field: Field


@dataclass(frozen=True, slots=True)
class CompareValue:
    """A number computed from members (:class:`Arith`, :class:`Length`, a ``date-part`` or
    ``epoch`` :class:`DateKey` of a date-time member) ``op`` a number literal or an external,
    existential as the engine's comparison: false where the value is empty. Only a dialect that
    computes them plans it (:attr:`~jarenlab.backends.base.Dialect.computes_values`)."""

    value: Arith | Length | DateKey
    op: str
    slot: Slot


def value_fields(v: Arith | Length | DateKey) -> list[Field]:
    """The members a computed value reads."""
    if isinstance(v, Arith):
        return [x for x in (v.left, v.right) if isinstance(x, Field)]
    return [v.field]


@dataclass(frozen=True, slots=True)
class InList:
    """``member = one of the values``: the strings and numbers of a list bound as ONE JSON parameter
    (a literal ``$seq`` or an external's items, ``$eq: [$it.x, $xs[*]]``), so the statement's
    text is the same for 3 values or 5,000."""

    field: Field
    slot: Slot


@dataclass(frozen=True, slots=True)
class Prefix:
    """A string-typed member starts with a non-empty prefix: ``low <= v < high``."""

    field: Field
    low: Slot
    high: Slot | None


@dataclass(frozen=True, slots=True)
class Suffix:
    field: Field
    slot: Slot


@dataclass(frozen=True, slots=True)
class Infix:
    field: Field
    slot: Slot


@dataclass(frozen=True, slots=True)
class Matches:
    """A string-typed member matches a literal I-Regexp (``full``: ``$match``, the whole string;
    else ``$search``, some part), by the engine's own matcher; a missing member is the empty string."""

    field: Field
    slot: Slot
    full: bool


@dataclass(frozen=True, slots=True)
class Quantified:
    """``$some`` (``every`` False) or ``$every`` over the items of an array member (``field``: an
    array's elements, an object's member values, nothing for anything else, as the engine's
    ``[*]``): ``item`` is a predicate whose fields are paths from one item (``()`` is the item).
    ``containers`` is True where the schema types the member as an array (nothing else is stored
    there, so no test of its kind is needed)."""

    every: bool
    field: Field
    item: Pred
    containers: bool


@dataclass(frozen=True, slots=True)
class Truthy:
    """The effective boolean value of a singular member (the EBV table)."""

    field: Field


@dataclass(frozen=True, slots=True)
class Udf:
    """A deterministic conjunct run by a function registered with the database, over the document text."""

    name: str
    fragment: str


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Pred, ...]


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Pred, ...]


@dataclass(frozen=True, slots=True)
class Not:
    item: Pred


Pred = (
    Const
    | Types
    | Exists
    | Compare
    | CompareAny
    | ComparePaths
    | CompareValue
    | InList
    | Prefix
    | Suffix
    | Infix
    | Matches
    | Quantified
    | Truthy
    | Udf
    | And
    | Or
    | Not
)


def fields_of(p: Pred) -> list[Field]:
    """Every field of the document a predicate reads (a quantifier's array member, not the paths
    within its items).

    >>> f = Field(("a",), None, None)
    >>> fields_of(Not(Or((Exists(f), Const(False)))))
    [Field(steps=('a',), family=None, column=None)]
    """
    if isinstance(p, And | Or):
        return [f for x in p.items for f in fields_of(x)]
    if isinstance(p, Not):
        return fields_of(p.item)
    if isinstance(p, Const | Udf):
        return []
    if isinstance(p, ComparePaths):
        return [p.field, p.other]
    if isinstance(p, CompareValue):
        return value_fields(p.value)
    return [p.field]


def atoms(p: Pred) -> list[Pred]:
    """The predicates under a predicate's ``AND``, ``OR`` and ``NOT``.

    >>> f = Field(("a",), None, None)
    >>> atoms(Not(Or((Exists(f), Const(False)))))
    [Exists(field=Field(steps=('a',), family=None, column=None)), Const(value=False)]
    """
    if isinstance(p, And | Or):
        return [a for x in p.items for a in atoms(x)]
    if isinstance(p, Not):
        return atoms(p.item)
    return [p]


def slots_of(p: Pred) -> list[Slot]:
    """Every slot a predicate binds (in no particular order)."""
    if isinstance(p, And | Or):
        return [s for x in p.items for s in slots_of(x)]
    if isinstance(p, Not | Quantified):
        return slots_of(p.item)
    if isinstance(p, Compare | CompareAny | CompareValue | InList | Suffix | Infix | Matches):
        return [p.slot]
    if isinstance(p, Prefix):
        return [p.low] + ([p.high] if p.high else [])
    return []


# -- outputs ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DocOut:
    """The whole bound document."""


@dataclass(frozen=True, slots=True)
class FieldOut:
    """One member as an item (no item when it is missing)."""

    field: Field


@dataclass(frozen=True, slots=True)
class LitOut:
    value: Any


@dataclass(frozen=True, slots=True)
class MapOut:
    members: tuple[tuple[str, Out], ...]


@dataclass(frozen=True, slots=True)
class ArrOut:
    items: tuple[Out, ...]


@dataclass(frozen=True, slots=True)
class DateKey:
    """A date function of a string-typed member, as SQL computes it where the member holds the
    canonical UTC form ``YYYY-MM-DDTHH:MM:SSZ`` (a run finding any other present value falls back
    to the engine). ``fn`` is ``date-part``/``date-trunc`` (``arg`` the part or unit),
    ``time-bucket`` (``arg`` is ``(width, origin)`` in whole seconds) or ``epoch``."""

    field: Field
    fn: str
    arg: Any


#: A group key SQL computes: a typed member, or a date function of one.
GroupKey = Field | DateKey


@dataclass(frozen=True, slots=True)
class KeyOut:
    """The ``index``-th group key (no item for the group of documents missing it)."""

    index: int = 0


@dataclass(frozen=True, slots=True)
class AggOut:
    """An aggregate over the group's members: ``count`` (field None: every member), ``sum`` ..."""

    fn: str
    field: Field | None


@dataclass(frozen=True, slots=True)
class Framed:
    """A window's ``$count``/``$sum``/``$avg``/``$min``/``$max`` over a frame of rows: of ``field``
    (None: the rows themselves, for ``$count``), from ``start`` to ``end`` rows from the current
    one (None: unbounded)."""

    field: Field | None
    start: int | None
    end: int | None


@dataclass(frozen=True, slots=True)
class Ranged:
    """A ``$rolling`` aggregate: of ``field`` (None: the rows themselves, for ``$count``) over the
    rows of the partition whose string-typed ``time`` is in ``(t - width, t]`` (``width`` in
    milliseconds, after ``months`` calendar months: the day clamped to the month's end) for the
    row's own ``t``; no value for a row without a time. Only the columns take calendar months."""

    field: Field | None
    time: Field
    width: int
    months: int = 0


@dataclass(frozen=True, slots=True)
class Ranking:
    """Whole documents in storage order with ranks SQL computes added as members (a ``$window`` of
    ``$row-number``/``$rank``/``$dense-rank``, ``$lag``/``$lead`` of an integer path, and framed
    aggregates): ``compute`` is ``(member, function, argument)`` (for an offset ``(path, rows,
    default or None)``, for an aggregate a :class:`Framed`, for a ``$rolling`` one a :class:`Ranged`,
    for a rank None), ``keep`` the filter
    over the ranks (``(position in compute, op, integer)``, all of which hold)."""

    partition: tuple[Field, ...]
    order: tuple[OrderKey, ...]
    compute: tuple[tuple[str, str, tuple[Field, int, Any] | Framed | Ranged | None], ...]
    keep: tuple[tuple[int, str, int], ...]


@dataclass(frozen=True, slots=True)
class Series:
    """How the engine finishes a ``$resample`` whose intervals SQL grouped: the group-by's last key
    is the interval's start (member ``name``), the ones before it the ``$by`` keys (members ``by``); ``fill`` is
    ``drop``, ``previous`` or ``value`` (then ``constant``), ``width`` in milliseconds, ``members``
    the computed members, ``path`` the phrase's place in the document (for its errors)."""

    width: int
    fill: str
    constant: Any
    name: str
    by: tuple[str, ...]
    members: tuple[str, ...]
    path: str


Out = DocOut | FieldOut | LitOut | MapOut | ArrOut | KeyOut | AggOut | Ranking


def assemble(out: Out, leaf: Callable[[Out], list[Any]]) -> list[Any]:
    """The items an output gives: literals, map and array constructors are built here (a member
    that gives no item is left out of its map); every other part (a member, a key, an aggregate, a
    whole document) is read by ``leaf``. What SQL's rows and the columns decode alike.

    >>> assemble(MapOut((("a", LitOut([1])), ("b", KeyOut(0)))), lambda o: [])
    [{'a': [1]}]
    """
    if isinstance(out, LitOut):
        v = out.value
        return [copy.deepcopy(v) if type(v) in (list, dict) else v]
    if isinstance(out, MapOut):
        obj = {}
        for name, m in out.members:
            got = assemble(m, leaf)
            if got:
                obj[name] = got[0]
        return [obj]
    if isinstance(out, ArrOut):
        return [[x for m in out.items for x in assemble(m, leaf)]]
    return leaf(out)


@dataclass(frozen=True, slots=True)
class OrderKey:
    """One pushed ordering key: a field, or in a group-by the ``index``-th group ``key``, its
    ``count`` or an aggregate (``agg``)."""

    field: Field | None
    what: str  # "field" | "key" | "count" | "agg"
    desc: bool
    empty_greatest: bool
    index: int = 0
    agg: AggOut | None = None


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a construct stays in the residual (``explain().residual.reasons``)."""

    construct: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"construct": self.construct, "reason": self.reason}
