"""One-statement graph loads: ``collection.load(spec)`` follows declared relations in ONE SQL statement.

The spec (``include`` entries name declared relations; ``True`` takes every related document)::

    {"where": <condition on $it>, "order_by": "$it.name" | {"$key": ..., "$dir": "desc"} | [...],
     "take": 20, "skip": 0, "max_depth": 3,
     "include": {"flights": {"where": ..., "order_by": ..., "take": 3, "include": {"plane": True}},
                 "airports": {"count": True}}}

A many-to-many relation (``through`` a join collection) is included like a to-many one: its
related documents in link order (the join documents' storage order) unless ``order_by`` says
otherwise, a document linked twice appearing twice. ``"link": "enrollment"`` puts each one's join
document (its grade, say) in the member ``enrollment`` of the related document.

compiles to correlated subqueries projected as JSON text (:mod:`jarenlab.query.loads.sql`): each
document comes back whole, its includes members after its own (an include named like a member
replaces it, in its place): a to-many include a JSON array of such documents (ordered and windowed
inside its subquery), a to-one include one document or ``null`` (a missing parent reads as
``None``), a count a number. Exactly one statement runs, whatever the depth and
the number of parents. What SQL cannot answer exactly is refused with JD0032 naming the include
path, never run as a second, silent query: an untranslatable condition or ordering, an unknown
relation, a cycle (a collection met twice on one path), a depth beyond ``max_depth`` (default 3).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jarenlab.arguments import is_count
from jarenlab.errors import PlanError
from jarenlab.query.build.expr import Expr, OrderKey
from jarenlab.query.lang.document import parse
from jarenlab.query.planner.plan import conjoin
from jarenlab.query.planner.preds import Const, Field, Pred, Reason
from jarenlab.query.planner.preds import OrderKey as Key
from jarenlab.query.planner.translate import (
    UNORDERED,
    Context,
    field_of,
    order_refusal,
    schema_family,
    translate,
)

if TYPE_CHECKING:
    from jarenlab.backends.base import Dialect
    from jarenlab.model import CollectionSpec
    from jarenlab.model.relations import Relation

#: A level without conditions.
TRUE = Const(True)
#: How deep includes may nest unless the spec says otherwise.
MAX_DEPTH = 3
ROOT_MEMBERS = frozenset({"where", "order_by", "take", "skip", "max_depth", "include"})
INCLUDE_MEMBERS = frozenset({"where", "order_by", "take", "skip", "count", "include", "link"})


@dataclass(frozen=True)
class Level:
    """One collection read by the load: the root, or an include of its parent level."""

    collection: str
    path: str
    where: Pred = TRUE
    order: tuple[Key, ...] = ()
    take: int | None = None
    skip: int = 0
    relation: Relation | None = None
    count: bool = False
    children: tuple[tuple[str, Level], ...] = field(default_factory=tuple)
    #: A many-to-many include's ``link``: the member each related document carries its join document in.
    link: str | None = None

    @property
    def kind(self) -> str:
        """``root``, ``to-many``, ``many-to-many``, ``to-one`` or ``count``."""
        if self.relation is None:
            return "root"
        if self.count:
            return "count"
        if self.relation.through is not None:
            return "many-to-many"
        return "to-many" if self.relation.many else "to-one"


def _refuse(path: str, reason: str) -> PlanError:
    return PlanError("JD0032", f"include {path or '(root)'}: {reason}")


def _condition(value: Any, ctx: Context, path: str) -> Pred:
    doc = value.document if isinstance(value, Expr) else value
    try:
        node = parse(doc).node
    except Exception as err:  # the engine's own coded error, moved to the include
        raise _refuse(path, f"the condition is not a query expression ({err})") from None
    p = translate(node, ctx)
    if isinstance(p, Reason):
        raise _refuse(path, f"{p.construct}: {p.reason} (a load runs as one SQL statement)")
    return p


def _order(value: Any, ctx: Context, path: str) -> tuple[Key, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    keys = []
    for item in items:
        if isinstance(item, OrderKey):
            item = item.spec()
        elif isinstance(item, Expr):
            item = item.document
        spec = item if isinstance(item, dict) else {"$key": item}
        desc = spec.get("$dir", "asc") == "desc"
        greatest = spec.get("$empty", "least") == "greatest"
        f = field_of(parse(spec.get("$key")).node, ctx)
        if not isinstance(f, Field) or f.family not in ("string", "integer", "number"):
            why = order_refusal(f, ctx.schema)
            if why == UNORDERED:
                why = f"order_by {spec.get('$key')!r} is not a schema-typed string or number path of $it"
            raise _refuse(path, why)
        keys.append(Key(f, "field", desc, greatest))
    return tuple(keys)


def _window(spec: Mapping[str, Any], path: str) -> tuple[int | None, int]:
    take, skip = spec.get("take"), spec.get("skip", 0)
    if take is not None and not is_count(take):
        raise _refuse(path, f"take is an integer >= 0, not {take!r}")
    if not is_count(skip):
        raise _refuse(path, f"skip is an integer >= 0, not {skip!r}")
    return take, skip


def _context(spec: CollectionSpec, dialect: Dialect) -> Context:
    return Context("it", spec.schema, {c.segments: c.name for c in spec.columns}, {}, dialect=dialect)


def plan_load(
    collection: str,
    spec: Any,
    specs: Mapping[str, CollectionSpec],
    relations: Mapping[str, Mapping[str, Relation]],
    *,
    dialect: Dialect,
) -> Level:
    """Check a load spec completely and plan its levels (JD0032 for anything SQL cannot answer)."""
    if not isinstance(spec, dict):
        raise _refuse(
            "", f"a load spec is a dict (where, order_by, take, skip, max_depth, include), not {spec!r}"
        )
    unknown = sorted(set(spec) - ROOT_MEMBERS)
    if unknown:
        raise _refuse("", f"unknown member {unknown[0]!r} (allowed: {', '.join(sorted(ROOT_MEMBERS))})")
    depth = spec.get("max_depth", MAX_DEPTH)
    if not is_count(depth):
        raise _refuse("", f"max_depth is an integer >= 0, not {depth!r}")
    return _level(collection, spec, "", None, [collection], depth, specs, relations, dialect)


def _level(
    collection: str,
    spec: Mapping[str, Any],
    path: str,
    relation: Relation | None,
    seen: list[str],
    max_depth: int,
    specs: Mapping[str, CollectionSpec],
    relations: Mapping[str, Mapping[str, Relation]],
    dialect: Dialect,
) -> Level:
    ctx = _context(specs[collection], dialect)
    where = conjoin([_condition(spec["where"], ctx, path)]) if spec.get("where") is not None else TRUE
    order = _order(spec["order_by"], ctx, path) if spec.get("order_by") is not None else ()
    take, skip = _window(spec, path)
    count = spec.get("count", False)
    if type(count) is not bool:
        raise _refuse(path, f"count is true or false, not {count!r}")
    if count and relation is not None and not relation.many:
        raise _refuse(path, f"count is for a to-many relation; {relation.name!r} is to-one")
    includes = spec.get("include") or {}
    if not isinstance(includes, dict):
        raise _refuse(path, "include maps relation names to True or an include spec")
    if count and includes:
        raise _refuse(path, "a count has no includes")
    link = spec.get("link")
    if link is not None:
        if relation is None or relation.through is None or count:
            raise _refuse(path, "link is for a many-to-many include (its join document)")
        if not isinstance(link, str) or not link or link in includes:
            raise _refuse(
                path, f"link names the member to hold the join document, not {link!r} (nor an include)"
            )
    children = []
    declared = relations.get(collection, {})
    for name, sub in includes.items():
        here = f"{path}.{name}" if path else str(name)
        rel = declared.get(name)
        if rel is None:
            names = ", ".join(declared) or "none"
            raise _refuse(here, f"{collection!r} declares no relation {name!r} (its relations: {names})")
        child = rel.child
        if child in seen:
            raise _refuse(here, f"a cycle ({' -> '.join([*seen, child])}); load that side in its own call")
        if len(seen) > max_depth:
            raise _refuse(here, f"deeper than max_depth {max_depth} (pass max_depth to load deeper)")
        if sub is True:
            sub = {}
        if not isinstance(sub, dict):
            raise _refuse(here, f"an include is True or a dict, not {sub!r}")
        bad = sorted(set(sub) - INCLUDE_MEMBERS)
        if bad:
            raise _refuse(here, f"unknown member {bad[0]!r} (allowed: {', '.join(sorted(INCLUDE_MEMBERS))})")
        if not rel.many and (
            sub.get("take") is not None or sub.get("skip") or sub.get("order_by") is not None
        ):
            raise _refuse(here, "take, skip and order_by are for to-many includes")
        children.append(
            (str(name), _level(child, sub, here, rel, [*seen, child], max_depth, specs, relations, dialect))
        )
    return Level(collection, path, where, order, take, skip, relation, count, tuple(children), link)


def member_field(spec: CollectionSpec, member: str, dialect: Dialect) -> Field:
    """The field of a relation's member (its family from the schema, its typed column if indexed)."""
    f = field_of(
        parse(f"$it.{member}" if member.isidentifier() else f"$it['{member}']").node, _context(spec, dialect)
    )
    if isinstance(f, Field):
        return f
    return Field((member,), schema_family(spec.schema, (member,)), None)


def levels(level: Level) -> list[Level]:
    """Every level, depth first (the root first)."""
    return [level] + [x for _, child in level.children for x in levels(child)]
