"""The nodes of a parsed query document: a small tree of frozen values (the language's syntax).

:func:`jarenlab.query.lang.document.parse` makes them from a document and ``unparse`` prints them
back; the engine compiles them, and the planners read them. Series nodes (``$rolling``,
``$resample``) and window nodes are nodes like any other, so the whole tree is defined here, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jarenlab.query.lang.path import Step


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal item (a scalar, or a ``$const`` value)."""

    value: Any
    path: str


@dataclass(frozen=True, slots=True)
class PathRef:
    """A path from the root (``var`` is None) or from a variable."""

    var: str | None
    steps: tuple[Step, ...]
    path: str


@dataclass(frozen=True, slots=True)
class ArrayCons:
    """``[e1, e2, ...]``: one array holding every item of every element."""

    items: tuple[Node, ...]
    path: str


@dataclass(frozen=True, slots=True)
class MapCons:
    """``{"k": e, ...}`` (``computed`` False) or ``{"$map": [[k, v], ...]}`` (True)."""

    members: tuple[tuple[Node | str, Node], ...]
    computed: bool
    path: str


@dataclass(frozen=True, slots=True)
class Call:
    """An operator phrase ``{"$name": [args]}``; ``host`` marks a registered host operator."""

    name: str
    args: tuple[Node, ...]
    host: bool
    path: str


@dataclass(frozen=True, slots=True)
class OrderSpec:
    """One ``$orderby`` key."""

    key: Node
    desc: bool
    empty_greatest: bool


@dataclass(frozen=True, slots=True)
class Flwor:
    """A FLWOR expression with its clauses in the fixed evaluation order."""

    fors: tuple[tuple[str, Node, str | None], ...]
    lets: tuple[tuple[str, Node], ...]
    where: Node | None
    groupby: tuple[tuple[str, Node], ...]
    orderby: tuple[OrderSpec, ...]
    count: str | None
    ret: Node
    path: str


@dataclass(frozen=True, slots=True)
class Quant:
    """``{"$some": {"x": seq, "$satisfies": p}}`` (``every`` False) or ``$every``: whether some (every)
    item of ``seq``, bound to ``var``, makes ``pred`` true."""

    every: bool
    var: str
    seq: Node
    pred: Node
    path: str


@dataclass(frozen=True, slots=True)
class WindowFn:
    """One computed member of a ``$window``: a ranking (no ``args``), ``lag``/``lead`` (value,
    offset, default) or an aggregate over a frame of rows (``frame``: offsets from the current row,
    None for unbounded)."""

    name: str
    fn: str
    args: tuple[Node, ...]
    frame: tuple[int | None, int | None] | None
    path: str


@dataclass(frozen=True, slots=True)
class Window:
    """``{"$window": {"x": seq, "$partition": [...], "$orderby": [...], "$compute": {...}}}``: every
    item of ``seq`` (an object) with the computed members added, in the input order."""

    var: str
    seq: Node
    partition: tuple[Node, ...]
    orderby: tuple[OrderSpec, ...]
    compute: tuple[WindowFn, ...]
    path: str


@dataclass(frozen=True, slots=True)
class Asof:
    """``{"$asof": {"f": left, "w": right, "$on": [lkey, rkey], "$by": [[l, r], ...], "$as": "name"}}``:
    every left item with the right item of the greatest ``rkey`` at or before its ``lkey`` (among
    those with equal ``$by`` keys) as member ``name``."""

    left_var: str
    left: Node
    right_var: str
    right: Node
    on: tuple[Node, Node]
    by: tuple[tuple[Node, Node], ...]
    name: str
    path: str


@dataclass(frozen=True, slots=True)
class SeriesFn:
    """One computed member: an aggregate (:data:`SERIES_FUNCTIONS`) of ``arg`` over a window or interval."""

    name: str
    fn: str
    arg: Node
    path: str


@dataclass(frozen=True, slots=True)
class Rolling:
    """``{"$rolling": {"x": seq, "$time": t, "$width": "P7D", "$partition"?: [...], "$compute": {...}}}``."""

    var: str
    seq: Node
    time: Node
    width: str
    partition: tuple[Node, ...]
    compute: tuple[SeriesFn, ...]
    path: str


@dataclass(frozen=True, slots=True)
class Resample:
    """``{"$resample": {"x": seq, "$time": t, "$width": "PT1H", "$origin"?, "$by"?: {name: e},
    "$compute": {...}, "$fill"?: "drop" | "previous" | {"$value": e}, "$as"?: name}}``; ``fill`` is
    a name of :data:`FILLS` or the constant's expression."""

    var: str
    seq: Node
    time: Node
    width: str
    origin: str
    by: tuple[tuple[str, Node], ...]
    compute: tuple[SeriesFn, ...]
    fill: str | Node
    name: str
    path: str


Node = Lit | PathRef | ArrayCons | MapCons | Call | Flwor | Quant | Window | Asof | Rolling | Resample
