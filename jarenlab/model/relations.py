"""Declared relations between collections, checked with the model.

A collection names its references to other collections under ``relations``:

- **to-one** ``{"airline": {"to": "airlines", "via": "/carrier"}}`` on ``flights``: the member
  ``/carrier`` of a flight holds the key of one airline;
- **to-many** ``{"flights": {"to": "flights", "many": true, "via": "/carrier"}}`` on ``airlines``:
  the member ``/carrier`` of each flight holds this airline's key (the inverse);
- **many-to-many** ``{"courses": {"to": "courses", "through": {"collection": "enrollments",
  "from": "/student", "to": "/course"}}}`` on ``students``: each document of the join collection
  ``enrollments`` links one student (its member ``/student`` holds the student's key) to one course
  (``/course`` holds the course's key); it may hold members of its own (a grade). It is two
  references at once, one from the join collection to each end;
- **to a composite key** ``{"weather": {"to": "weather", "via": ["/origin", "/time_hour"]}}`` on
  ``flights``: one member per member of the target's key, in the key's order (JD2204 for another
  shape); a many-to-many relation's ``through`` names an end with a composite key the same way
  (``"from": ["/origin", "/time_hour"]``), each member the join collection's own (JD2202 for a
  member shared by ``from`` and ``to``);
- ``on_delete`` (``restrict``, ``cascade``, ``set_null``): what deleting the referenced document
  does to the documents that reference it, enforced inside the write transaction
  (:mod:`jarenlab.relations.actions`). On either side it speaks of the same reference. For a
  many-to-many relation it speaks of the join documents, when either end is deleted (``restrict``
  or ``cascade``: a link is kept or removed whole, never half set to null).

Both sides of one reference (a to-one and its inverse) may be declared; they must agree. Every
failure is a coded :class:`~jarenlab.errors.ModelError` with the ``doc_path`` of the declaration:
JD0030 (malformed), JD0070 (unknown collection), JD0071 (the member's type is not the key's),
JD0031 (two declarations of one reference disagree), JD0040 (cascading deletes in a cycle).

>>> specs = {"f": {"key": "/id", "schema": {"properties": {"id": {"type": "integer"}, "c": {"type": "string"}}}},
...          "a": {"key": "/c", "schema": {"properties": {"c": {"type": "string"}}}}}
>>> rels = check({"f": {"airline": {"to": "a", "via": "/c"}}, "a": {"fs": {"to": "f", "many": True, "via": "/c"}}}, specs)
>>> r = rels["a"]["fs"]
>>> r.holder, r.member, r.target, r.many
('f', 'c', 'a', True)
>>> specs["e"] = {"key": "/id", "schema": {"properties": {"id": {"type": "integer"}, "f": {"type": "integer"},
...               "a": {"type": "string"}}}}
>>> m2m = check({"f": {"as": {"to": "a", "through": {"collection": "e", "from": "/f", "to": "/a"}}}}, specs)
>>> m2m["f"]["as"].references
(('e', 'f', 'f'), ('e', 'a', 'a'))
>>> specs["w"] = {"key": ["/o", "/h"], "schema": {"properties": {"o": {"type": "string"}, "h": {"type": "integer"}}}}
>>> specs["f"]["schema"]["properties"].update(o={"type": "string"}, h={"type": "integer"})
>>> check({"f": {"w": {"to": "w", "via": ["/o", "/h"]}}}, specs)["f"]["w"].reference
('f', 'o/h', 'w')
>>> specs["e"]["schema"]["properties"].update(o={"type": "string"}, h={"type": "integer"})
>>> check({"w": {"as": {"to": "a", "through": {"collection": "e", "from": ["/o", "/h"], "to": "/a"}}}},
...       specs)["w"]["as"].references
(('e', 'o/h', 'w'), ('e', 'a', 'a'))
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jarenlab import pointer
from jarenlab.errors import ModelError

#: The members a relation declaration may have.
MEMBERS = frozenset({"to", "via", "many", "on_delete", "through"})
#: The members of a many-to-many relation's ``through``.
THROUGH_MEMBERS = frozenset({"collection", "from", "to"})
#: What deleting a referenced document does to the documents referencing it.
ACTIONS = ("restrict", "cascade", "set_null")
#: What deleting an end of a many-to-many relation does to its join documents.
LINK_ACTIONS = ("restrict", "cascade")


@dataclass(frozen=True)
class Relation:
    """One declared relation, read from ``collection`` (the declaring side).

    ``holder`` is the collection whose documents hold the reference in ``member`` (a top-level
    member); ``target`` is the collection whose key it holds. For a to-one relation the holder is
    the declaring collection; for a to-many one it is ``to``.
    """

    name: str
    collection: str
    to: str
    many: bool
    holder: str
    member: str
    target: str
    on_delete: str | None
    doc_path: str
    #: A many-to-many relation's join collection (then ``holder``), and its member holding the
    #: key of ``to`` (``member`` holds the declaring collection's key); None for the others.
    through: str | None = None
    other: str | None = None
    #: The holder's members making the reference, in the target key's order: ``(member,)``, or
    #: one per member of a composite key (``member`` is the first).
    members: tuple[str, ...] = ()
    #: A many-to-many relation's join members holding the key of ``to``, as :attr:`members`
    #: (``other`` is the first); empty for the others.
    others: tuple[str, ...] = ()

    @property
    def via(self) -> str:
        """The reference's member, or its members joined by ``/`` (``origin/time_hour``): the
        middle of :attr:`reference`."""
        return "/".join(self.members) if self.members else self.member

    @property
    def reference(self) -> tuple[str, str, str]:
        """What both sides of one reference share: (holder, :attr:`via`, target)."""
        return (self.holder, self.via, self.target)

    @property
    def references(self) -> tuple[tuple[str, str, str], ...]:
        """Every reference the relation stands for: one, or a many-to-many's two (the join
        collection's member holding this side's key, then the one holding the other side's)."""
        if self.other is None:
            return (self.reference,)
        return (self.reference, (self.holder, "/".join(self.others) or self.other, self.to))

    @property
    def join_members(self) -> str:
        """A many-to-many relation's join members as the model names them, ``/from`` then ``/to``
        (a composite end's as a list): ``/student, /course`` or ``[/origin, /hour], /course``."""
        ends = [", ".join(f"/{m}" for m in ms) for ms in (self.members, self.others)]
        return ", ".join(e if "," not in e else f"[{e}]" for e in ends)

    @property
    def child(self) -> str:
        """The collection a graph load of this relation reads the related documents from."""
        return self.to if self.through is not None or not self.many else self.holder


