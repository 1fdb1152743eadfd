"""Schema-aware checking of a query document before it runs: mistakes found, answers unchanged.

The planner knows each collection's JSON Schema. A document that reads a path the schema cannot
hold, or compares a member with a value of a type it can never have, would quietly return nothing;
:func:`diagnose` finds such places once per statement (the statement cache keeps the findings, so
a repeated query pays nothing) and names them with a code and the ``doc_path`` into the document:

- ``JQ0030`` a member the schema cannot hold (its properties are closed with
  ``additionalProperties: false``), or a member or index under a scalar: an error;
- ``JQ0031`` a comparison that is never true against the declared type (``close > "100"`` where
  ``close`` is a number, ``x == None`` where ``null`` is not allowed): an error;
- ``JQ0036`` a member the schema does not declare where it leaves properties open: a warning;
- ``JQ0037`` a regular expression beginning with ``^`` or ending with ``$`` (I-Regexp has no
  anchors: they are ordinary characters), or an ``!=`` that holds for every stored value: a warning.

Near misses carry "did you mean": ``it.Symbol`` where ``symbol`` is declared. The language's
semantics stay the engine's: a diagnosis never changes an answer, it refuses or warns before one.
What happens with the findings is the store's ``checks`` switch (``jl.open(..., checks=...)``):
``"default"`` raises errors and warns the rest, ``"strict"`` raises warnings too, ``"off"`` raises
nothing (``explain()`` still lists every finding).

>>> schema = {"type": "object", "properties": {"symbol": {"type": "string"}, "close": {"type": "number"}}}
>>> doc = {"$for": {"it": "$[*]"}, "$where": {"$eq": ["$it.Symbol", "AAPL"]}, "$return": "$it"}
>>> [d.text() for d in diagnose(doc, schema)]
['JQ0036 warning: member Symbol is not declared; did you mean symbol? (at /$where/$eq/0)']
>>> doc = {"$for": {"it": "$[*]"}, "$where": {"$gt": ["$it.close", "100"]}, "$return": "$it"}
>>> diagnose(doc, schema)[0].code
'JQ0031'
"""

from __future__ import annotations

import difflib
import inspect
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jarenlab.errors import QueryError, QueryWarning
from jarenlab.query.lang.compare import FLIP
from jarenlab.query.lang.document import parse
from jarenlab.query.lang.nodes import ArrayCons, Call, Flwor, Lit, MapCons, Node, PathRef
from jarenlab.query.lang.path import Step, path_text


def _show(var: str | None, steps: tuple[Step, ...]) -> str:
    """A path as the builder spells it (``it.close``) or as the document does (``$d.close``)."""
    text = path_text(var, steps)
    return text[1:] if var == "it" else text


#: The values of the ``checks`` switch.
CHECKS = ("default", "strict", "off")
_DAY = re.compile(r"\d{4}-\d\d-\d\d\Z")
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_SCALARS = frozenset({"string", "number", "integer", "boolean", "null"})
#: Schema keywords that make a member's shape something this check does not follow.
_OPAQUE = ("$ref", "anyOf", "oneOf", "allOf", "not", "if", "$dynamicRef")


@dataclass(frozen=True)
class Diagnostic:
    """One finding: ``code``, ``reason``, ``doc_path`` into the document, ``severity`` (error/warning)."""

    code: str
    reason: str
    doc_path: str
    severity: str
    #: For a comparison with an external (severity ``bind``): (external, declared types, the path as
    #: shown, the operator), decided by :meth:`bound` when a value is bound.
    bind: tuple[str, frozenset[str], str, str] | None = None

    def bound(self, externals: dict[str, Any]) -> Diagnostic | None:
        """This finding for the bound externals: a ``bind`` one becomes JQ0031 (JQ0037 for ``!=``)
        when the external's value is of a kind the member never holds, else None; others are
        themselves. None, booleans and lists are left alone (they divert to the engine at bind time)."""
        if self.bind is None:
            return self
        name, types, shown, op = self.bind
        value = externals.get(name)
        kind = json_kind(value)
        if kind not in ("string", "integer", "number") or _fits(kind, types, value, op):
            return None
        return _mismatch(shown, op, f"{name}={value!r}", kind, types, value, self.doc_path)

    def text(self) -> str:
        """One line: code, severity, reason and where."""
        return f"{self.code} {self.severity}: {self.reason} (at {self.doc_path or '/'})"

    def error(self, collection: str | None = None) -> QueryError:
        """This finding as a :class:`~jarenlab.errors.QueryError`."""
        err = QueryError(self.code, self.reason, doc_path=self.doc_path)
        err.collection = collection
        return err

    def as_dict(self) -> dict[str, str]:
        return {
            "code": self.code,
            "severity": self.severity,
            "reason": self.reason,
            "doc_path": self.doc_path,
        }


