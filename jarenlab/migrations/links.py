"""The stored join documents of a many-to-many relation a migration adds, checked.

A relation declared ``through`` a join collection promises what ``link`` keeps true: each join
document links two documents that exist, and each pair is linked once. A migration that adds
such a relation over a join collection that already holds documents (or changes what it links)
checks them inside its transaction, after any transform: a join document naming a missing
document, or a pair linked twice, is a violation. A dry run lists them; an applied migration is
refused with JD0023 naming the first, and nothing is migrated. Adding the join collection in the
same migration needs no check (it is empty); removing a relation checks nothing and keeps the
join documents.

>>> import jarenlab as jl
>>> S = {"type": "string"}
>>> def model(**relations):
...     return {"$model": "0.1", "version": len(relations), "collections": {
...         "s": {"schema": {"type": "object", "required": ["n"], "properties": {"n": S}}, "key": "/n",
...               "relations": relations},
...         "c": {"schema": {"type": "object", "required": ["n"], "properties": {"n": S}}, "key": "/n"},
...         "e": {"schema": {"type": "object", "properties": {"s": S, "c": S}}, "key": None, "identity": "integer"}}}
>>> with jl.open(model=model()) as store:
...     _ = store["s"].insert({"n": "ada"}); _ = store["c"].insert({"n": "alg"})
...     _ = store["e"].insert_many([{"s": "ada", "c": "alg"}, {"s": "ada", "c": "art"}])
...     plan = store.migrate(model(cs={"to": "c", "through": {"collection": "e", "from": "/s", "to": "/c"}}),
...                          dry_run=True)
...     plan.violations[["key", "pointer", "message"]].to_dict("records")
[{'key': 2, 'pointer': '/c', 'message': "links c 'art', which does not exist"}]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from jarenlab.collection import Collection
    from jarenlab.model.relations import Relation

#: (collection, key, JSON Pointer, message): one refused join document.
Violation = tuple[str, Any, str, str]


def _is_key(value: Any) -> bool:
    return type(value) in (str, int)


def _end(doc: dict[str, Any], members: tuple[str, ...]) -> tuple[Any, bool]:
    """The key a join document names by ``members`` (a composite key's tuple), and whether every
    member holds a key's value."""
    values = tuple(doc.get(m) for m in members)
    return (values if len(members) > 1 else values[0]), all(_is_key(v) for v in values)


def link_violations(rel: Relation, read: Callable[[str], Collection | None]) -> list[Violation]:
    """The join documents of ``rel`` that break its promise, in storage order. ``read(name)`` is
    the collection of that (new) name as the migration sees it, None when it holds nothing yet."""
    assert rel.through is not None and rel.other is not None
    join = read(rel.through)
    if join is None:
        return []
    ends = {}
    for end in (rel.target, rel.to):
        coll = read(end)
        ends[end] = set() if coll is None else set(coll.keys())
    out: list[Violation] = []
    seen: dict[tuple[Any, Any], Any] = {}
    for page in join.pages():
        for key, text in page:
            doc = orjson.loads(text)
            (mine, good), (theirs, fine) = _end(doc, rel.members), _end(doc, rel.others)
            for end, members, value, ok in (
                (rel.target, rel.members, mine, good),
                (rel.to, rel.others, theirs, fine),
            ):
                if not ok or value not in ends[end]:
                    out.append(
                        (rel.through, key, f"/{members[0]}", f"links {end} {value!r}, which does not exist")
                    )
            pair = (mine, theirs)
            if pair in seen:
                out.append(
                    (
                        rel.through,
                        key,
                        "",
                        f"links {rel.target} {pair[0]!r} to {rel.to} {pair[1]!r} again "
                        f"({rel.through} {seen[pair]!r} links them): a pair is linked once",
                    )
                )
            elif good and fine:
                seen[pair] = key
    return out
