"""Interval declarations of the model: ``intervals: [{start, end, within?, scope?, when?}]``, checked.

A pure value (:class:`IntervalSpec`) per declaration, made when the model loads; what the store does
with it (the non-overlap check in the write transaction) is :mod:`jarenlab.intervals`'s, and the index
and lookup each backend builds from it are the backend's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jarenlab.errors import ModelError
from jarenlab.pointer import escape, problem, unescape
from jarenlab.pointer import of as pointer_of
from jarenlab.query.lang.path import sql_addressable

_DECL_MEMBERS = {"start", "end", "within", "scope", "when"}
_SCOPES = ("collection", "owner")
_NUMERIC = ("number", "integer")
_WITHIN_TYPES = ("string", "integer", "number", "boolean")

Segments = tuple[str, ...]


@dataclass(frozen=True)
class IntervalSpec:
    """One checked declaration: pointers as segments, the bound kind, scope and ``when`` filter."""

    position: int
    start: Segments
    end: Segments
    kind: str  # "number" or "date-time"
    within: tuple[Segments, ...]
    scope: str
    when: tuple[tuple[Segments, Any], ...]
    owner: Segments | None  # the owner pointer when scope is "owner"
    #: The schema type ("string", "integer", "number", "boolean") of the owner (scope "owner") then
    #: of each ``within`` member: the values a record's group is compared by.
    group_families: tuple[str, ...] = ()


# -- declarations ----------------------------------------------------------------------------------
def _fail(reason: str, doc_path: str) -> ModelError:
    return ModelError("JD0005", reason, doc_path=doc_path)


def parse_pointer(pointer: Any, doc_path: str, what: str) -> Segments:
    """Split a JSON Pointer to an object member into its (unescaped) member names.

    >>> parse_pointer("/slot/a~1b", "/x", "start")
    ('slot', 'a/b')
    """
    if problem(pointer) is not None or pointer in ("", "/"):
        raise _fail(
            f'{what} must be a JSON Pointer to a member, such as "/start" (got {pointer!r})', doc_path
        )
    segments = tuple(unescape(s) for s in pointer[1:].split("/"))
    for seg in segments:
        if not sql_addressable(seg):
            raise _fail(f"{what} {pointer!r} has a member name SQL cannot address", doc_path)
    return segments


def _declared(schema: dict[str, Any], segments: Segments, doc_path: str, what: str) -> dict[str, Any]:
    """The sub-schema of a required member path; every level must be declared and required."""
    node: Any = schema
    for depth, seg in enumerate(segments):
        shown = pointer_of(segments[: depth + 1])
        props = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(props, dict) or not isinstance(props.get(seg), dict):
            raise _fail(f"{what} {shown!r} is not declared in the schema's properties", doc_path)
        if seg not in (node.get("required") or []):
            raise _fail(f"{what} {shown!r} must be listed in the schema's required members", doc_path)
        node = props[seg]
    return dict(node)


def _bound_kind(sub: dict[str, Any], doc_path: str, what: str) -> str:
    kind = sub.get("type")
    if kind in _NUMERIC:
        return "number"
    if kind == "string" and sub.get("format") == "date-time":
        return "date-time"
    raise _fail(
        f'{what} must be typed "number" or "integer", or "string" with "format": "date-time" (got type {kind!r})',
        doc_path,
    )


def _when(raw: Any, schema: dict[str, Any], doc_path: str) -> tuple[tuple[Segments, Any], ...]:
    if not isinstance(raw, dict) or not raw:
        raise _fail(
            'when must be a non-empty object of member: value, such as {"status": "booked"}', doc_path
        )
    out = []
    for member, value in raw.items():
        at = f"{doc_path}/{escape(member)}"
        segments = parse_pointer("/" + escape(member), at, "when member")
        props = schema.get("properties") or {}
        if not isinstance(props.get(member), dict):
            raise _fail(f"when member {member!r} is not declared in the schema's properties", at)
        ok = (
            value is None
            or isinstance(value, bool | int | str)
            or (isinstance(value, float) and value == value and abs(value) != float("inf"))
        )
        if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
            ok = False  # SQLite would read the literal as a real and compare it differently
        if not ok or (isinstance(value, str) and "\x00" in value):
            raise _fail(f"when value for {member!r} must be a string, a finite number, a boolean or null", at)
        out.append((segments, value))
    return tuple(out)


def check_declarations(
    decls: list[Any], schema: dict[str, Any], owner: str | None, doc_path: str
) -> tuple[IntervalSpec, ...]:
    """Check a collection's ``intervals`` declarations; raise ModelError JD0005 with a ``doc_path``.

    >>> schema = {"type": "object", "required": ["s", "e"], "properties": {
    ...     "s": {"type": "number"}, "e": {"type": "string", "format": "date-time"}}}
    >>> check_declarations([{"start": "/s", "end": "/e"}], schema, None, "/i")
    Traceback (most recent call last):
    ...
    jarenlab.errors.ModelError: JD0005 invalid_model: start and end must both be numbers or both date-times (start is number, end is date-time) (at /i/0/end)
    """
    out = []
    for i, decl in enumerate(decls):
        at = f"{doc_path}/{i}"
        if not isinstance(decl, dict):
            raise _fail("an interval declaration must be an object {start, end, within?, scope?, when?}", at)
        for member in decl:
            if member not in _DECL_MEMBERS:
                raise _fail(
                    f"unknown member {member!r} in an interval declaration (allowed: {', '.join(sorted(_DECL_MEMBERS))})",
                    f"{at}/{escape(str(member))}",
                )
        bounds = []
        for name in ("start", "end"):
            if name not in decl:
                raise _fail(f"an interval declaration needs {name!r}", f"{at}/{name}")
            segments = parse_pointer(decl[name], f"{at}/{name}", name)
            bounds.append(
                (
                    segments,
                    _bound_kind(_declared(schema, segments, f"{at}/{name}", name), f"{at}/{name}", name),
                )
            )
        (start, start_kind), (end, end_kind) = bounds
        if start == end:
            raise _fail("start and end point at the same member", f"{at}/end")
        if start_kind != end_kind:
            raise _fail(
                f"start and end must both be numbers or both date-times (start is {start_kind}, end is {end_kind})",
                f"{at}/end",
            )
        within_raw = decl.get("within", [])
        if not isinstance(within_raw, list):
            raise _fail("within must be a list of JSON Pointers", f"{at}/within")
        within: list[Segments] = []
        families: list[str] = []
        for j, pointer in enumerate(within_raw):
            where = f"{at}/within/{j}"
            segments = parse_pointer(pointer, where, "within")
            sub = _declared(schema, segments, where, "within")
            if sub.get("type") not in _WITHIN_TYPES:
                raise _fail(
                    f"within {pointer!r} must be typed string, integer, number or boolean (got {sub.get('type')!r})",
                    where,
                )
            if segments in within or segments in (start, end):
                raise _fail(f"within {pointer!r} repeats a pointer already in the declaration", where)
            within.append(segments)
            families.append(sub["type"])
        scope = decl.get("scope", "collection")
        if scope not in _SCOPES:
            raise _fail(f'scope must be "collection" or "owner" (got {scope!r})', f"{at}/scope")
        if scope == "owner" and owner is None:
            raise _fail('scope "owner" needs the collection to declare an "owner" pointer', f"{at}/scope")
        when = _when(decl["when"], schema, f"{at}/when") if "when" in decl else ()
        owner_segments = None
        if scope == "owner":
            owner_segments = parse_pointer(owner, f"{at}/scope", "owner")
            families.insert(0, _declared(schema, owner_segments, f"{at}/scope", "owner")["type"])
        out.append(
            IntervalSpec(
                i, start, end, start_kind, tuple(within), scope, when, owner_segments, tuple(families)
            )
        )
    return tuple(out)
