"""The plan of a migration: what differs between the stored model and a new one, as steps.

:func:`make_plan` pairs each collection of the new model with the stored collection it comes from
(the same name, or ``renames={"old": "new"}``), refuses what cannot be done in place (a key,
identity or key type change: JD0060) and arguments that name the wrong collections (JD0062), and
lists the steps in words. It touches no database: the runner
(:mod:`jarenlab.migrations.runner`) counts documents, asks the backend for each collection's
DDL (:meth:`jarenlab.backends.base.Backend.alter`) and carries the plan out.

>>> from jarenlab.model import load_model
>>> def model(*indexes, version=None):
...     doc = {"$model": "0.1", "collections": {"t": {"key": "/id", "schema": {"type": "object",
...         "required": ["id"], "properties": {"id": {"type": "string"}, "a": {"type": "string"}}},
...         "indexes": [{"name": n, "path": p} for n, p in indexes]}}}
...     return load_model(doc if version is None else {**doc, "version": version})
>>> plan = make_plan(model(), model(("by_a", "$.a"), version=2))
>>> [(s.kind, s.collection, s.detail) for s in plan.steps]
[('add index', 't', 'by_a on $.a'), ('version', None, 'none -> 2')]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jarenlab.errors import MigrationError
from jarenlab.model import CollectionSpec, IndexSpec, Model, canonical_json
from jarenlab.model.relations import Relation

#: ``fn(doc) -> doc`` (or None: delete the document).
Transform = Callable[[dict[str, Any]], "dict[str, Any] | None"]


@dataclass
class Step:
    """One step of a migration: ``kind`` (``add collection``, ``add index``, ``schema``,
    ``transform``, ...), the ``collection`` it concerns (None for the whole store), ``detail`` in
    words, ``how`` it is carried out (``in place``, ``rebuild``, ``check``, ``data``, ``record``)
    and the ``documents`` it reads or rewrites (counted by the runner)."""

    kind: str
    collection: str | None
    detail: str
    how: str = "in place"
    documents: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The step as a plain dict (the history keeps these)."""
        return {
            "kind": self.kind,
            "collection": self.collection,
            "detail": self.detail,
            "how": self.how,
            "documents": self.documents,
        }


@dataclass
class Pair:
    """A collection on both sides of a migration: ``old`` (None: added) and ``new`` (None: dropped)."""

    old: CollectionSpec | None
    new: CollectionSpec | None
    transform: Transform | None = None
    #: True when every document is read: a transform rewrites it, or a changed schema checks it.
    walk: bool = False
    #: True when stored records must be checked against the interval declarations afterwards.
    check_intervals: bool = False
    #: Top-level members the old schema declares and the new one does not (a rename done in the
    #: schema alone): the walk counts the documents that still hold each.
    undeclared: tuple[str, ...] = ()
    steps: list[Step] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The collection's name after the migration (before it, for a dropped one)."""
        spec = self.new or self.old
        assert spec is not None
        return spec.name


@dataclass
class Plan:
    """What a migration does: its pairs of collections, in the new model's order, then the dropped."""

    old: Model
    new: Model
    pairs: list[Pair]
    store_steps: list[Step]
    #: Collections the new model leaves out that ``drop`` does not name (refused if they hold documents).
    unnamed_drops: list[str]
    #: Many-to-many relations added or changed: their stored join documents are checked.
    links: list[Relation] = field(default_factory=list)

    @property
    def steps(self) -> list[Step]:
        """Every step, collection by collection, then the store's own (events, version)."""
        return [s for p in self.pairs for s in p.steps] + self.store_steps


def _refuse(reason: str, **fields: Any) -> MigrationError:
    return MigrationError("JD0062", reason, **fields)


def _names(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence | set | frozenset):
        raise _refuse(f"{what} is a list of collection names, not {type(value).__name__}")
    names = list(value)
    if not all(isinstance(n, str) for n in names):
        raise _refuse(f"{what} is a list of collection names")
    return names


def _renames(renames: Any, old: Model, new: Model) -> dict[str, str]:
    if renames is None:
        return {}
    if not isinstance(renames, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in renames.items()
    ):
        raise _refuse('renames maps old collection names to new ones: {"old": "new"}')
    for src, dst in renames.items():
        if src not in old.collections:
            raise _refuse(f"renames names {src!r}, which the stored model does not declare", collection=src)
        if dst not in new.collections:
            raise _refuse(f"renames {src!r} to {dst!r}, which the new model does not declare", collection=dst)
        if dst in old.collections and dst not in renames:
            raise _refuse(f"renames {src!r} to {dst!r}, which the store already has", collection=dst)
    if len(set(renames.values())) != len(renames):
        raise _refuse("renames gives two collections the same new name")
    return dict(renames)