def check_switch(value: Any) -> str:
    """The ``checks`` switch, refused with JD0006 when it is not one of :data:`CHECKS`."""
    if value not in CHECKS or type(value) is not str:
        from jarenlab.errors import StoreError

        raise StoreError("JD0006", f"checks is one of {', '.join(map(repr, CHECKS))}, not {value!r}")
    return str(value)


def bound(found: tuple[Diagnostic, ...], externals: dict[str, Any]) -> tuple[Diagnostic, ...]:
    """The findings for these bound externals (see :meth:`Diagnostic.bound`)."""
    return tuple(b for d in found if (b := d.bound(externals)) is not None)


def report(
    found: tuple[Diagnostic, ...], checks: str, collection: str, externals: dict[str, Any] | None = None
) -> None:
    """Act on findings under the ``checks`` switch: raise the first error, warn the rest."""
    if checks == "off":
        return
    found = bound(found, externals or {})
    for d in found:
        if d.severity == "error" or checks == "strict":
            raise d.error(collection)
    for d in found:
        warnings.warn(
            QueryWarning(d.code, f"{collection}: {d.reason}", doc_path=d.doc_path), stacklevel=_caller_level()
        )


def _caller_level() -> int:
    """The stack level of the first frame outside jarenlab (the notebook cell that ran the query)."""
    frame = inspect.currentframe()
    level = 0
    while (
        frame is not None
        and frame.f_back is not None
        and frame.f_globals.get("__name__", "").startswith("jarenlab.")
    ):
        frame = frame.f_back
        level += 1
    return level


def refuse_non_query(document: Any) -> None:
    """A bare string or number given as a whole query reads no data: refuse it with advice (JQ0033)."""
    if type(document) is str and not document.startswith("$"):
        sql = document.lstrip()[:6].upper() in ("SELECT", "WITH", "UPDATE", "DELETE", "INSERT")
        hint = (
            "jarenlab does not run SQL; write a query document ({'$for': {'d': '$[*]'}, '$where': ..., "
            "'$return': '$d'}) or use the builder (collection.where(it.x > 1))"
            if sql
            else "a string document is a literal that returns itself; a path starts with '$' ('$[*].name')"
        )
        raise QueryError("JQ0033", f"execute() got the string {document[:60]!r}: {hint}", doc_path="")
    if type(document) in (int, float, bool) or document is None:
        raise QueryError(
            "JQ0033",
            f"execute() got {document!r}, a literal that returns itself and reads no data; pass a query "
            "document ({'$for': {'d': '$[*]'}, '$return': '$d'}) or use the builder",
            doc_path="",
        )


def diagnose(
    document: Any, schema: dict[str, Any], *, operators: frozenset[str] | None = None
) -> tuple[Diagnostic, ...]:
    """Every finding for ``document`` over documents valid under ``schema`` (see the module docstring)."""
    parsed = parse(document, operators=operators)
    found: list[Diagnostic] = []
    _Walker(schema, found, parsed.externals).node(parsed.node, frozenset())
    return tuple(found)


