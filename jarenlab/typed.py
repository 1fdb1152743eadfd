"""Typed models, both ways: Python types from a model's schemas, a schema from Python types, typed reads.

- :func:`types` writes a module of ``TypedDict`` classes, one per collection (and one per nested
  object with declared properties), with the schemas' ``title`` and ``description`` as docstrings,
  so an editor completes member names and mypy checks the documents a notebook builds.
- :func:`schema_of` gives the JSON Schema of a ``TypedDict`` or a dataclass (members, which are
  required, nested classes, ``Literal`` as ``enum``, ``X | None``, lists and string-keyed dicts,
  ``datetime`` and ``date`` as formatted strings), with its docstrings as descriptions: the schema
  of a collection declared from a class.
- :class:`Typed` is a collection handle whose reads return a class's instances
  (``store["flights"].typed(Flight)``): a ``TypedDict`` is a dict at run time, so its documents
  come back as they are (typed for mypy); a dataclass's are built (nested dataclasses too).

>>> from typing import NotRequired, TypedDict
>>> class Note(TypedDict):
...     '''A note.'''
...     id: str
...     tags: NotRequired[list[str]]
>>> schema_of(Note)
{'type': 'object', 'properties': {'id': {'type': 'string'}, 'tags': {'type': 'array', 'items': {'type': 'string'}}}, 'required': ['id'], 'description': 'A note.'}
>>> schema = {**schema_of(Note), "properties": {"id": {"type": "string", "description": "Its key."},
...     "tags": {"type": "array", "items": {"type": "string"}}}}
>>> print(types({"$model": "0.1", "collections": {"notes": {"schema": schema, "key": "/id"}}}, names={"notes": "Note"}))
... # doctest: +ELLIPSIS
\"\"\"Python types of a jarenlab model's collections...
class Note(TypedDict):
    \"\"\"A note.\"\"\"
<BLANKLINE>
    id: str
    \"\"\"Its key.\"\"\"
    tags: NotRequired[list[str]]
<BLANKLINE>
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import inspect
import itertools
import keyword
import os
import re
import textwrap
import types as pytypes
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Literal, NotRequired, Required, TypeVar, Union, get_args, get_origin

from jarenlab.errors import StoreError, ValidationError
from jarenlab.model import Model, load_model

__all__ = ["Typed", "schema_of", "types"]

T = TypeVar("T")


# -- from a model to Python types -----------------------------------------------------------------
def types(
    model: Any, path: str | os.PathLike[str] | None = None, *, names: Mapping[str, str] | None = None
) -> str:
    """The source of a module with one ``TypedDict`` per collection of ``model`` (a model document,
    a checked :class:`~jarenlab.model.Model` or an open store); written to ``path`` too when given.

    A collection's class is named by its name in CamelCase (``names={"flights": "Flight"}``
    chooses another); a nested object with declared properties gets a class of its own
    (``FlightRoute`` for ``/route``). Members the schema does not require are ``NotRequired``;
    a member name that is not a Python identifier makes its class use the functional form. The
    schema's ``title`` and ``description`` become the class's and the members' docstrings.
    """
    checked = _model(model)
    chosen = dict(names or {})
    unknown = sorted(set(chosen) - set(checked.collections))
    if unknown:
        raise StoreError("JD2004", f"names names no collection {unknown[0]!r}", collection=unknown[0])
    writer = _Writer()
    for name, spec in checked.collections.items():
        writer.object(chosen.get(name) or _camel(name), spec.schema)
    text = writer.module()
    if path is not None:
        Path(path).write_text(text, "utf-8")
    return text


def _model(model: Any) -> Model:
    if isinstance(model, Model):
        return model
    if isinstance(model, dict):
        return load_model(model)
    held = getattr(model, "model", None)
    if isinstance(held, Model):
        return held
    raise StoreError(
        "JD2010", f"types() takes a model document, a Model or a store, not {type(model).__name__}"
    )


def _camel(name: str) -> str:
    """``flights`` -> ``Flights``, ``plane_models`` -> ``PlaneModels``, ``dep-time`` -> ``DepTime``."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name) if p]
    out = "".join(p[:1].upper() + p[1:] for p in parts) or "Document"
    return "_" + out if out[0].isdigit() else out