def _fail(code: str, reason: str, doc_path: str) -> ModelError:
    return ModelError(code, reason, doc_path=doc_path)


def _spec(specs: Mapping[str, Any], name: str) -> tuple[dict[str, Any], Any]:
    spec = specs[name]
    if isinstance(spec, dict):
        return spec.get("schema") or {}, spec.get("key")
    return spec.schema, spec.key


def _key_type(specs: Mapping[str, Any], name: str) -> str:
    spec = specs[name]
    if isinstance(spec, dict):
        schema, key = _spec(specs, name)
        if key is None:
            return "string" if spec.get("identity") == "uuid" else "integer"
        return str((schema.get("properties") or {}).get(key[1:], {}).get("type"))
    return "string" if spec.key_type is str else "integer"


def _types(schema: dict[str, Any], member: str) -> set[str] | None:
    declared = (schema.get("properties") or {}).get(member)
    if not isinstance(declared, dict):
        return None
    t = declared.get("type")
    return {t} if isinstance(t, str) else set(t) if isinstance(t, list) else set()


def _one(collection: str, name: str, decl: Any, specs: Mapping[str, Any], at: str) -> Relation:
    if not isinstance(decl, dict):
        raise _fail("JD0030", f'relation {name!r} is an object such as {{"to": ..., "via": "/member"}}', at)
    unknown = sorted(set(decl) - MEMBERS)
    if unknown:
        raise _fail(
            "JD0030",
            f"unknown member {unknown[0]!r} in relation {name!r} (allowed: {', '.join(sorted(MEMBERS))})",
            f"{at}/{pointer.escape(unknown[0])}",
        )
    to = decl.get("to")
    if not isinstance(to, str) or to not in specs:
        raise _fail(
            "JD0070",
            f"relation {name!r} goes to {to!r}, which the model does not declare (declared: {', '.join(specs)})",
            f"{at}/to",
        )
    if "through" in decl:
        return _through(collection, name, decl, specs, at)
    many = decl.get("many", False)
    if type(many) is not bool:
        raise _fail("JD0030", "many is true or false", f"{at}/many")
    action = decl.get("on_delete")
    if action is not None and action not in ACTIONS:
        raise _fail("JD0030", f"on_delete is one of {', '.join(ACTIONS)}, not {action!r}", f"{at}/on_delete")
    holder, target = (to, collection) if many else (collection, to)
    members = _via(name, "via", decl.get("via"), specs, target, f"{at}/via")
    typed = _typed(name, holder, members, target, specs, f"{at}/via")
    for member, types, key in zip(members, typed, _key_types(specs, target)):
        if action == "set_null" and "null" not in types:
            raise _fail(
                "JD0030",
                f"relation {name!r}: on_delete set_null needs {holder!r}'s member /{member} to accept null "
                f"(type [{key!r}, 'null'])",
                f"{at}/on_delete",
            )
    return Relation(name, collection, to, many, holder, members[0], target, action, at, members=members)