class _Walker:
    def __init__(self, schema: dict[str, Any], found: list[Diagnostic], externals: frozenset[str]) -> None:
        self.schema = schema
        self.found = found
        self.externals = externals
        self.seen: set[tuple[str, str]] = set()

    def add(self, code: str, reason: str, at: str, severity: str) -> None:
        if (code, at) not in self.seen:
            self.seen.add((code, at))
            self.found.append(Diagnostic(code, reason, at, severity))

    # -- the tree, with the variables that stand for stored documents in scope ------------------
    def node(self, n: Node, docs: frozenset[str]) -> None:
        if isinstance(n, PathRef):
            self.path(n, docs)
        elif isinstance(n, ArrayCons):
            for x in n.items:
                self.node(x, docs)
        elif isinstance(n, MapCons):
            for k, v in n.members:
                if not isinstance(k, str):
                    self.node(k, docs)
                self.node(v, docs)
        elif isinstance(n, Call):
            self.call(n, docs)
            for a in n.args:
                self.node(a, docs)
        elif isinstance(n, Flwor):
            self.flwor(n, docs)

    def flwor(self, f: Flwor, docs: frozenset[str]) -> None:
        inner = set(docs)
        for name, expr, pos in f.fors:
            self.node(expr, frozenset(inner))
            if isinstance(expr, PathRef) and expr.var is None and expr.steps == (("wild", None),):
                inner.add(name)
            else:
                inner.discard(name)
            if pos is not None:
                inner.discard(pos)
        for name, expr in f.lets:
            self.node(expr, frozenset(inner))
            inner.discard(name)
        scope = frozenset(inner)
        if f.where is not None:
            self.node(f.where, scope)
        for _, expr in f.groupby:
            self.node(expr, scope)
        scope = scope - {name for name, _ in f.groupby} - {f.count}
        for spec in f.orderby:
            self.node(spec.key, scope)
        self.node(f.ret, scope)

    def steps(self, p: PathRef, docs: frozenset[str]) -> tuple[Step, ...] | None:
        """The steps of ``p`` below a stored document, or None when it does not start at one."""
        if p.var is not None:
            return p.steps if p.var in docs else None
        if p.steps[:1] == (("wild", None),):
            return p.steps[1:]
        return None

    # -- paths ------------------------------------------------------------------------------------
    def path(self, p: PathRef, docs: frozenset[str]) -> dict[str, Any] | None:
        """Check a path against the schema; return the schema of what it reaches (None: unknown)."""
        steps = self.steps(p, docs)
        if steps is None:
            return None
        here: Any = self.schema
        for i, (kind, arg) in enumerate(steps):
            if not isinstance(here, dict) or any(k in here for k in _OPAQUE):
                return None
            types = _types(here)
            shown = _show(p.var, p.steps[: len(p.steps) - len(steps) + i]) if p.var else "$[*]"
            if kind == "member":
                if types is not None and "object" not in types:
                    if types <= _SCALARS:
                        self.add("JQ0030", _under_scalar(shown, str(arg), types), p.path, "error")
                    return None
                here = self.member(here, str(arg), p.path)
            elif kind in ("index", "wild"):
                if types is not None and "array" not in types:
                    if types <= _SCALARS:
                        what = f"[{arg}]" if kind == "index" else "[*]"
                        self.add(
                            "JQ0030", f"{shown} is a {_kinds(types)}: it has no items {what}", p.path, "error"
                        )
                    return None
                items = here.get("items") if "prefixItems" not in here else None
                here = items if isinstance(items, dict) else None
            else:
                return None
            if here is None:
                return None
        return here if isinstance(here, dict) else None

    def member(self, here: dict[str, Any], name: str, at: str) -> Any:
        props = here.get("properties")
        props = props if isinstance(props, dict) else {}
        if name in props:
            return props[name]
        if "patternProperties" in here:
            return None
        extra = here.get("additionalProperties", True)
        near = difflib.get_close_matches(name, list(props), n=1, cutoff=0.6)
        lower = [p for p in props if p.lower() == name.lower()]
        hint = f"; did you mean {(lower or near)[0]}?" if lower or near else ""
        if extra is False:
            self.add(
                "JQ0030",
                f"member {name} cannot be stored: the schema allows only "
                f"{', '.join(sorted(props)) or 'no members'}{hint}",
                at,
                "error",
            )
        elif props and extra is True:
            self.add("JQ0036", f"member {name} is not declared{hint}", at, "warning")
        return extra if isinstance(extra, dict) else None

    # -- calls ------------------------------------------------------------------------------------
    def call(self, c: Call, docs: frozenset[str]) -> None:
        if c.name in _COMPARE and not c.host:
            a, b = c.args
            for path, lit, flipped in ((a, b, False), (b, a, True)):
                if isinstance(path, PathRef) and isinstance(lit, Lit):
                    self.compare(c, path, lit, docs, flipped)
                elif isinstance(path, PathRef) and c.name == "eq" and (items := _literals(lit)):
                    self.compare_each(c, path, items, docs)
                elif isinstance(path, PathRef) and isinstance(lit, PathRef) and self._external(lit):
                    self.compare_later(c, path, str(lit.var), FLIP[c.name] if flipped else c.name, docs)
        elif c.name in ("search", "match") and not c.host and isinstance(c.args[1], Lit):
            pattern = c.args[1].value
            if type(pattern) is str and (pattern.startswith("^") or pattern.endswith("$")):
                self.add(
                    "JQ0037",
                    f"${c.name} pattern {pattern!r}: I-Regexp has no anchors, so ^ and $ match those "
                    "characters; use startswith()/endswith(), or matches() for a whole-string match",
                    c.args[1].path,
                    "warning",
                )

    def compare_each(self, c: Call, path: PathRef, items: tuple[Lit, ...], docs: frozenset[str]) -> None:
        """``it.x.isin([...])`` (``$eq`` with a ``$seq`` of literals): never true when no item can be."""
        kept = self.found, self.seen
        verdicts = []
        for item in items:
            self.found, self.seen = [], set()
            self.compare(c, path, item, docs, False)
            verdicts.append(self.found)
        self.found, self.seen = kept
        if verdicts and all(v and v[0].code == "JQ0031" for v in verdicts):
            values = ", ".join("None" if x.value is None else repr(x.value) for x in items)
            why = verdicts[0][0].reason.partition(" is never true: ")[2]
            self.add(
                "JQ0031",
                f"{_show(path.var, path.steps)}.isin([{values}]) is never true: {why}",
                c.path,
                "error",
            )

    def _external(self, p: PathRef) -> bool:
        return p.var is not None and not p.steps and p.var in self.externals

    def compare_later(self, c: Call, path: PathRef, name: str, op: str, docs: frozenset[str]) -> None:
        """A comparison with an external: decided when its value is bound (:meth:`Diagnostic.bound`)."""
        target = self.path(path, docs)
        if target is None:
            return
        types = _types(target)
        if types is None or any(k in target for k in _OPAQUE) or "enum" in target or "const" in target:
            return
        shown = _show(path.var, path.steps)
        self.found.append(
            Diagnostic("JQ0031", f"{shown} against ${name}", c.path, "bind", (name, types, shown, op))
        )

    def compare(self, c: Call, path: PathRef, lit: Lit, docs: frozenset[str], flipped: bool) -> None:
        target = self.path(path, docs)
        if target is None:
            return
        types = _types(target)
        if types is None or any(k in target for k in _OPAQUE):
            return
        kind = json_kind(lit.value)
        if (
            c.name == "eq"
            and kind == "string"
            and target.get("format") == "date"
            and not _DAY.match(lit.value)
        ):
            shown = _show(path.var, path.steps)
            self.add(
                "JQ0031",
                f"{shown} == {lit.value!r} is never true: {shown} holds dates (YYYY-MM-DD); compare with a "
                "date (dt.date(...), or a pd.Timestamp's .date())",
                c.path,
                "error",
            )
            return
        if _fits(kind, types, lit.value, c.name):
            return
        if "enum" in target or "const" in target:
            return
        value = "None" if lit.value is None else repr(lit.value)
        d = _mismatch(_show(path.var, path.steps), c.name, value, kind, types, lit.value, c.path)
        self.add(d.code, d.reason, d.doc_path, d.severity)


