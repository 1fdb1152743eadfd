"""The model document is checked completely before any database work."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.model import first_difference, load_model
from tests.conftest import NOTES

OBJ = {
    "type": "object",
    "required": ["id"],
    "properties": {"id": {"type": "string"}, "n": {"type": "integer"}},
}


def with_collection(**decl: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"schema": OBJ, "key": "/id"}
    base.update(decl)
    return {"$model": "0.1", "collections": {"c": {k: v for k, v in base.items() if v is not ...}}}


MALFORMED: list[tuple[str, Any, str, str]] = [
    ("not an object", [], "JD0005", ""),
    ("missing $model", {"collections": {"c": {"schema": OBJ, "key": "/id"}}}, "JD0005", "/$model"),
    (
        "wrong $model",
        {"$model": "0.2", "collections": {"c": {"schema": OBJ, "key": "/id"}}},
        "JD0005",
        "/$model",
    ),
    (
        "numeric $model",
        {"$model": 0.1, "collections": {"c": {"schema": OBJ, "key": "/id"}}},
        "JD0005",
        "/$model",
    ),
    ("unknown top member", {"$model": "0.1", "collections": {}, "extra": 1}, "JD0005", "/extra"),
    ("no collections", {"$model": "0.1"}, "JD0005", "/collections"),
    ("empty collections", {"$model": "0.1", "collections": {}}, "JD0005", "/collections"),
    ("collections a list", {"$model": "0.1", "collections": []}, "JD0005", "/collections"),
    (
        "bad collection name",
        {"$model": "0.1", "collections": {"9x": {"schema": OBJ, "key": "/id"}}},
        "JD0005",
        "/collections/9x",
    ),
    (
        "name with space",
        {"$model": "0.1", "collections": {"a b": {"schema": OBJ, "key": "/id"}}},
        "JD0005",
        "/collections/a b",
    ),
    (
        "reserved name",
        {"$model": "0.1", "collections": {"_jl_x": {"schema": OBJ, "key": "/id"}}},
        "JD0005",
        "/collections/_jl_x",
    ),
    (
        "sqlite name",
        {"$model": "0.1", "collections": {"sqlite_x": {"schema": OBJ, "key": "/id"}}},
        "JD0005",
        "/collections/sqlite_x",
    ),
    ("declaration not object", {"$model": "0.1", "collections": {"c": 3}}, "JD0005", "/collections/c"),
    ("unknown collection member", with_collection(colour="red"), "JD0005", "/collections/c/colour"),
    ("missing schema", with_collection(schema=...), "JD0005", "/collections/c/schema"),
    ("non-object schema", with_collection(schema={"type": "array"}), "JD0005", "/collections/c/schema/type"),
    ("schema not a dict", with_collection(schema="object"), "JD0005", "/collections/c/schema"),
    (
        "schema does not compile",
        with_collection(schema={"type": "object", "properties": {"a": {"type": "nope"}}}),
        "JD0005",
        "/collections/c/schema",
    ),
    ("missing key", with_collection(key=...), "JD0005", "/collections/c/key"),
    ("key pointing nowhere", with_collection(key="/nope"), "JD0005", "/collections/c/key"),
    ("key not a pointer", with_collection(key="id"), "JD0005", "/collections/c/key"),
    ("key whole document", with_collection(key=""), "JD0005", "/collections/c/key"),
    ("key nested", with_collection(key="/a/b"), "JD0005", "/collections/c/key"),
    (
        "key not required",
        with_collection(key="/n", schema={"type": "object", "properties": {"n": {"type": "integer"}}}),
        "JD0005",
        "/collections/c/key",
    ),
    (
        "key wrong type",
        with_collection(
            key="/f", schema={"type": "object", "required": ["f"], "properties": {"f": {"type": "number"}}}
        ),
        "JD0005",
        "/collections/c/key",
    ),
    ("null key without identity", with_collection(key=None), "JD0005", "/collections/c/identity"),
    ("bad identity", with_collection(key=None, identity="serial"), "JD0005", "/collections/c/identity"),
    ("identity with pointer", with_collection(identity="uuid"), "JD0005", "/collections/c/identity"),
    ("indexes not a list", with_collection(indexes={"name": "a"}), "JD0005", "/collections/c/indexes"),
    ("index not object", with_collection(indexes=["$.n"]), "JD0005", "/collections/c/indexes/0"),
    (
        "index unknown member",
        with_collection(indexes=[{"name": "a", "path": "$.n", "sparse": True}]),
        "JD0005",
        "/collections/c/indexes/0/sparse",
    ),
    (
        "index bad name",
        with_collection(indexes=[{"name": "a-b", "path": "$.n"}]),
        "JD0005",
        "/collections/c/indexes/0/name",
    ),
    (
        "index missing name",
        with_collection(indexes=[{"path": "$.n"}]),
        "JD0005",
        "/collections/c/indexes/0/name",
    ),
    (
        "duplicate index names",
        with_collection(indexes=[{"name": "a", "path": "$.n"}, {"name": "a", "path": "$.id"}]),
        "JD0005",
        "/collections/c/indexes/1/name",
    ),
    (
        "unique not bool",
        with_collection(indexes=[{"name": "a", "path": "$.n", "unique": "yes"}]),
        "JD0005",
        "/collections/c/indexes/0/unique",
    ),
    (
        "wildcard path",
        with_collection(indexes=[{"name": "a", "path": "$.tags[*]"}]),
        "JD0004",
        "/collections/c/indexes/0/path",
    ),
    (
        "descendant path",
        with_collection(indexes=[{"name": "a", "path": "$..n"}]),
        "JD0004",
        "/collections/c/indexes/0/path",
    ),
    (
        "filter path",
        with_collection(indexes=[{"name": "a", "path": "$.a[?@.b == 1]"}]),
        "JD0004",
        "/collections/c/indexes/0/path",
    ),
    (
        "slice path",
        with_collection(indexes=[{"name": "a", "path": "$.a[0:2]"}]),
        "JD0004",
        "/collections/c/indexes/0/path",
    ),
    (
        "root path",
        with_collection(indexes=[{"name": "a", "path": "$"}]),
        "JD0004",
        "/collections/c/indexes/0/path",
    ),
    (
        "path without $",
        with_collection(indexes=[{"name": "a", "path": "n"}]),
        "JD0004",
        "/collections/c/indexes/0/path",
    ),
    (
        "composite non-singular",
        with_collection(indexes=[{"name": "a", "path": ["$.n", "$.x[*]"]}]),
        "JD0004",
        "/collections/c/indexes/0/path/1",
    ),
    (
        "empty composite",
        with_collection(indexes=[{"name": "a", "path": []}]),
        "JD0005",
        "/collections/c/indexes/0/path",
    ),
    (
        "path twice in one index",
        with_collection(indexes=[{"name": "a", "path": ["$.n", "$['n']"]}]),
        "JD0005",
        "/collections/c/indexes/0/path/1",
    ),
    (
        "quote in member",
        with_collection(indexes=[{"name": "a", "path": "$['it\\'s']"}]),
        "JD0004",
        "/collections/c/indexes/0/path",
    ),
    (
        "index direction unknown",
        with_collection(indexes=[{"name": "a", "path": ["$.id", {"path": "$.n", "dir": "down"}]}]),
        "JD0005",
        "/collections/c/indexes/0/path/1/dir",
    ),
    (
        "index entry without a path",
        with_collection(indexes=[{"name": "a", "path": {"dir": "desc"}}]),
        "JD0005",
        "/collections/c/indexes/0/path/path",
    ),
    (
        "index entry unknown member",
        with_collection(indexes=[{"name": "a", "path": [{"path": "$.n", "order": "desc"}]}]),
        "JD0005",
        "/collections/c/indexes/0/path/0/order",
    ),
    (
        "index entry non-singular",
        with_collection(indexes=[{"name": "a", "path": [{"path": "$..n", "dir": "desc"}]}]),
        "JD0004",
        "/collections/c/indexes/0/path/0/path",
    ),
    (
        "index entry path twice",
        with_collection(indexes=[{"name": "a", "path": ["$.n", {"path": "$.n", "dir": "desc"}]}]),
        "JD0005",
        "/collections/c/indexes/0/path/1/path",
    ),
    ("owner not declared", with_collection(owner="/who"), "JD0005", "/collections/c/owner"),
    (
        "events not object",
        {"$model": "0.1", "collections": {"c": {"schema": OBJ, "key": "/id"}}, "events": []},
        "JD0005",
        "/events",
    ),
    (
        "event schema not object",
        {
            "$model": "0.1",
            "collections": {"c": {"schema": OBJ, "key": "/id"}},
            "events": {"e": {"type": "string"}},
        },
        "JD0005",
        "/events/e/type",
    ),
]


@pytest.mark.parametrize(("label", "document", "code", "doc_path"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_models_are_refused_with_a_code_and_path(
    label: str, document: Any, code: str, doc_path: str
) -> None:
    with pytest.raises(jl.JarenlabError) as info:
        load_model(document)
    assert info.value.code == code, info.value
    assert info.value.doc_path == doc_path, info.value


def test_model_errors_touch_no_file(tmp_path: Any) -> None:
    path = tmp_path / "never.db"
    with pytest.raises(jl.JarenlabError):
        jl.open(path, with_collection(key="/nope"))
    assert not path.exists()


def test_index_columns_are_shared_and_typed() -> None:
    m = load_model(NOTES)
    spec = m.collections["notes"]
    assert [c.name for c in spec.columns] == ["gx_tag", "gx_score", "gx_o_x"]
    assert [c.family for c in spec.columns] == ["string", "integer", "number"]
    assert spec.indexes[1].columns == ("gx_tag", "gx_score")
    from jarenlab.backends.sqlite.ddl import table_statement

    table = table_statement(spec)
    assert "gx_tag TEXT" in table and "gx_score INTEGER" in table and "gx_o_x REAL" in table


def test_an_index_path_may_be_descending() -> None:
    """``{"path": ..., "dir": "desc"}`` makes that column of the index descending (a plain path, or
    ``"dir": "asc"``, ascending), in the DDL of both backends; the typed column is the path's either way."""
    from jarenlab.backends.postgres.ddl import index_statements as pg_indexes
    from jarenlab.backends.sqlite.ddl import index_statements

    m = load_model(
        with_collection(
            indexes=[
                {"name": "nd", "path": ["$.id", {"path": "$.n", "dir": "desc"}]},
                {"name": "na", "path": {"path": "$.n", "dir": "asc"}},
            ]
        )
    )
    spec = m.collections["c"]
    assert [(ix.paths, ix.descending) for ix in spec.indexes] == [
        (("$.id", "$.n"), (False, True)),
        (("$.n",), (False,)),
    ]
    assert [c.name for c in spec.columns] == ["gx_id", "gx_n"]
    assert dict(index_statements(spec))["c_nd"] == 'CREATE INDEX "c_nd" ON "c" (gx_id, gx_n DESC)'
    postgres = dict(pg_indexes(spec))["c_nd"]
    assert "NULLS FIRST, ((body -> 'n'::text))" not in postgres  # the descending column is not ascending
    assert postgres.endswith("DESC NULLS LAST, pos)"), postgres


def test_model_hash_ignores_key_order() -> None:
    shuffled = {"collections": copy.deepcopy(NOTES["collections"]), "$model": "0.1"}
    assert load_model(shuffled).hash == load_model(NOTES).hash


def test_first_difference_names_a_pointer() -> None:
    assert first_difference({"a": 1}, {"a": 1}) is None
    assert first_difference({"a": 1}, {"a": 1.0}) == "/a"
    assert first_difference({"a": [1]}, {"a": [1, 2]}) == "/a/1"
    assert first_difference({"a": {"b/c": 1}}, {"a": {}}) == "/a/b~1c"


def test_index_names_cannot_clash_with_a_collection() -> None:
    doc = with_collection(indexes=[{"name": "x", "path": "$.n"}])
    doc["collections"]["c_x"] = {"schema": OBJ, "key": "/id"}
    with pytest.raises(jl.JarenlabError) as info:
        load_model(doc)
    assert info.value.doc_path == "/collections/c/indexes/0/name"