def _via(name: str, what: str, via: Any, specs: Mapping[str, Any], target: str, at: str) -> tuple[str, ...]:
    """The holder's members a reference to ``target`` is made of (``what``: ``via``, or a
    ``through``'s ``from`` or ``to``): one, or one per member of a composite key
    (``["/origin", "/time_hour"]``, in the key's order; JD2204 for another shape)."""
    top = r"/[^/~]+"
    key = _spec(specs, target)[1]
    if isinstance(key, (list, tuple)):
        if (
            not isinstance(via, list)
            or len(via) != len(key)
            or not all(isinstance(v, str) and re.fullmatch(top, v) for v in via)
            or len(set(via)) != len(via)
        ):
            raise _fail(
                "JD2204",
                f"relation {name!r}: {target!r} has the composite key {list(key)}, so {what} is a list of "
                f"{len(key)} distinct top-level pointers in that order, such as {list(key)}, not {via!r}",
                at,
            )
        return tuple(v[1:] for v in via)
    if isinstance(via, list):
        raise _fail(
            "JD2204",
            f"relation {name!r}: {target!r} has a single key, so {what} is one pointer, not a list",
            at,
        )
    if not isinstance(via, str) or not re.fullmatch(top, via):
        raise _fail("JD0030", f'{what} is a JSON Pointer to one top-level member, such as "/carrier"', at)
    return (via[1:],)


def _typed(
    name: str, holder: str, members: tuple[str, ...], target: str, specs: Mapping[str, Any], at: str
) -> list[set[str]]:
    """The schema types of ``holder``'s ``members``, checked to be declared (JD0030) and to hold
    ``target``'s key members (JD0071; ``doc_path`` ``at``, ``at/<i>`` for a composite key)."""
    schema, _ = _spec(specs, holder)
    out = []
    for i, (member, key) in enumerate(zip(members, _key_types(specs, target))):
        here = at + (f"/{i}" if len(members) > 1 else "")
        types = _types(schema, member)
        side = f"{holder!r}'s member /{member}"
        if types is None:
            raise _fail("JD0030", f"relation {name!r}: {side} is not declared in its schema", here)
        if key not in types:
            raise _fail(
                "JD0071",
                f"relation {name!r}: {side} is typed {sorted(types) or 'any'}, but {target!r}'s key"
                + (f" member {i + 1}" if len(members) > 1 else "")
                + f" is {key}",
                here,
            )
        out.append(types)
    return out


def _key_types(specs: Mapping[str, Any], name: str) -> list[str]:
    """The schema type of each member of a collection's key (one for a single key)."""
    schema, key = _spec(specs, name)
    if not isinstance(key, (list, tuple)):
        return [_key_type(specs, name)]
    props = schema.get("properties") or {}
    return [str(props.get(k[1:], {}).get("type")) for k in key]


