"""An owner view's count and its records are read through a declared index on the owner member,
so another owner's rows are not read (their number does not show in the time a call takes): proved
by the database's own account of each statement, on both backends."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import jarenlab as jl

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "notes": {
            "owner": "/owner",
            "schema": {
                "type": "object",
                "required": ["id", "owner"],
                "properties": {
                    "id": {"type": "string"},
                    "owner": {"type": "string"},
                    "n": {"type": "integer"},
                },
            },
            "key": "/id",
            "indexes": [{"name": "by_owner", "path": "$.owner"}],
        }
    },
}


def _used_index(store: Any, call: Any) -> bool:
    """Whether the statements ``call`` runs read the table through ``notes_by_owner``, by the
    database's own account: SQLite's plan of each statement it ran (traced), PostgreSQL's count of
    scans of that index."""
    conn = store.db.connection()
    if store.backend.name == "sqlite":
        ran: list[str] = []
        conn.set_trace_callback(ran.append)
        try:
            call()
        finally:
            conn.set_trace_callback(None)
        plans = [
            " ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall())
            for sql in ran
            if '"notes"' in sql
        ]
        assert plans, ran
        return all("notes_by_owner" in plan for plan in plans)

    def scans() -> int:
        conn.execute("SELECT pg_stat_force_next_flush()")
        row = conn.execute(
            "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'notes_by_owner' "
            "AND schemaname = current_schema()"
        ).fetchone()
        return int(row[0])

    before = scans()
    call()
    return scans() > before


def test_owner_views_read_through_the_owner_index(open_store: Any) -> None:
    store = open_store(MODEL)
    notes = store["notes"]
    notes.insert_many([{"id": f"b{i}", "owner": "bob", "n": i} for i in range(5000)])
    notes.insert_many([{"id": f"a{i}", "owner": "ann", "n": i} for i in range(3)])
    if store.backend.name == "postgresql":
        store.db.connection().execute("ANALYZE notes")
    ann = store.as_owner("ann")["notes"]
    assert ann.count() == 3
    assert [d["id"] for d in ann.to_list()] == ["a0", "a1", "a2"]
    assert _used_index(store, ann.count)
    assert _used_index(store, ann.to_list)
    assert _used_index(store, ann.keys)


@pytest.mark.parametrize("member", ["own'er", 'own"er', "o\\w"])
def test_an_owner_member_sql_cannot_name_is_refused_by_the_model(open_store: Any, member: str) -> None:
    """Every owner view's statement names the owner member: one SQL cannot address is refused when
    the model is checked (it was accepted, and then every owner view's query was refused)."""
    model = copy.deepcopy(MODEL)
    notes = model["collections"]["notes"]
    notes["owner"] = f"/{member}"
    notes["schema"]["required"] = ["id", member]
    notes["schema"]["properties"][member] = {"type": "string"}
    notes["indexes"] = []
    with pytest.raises(jl.JarenlabError) as err:
        open_store(model)
    assert (err.value.code, err.value.doc_path) == ("JD0005", "/collections/notes/owner"), err.value


def test_another_records_value_reaches_neither_the_error_nor_its_cause(open_store: Any) -> None:
    """A unique index clash: PostgreSQL's DETAIL prints the stored record's value; neither the coded
    error, nor its ``__cause__`` (the driver's error), nor a printed traceback passes it on."""
    import traceback

    model = copy.deepcopy(MODEL)
    notes = model["collections"]["notes"]
    notes["schema"]["properties"]["email"] = {"type": "string"}
    notes["indexes"] = [{"name": "email", "path": "$.email", "unique": True}]
    store = open_store(model)
    secret = "@".join(["bob-secret", "lab"])  # (not written whole here: a traceback prints this line)
    store["notes"].insert({"id": "b1", "owner": "bob", "email": secret})
    ann = store.as_owner("ann")["notes"]
    with pytest.raises(jl.JarenlabError) as err:
        ann.insert({"id": "a1", "email": secret})
    assert err.value.code == "JD2001"
    cause = err.value.__cause__
    assert cause is not None  # the driver's error is kept, with the primary message alone
    shown = [str(err.value), repr(err.value.__dict__), str(cause), repr(cause.args)]
    shown.append("".join(traceback.format_exception(err.value)))
    assert not [s for s in shown if secret in s], shown