def _transforms(transforms: Any, new: Model) -> dict[str, Transform]:
    if transforms is None:
        return {}
    if not isinstance(transforms, Mapping):
        raise _refuse("transforms maps collection names to functions fn(doc) -> doc or None")
    for name, fn in transforms.items():
        if not isinstance(name, str) or name not in new.collections:
            raise _refuse(
                f"transforms names {name!r}, which the new model does not declare "
                "(a renamed collection's transform goes under its new name)",
                collection=name if isinstance(name, str) else None,
            )
        if not callable(fn):
            raise _refuse(f"the transform of {name!r} is not callable", collection=name)
    return dict(transforms)


def _index_text(ix: IndexSpec) -> str:
    paths = ", ".join(p + (" desc" if d else "") for p, d in zip(ix.paths, ix.descending))
    return f"{ix.name} on {paths}{' (unique)' if ix.unique else ''}"


def _interval_text(decl: Any) -> str:
    text = f"{'/' + '/'.join(decl.start)} .. {'/' + '/'.join(decl.end)}"
    if decl.within:
        text += " within " + ", ".join("/" + "/".join(w) for w in decl.within)
    return text + ("" if decl.scope == "collection" else " per owner")


def _same(a: Any, b: Any) -> bool:
    return canonical_json(a) == canonical_json(b)


def _key_shape(spec: CollectionSpec) -> tuple[Any, ...]:
    """What a collection's stored keys depend on: its key, identity and key types (a composite
    key's member types too, though all its keys are stored as text)."""
    composite = spec.composite
    return (spec.key, spec.identity, spec.key_type, composite.types if composite else None)


def _collection_steps(pair: Pair) -> None:
    old, new = pair.old, pair.new
    if old is None:
        assert new is not None
        pair.steps.append(
            Step("add collection", new.name, f"key {new.key or 'identity ' + str(new.identity)}")
        )
        return
    if new is None:
        pair.steps.append(Step("drop collection", old.name, "with its documents"))
        return
    if _key_shape(old) != _key_shape(new):
        raise MigrationError(
            "JD0060",
            f"collection {new.name!r} changes its key ({old.key or old.identity} to "
            f"{new.key or new.identity}): that cannot be carried out in place; add a new collection "
            "and copy the documents into it (then drop this one)",
            collection=new.name,
            doc_path=f"/collections/{new.name}/key",
        )
    steps = pair.steps
    if old.name != new.name:
        steps.append(Step("rename collection", new.name, f"{old.name} -> {new.name}"))
    old_cols = {c.name: c for c in old.columns}
    new_cols = {c.name: c for c in new.columns}
    old_ix = {ix.name: ix for ix in old.indexes}
    new_ix = {ix.name: ix for ix in new.indexes}
    for name, ix in old_ix.items():
        if name not in new_ix:
            steps.append(Step("drop index", new.name, _index_text(ix)))
    for name, ix in new_ix.items():
        before = old_ix.get(name)
        if before is None:
            steps.append(Step("add index", new.name, _index_text(ix)))
        elif before != ix or any(old_cols.get(c) != new_cols[c] for c in ix.columns):
            steps.append(Step("change index", new.name, f"{_index_text(before)} -> {_index_text(ix)}"))
    if old.owner != new.owner:
        steps.append(Step("owner", new.name, f"{old.owner or 'none'} -> {new.owner or 'none'}"))
    if old.version != new.version:
        steps.append(Step("version", new.name, f"{old.version or 'none'} -> {new.version or 'none'}"))
    if not _same(old.schema, new.schema):
        pair.walk = True
        steps.append(Step("schema", new.name, "every document is checked against the new schema", "check"))
        pair.undeclared = _undeclared(old.schema, new.schema)
        for member in pair.undeclared:
            steps.append(
                Step(
                    "undeclared member",
                    new.name,
                    f"{member!r} is declared no more: the documents that hold it keep it, undeclared "
                    f"(a rename needs a transform that moves it); a query of it.{member} warns (JQ0036)",
                    "check",
                )
            )
    if pair.transform is not None:
        pair.walk = True
        name = getattr(pair.transform, "__name__", "transform")
        steps.append(Step("transform", new.name, f"{name}(doc) over every document", "data"))
    for decl in old.intervals:
        if decl not in new.intervals:
            steps.append(Step("drop interval", new.name, _interval_text(decl)))
    added = [decl for decl in new.intervals if decl not in old.intervals]
    for decl in added:
        steps.append(
            Step("add interval", new.name, _interval_text(decl) + "; stored records checked first", "check")
        )
    pair.check_intervals = bool(added) or (pair.transform is not None and bool(new.intervals))