def _mismatch(
    shown: str, op: str, value_text: str, kind: str, types: frozenset[str], value: Any, at: str
) -> Diagnostic:
    """A comparison of a member of these declared types with a value of another kind: never true
    (JQ0031, an error), or for ``!=`` true of every stored member (JQ0037, a warning)."""
    sign = _COMPARE[op]
    advice = _advice(shown, kind, types, value, sign)
    if op == "ne":
        reason = f"{shown} {sign} {value_text} holds for every stored {shown} ({_a(types)}){advice}"
        return Diagnostic("JQ0037", reason, at, "warning")
    reason = f"{shown} {sign} {value_text} is never true: {shown} is {_a(types)}{advice}"
    return Diagnostic("JQ0031", reason, at, "error")


def index_suggestions(
    paths: list[tuple[str | int, ...]],
    indexed: set[tuple[str | int, ...]],
    descending: Sequence[bool] = (),
) -> list[dict[str, Any]]:
    """Index declarations that would serve a scan: one per scanned path no declared index covers.
    A path ordered descending (``descending[i]``) is suggested descending, the index that gives
    that order as it is read (ties in storage order), with no sort left.

    >>> index_suggestions([("dest",), ("o", "t"), ("dest",)], set())
    [{'name': 'by_dest', 'path': '$.dest'}, {'name': 'by_o_t', 'path': '$.o.t'}]
    >>> index_suggestions([("delay",)], set(), [True])
    [{'name': 'by_delay_desc', 'path': {'path': '$.delay', 'dir': 'desc'}}]
    """
    out: list[dict[str, Any]] = []
    for i, segments in enumerate(paths):
        if segments in indexed or not _members(segments):
            continue
        suggestion = _declaration([segments], descending[i : i + 1])
        if suggestion not in out:
            out.append(suggestion)
    return out


