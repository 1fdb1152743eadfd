"""The backend contract: what every backend's primitives and the Database over them must do.

Runs once per registered backend (:data:`jarenlab.backends.REGISTERED`, made by its harness in
``tests/backend_fixtures.py``); the registry itself is checked at the end.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from jarenlab.backends.base import Backend, Catalogue
from jarenlab.database import Database
from jarenlab.errors import StoreError
from jarenlab.model import load_model

SUBSYSTEMS = (
    "store", "collection", "live", "jobs", "periodic", "batches", "events", "idempotency", "owner", "stats",
    "migrations",
)  # fmt: skip

MODEL = load_model(
    {
        "$model": "0.1",
        "collections": {
            "notes": {
                "schema": {
                    "type": "object",
                    "required": ["id"],
                    "properties": {"id": {"type": "string"}, "n": {"type": "integer"}},
                },
                "key": "/id",
                "indexes": [{"name": "by_n", "path": "$.n"}],
            }
        },
    }
)


def meta(db: Database, name: str) -> Any:
    return db.value("store.get_meta", {"name": name})


# -- catalogues --------------------------------------------------------------------------------------
@pytest.mark.parametrize("subsystem", SUBSYSTEMS)
def test_every_catalogue_parses_and_names_statements_plainly(backend: Backend, subsystem: str) -> None:
    cat = backend.catalogue(subsystem)
    assert cat.name == subsystem
    for name in cat.names():
        stmt = cat.statement(name)
        assert stmt.template.strip() and not stmt.template.rstrip().endswith(";")
        for field in stmt.fields:  # a fill's name, or @ and another statement of the same file
            assert field.isidentifier() or (field[0] == "@" and field[1:] in cat), field


def test_a_missing_statement_is_a_coded_internal_error(backend: Backend) -> None:
    with pytest.raises(StoreError) as info:
        backend.catalogue("store").statement("no_such_statement")
    assert info.value.code == "JD0003"


def test_fills_are_identifiers_placeholder_counts_or_fragments(backend: Backend) -> None:
    cat = Catalogue.parse(
        "demo",
        "-- name: pick\nSELECT k FROM {table} WHERE k IN ({keys}) AND {where}\n"
        "-- name: small\nk < :k\n-- name: odd\nk % 2 = 1\n",
    )
    text = cat.text("pick", quote=backend.quote, table="t", keys=2, where=("small", "odd"))
    assert text.startswith('SELECT k FROM "t" WHERE k IN (')
    assert text.endswith("AND (k < ?) AND (k % 2 = 1)")
    assert cat.text("pick", quote=backend.quote, table="t", keys=1, where=()).endswith("1 = 1")
    with pytest.raises(StoreError) as info:
        cat.text("pick", quote=backend.quote, table='t"; DROP', keys=1, where=())
    assert info.value.code == "JD2010"
    with pytest.raises(StoreError):
        cat.text("pick", quote=backend.quote, table="t", where=())  # keys missing


def test_a_malformed_catalogue_is_refused() -> None:
    with pytest.raises(StoreError):
        Catalogue.parse("bad", "SELECT 1\n-- name: x\nSELECT 2")
    with pytest.raises(StoreError):
        Catalogue.parse("bad", "-- name: x\nSELECT 1\n-- name: x\nSELECT 2")
    with pytest.raises(StoreError):
        Catalogue.parse("bad", "-- name: x\n-- only a comment\n")


# -- transactions ------------------------------------------------------------------------------------
def test_commit_keeps_and_rollback_discards(db: Database) -> None:
    with db.transaction():
        db.run("store.put_meta", {"name": "a", "value": "1"})
    with pytest.raises(RuntimeError), db.transaction():
        db.run("store.put_meta", {"name": "b", "value": "2"})
        raise RuntimeError("undo")
    assert meta(db, "a") == "1" and meta(db, "b") is None
    assert not db.in_transaction


def test_savepoints_roll_back_only_their_own_level(db: Database) -> None:
    with db.transaction():
        db.run("store.put_meta", {"name": "outer", "value": "1"})
        with pytest.raises(RuntimeError), db.transaction():
            db.run("store.put_meta", {"name": "inner", "value": "2"})
            raise RuntimeError("undo inner")
        with db.transaction():
            db.run("store.put_meta", {"name": "kept", "value": "3"})
    assert (meta(db, "outer"), meta(db, "inner"), meta(db, "kept")) == ("1", None, "3")


def test_commit_hooks_see_the_changes_and_run_in_order(db: Database) -> None:
    seen: list[tuple[str, Any]] = []
    db.on_commit(
        before=lambda ch: seen.append(("before", list(ch))), after=lambda ch: seen.append(("after", list(ch)))
    )
    with db.transaction():
        db.record(("notes", "a", {"id": "a"}))
        with pytest.raises(RuntimeError), db.transaction():
            db.record(("notes", "b", None))
            raise RuntimeError
    assert seen == [("before", [("notes", "a", {"id": "a"})]), ("after", [("notes", "a", {"id": "a"})])]


def test_a_failing_before_hook_rolls_the_transaction_back(db: Database) -> None:
    def refuse(changes: Any) -> None:
        raise RuntimeError("no")

    db.on_commit(before=refuse)
    with pytest.raises(RuntimeError), db.transaction():
        db.run("store.put_meta", {"name": "x", "value": "1"})
    db.off_commit(refuse)
    assert meta(db, "x") is None


def test_a_duplicate_is_jd2001_with_the_driver_error_as_cause(db: Database, backend: Backend) -> None:
    with db.transaction():
        db.run("store.put_meta", {"name": "a", "value": "1"})
    with pytest.raises(StoreError) as info, db.transaction():
        db.run("store.put_meta", {"name": "a", "value": "2"})
    err = info.value
    assert err.code == "JD2001" and err.condition == "duplicate" and err.__cause__ is not None
    assert backend.translate(err.__cause__) is not None
    assert backend.translate(ValueError("not the driver's")) is None
    assert meta(db, "a") == "1"


def test_single_writer_engines_queue_threads_behind_the_gate(db: Database, backend: Backend) -> None:
    if not backend.needs_write_gate:
        pytest.skip(f"{backend.name} takes concurrent writers")
    entered, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        with db.transaction():
            entered.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    entered.wait(5)
    try:
        with db.transaction():
            pass
    except StoreError as err:
        errors.append(err)
    release.set()
    holder.join()
    assert [getattr(e, "code", None) for e in errors] == ["JD0012"]


def test_write_is_its_own_transaction_or_joins_the_open_one(db: Database) -> None:
    rows, changed = db.write("store.put_meta", {"name": "w", "value": "1"})
    assert (rows, changed, meta(db, "w")) == ([], 1, "1")
    with pytest.raises(RuntimeError), db.transaction():
        db.write("store.put_meta", {"name": "joined", "value": "1"})
        raise RuntimeError
    assert meta(db, "joined") is None


def test_a_snapshot_of_committed_data_does_not_see_the_open_transaction(db: Database) -> None:
    with db.transaction():
        db.run("store.put_meta", {"name": "pending", "value": "1"})
        with db.snapshot():
            assert meta(db, "pending") == "1"  # own writes
        with db.snapshot(own_writes=False):
            assert meta(db, "pending") is None  # committed only
    with db.snapshot(own_writes=False):
        assert meta(db, "pending") == "1"


def test_each_thread_has_its_own_connection(db: Database) -> None:
    mine = db.connection()
    other: list[Any] = []
    t = threading.Thread(target=lambda: other.append(db.connection()))
    t.start()
    t.join()
    assert other[0] is not mine and db.connection() is mine


def test_a_closed_database_refuses_with_jd2063(db: Database) -> None:
    db.close()
    db.close()  # idempotent
    with pytest.raises(StoreError) as info:
        db.connection()
    assert info.value.code == "JD2063"


# -- model, shape, capabilities ----------------------------------------------------------------------
def test_create_makes_exactly_the_shape_verify_expects(db: Database, backend: Backend) -> None:
    conn = db.connection()
    with db.transaction():
        backend.create(conn, MODEL)
    assert backend.verify(conn, MODEL) is None
    assert "notes" in backend.holds_tables(conn)
    shape = backend.shape(conn)
    assert any("notes_by_n" in name for name in shape)
    with db.transaction():
        backend.execute(conn, 'DROP INDEX "notes_by_n"')
    assert "notes_by_n" in (backend.verify(conn, MODEL) or "")


def test_the_probe_names_the_backend_and_the_settings_describe_the_store(
    db: Database, backend: Backend
) -> None:
    caps = backend.probe(db.connection())
    assert caps["backend"] == backend.name
    assert isinstance(backend.settings(db.connection()), dict)


# -- hooks of a shared engine ------------------------------------------------------------------------
def test_a_watch_wakes_when_another_connection_commits(make_backend: Any) -> None:
    writer = Database(make_backend(), queue_timeout=1)
    with writer.transaction():
        for statement in writer.backend.internal_ddl(["store"]):
            writer.backend.execute(writer.connection(), statement)
    watch = Database(make_backend(), queue_timeout=1).watch(0.01)
    try:
        assert watch.wait(0.05) is True  # the first call: whatever came before the watch is to be looked at
        assert watch.wait(0.05) is False
        writer.write("store.put_meta", {"name": "woken", "value": "1"})
        assert watch.wait(2.0) is True
        assert watch.wait(0.05) is False
    finally:
        watch.close()
        writer.close()


def test_serialize_is_callable_inside_a_transaction_and_the_clock_is_epoch_seconds(
    db: Database, backend: Backend
) -> None:
    import time

    with db.transaction():
        db.serialize("live")
        db.run("store.put_meta", {"name": "s", "value": "1"})
    assert abs(backend.clock() - time.time()) < 5


def test_host_functions_and_their_failures(db: Database, backend: Backend) -> None:
    conn = db.connection()

    def double(x: int) -> int:
        return 2 * x

    def fail(x: int) -> int:
        raise ValueError("host failure")

    if not backend.probe(conn)["user_functions"]:  # a server cannot call into this process
        with pytest.raises(StoreError):
            backend.register_function(conn, "jl_double", 1, double)
        return
    backend.register_function(conn, "jl_double", 1, double)
    backend.register_function(conn, "jl_fail", 1, fail)
    mark = backend.marks(1)
    assert db.query(f"SELECT jl_double({mark})", (21,)) == [(42,)]
    with pytest.raises(StoreError) as info:
        db.query(f"SELECT jl_fail({mark})", (1,))
    assert info.value.condition == "function_failed"
    with pytest.raises(StoreError):
        backend.register_function(conn, "bad name", 1, double)


def test_explain_returns_plan_rows(db: Database) -> None:
    rows = db.explain(f"SELECT value FROM _jl_meta WHERE name = {db.backend.marks(1)}", ("a",))
    assert rows and all(isinstance(r, tuple) for r in rows)


def test_read_only_refuses_writes_with_a_coded_error(make_backend: Any, tmp_path: Path) -> None:
    writer = Database(make_backend(), queue_timeout=1)
    with writer.transaction():
        for statement in writer.backend.internal_ddl(["store"]):
            writer.backend.execute(writer.connection(), statement)
    writer.close()
    reader = Database(make_backend(read_only=True), queue_timeout=1)
    try:
        with pytest.raises(StoreError) as info, reader.transaction():
            reader.run("store.put_meta", {"name": "x", "value": "1"})
        assert info.value.code == "JD2005" and info.value.condition == "read_only"
    finally:
        reader.close()


def test_a_snapshot_inside_a_snapshot_reads_the_outer_one(db: Database) -> None:
    with db.snapshot():
        with db.snapshot():
            assert meta(db, "nested") is None
        assert meta(db, "nested") is None
    db.write("store.put_meta", {"name": "nested", "value": "1"})
    with db.snapshot():
        assert meta(db, "nested") == "1"


def test_a_connection_is_lost_only_when_it_can_no_longer_be_used(db: Database, backend: Backend) -> None:
    """``lost`` asks nothing of the server; a backend whose connections can be lost reports a closed
    one (the Database then replaces it), one whose connections cannot (a file) never does."""
    conn = db.connection()
    assert db.value("store.get_meta", {"name": "nothing"}) is None
    assert backend.lost(conn) is False
    if not backend.reconnects:
        return
    backend.disconnect(conn)
    assert backend.lost(conn) is True
    assert (
        db.value("store.get_meta", {"name": "nothing"}) is None
    )  # the next statement runs on a new connection
    assert db.connection() is not conn and db.reconnects == 1


# -- the registry -------------------------------------------------------------------------------------


def test_every_registered_backend_has_a_test_harness_and_a_known_title() -> None:
    from backend_fixtures import HARNESSES

    from jarenlab.backends import CAPABILITIES, DEFAULT, REGISTERED

    assert sorted(HARNESSES) == sorted(entry.name for entry in REGISTERED)
    assert [entry for entry in REGISTERED if entry.recognises is None] == [DEFAULT]
    assert (
        len({entry.name for entry in REGISTERED})
        == len({entry.title for entry in REGISTERED})
        == len(REGISTERED)
    )
    assert all(entry.capabilities <= set(CAPABILITIES) for entry in REGISTERED)


def test_the_registry_entry_says_what_the_backend_does(backend: Backend) -> None:
    """The capabilities tests select on agree with what the backend object says of itself."""
    from jarenlab.backends import entry_for, registered

    entry = registered(backend.name)
    caps = entry.capabilities
    assert isinstance(backend, entry.load())  # type: ignore[arg-type]
    assert ("single_writer" in caps) == backend.needs_write_gate == ("concurrent_writers" not in caps)
    assert ("sessions" in caps) == backend.reconnects
    assert ("decimal_numbers" in caps) == (backend.dialect.exact_float is not None)
    assert ("notify" in caps) == entry.takes("notify")
    assert ("checked_intervals" in caps) != ("enforced_intervals" in caps)
    assert entry_for(getattr(backend, "url", backend.target)) is entry


def test_a_target_finds_its_backend_and_an_option_its_owner(tmp_path: Path) -> None:
    from jarenlab.backends import DEFAULT, check_options, entry_for, registered, title

    assert (
        entry_for("postgresql://db.lab/lab").name == entry_for("postgres://db.lab/lab").name != DEFAULT.name
    )
    assert entry_for(tmp_path / "lab.db") is entry_for("file:lab.db") is entry_for(None) is DEFAULT
    assert title("no such engine") == "no such engine"
    with pytest.raises(StoreError) as err:
        registered("no such engine")
    assert err.value.code == "JD2010"
    server = entry_for("postgresql://db.lab/lab")
    check_options(server, {"schema": "lab", "notify": False})
    check_options(DEFAULT, {"notify": False})  # a backend without wake-ups looks anyway
    with pytest.raises(StoreError) as err:
        check_options(DEFAULT, {"schema": "lab"})
    assert err.value.code == "JD0006"
    assert str(err.value.reason) == "schema is for a PostgreSQL store (a postgresql:// URL), not a file"
    for entry, value in ((server, "yes"), (server, None), (DEFAULT, 1)):
        with pytest.raises(StoreError) as err:
            check_options(entry, {"notify": value})
        assert err.value.code == "JD0006" and "notify is True or False" in err.value.reason
