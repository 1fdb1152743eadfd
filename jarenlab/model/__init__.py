"""The model document, checked completely before any database work, and normalized.

May import: the language's paths and values (``jarenlab.query.lang``) and the foundation: the model
is pure values, which the backends and every room above may import.

>>> m = load_model({"$model": "0.1", "collections": {"notes": {
...     "schema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
...     "key": "/id", "indexes": [{"name": "by_id", "path": "$.id"}]}}})
>>> m.collections["notes"].indexes[0].columns
('gx_id',)
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import jsonschema_rs
import orjson

from jarenlab import pointer
from jarenlab.errors import ModelError
from jarenlab.keys import CompositeKey
from jarenlab.model.intervals import IntervalSpec, check_declarations
from jarenlab.model.relations import Relation
from jarenlab.model.relations import check as check_relations
from jarenlab.query.lang.path import sql_addressable
from jarenlab.query.lang.values import identical

MODEL_VERSION = "0.1"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = ("_jl", "sqlite_")
_TOP_MEMBERS = {"$model", "version", "collections", "events"}
_COLLECTION_MEMBERS = {"schema", "key", "identity", "indexes", "intervals", "owner", "relations", "version"}
_INDEX_MEMBERS = {"name", "path", "unique"}
#: The members of one path entry of an index written as an object: ``{"path": "$.a", "dir": "desc"}``.
_ENTRY_MEMBERS = {"path", "dir"}
#: The JSON Schema types an indexed path may have and keep its one family (a backend types it).
_FAMILIES = frozenset({"string", "integer", "number", "boolean"})
# One path segment: .name, ['quoted name'] or [index].
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\['((?:[^'\\\"]|\\.)*)'\]|\[(0|[1-9][0-9]*)\]")


@dataclass(frozen=True)
class IndexSpec:
    """A declared index: its name, singular paths, uniqueness, the generated columns it covers and,
    per column, whether it is descending (``{"path": "$.a", "dir": "desc"}`` in the model)."""

    name: str
    paths: tuple[str, ...]
    unique: bool
    columns: tuple[str, ...]
    descending: tuple[bool, ...]


@dataclass(frozen=True)
class ColumnSpec:
    """A typed column for one indexed path; ``family`` is the one JSON Schema type its schema gives
    it (``string``, ``integer``, ``number``, ``boolean``) or None (the backend types the column)."""

    name: str
    path: str
    segments: tuple[str | int, ...]
    family: str | None


@dataclass(frozen=True)
class CollectionSpec:
    """One collection, normalized: schema, key, identity, indexes, columns, intervals, owner and
    version (the top-level integer member a session's optimistic concurrency checks and bumps)."""

    name: str
    schema: dict[str, Any]
    #: A pointer, a tuple of pointers (a composite key), or None (keys by ``identity``).
    key: str | tuple[str, ...] | None
    identity: str | None
    #: The key column's type: ``int`` or ``str`` (a composite key is stored as text).
    key_type: type
    indexes: tuple[IndexSpec, ...]
    columns: tuple[ColumnSpec, ...]
    intervals: tuple[IntervalSpec, ...] = ()
    owner: str | None = None
    version: str | None = None

    @functools.cached_property
    def composite(self) -> CompositeKey | None:
        """The codec of a composite key (None for a single or allocated key)."""
        if not isinstance(self.key, tuple):
            return None
        props = self.schema.get("properties") or {}
        members = tuple(p[1:] for p in self.key)
        types = tuple(str if props[m].get("type") == "string" else int for m in members)
        return CompositeKey(self.name, members, types)

    def index_paths(self) -> list[tuple[tuple[tuple[str | int, ...], bool], ...]]:
        """Each declared index as its (path segments, descending) pairs, in the index's order."""
        segments = {c.name: c.segments for c in self.columns}
        return [tuple(zip((segments[c] for c in ix.columns), ix.descending)) for ix in self.indexes]


@dataclass(frozen=True)
class Model:
    """A checked model: its collections, event schemas, the source document and its hash."""

    document: dict[str, Any]
    collections: dict[str, CollectionSpec]
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Declared relations per collection (:mod:`jarenlab.model.relations`).
    relations: dict[str, dict[str, Relation]] = field(default_factory=dict)

    @functools.cached_property
    def hash(self) -> str:
        """The SHA-256 of the canonical model document (what the store and its history record)."""
        return hashlib.sha256(canonical_json(self.document)).hexdigest()

    @property
    def version(self) -> int | None:
        """The model's optional ``"version"`` (an integer >= 0): a store refuses an older one."""
        value = self.document.get("version")
        return None if value is None else int(value)


def validation_errors(validator: Any, instance: Any) -> list[str]:
    """Every message a compiled JSON Schema validator has about ``instance``, each with its path.

    >>> validation_errors(jsonschema_rs.validator_for({"type": "object", "required": ["id"]}), {})
    ['(root): "id" is a required property']
    """
    return [
        f"{pointer.of(e.instance_path) or '(root)'}: {e.message}" for e in validator.iter_errors(instance)
    ]


def summarize(errors: list[str]) -> str:
    """The first validator message, saying how many more ``err.errors`` holds.

    >>> summarize(["/a: bad", "/b: bad"])
    '/a: bad (and 1 more in err.errors)'
    """
    more = len(errors) - 1
    return errors[0] + (f" (and {more} more in err.errors)" if more > 0 else "")


def canonical_json(value: Any) -> bytes:
    """Serialize with sorted keys: the same document always gives the same bytes."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def parse_singular_path(path: Any, doc_path: str) -> tuple[str | int, ...]:
    """Parse a singular JSONPath (``$.a.b``, ``$['odd key']``, ``$.a[0]``) into segments.

    Wildcards, slices, filters, unions and descendant segments are refused with JD0004.
    """
    if not isinstance(path, str) or not path.startswith("$"):
        raise ModelError(
            "JD0004", f"index path {path!r} must be a JSONPath string starting with '$'", doc_path=doc_path
        )
    pos, segments = 1, []
    while pos < len(path):
        m = _SEGMENT.match(path, pos)
        if not m:
            raise ModelError(
                "JD0004",
                f"index path {path!r} is not singular or not supported at offset {pos} "
                "(only .name, ['name'] and [index] segments)",
                doc_path=doc_path,
            )
        name, quoted, index = m.groups()
        if name is not None:
            segments.append(name)
        elif quoted is not None:
            segments.append(re.sub(r"\\(.)", r"\1", quoted))
        else:
            segments.append(int(index))
        pos = m.end()
    if not segments:
        raise ModelError("JD0004", f"index path {path!r} selects the whole document", doc_path=doc_path)
    for seg in segments:
        if isinstance(seg, str) and not sql_addressable(seg):
            raise ModelError(
                "JD0004", f"index path {path!r} has a member name SQL cannot address", doc_path=doc_path
            )
    return tuple(segments)


def _schema_at(schema: Any, segments: tuple[str | int, ...]) -> Any:
    """The sub-schema at a path, or None where the schema does not declare it."""
    for seg in segments:
        if not isinstance(schema, dict):
            return None
        schema = schema.get("items") if isinstance(seg, int) else (schema.get("properties") or {}).get(seg)
    return schema


def _fail(reason: str, doc_path: str) -> ModelError:
    return ModelError("JD0005", reason, doc_path=doc_path)


def _check_members(obj: Any, allowed: set[str], doc_path: str, what: str) -> None:
    if not isinstance(obj, dict):
        raise _fail(f"{what} must be an object", doc_path)
    for member in obj:
        if member not in allowed:
            raise _fail(
                f"unknown member {member!r} in {what} (allowed: {', '.join(sorted(allowed))})",
                pointer.join(doc_path, member),
            )


def _check_schema(schema: Any, doc_path: str) -> None:
    if not isinstance(schema, dict):
        raise _fail("schema must be a JSON Schema object", doc_path)
    if schema.get("type") != "object":
        raise _fail('schema must declare "type": "object"', f"{doc_path}/type")
    try:
        jsonschema_rs.validator_for(schema)
    except Exception as exc:  # the validator's own error type varies by version
        raise _fail(f"schema does not compile: {exc}", doc_path) from exc
    for at, name in _formats(schema, doc_path):
        _check_format(name, at)


#: The formats jsonschema-rs checks (named in a near miss's advice; the validator decides).
FORMATS = (
    "date", "date-time", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
    "uri", "uri-reference", "iri", "iri-reference", "uri-template", "json-pointer", "relative-json-pointer",
    "regex", "uuid",
)  # fmt: skip
#: Keywords whose values are data, not schemas (a "format" member inside them is not a keyword).
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})


def _formats(schema: Any, doc_path: str) -> list[tuple[str, str]]:
    """Every ``format`` keyword in a schema, with its JSON Pointer: ``[(doc_path, name), ...]``."""
    out: list[tuple[str, str]] = []
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            out += _formats(item, pointer.join(doc_path, i))
    elif isinstance(schema, dict):
        for k, v in schema.items():
            if k == "format" and isinstance(v, str):
                out.append((pointer.join(doc_path, k), v))
            elif k not in _DATA_KEYWORDS:
                out += _formats(v, pointer.join(doc_path, k))
    return out


@functools.cache
def _check_format(name: str, at: str) -> None:
    """JD0005 for a format the validator does not know: it would check nothing, silently."""
    try:
        jsonschema_rs.validator_for({"format": name}, validate_formats=True, ignore_unknown_formats=False)
    except Exception:  # the validator's own error type varies by version
        near = difflib.get_close_matches(name.lower().replace("_", "-"), FORMATS, n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]!r}?" if near else f" (known: {', '.join(FORMATS)})"
        raise _fail(f"unknown format {name!r}: nothing would be checked{hint}", at) from None


def _check_event(declared: Any, doc_path: str) -> None:
    """An event type's declaration: a payload schema, or ``{"payload": schema, "outcome": schema}``."""
    if not (isinstance(declared, dict) and "payload" in declared and "type" not in declared):
        _check_schema(declared, doc_path)
        return
    for member in declared:
        if member not in ("payload", "outcome"):
            raise _fail(
                f"an event declaration holds payload and outcome, not {member!r}",
                pointer.join(doc_path, member),
            )
    _check_schema(declared["payload"], pointer.join(doc_path, "payload"))
    if "outcome" in declared:
        outcome, where = declared["outcome"], pointer.join(doc_path, "outcome")
        if not isinstance(outcome, dict):
            raise _fail("an outcome schema must be a JSON Schema object", where)
        try:
            jsonschema_rs.validator_for(outcome)
        except Exception as exc:  # the validator's own error type varies by version
            raise _fail(f"outcome schema does not compile: {exc}", where) from exc


def _check_pointer(value: Any, schema: dict[str, Any], doc_path: str, what: str) -> tuple[str, str]:
    """Check a pointer to a required, declared top-level member; returns (member, json type)."""
    if not isinstance(value, str) or not re.fullmatch(r"/[^/~]+", value):
        raise _fail(f'{what} must be a JSON Pointer to one top-level member, such as "/id"', doc_path)
    member = value[1:]
    declared = (schema.get("properties") or {}).get(member)
    if not isinstance(declared, dict):
        raise _fail(f"{what} {value!r} points at a member the schema does not declare", doc_path)
    if member not in (schema.get("required") or []):
        raise _fail(f"{what} {value!r} must be listed in the schema's required members", doc_path)
    kind = declared.get("type")
    if kind not in ("string", "integer"):
        raise _fail(
            f"{what} {value!r} must be typed string or integer in the schema (got {kind!r})", doc_path
        )
    return member, kind


def _check_key(key: Any, schema: dict[str, Any], doc_path: str) -> tuple[str | tuple[str, ...], type]:
    """A key declaration: one pointer, or a list of two or more distinct ones (a composite key,
    stored as text); returns (the key, its column's type).

    >>> schema = {"properties": {"d": {"type": "string"}, "n": {"type": "integer"}}, "required": ["d", "n"]}
    >>> _check_key(["/d", "/n"], schema, "/k"), _check_key("/n", schema, "/k")
    ((('/d', '/n'), <class 'str'>), ('/n', <class 'int'>))
    """
    if not isinstance(key, list):
        return key, str if _check_pointer(key, schema, doc_path, "key")[1] == "string" else int
    if len(key) < 2 or len(set(map(str, key))) != len(key):
        raise ModelError(
            "JD2203",
            f'a composite key is a list of two or more distinct pointers, such as ["/date", "/origin"], not {key!r}',
            doc_path=doc_path,
        )
    for i, member in enumerate(key):
        _check_pointer(member, schema, f"{doc_path}/{i}", "a key member")
    return tuple(key), str


def index_name(collection: str, index: str) -> str:
    """The database name of a declared index: ``<collection>_<index>`` (so it shares the tables'
    namespace, and :func:`load_model` refuses one that would be a collection's name).

    >>> index_name("notes", "by_tag")
    'notes_by_tag'
    """
    return f"{collection}_{index}"


def column_name(segments: tuple[str | int, ...]) -> str:
    """The generated column name for a path: ``gx_`` plus the segments, made identifier-safe.

    >>> column_name(("dep", "delay")), column_name(("odd key",))
    ('gx_dep_delay', 'gx_odd_key_ae4cfb')
    """
    plain = "_".join(str(s) for s in segments)
    safe = re.sub(r"[^A-Za-z0-9_]", "_", plain)
    if safe != plain:
        safe += "_" + hashlib.sha256(plain.encode()).hexdigest()[:6]
    return f"gx_{safe}"


def _collection(name: str, decl: Any, doc_path: str) -> CollectionSpec:
    if not _NAME.match(name) or name.startswith(_RESERVED):
        raise _fail(
            f"collection name {name!r} must match [A-Za-z_][A-Za-z0-9_]* and not start with _jl or sqlite_",
            doc_path,
        )
    _check_members(decl, _COLLECTION_MEMBERS, doc_path, f"collection {name!r}")
    if "schema" not in decl:
        raise _fail(f"collection {name!r} needs a schema", f"{doc_path}/schema")
    schema = decl["schema"]
    _check_schema(schema, f"{doc_path}/schema")
    if "key" not in decl:
        raise _fail(
            f'collection {name!r} needs a "key" (a pointer, or null with "identity")', f"{doc_path}/key"
        )
    key, identity = decl["key"], decl.get("identity")
    if key is None:
        if identity not in ("uuid", "integer"):
            raise _fail('with "key": null, "identity" must be "uuid" or "integer"', f"{doc_path}/identity")
        key_type: type = str if identity == "uuid" else int
    else:
        if identity is not None:
            raise _fail('"identity" is only allowed with "key": null', f"{doc_path}/identity")
        key, key_type = _check_key(key, schema, f"{doc_path}/key")
    owner = decl.get("owner")
    if owner is not None:
        member, _ = _check_pointer(owner, schema, f"{doc_path}/owner", "owner")
        if not sql_addressable(member):  # every owner view's statement names it in SQL
            raise _fail(f"owner {owner!r} has a member name SQL cannot address", f"{doc_path}/owner")
    version = decl.get("version")
    if version is not None:
        _, kind = _check_pointer(version, schema, f"{doc_path}/version", "version")
        if kind != "integer" or version == key or (isinstance(key, tuple) and version in key):
            raise _fail(
                f"version {version!r} must be an integer member of the schema other than the key",
                f"{doc_path}/version",
            )
    indexes, columns = _indexes(decl.get("indexes", []), schema, f"{doc_path}/indexes")
    intervals = decl.get("intervals", [])
    if not isinstance(intervals, list):
        raise _fail("intervals must be a list", f"{doc_path}/intervals")
    return CollectionSpec(
        name=name,
        schema=schema,
        key=key,
        identity=identity,
        key_type=key_type,
        indexes=indexes,
        columns=columns,
        intervals=check_declarations(intervals, schema, owner, f"{doc_path}/intervals"),
        owner=owner,
        version=version,
    )


def _index_entry(entry: Any, doc_path: str) -> tuple[Any, bool]:
    """One path of an index: a JSONPath (ascending) or ``{"path": ..., "dir": "asc" | "desc"}``;
    returns (path, descending).

    >>> _index_entry("$.a", "/p"), _index_entry({"path": "$.a", "dir": "desc"}, "/p")
    (('$.a', False), ('$.a', True))
    """
    if not isinstance(entry, dict):
        return entry, False
    _check_members(entry, _ENTRY_MEMBERS, doc_path, "index path entry")
    if "path" not in entry:
        raise _fail('an index path entry needs "path" (and "dir": "asc" or "desc")', f"{doc_path}/path")
    direction = entry.get("dir", "asc")
    if direction not in ("asc", "desc"):
        raise _fail(f'dir is "asc" or "desc", not {direction!r}', f"{doc_path}/dir")
    return entry["path"], direction == "desc"


def _indexes(
    decls: Any, schema: dict[str, Any], doc_path: str
) -> tuple[tuple[IndexSpec, ...], tuple[ColumnSpec, ...]]:
    if not isinstance(decls, list):
        raise _fail("indexes must be a list", doc_path)
    indexes: list[IndexSpec] = []
    columns: dict[tuple[str | int, ...], ColumnSpec] = {}
    for i, decl in enumerate(decls):
        at = f"{doc_path}/{i}"
        _check_members(decl, _INDEX_MEMBERS, at, "index")
        name = decl.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise _fail(f"index name {name!r} must match [A-Za-z_][A-Za-z0-9_]*", f"{at}/name")
        if any(ix.name == name for ix in indexes):
            raise _fail(f"index name {name!r} is declared twice", f"{at}/name")
        unique = decl.get("unique", False)
        if not isinstance(unique, bool):
            raise _fail("unique must be true or false", f"{at}/unique")
        raw = decl.get("path")
        paths = raw if isinstance(raw, list) else [raw]
        if not paths:
            raise _fail("a composite index needs at least one path", f"{at}/path")
        names, texts, descending = [], [], []
        for j, entry in enumerate(paths):
            where = f"{at}/path/{j}" if isinstance(raw, list) else f"{at}/path"
            path, desc = _index_entry(entry, where)
            if isinstance(entry, dict):
                where += "/path"
            segments = parse_singular_path(path, where)
            if segments not in columns:
                sub = _schema_at(schema, segments)
                kind = sub.get("type") if isinstance(sub, dict) else None
                family = kind if isinstance(kind, str) and kind in _FAMILIES else None
                columns[segments] = ColumnSpec(column_name(segments), path, segments, family)
            if columns[segments].name in names:
                raise _fail(f"path {path!r} appears twice in one index", where)
            names.append(columns[segments].name)
            texts.append(path)
            descending.append(desc)
        indexes.append(IndexSpec(name, tuple(texts), unique, tuple(names), tuple(descending)))
    return tuple(indexes), tuple(columns.values())


def load_model(document: Any) -> Model:
    """Check a model document completely and normalize it; raise ModelError (JD0004/JD0005)."""
    _check_members(document, _TOP_MEMBERS, "", "the model")
    if "$model" not in document:
        raise _fail(f'the model needs "$model": "{MODEL_VERSION}"', "/$model")
    if document["$model"] != MODEL_VERSION:
        raise _fail(f'"$model" must be "{MODEL_VERSION}" (got {document["$model"]!r})', "/$model")
    version = document.get("version")
    if "version" in document and (type(version) is not int or version < 0):
        raise _fail(f'"version" must be an integer >= 0 (got {version!r})', "/version")
    collections = document.get("collections")
    if not isinstance(collections, dict) or not collections:
        raise _fail("collections must be an object declaring at least one collection", "/collections")
    specs = {
        name: _collection(name, decl, pointer.join("/collections", name))
        for name, decl in collections.items()
    }
    for spec in specs.values():
        for i, ix in enumerate(spec.indexes):
            name = index_name(spec.name, ix.name)
            if name in specs:  # tables and indexes share one namespace in SQLite
                raise _fail(
                    f"index {ix.name!r} would be named {name}, which is a collection",
                    pointer.join("/collections", spec.name) + f"/indexes/{i}/name",
                )
    events = document.get("events", {})
    if not isinstance(events, dict):
        raise _fail("events must map event types to payload schemas", "/events")
    for etype, declared in events.items():
        if not isinstance(etype, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:-]*", etype):
            raise _fail(f"event type {etype!r} is not a valid name", pointer.join("/events", etype))
        _check_event(declared, pointer.join("/events", etype))
    relations = check_relations(
        {name: decl["relations"] for name, decl in collections.items() if "relations" in decl}, specs
    )
    return Model(
        document=orjson.loads(orjson.dumps(document)),
        collections=specs,
        events=dict(events),
        relations=relations,
    )


def first_difference(old: Any, new: Any, path: str = "") -> str | None:
    """The JSON Pointer of the first place two documents differ, or None when equal.

    >>> first_difference({"a": [1, 2]}, {"a": [1, 3]})
    '/a/1'
    """
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            if k not in old or k not in new:
                return pointer.join(path, k)
            found = first_difference(old[k], new[k], pointer.join(path, k))
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list):
        for i, (a, b) in enumerate(zip(old, new)):
            found = first_difference(a, b, f"{path}/{i}")
            if found is not None:
                return found
        return None if len(old) == len(new) else f"{path}/{min(len(old), len(new))}"
    return None if identical(old, new) else (path or "/")