def covering_suggestion(
    paths: list[tuple[str | int, ...]], indexes: list[set[tuple[str | int, ...]]]
) -> dict[str, Any] | None:
    """The declaration of one index over every path a statement reads (in their order: a group-by's
    keys, then its aggregated members), which answers it from the index alone; None when a declared
    index already holds them all (``indexes``: each one's paths) or a path is not plain members.

    >>> covering_suggestion([("origin",), ("dep_delay",)], [])
    {'name': 'by_origin_dep_delay', 'path': ['$.origin', '$.dep_delay']}
    >>> covering_suggestion([("origin",), ("dep_delay",)], [{("dep_delay",), ("origin",), ("carrier",)}]) is None
    True
    >>> covering_suggestion([("carrier",)], [])  # one path (a distinct, a count per key)
    {'name': 'by_carrier', 'path': '$.carrier'}
    """
    if not paths or not all(_members(p) for p in paths):
        return None
    if any(set(paths) <= held for held in indexes):
        return None
    return _declaration(paths)


def window_suggestion(
    paths: list[tuple[str | int, ...]],
    descending: Sequence[bool],
    indexes: list[tuple[tuple[tuple[str | int, ...], bool], ...]],
) -> dict[str, Any] | None:
    """The declaration of the index that gives a related collection's rows for one parent in order:
    the relation member (``paths[0]``, matched by equality), then each ordering path in its
    direction, so each parent's window is read from it as it is, ties in storage order, no sort.
    None when a declared index (``indexes``: each one's (path, descending) pairs) begins so already,
    or a path is not plain members.

    >>> window_suggestion([("carrier",), ("dep_delay",)], [False, True], [])
    {'name': 'by_carrier_dep_delay_desc', 'path': ['$.carrier', {'path': '$.dep_delay', 'dir': 'desc'}]}
    >>> window_suggestion([("carrier",), ("dep_delay",)], [False, True], [((("carrier",), False),)])
    {'name': 'by_carrier_dep_delay_desc', 'path': ['$.carrier', {'path': '$.dep_delay', 'dir': 'desc'}]}
    >>> window_suggestion([("carrier",)], [False], [((("carrier",), True), (("dep_delay",), False))]) is None
    True
    """
    if not all(_members(p) for p in paths):
        return None
    for held in indexes:
        # The member is matched by equality, so its direction does not matter; the order's does.
        if (
            len(held) >= len(paths)
            and held[0][0] == paths[0]
            and all(held[i] == (paths[i], descending[i]) for i in range(1, len(paths)))
        ):
            return None
    return _declaration(paths, descending)