def _through(collection: str, name: str, decl: dict[str, Any], specs: Mapping[str, Any], at: str) -> Relation:
    """A many-to-many relation: ``through`` names the join collection and its members holding
    each end's key (one, or a list of one per member of a composite key, as ``via``)."""
    for member in ("via", "many"):
        if member in decl:
            raise _fail(
                "JD0030",
                f"relation {name!r} goes through a join collection: {member} is said by through's from and to",
                f"{at}/{member}",
            )
    through = decl["through"]
    if not isinstance(through, dict) or set(through) != THROUGH_MEMBERS:
        raise _fail(
            "JD0030",
            'through is {"collection": <join collection>, "from": "/member", "to": "/member"}',
            f"{at}/through",
        )
    join, to = through["collection"], decl["to"]
    if not isinstance(join, str) or join not in specs:
        raise _fail(
            "JD0070",
            f"relation {name!r} goes through {join!r}, which the model does not declare",
            f"{at}/through/collection",
        )
    if join in (collection, to):
        raise _fail(
            "JD0030",
            f"relation {name!r}: the join collection is a third collection",
            f"{at}/through/collection",
        )
    ends = []
    for side, end in (("from", collection), ("to", to)):
        here = f"{at}/through/{side}"
        members = _via(name, f"through's {side}", through[side], specs, end, here)
        _typed(name, join, members, end, specs, here)
        ends.append(members)
    members, others = ends
    shared = [m for m in others if m in members]
    if shared and len(members) == len(others) == 1:
        raise _fail(
            "JD0030", f"relation {name!r}: from and to are two members of {join!r}", f"{at}/through/to"
        )
    if shared:
        raise _fail(
            "JD2202",
            f"relation {name!r}: through's from and to share {join!r}'s member /{shared[0]}; each "
            "member of each end's key needs a member of its own",
            f"{at}/through/to",
        )
    action = decl.get("on_delete")
    if action is not None and action not in LINK_ACTIONS:
        raise _fail(
            "JD0030",
            f"on_delete of a many-to-many relation is one of {', '.join(LINK_ACTIONS)}, not {action!r} "
            "(a link is kept or deleted whole)",
            f"{at}/on_delete",
        )
    return Relation(
        name, collection, to, True, join, members[0], collection, action, at, join, others[0], members, others
    )


def check(declarations: Mapping[str, Any], specs: Mapping[str, Any]) -> dict[str, dict[str, Relation]]:
    """Check every collection's ``relations`` (``{collection: {name: declaration}}``) against the
    collections (``specs``: normalized specs, or the model's declarations); return them normalized."""
    out: dict[str, dict[str, Relation]] = {}
    by_reference: dict[tuple[str, str, str], Relation] = {}
    for collection, decls in declarations.items():
        at = pointer.join(pointer.join("/collections", collection), "relations")
        if not isinstance(decls, dict):
            raise _fail("JD0030", "relations is an object of relation names to declarations", at)
        for name, decl in decls.items():
            here = pointer.join(at, name)
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise _fail("JD0030", f"relation name {name!r} must match [A-Za-z_][A-Za-z0-9_]*", here)
            rel = _one(collection, name, decl, specs, here)
            for reference in rel.references:
                other = by_reference.get(reference)
                if other is None:
                    by_reference[reference] = rel
                    continue
                if other.collection == rel.collection and not _inverse(other, rel):
                    raise _fail(
                        "JD0031",
                        f"relations {other.name!r} and {name!r} declare the same reference twice",
                        here,
                    )
                if other.on_delete and rel.on_delete and other.on_delete != rel.on_delete:
                    raise _fail(
                        "JD0031",
                        f"relation {name!r} says on_delete {rel.on_delete}, its inverse "
                        f"{other.collection}.{other.name} says {other.on_delete}",
                        f"{here}/on_delete",
                    )
            out.setdefault(collection, {})[name] = rel
    _no_cascade_cycle(out)
    return out


def _inverse(a: Relation, b: Relation) -> bool:
    """Whether two many-to-many relations of one collection are each other's inverse (a
    collection linked to itself: followers and following through one join collection)."""
    return a.through is not None and a.through == b.through and (a.members, a.others) == (b.others, b.members)


def actions(relations: Mapping[str, Mapping[str, Relation]]) -> dict[tuple[str, str, str], str]:
    """Every reference with an on-delete action, once: (holder, member, target) -> action."""
    found: dict[tuple[str, str, str], str] = {}
    for rels in relations.values():
        for rel in rels.values():
            if rel.on_delete is not None:
                for reference in rel.references:
                    found[reference] = rel.on_delete
    return found


def links(relations: Mapping[str, Mapping[str, Relation]]) -> frozenset[tuple[str, str, str]]:
    """The references that link documents through a join collection (many-to-many relations)."""
    return frozenset(
        r for rels in relations.values() for rel in rels.values() if rel.through for r in rel.references
    )


def _no_cascade_cycle(relations: Mapping[str, Mapping[str, Relation]]) -> None:
    """JD0040 when deleting a document could cascade back into its own collection."""
    edges: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for rels in relations.values():
        for rel in rels.values():
            if rel.on_delete == "cascade":
                for holder, _, target in rel.references:
                    edges.setdefault(target, set()).add(holder)
                    where[(target, holder)] = rel.doc_path
    for start in edges:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in edges.get(node, ()):
                if nxt == start:
                    cycle = " -> ".join([*path, nxt])
                    raise _fail(
                        "JD0040",
                        f"deletes cascade in a cycle ({cycle}); declare one of them restrict or set_null",
                        where[(node, nxt)] + "/on_delete",
                    )
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
