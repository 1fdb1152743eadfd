"""Interval declarations are checked with the model, before any database work (JD0005 + doc_path)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.errors import ModelError
from jarenlab.model import load_model

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "s", "e", "ts", "te", "plain", "tags", "room", "who", "slot", "flag"],
    "properties": {
        "id": {"type": "string"},
        "who": {"type": "string"},
        "s": {"type": "number"},
        "e": {"type": "integer"},
        "ts": {"type": "string", "format": "date-time"},
        "te": {"type": "string", "format": "date-time"},
        "plain": {"type": "string"},
        "opt": {"type": "number"},
        "room": {"type": "string"},
        "tags": {"type": "array"},
        "flag": {"type": "boolean"},
        "slot": {
            "type": "object",
            "required": ["a"],
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}, "c/d": {"type": "number"}},
        },
        "status": {"type": "string"},
    },
}


def _model(decls: Any, *, owner: str | None = "/who") -> dict[str, Any]:
    coll: dict[str, Any] = {"key": "/id", "schema": copy.deepcopy(SCHEMA), "intervals": decls}
    if owner:
        coll["owner"] = owner
    return {"$model": "0.1", "collections": {"c": coll}}


AT = "/collections/c/intervals"
REFUSED = [
    ({"start": "/s", "end": "/e", "length": 1}, f"{AT}/0/length", "unknown member"),
    ("/s", f"{AT}/0", "must be an object"),
    ({"end": "/e"}, f"{AT}/0/start", "needs 'start'"),
    ({"start": "/s"}, f"{AT}/0/end", "needs 'end'"),
    ({"start": "s", "end": "/e"}, f"{AT}/0/start", "JSON Pointer"),
    ({"start": "/s~2", "end": "/e"}, f"{AT}/0/start", "JSON Pointer"),
    ({"start": "/nope", "end": "/e"}, f"{AT}/0/start", "not declared"),
    ({"start": "/opt", "end": "/e"}, f"{AT}/0/start", "required"),
    (
        {"start": "/slot/a", "end": "/slot/b"},
        f"{AT}/0/end",
        "'/slot/b' must be listed in the schema's required",
    ),
    ({"start": "/plain", "end": "/e"}, f"{AT}/0/start", "date-time"),
    ({"start": "/s", "end": "/s"}, f"{AT}/0/end", "same member"),
    ({"start": "/s", "end": "/ts"}, f"{AT}/0/end", "must both be numbers or both date-times"),
    ({"start": "/s", "end": "/e", "within": "/room"}, f"{AT}/0/within", "list"),
    ({"start": "/s", "end": "/e", "within": ["/room", "/ghost"]}, f"{AT}/0/within/1", "not declared"),
    ({"start": "/s", "end": "/e", "within": ["/status"]}, f"{AT}/0/within/0", "required"),
    ({"start": "/s", "end": "/e", "within": ["/tags"]}, f"{AT}/0/within/0", "typed string"),
    ({"start": "/s", "end": "/e", "within": ["/room", "/room"]}, f"{AT}/0/within/1", "repeats"),
    ({"start": "/s", "end": "/e", "scope": "tenant"}, f"{AT}/0/scope", "scope must be"),
    ({"start": "/s", "end": "/e", "when": {}}, f"{AT}/0/when", "non-empty object"),
    ({"start": "/s", "end": "/e", "when": {"ghost": 1}}, f"{AT}/0/when/ghost", "not declared"),
    (
        {"start": "/s", "end": "/e", "when": {"status": ["a"]}},
        f"{AT}/0/when/status",
        "string, a finite number",
    ),
    ({"start": "/s", "end": "/e", "when": {"status": float("nan")}}, f"{AT}/0/when/status", "finite"),
    ({"start": "/s", "end": "/e", "when": {"status": 2**64}}, f"{AT}/0/when/status", "finite number"),
    ({"start": "/s", "end": "/e", "within": ["/slot/it's"]}, f"{AT}/0/within/0", "cannot address"),
]


@pytest.mark.parametrize(
    ("decl", "doc_path", "words"), REFUSED, ids=[r[1].rsplit("/", 1)[-1] + ":" + r[2] for r in REFUSED]
)
def test_a_bad_declaration_is_refused_with_its_doc_path(decl: Any, doc_path: str, words: str) -> None:
    with pytest.raises(ModelError) as info:
        load_model(_model([decl]))
    assert info.value.code == "JD0005"
    assert info.value.doc_path == doc_path
    assert words in info.value.reason


def test_the_second_declaration_is_named_by_its_position() -> None:
    with pytest.raises(ModelError) as info:
        load_model(_model([{"start": "/s", "end": "/e"}, {"start": "/s", "end": "/e", "scope": 1}]))
    assert info.value.doc_path == f"{AT}/1/scope"


def test_owner_scope_needs_an_owner_pointer() -> None:
    with pytest.raises(ModelError) as info:
        load_model(_model([{"start": "/s", "end": "/e", "scope": "owner"}], owner=None))
    assert (info.value.code, info.value.doc_path) == ("JD0005", f"{AT}/0/scope")


def test_intervals_must_be_a_list() -> None:
    with pytest.raises(ModelError) as info:
        load_model(_model({"start": "/s", "end": "/e"}))
    assert info.value.doc_path == "/collections/c/intervals"


def test_a_refused_declaration_creates_no_file(tmp_path: Any) -> None:
    path = tmp_path / "never.db"
    with pytest.raises(ModelError):
        jl.open(path, _model([{"start": "/s", "end": "/plain"}]))
    assert not path.exists()


ACCEPTED = [
    {"start": "/s", "end": "/e"},
    {
        "start": "/ts",
        "end": "/te",
        "within": ["/room", "/flag"],
        "scope": "owner",
        "when": {"status": "booked"},
    },
    {"start": "/slot/a", "end": "/e", "within": []},
    {"start": "/s", "end": "/e", "when": {"status": None, "flag": True, "opt": 2.5}},
]


@pytest.mark.parametrize("decl", ACCEPTED)
def test_good_declarations_are_normalized(decl: dict[str, Any]) -> None:
    spec = load_model(_model([decl])).collections["c"]
    (one,) = spec.intervals
    assert one.start == tuple(decl["start"][1:].split("/"))
    assert one.scope == decl.get("scope", "collection")
    assert (one.owner == ("who",)) == (decl.get("scope") == "owner")
    assert one.kind == ("date-time" if decl["start"] == "/ts" else "number")