def _members(segments: tuple[str | int, ...]) -> bool:
    """Whether a path is plain members (what an index declaration names)."""
    return bool(segments) and all(type(s) is str for s in segments)


def _declaration(paths: list[tuple[str | int, ...]], descending: Sequence[bool] = ()) -> dict[str, Any]:
    """An index declaration over ``paths`` (member paths, each descending where ``descending`` says),
    named after them: ``[("a",), ("b",)]`` -> ``{"name": "by_a_b", "path": ["$.a", "$.b"]}``."""
    entries: list[Any] = []
    for i, segments in enumerate(paths):
        text = path_text(None, tuple(("member", s) for s in segments))
        desc = i < len(descending) and descending[i]
        entries.append({"path": text, "dir": "desc"} if desc else text)
    name = "by_" + re.sub(r"[^A-Za-z0-9_]", "_", "_".join(str(s) for p in paths for s in p))
    if any(descending):
        name = name[:55] + "_desc"
    return {"name": name[:60], "path": entries if len(entries) > 1 else entries[0]}


def _types(schema: dict[str, Any]) -> frozenset[str] | None:
    t = schema.get("type")
    if isinstance(t, str):
        return frozenset({t})
    if isinstance(t, list) and all(isinstance(x, str) for x in t):
        return frozenset(t)
    return None


def _literals(node: Node) -> tuple[Lit, ...]:
    """The items of a ``$seq`` of literals (what ``isin([...])`` writes), else ``()``."""
    if isinstance(node, Call) and node.name == "seq" and not node.host:
        items = tuple(x for x in node.args if isinstance(x, Lit))
        return items if len(items) == len(node.args) else ()
    return ()


def json_kind(value: Any) -> str:
    """The JSON type of a JSON-safe value, telling ``integer`` from ``number`` (as JSON Schema does)."""
    if value is None:
        return "null"
    if type(value) is bool:
        return "boolean"
    if type(value) is int:
        return "integer"
    if type(value) is float:
        return "number"
    if type(value) is str:
        return "string"
    return "array" if type(value) is list else "object"


def _fits(kind: str, types: frozenset[str], value: Any, op: str) -> bool:
    """Whether a value of this JSON kind can compare true (``op``) with a member of these types: an
    integer against a number, a number against an integer (but never equal to a fraction)."""
    if kind in types or (kind == "integer" and "number" in types):
        return True
    fraction = kind == "number" and not float(value).is_integer()
    return kind == "number" and "integer" in types and not (fraction and op in ("eq", "ne"))


def _kinds(types: frozenset[str]) -> str:
    return " or ".join(sorted(types))


def _a(types: frozenset[str]) -> str:
    """``a number``, ``an integer``."""
    text = _kinds(types)
    return ("an " if text[0] in "aeiou" else "a ") + text


def _under_scalar(shown: str, name: str, types: frozenset[str]) -> str:
    base = f"{shown} is {_a(types)}: it has no member {name}"
    if name in ("year", "month", "day", "hour", "minute", "second", "date", "weekday", "dayofweek"):
        return base + f"; for a date part write {shown}.dt.{name}"
    if name in ("str", "dt"):
        return base + f"; {shown}.{name} is an accessor of the builder, reached as it.member.{name}"
    return base


def _advice(shown: str, kind: str, types: frozenset[str], value: Any, op: str) -> str:
    if kind == "null":
        return (
            f" without null; a missing member is {shown}.is_empty(), a present one {shown}.exists() "
            "(a stored null needs 'null' among the schema's types)"
        )
    if kind == "string" and types & {"number", "integer"}:
        try:
            number = float(value)
        except ValueError:
            return ""
        shown_number = int(number) if number.is_integer() else number
        return f"; compare with a number: {shown} {op} {shown_number}"
    if kind == "number" and "integer" in types:
        return f"; an integer never equals {value}"
    if kind in ("integer", "number") and "string" in types:
        return f"; compare with a string: {shown} {op} {str(value)!r}"
    return ""