class _Writer:
    """Collects the classes of a generated module (nested classes first) and what they import."""

    def __init__(self) -> None:
        self.classes: list[str] = []
        self.taken: set[str] = set()
        self.literal = False
        self.any = False

    def object(self, name: str, schema: dict[str, Any]) -> str:
        """Write a class for an object schema with properties; return its name."""
        base, n = name, 2
        while name in self.taken:
            name, n = f"{base}{n}", n + 1
        self.taken.add(name)
        properties: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        members = []
        for member, sub in properties.items():
            kind = self.annotation(sub if isinstance(sub, dict) else {}, name + _camel(member))
            if member not in required:
                kind = f"NotRequired[{kind}]"
            members.append((member, kind, _doc(sub)))
        doc = _doc(schema)
        plain = all(m.isidentifier() and not keyword.iskeyword(m) for m, _, _ in members)
        if plain:
            lines = [f"class {name}(TypedDict):"]
            if doc:
                lines.append(_docstring(doc, "    "))
                lines.append("")
            for member, kind, mdoc in members:
                lines.append(f"    {member}: {kind}")
                if mdoc:
                    lines.append(_docstring(mdoc, "    "))
            if not members and not doc:
                lines.append("    pass")
        else:
            # A member name Python cannot spell: the functional form, member docs in the class's.
            fields = ", ".join(f"{member!r}: {kind}" for member, kind, _ in members)
            lines = [f"{name} = TypedDict({name!r}, {{{fields}}})"]
            listed = "\n".join(f"{member}: {mdoc}" for member, _, mdoc in members if mdoc)
            full = "\n\n".join(p for p in (doc, listed) if p)
            if full:
                lines.append(f"{name}.__doc__ = {full!r}")
        self.classes.append("\n".join(lines) + "\n")
        return name

    def annotation(self, schema: dict[str, Any], name: str) -> str:
        """The Python type of a (sub)schema."""
        if "const" in schema:
            self.literal = True
            return f"Literal[{schema['const']!r}]"
        if isinstance(schema.get("enum"), list) and all(
            v is None or isinstance(v, str | int | bool) for v in schema["enum"]
        ):
            self.literal = True
            values = [v for v in schema["enum"] if v is not None]
            out = f"Literal[{', '.join(repr(v) for v in values)}]" if values else "None"
            return out + (" | None" if None in schema["enum"] and values else "")
        for combinator in ("anyOf", "oneOf"):
            if isinstance(schema.get(combinator), list):
                return _union(self.annotation(s, name) for s in schema[combinator] if isinstance(s, dict))
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union(self.annotation({**schema, "type": k}, name) for k in kind)
        if kind == "string":
            return "str"
        if kind == "integer":
            return "int"
        if kind == "number":
            return "float"
        if kind == "boolean":
            return "bool"
        if kind == "null":
            return "None"
        if kind == "array":
            items = schema.get("items")
            return (
                f"list[{self.annotation(items, name + 'Item') if isinstance(items, dict) else self._any()}]"
            )
        if kind == "object" or "properties" in schema:
            if schema.get("properties"):
                return self.object(name, schema)
            extra = schema.get("additionalProperties")
            value = self.annotation(extra, name + "Value") if isinstance(extra, dict) else self._any()
            return f"dict[str, {value}]"
        return self._any()

    def _any(self) -> str:
        self.any = True
        return "Any"

    def module(self) -> str:
        names = (
            ["NotRequired", "TypedDict"]
            + (["Literal"] if self.literal else [])
            + (["Any"] if self.any else [])
        )
        head = (
            '"""Python types of a jarenlab model\'s collections (written by jarenlab.types: regenerate it\n'
            'after a migration rather than editing it)."""\n\n'
            f"from typing import {', '.join(sorted(names))}\n"
        )
        return head + "".join("\n\n" + c for c in self.classes)


def _union(parts: Iterable[str]) -> str:
    seen: list[str] = []
    for p in parts:
        if p not in seen:
            seen.append(p)
    return " | ".join(seen) or "Any"


def _doc(schema: Any) -> str:
    if not isinstance(schema, dict):
        return ""
    title, description = schema.get("title"), schema.get("description")
    parts = [p for p in (title, description) if isinstance(p, str) and p.strip()]
    return "\n\n".join(p.strip() for p in parts)


def _docstring(text: str, indent: str) -> str:
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if "\n" not in body:
        return f'{indent}"""{body}"""'
    return f'{indent}"""' + textwrap.indent(body, indent).lstrip() + f'\n{indent}"""'


# -- from Python types to a schema -----------------------------------------------------------------
def schema_of(cls: type) -> dict[str, Any]:
    """The JSON Schema of a ``TypedDict`` or a dataclass (see the module docstring): an object
    with its members' schemas, the members without a default (or ``NotRequired``) ``required``,
    the class's docstring as ``description`` and each member's docstring as its ``description``.
    JD2010 for anything else, or a member type with no JSON form (naming it)."""
    if _is_typeddict(cls) or dataclasses.is_dataclass(cls):
        return _object(cls, cls.__qualname__)
    raise StoreError(
        "JD2010",
        f"schema_of takes a TypedDict or a dataclass, not {cls!r} (a pydantic model gives its own with "
        "model_json_schema())",
    )


