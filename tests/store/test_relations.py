"""Declared relations: checked with the model (coded errors with doc_path) and on-delete actions
enforced inside the write transaction, on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jarenlab.errors import JarenlabError, ModelError
from jarenlab.model import load_model

_STR = {"type": "string"}
MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "airlines": {
            "schema": {
                "type": "object",
                "required": ["carrier"],
                "properties": {"carrier": _STR, "name": _STR},
            },
            "key": "/carrier",
            "relations": {"flights": {"to": "flights", "many": True, "via": "/carrier"}},
        },
        "planes": {
            "schema": {"type": "object", "required": ["tailnum"], "properties": {"tailnum": _STR}},
            "key": "/tailnum",
        },
        "flights": {
            "schema": {
                "type": "object",
                "required": ["id", "carrier"],
                "properties": {
                    "id": {"type": "integer"},
                    "carrier": _STR,
                    "tailnum": {"type": ["string", "null"]},
                },
            },
            "key": "/id",
            "indexes": [{"name": "by_carrier", "path": "$.carrier"}],
            "relations": {
                "airline": {"to": "airlines", "via": "/carrier", "on_delete": "restrict"},
                "plane": {"to": "planes", "via": "/tailnum", "on_delete": "set_null"},
            },
        },
        "legs": {
            "schema": {
                "type": "object",
                "required": ["id", "flight"],
                "properties": {"id": _STR, "flight": {"type": "integer"}},
            },
            "key": "/id",
            "relations": {"flight": {"to": "flights", "via": "/flight", "on_delete": "cascade"}},
        },
    },
}


def model() -> dict[str, Any]:
    return copy.deepcopy(MODEL)


def refused(doc: dict[str, Any]) -> ModelError:
    with pytest.raises(ModelError) as err:
        load_model(doc)
    return err.value


def test_relations_are_checked_with_the_model() -> None:
    m = load_model(model())
    assert m.relations["flights"]["airline"].target == "airlines"
    assert m.relations["airlines"]["flights"].holder == "flights"

    bad = model()
    bad["collections"]["flights"]["relations"]["airline"]["to"] = "carriers"
    err = refused(bad)
    assert (err.code, err.doc_path) == ("JD0070", "/collections/flights/relations/airline/to")

    bad = model()
    bad["collections"]["flights"]["relations"]["airline"]["via"] = "/id"
    err = refused(bad)
    assert err.code == "JD0071" and err.doc_path.endswith("/airline/via") and "integer" in err.reason

    bad = model()
    bad["collections"]["flights"]["relations"]["airline"]["onDelete"] = "cascade"
    assert refused(bad).code == "JD0030"

    bad = model()
    bad["collections"]["airlines"]["relations"]["flights"]["on_delete"] = "cascade"
    err = refused(bad)
    assert err.code == "JD0031" and "restrict" in err.reason and err.doc_path.endswith("/on_delete")

    bad = model()
    bad["collections"]["flights"]["relations"]["airline"]["on_delete"] = "set_null"
    assert refused(bad).code == "JD0030"  # carrier does not accept null

    bad = model()
    bad["collections"]["flights"]["relations"]["leg"] = {
        "to": "legs",
        "many": True,
        "via": "/flight",
        "on_delete": "restrict",
    }
    err = refused(bad)
    assert err.code == "JD0031"

    cyc = model()
    cyc["collections"]["planes"]["schema"]["properties"]["leg"] = _STR
    cyc["collections"]["planes"]["relations"] = {"leg": {"to": "legs", "via": "/leg", "on_delete": "cascade"}}
    cyc["collections"]["flights"]["relations"]["plane"]["on_delete"] = "cascade"
    err = refused(cyc)
    assert err.code == "JD0040" and "->" in err.reason


@pytest.fixture
def store(open_store: Any) -> Any:
    s = open_store(model())
    s["airlines"].insert_many([{"carrier": "AA"}, {"carrier": "UA"}])
    s["planes"].insert_many([{"tailnum": "N1"}, {"tailnum": "N2"}])
    s["flights"].insert_many(
        [
            {"id": 1, "carrier": "AA", "tailnum": "N1"},
            {"id": 2, "carrier": "AA", "tailnum": "N2"},
            {"id": 3, "carrier": "UA", "tailnum": "N1"},
        ]
    )
    s["legs"].insert_many([{"id": "1a", "flight": 1}, {"id": "1b", "flight": 1}, {"id": "3a", "flight": 3}])
    return s


def test_restrict_refuses_a_delete_naming_both_keys_and_writes_nothing(store: Any) -> None:
    with pytest.raises(JarenlabError) as err:
        store["airlines"].delete("AA")
    assert err.value.code == "JD2115" and err.value.key == "AA" and err.value.collection == "airlines"
    assert "flights 1" in err.value.reason and "/carrier" in err.value.reason
    assert store["airlines"].get("AA") == {"carrier": "AA"}
    with pytest.raises(JarenlabError), store.transaction():
        store["flights"].delete(3)  # cascades to leg 3a
        store["airlines"].delete("AA")  # refused: the whole transaction rolls back
    assert store["flights"].get(3) is not None and store["legs"].get("3a") is not None


def test_cascade_deletes_the_referencing_documents(store: Any) -> None:
    assert store["flights"].delete(1)
    assert store["legs"].keys() == ["3a"]
    assert store["flights"].delete(3) and store["legs"].count() == 0
    assert store["airlines"].delete("UA")  # no flight references UA any more


def test_set_null_clears_the_member_inside_the_transaction(store: Any) -> None:
    assert store["planes"].delete("N1")
    assert store["flights"].get(1) == {"id": 1, "carrier": "AA", "tailnum": None}
    assert store["flights"].get(3)["tailnum"] is None
    assert store["flights"].get(2)["tailnum"] == "N2"