def describe_at(document: Any, doc_path: str) -> str:
    """What a model document holds at a JSON Pointer, in a few words (for a refusal's message).

    >>> describe_at({"a": {"b": [1, 2]}}, "/a/b"), describe_at({"a": {}}, "/a/c")
    ('[1,2]', 'nothing')
    """
    value = document
    for token in pointer.split(doc_path) if doc_path not in ("", "/") else []:
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and pointer.is_array_index(token) and int(token) < len(value):
            value = value[int(token)]
        else:
            return "nothing"
    text = orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def refuse_downgrade(stored: Model, given: Model) -> None:
    """JD0022 when ``given`` is older than the stored model: a lower ``"version"``, or none where
    the stored model has one (a stale notebook must not downgrade a shared store).

    >>> old = load_model({"$model": "0.1", "version": 1, "collections": {"t": {
    ...     "schema": {"type": "object"}, "key": None, "identity": "integer"}}})
    >>> refuse_downgrade(old, old)
    >>> refuse_downgrade(Model({**old.document, "version": 2}, old.collections), old)
    Traceback (most recent call last):
    ...
    jarenlab.errors.ModelError: JD0022 migration_history_mismatch: the store's model is version 2 and this model is version 1: an older model cannot open or migrate it (a stale notebook must not downgrade a shared store); open it without a model to use the stored one (at /version)
    """
    have, want = stored.version, given.version
    if have is not None and (want is None or want < have):
        raise ModelError(
            "JD0022",
            f"the store's model is version {have} and this model is "
            f"{'unversioned' if want is None else f'version {want}'}: an older model cannot open or "
            "migrate it (a stale notebook must not downgrade a shared store); open it without a model "
            "to use the stored one",
            doc_path="/version",
        )