def _is_typeddict(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, dict) and hasattr(cls, "__required_keys__")


def _object(cls: Any, where: str) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except (NameError, TypeError) as exc:  # a string annotation naming what the module lacks
        raise StoreError("JD2010", f"{where}: its annotations do not resolve ({exc})") from None
    docs = _member_docs(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    if _is_typeddict(cls):
        for name, hint in hints.items():
            properties[name] = _with_doc(_schema(_unwrap(hint), f"{where}.{name}"), docs.get(name))
        # A NotRequired written as a string (``from __future__ import annotations``) is not seen
        # when the class is made, so ``__required_keys__`` alone can be wrong: the hints decide.
        for name, hint in hints.items():
            origin = get_origin(hint)
            if origin is Required or (origin is not NotRequired and name in cls.__required_keys__):
                required.append(name)
    else:
        for f in dataclasses.fields(cls):
            properties[f.name] = _with_doc(_schema(hints[f.name], f"{where}.{f.name}"), docs.get(f.name))
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                required.append(f.name)
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    doc = inspect.getdoc(cls)
    if doc and not _generated_doc(cls, doc):
        out["description"] = doc
    return out


def _generated_doc(cls: Any, doc: str) -> bool:
    """Whether a docstring is the one Python makes up (a dataclass's signature, dict's own)."""
    return doc == inspect.getdoc(dict) or (
        dataclasses.is_dataclass(cls) and doc.startswith(getattr(cls, "__name__", "") + "(")
    )


def _unwrap(hint: Any) -> Any:
    while get_origin(hint) in (Required, NotRequired):
        hint = get_args(hint)[0]
    return hint


def _with_doc(schema: dict[str, Any], doc: str | None) -> dict[str, Any]:
    return {**schema, "description": doc} if doc else schema


def _schema(hint: Any, where: str) -> dict[str, Any]:
    hint = _unwrap(hint)
    origin = get_origin(hint)
    if hint is Any:
        return {}
    if hint is type(None) or hint is None:
        return {"type": "null"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is str:
        return {"type": "string"}
    if hint is dt.datetime:
        return {"type": "string", "format": "date-time"}
    if hint is dt.date:
        return {"type": "string", "format": "date"}
    if origin is Literal:
        return {"enum": list(get_args(hint))}
    if origin in (Union, pytypes.UnionType):
        parts = [_schema(a, where) for a in get_args(hint)]
        kinds = [p.get("type") for p in parts]
        if all(isinstance(k, str) and set(p) == {"type"} for k, p in zip(kinds, parts)):
            return {"type": kinds}
        return {"anyOf": parts}
    if origin in (list, Sequence, tuple) or hint in (list, tuple):
        args = [a for a in get_args(hint) if a is not Ellipsis]
        if origin is tuple and len(set(args)) > 1:
            raise _no_json(hint, where)
        return {"type": "array", "items": _schema(args[0], where + "[]")} if args else {"type": "array"}
    if origin in (dict, Mapping) or hint is dict:
        pair = get_args(hint)
        if pair and pair[0] is not str:
            raise _no_json(hint, where)
        return (
            {"type": "object", "additionalProperties": _schema(pair[1], where + "{}")}
            if pair
            else {"type": "object"}
        )
    if _is_typeddict(hint) or dataclasses.is_dataclass(hint):
        return _object(hint, where)
    raise _no_json(hint, where)


def _no_json(hint: Any, where: str) -> StoreError:
    return StoreError(
        "JD2010", f"{where}: {hint!r} has no JSON Schema form (JSON values, lists, str-keyed dicts)"
    )


def _member_docs(cls: Any) -> dict[str, str]:
    """The attribute docstrings of a class (a string literal right after a member's annotation)."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef)), [])
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                out[node.target.id] = inspect.cleandoc(after.value.value)
    return out


# -- typed reads -------------------------------------------------------------------------------------
class Typed(Generic[T]):
    """A collection handle whose reads return ``cls``'s instances: ``store["flights"].typed(Flight)``.

    ``cls`` is a ``TypedDict`` (documents come back as they are: a TypedDict is a dict) or a
    dataclass (each document is built into one, nested dataclasses too; JD2003 naming the member
    when a document does not fit). Writes take the same (a dataclass is written as its fields,
    leaving out those that hold None where the class defaults them to None)."""

    def __init__(self, collection: Any, cls: type[T]) -> None:
        if not (_is_typeddict(cls) or dataclasses.is_dataclass(cls)):
            raise StoreError("JD2010", f"typed() takes a TypedDict or a dataclass, not {cls!r}")
        self.collection = collection
        self.cls = cls
        self._build: Callable[[dict[str, Any]], T] = (
            (lambda d: d) if _is_typeddict(cls) else lambda d: _build(cls, d, collection.name)  # type: ignore[assignment, return-value]
        )

    def get(self, key: Any) -> T | None:
        """The document under ``key`` as a ``cls``, or None."""
        doc = self.collection.get(key)
        return None if doc is None else self._build(doc)

    def to_list(self) -> list[T]:
        """Every document as a ``cls``, in storage order."""
        return [self._build(d) for d in self.collection.to_list()]

    def where(self, condition: Any) -> TypedQuery[T]:
        """A query of this collection (``it.origin == "JFK"``) whose results are ``cls``'s."""
        return TypedQuery(self.collection.where(condition), self._build)

    def insert(self, doc: T) -> Any:
        """Insert one document; its key."""
        return self.collection.insert(self._plain(doc))

    def put(self, doc: T) -> Any:
        """Insert or replace one document; its key."""
        return self.collection.put(self._plain(doc))

    def insert_many(self, docs: Iterable[T]) -> int:
        """Insert many documents in one transaction; how many."""
        return int(self.collection.insert_many([self._plain(d) for d in docs]))

    def _plain(self, doc: Any) -> dict[str, Any]:
        if dataclasses.is_dataclass(doc) and not isinstance(doc, type):
            return _fields(doc)
        return doc

    def __repr__(self) -> str:
        return f"<jarenlab.Typed {self.collection.name!r} as {self.cls.__qualname__}>"


class TypedQuery(Generic[T]):
    """A query whose results are built into a class (from :meth:`Typed.where`); refine it with
    ``order_by``, ``take`` and ``skip`` (selecting other members would not fit the class)."""

    def __init__(self, query: Any, build: Callable[[dict[str, Any]], T]) -> None:
        self.query = query
        self._build = build

    def order_by(self, *keys: Any) -> TypedQuery[T]:
        """The query ordered by ``keys`` (as :meth:`jarenlab.Query.order_by`)."""
        return TypedQuery(self.query.order_by(*keys), self._build)

    def take(self, n: int) -> TypedQuery[T]:
        """The first ``n`` results."""
        return TypedQuery(self.query.take(n), self._build)

    def skip(self, n: int) -> TypedQuery[T]:
        """The results after the first ``n``."""
        return TypedQuery(self.query.skip(n), self._build)

    def to_list(self, **externals: Any) -> list[T]:
        """The results as ``cls``'s."""
        return [self._build(d) for d in self.query.to_list(**externals)]

    def first(self, **externals: Any) -> T | None:
        """The first result, or None."""
        found = self.take(1).to_list(**externals)
        return found[0] if found else None


def _build(cls: Any, doc: Any, collection: str, where: str = "") -> Any:
    """A dataclass instance from a document (nested dataclasses, lists of them, too)."""
    if not isinstance(doc, dict):
        raise ValidationError(
            "JD2003", f"{where or '/'}: {cls.__name__} is built from an object", collection=collection
        )
    hints = typing.get_type_hints(cls)  # schema_of resolved them when the collection was declared
    names = {f.name for f in dataclasses.fields(cls)}
    extra = sorted(set(doc) - names)
    if extra:
        raise ValidationError(
            "JD2003",
            f"{where}/{extra[0]}: {cls.__name__} has no member {extra[0]!r}",
            collection=collection,
        )
    kwargs = {}
    for name, value in doc.items():
        kwargs[name] = _value(hints[name], value, collection, f"{where}/{name}")
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValidationError("JD2003", f"{where or '/'}: {exc}", collection=collection) from None


def _value(hint: Any, value: Any, collection: str, where: str) -> Any:
    options = get_args(hint) if get_origin(hint) in (Union, pytypes.UnionType) else (hint,)
    for option in options:
        if dataclasses.is_dataclass(option) and isinstance(value, dict):
            return _build(option, value, collection, where)
        if get_origin(option) is list and isinstance(value, list):
            (item,) = get_args(option) or (Any,)
            return [_value(item, v, collection, f"{where}/{i}") for i, v in enumerate(value)]
    return value


def _fields(obj: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None and f.default is None:
            continue
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = _fields(value)
        elif isinstance(value, list):
            value = [
                _fields(v) if dataclasses.is_dataclass(v) and not isinstance(v, type) else v for v in value
            ]
        out[f.name] = value
    return out