def _undeclared(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, ...]:
    """Top-level members ``old`` declares under ``properties`` and ``new`` does not.

    >>> _undeclared({"properties": {"mpg": {}, "hp": {}}}, {"properties": {"miles_per_gallon": {}, "hp": {}}})
    ('mpg',)
    """
    before, after = old.get("properties"), new.get("properties")
    if not isinstance(before, dict):
        return ()
    kept = after if isinstance(after, dict) else {}
    return tuple(name for name in before if name not in kept)


def make_plan(
    old: Model,
    new: Model,
    *,
    transforms: Any = None,
    renames: Any = None,
    drop: Any = None,
) -> Plan:
    """The :class:`Plan` that turns ``old`` into ``new`` (see the module docstring)."""
    moves = _renames(renames, old, new)
    fns = _transforms(transforms, new)
    dropped = _names(drop, "drop")
    sources = {dst: src for src, dst in moves.items()}
    pairs = []
    for name, spec in new.collections.items():
        src = sources.get(name) or (name if name in old.collections and name not in moves else None)
        pair = Pair(old.collections[src] if src else None, spec, fns.get(name))
        if src is None and pair.transform is not None:
            raise _refuse(f"{name!r} is a new collection: it has no documents to transform", collection=name)
        _collection_steps(pair)
        pairs.append(pair)
    used = {p.old.name for p in pairs if p.old is not None}
    for name in dropped:
        if name not in old.collections or name in used:
            raise _refuse(
                f"drop names {name!r}, which the "
                + ("stored model does not declare" if name not in old.collections else "new model keeps"),
                collection=name,
            )
    unnamed = []
    for name, spec in old.collections.items():
        if name in used:
            continue
        pair = Pair(spec, None)
        _collection_steps(pair)
        pairs.append(pair)
        if name not in dropped:
            unnamed.append(name)
    store_steps, links = _relation_steps(old, new, moves)
    if not _same(old.events, new.events):
        changed = sorted(
            t for t in set(old.events) | set(new.events) if not _same(old.events.get(t), new.events.get(t))
        )
        store_steps.append(Step("events", None, f"payload schemas of {', '.join(changed)}", "record"))
    if old.version != new.version:
        store_steps.append(Step("version", None, f"{_version(old)} -> {_version(new)}", "record"))
    return Plan(old, new, pairs, store_steps, unnamed, links)


def _relation_text(rel: Relation) -> str:
    if rel.through is not None:
        text = f"{rel.collection} <-> {rel.to} through {rel.through} ({rel.join_members})"
    else:
        via = f"/{rel.member}" if len(rel.members) < 2 else "(/" + ", /".join(rel.members) + ")"
        text = f"{rel.holder}{via} -> {rel.target}" + (" (to-many side)" if rel.many else "")
    return text + (f", on_delete {rel.on_delete}" if rel.on_delete else "")


def _relation_steps(old: Model, new: Model, moves: Mapping[str, str]) -> tuple[list[Step], list[Relation]]:
    """Relations added, dropped or changed (a relation of a renamed collection is compared under
    its new name), and the many-to-many ones whose join documents must be checked: added, or
    changed in what they link."""
    steps: list[Step] = []
    links: list[Relation] = []
    before = {(moves.get(c, c), n): r for c, rels in old.relations.items() for n, r in rels.items()}
    after = {(c, n): r for c, rels in new.relations.items() for n, r in rels.items()}
    for (collection, name), rel in before.items():
        if (collection, name) not in after:
            kept = f"; the join documents stay in {rel.through}" if rel.through else ""
            steps.append(Step("drop relation", collection, f"{name}: {_relation_text(rel)}{kept}", "record"))
    for (collection, name), rel in after.items():
        was = before.get((collection, name))
        if was is not None and _relation_text(was) == _relation_text(rel):
            continue
        check = rel.through is not None and (
            was is None or (was.through, was.members, was.others) != (rel.through, rel.members, rel.others)
        )
        if check:
            links.append(rel)
        text = (
            f"{name}: {_relation_text(rel)}"
            if was is None
            else f"{name}: {_relation_text(was)} -> {_relation_text(rel)}"
        )
        if check:
            text += (
                f"; the stored {rel.through} documents are checked first (both ends exist, each pair once)"
            )
        kind = "add relation" if was is None else "change relation"
        steps.append(Step(kind, collection, text, "check" if check else "record"))
    return steps, links


def _version(model: Model) -> str:
    return "none" if model.version is None else str(model.version)
