"""Every named statement of every catalogue runs on every backend, with its parameters by name.

:func:`calls` holds, per statement, the parameters and fills of one run on a small store (the jobs
catalogue has its own, richer table in ``tests/jobs/test_statements.py``). The store records which
statements ran (:meth:`~jarenlab.database.Database.record_statements`), so a statement added to a
``.sql`` file without a run here fails :func:`test_every_statement_runs`, on the backend that has it.
Fragments (``owned_by_*``, ``at_or_after``) run inside the statements they are joined into;
``create_*`` and ``upgrade_*`` statements run when a store opens (``tests/store/test_upgrade.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.backends.base import Backend, Catalogue
from jarenlab.errors import StoreError

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "notes": {
            "schema": {
                "type": "object",
                "required": ["id", "owner"],
                "properties": {"id": {"type": "string"}, "owner": {"type": "string"}},
            },
            "key": "/id",
            "owner": "/owner",
        },
        "tally": {"schema": {"type": "object"}, "key": None, "identity": "integer"},
    },
}

#: Subsystems whose statements are run one by one elsewhere (their own test names each one).
ELSEWHERE = ("jobs",)
#: Statements run as part of the model's DDL, not through the store's Database, with where they run.
DDL = {
    "intervals.instant_ms": "PostgreSQL's jl_instant_ms, made with a date-time interval (tests/intervals)",
    "intervals.instant_ms_inline": "PostgreSQL's jl_instant_ms as one expression, inlined in the checks of "
    "stored records a migration runs (tests/intervals, tests/migrations)",
}
#: Every catalogue a store reads.
SUBSYSTEMS = (
    "store", "collection", "live", "jobs", "events", "idempotency", "intervals", "owner", "pages",
    "relations", "stats", "migrations",
)  # fmt: skip

NOTE = '{"id":"a","owner":"ann"}'


def calls(backend: Backend) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(statement, parameters, fills) in an order that runs on a fresh store of ``backend``."""
    owner = {"path": backend.json_path(("owner",)), "owner": "ann"}
    notes = {"table": "notes"}
    tally = {"table": "tally"}
    at_version = {"path": backend.json_path(("v",)), "version": 1}
    merges = (
        [
            (
                "collection.merge",
                {"patch": '{"owner":"amy"}', "key": "a", **at_version},
                {**notes, "check": ("at_version",)},
            )
        ]
        if backend.merges_members
        else []
    )
    return [
        ("store.put_meta", {"name": "probe", "value": "1"}, {}),
        ("store.set_meta", {"name": "probe", "value": "2"}, {}),
        ("store.get_meta", {"name": "probe"}, {}),
        ("collection.insert_keyed", {"key": "a", "doc": NOTE}, notes),
        ("collection.put", {"key": "b", "doc": '{"id":"b","owner":"bob"}'}, notes),
        ("collection.insert", {"collection": "tally", "doc": "{}"}, tally),
        ("collection.next_key", {"collection": "tally"}, tally),
        ("collection.keys_seen", {"collection": "tally", "last": 7}, {}),
        ("collection.get", {"key": "a"}, notes),
        ("collection.get_for_update", {"key": "a"}, notes),
        ("collection.exists", {"key": "a"}, notes),
        ("collection.update", {"doc": NOTE, "key": "a"}, notes),
        (
            "collection.save_update",
            {"doc": NOTE, "key": "a", **at_version},
            {**notes, "check": ("at_version",)},
        ),
        *merges,
        ("collection.save_delete", {"key": "z"}, {**notes, "check": ()}),
        ("collection.count", {}, notes),
        ("collection.scan", {}, notes),
        ("collection.keys", {}, notes),
        ("collection.positions", {}, notes),
        ("collection.positions_of", {"keys": ["a", "b"]}, {**notes, "keys": 2}),
        ("collection.texts_of_for_update", {"keys": ["a", "b"]}, {**notes, "keys": 2}),
        ("collection.first_page", {"limit": 1}, notes),
        ("collection.page", {"after": 0, "limit": 1}, notes),
        ("collection.delete", {"key": "b"}, notes),
        ("collection.owned_count", owner, {**notes, "owned": ("owned_by_string",)}),
        ("collection.owned_scan", {**owner, "owner": 1}, {**notes, "owned": ("owned_by_integer",)}),
        ("collection.owner_of", {"path": owner["path"], "key": "a"}, notes),
        ("live.append", {"at_ms": 1, "source": "s", "collections": '["notes"]', "patch": None}, {}),
        ("live.bounds", {}, {}),
        ("live.high_watermark", {}, {}),
        ("live.read", {"after": 0, "limit": 10}, {}),
        ("live.prune", {"through": 0}, {}),
        (
            "events.append",
            {
                "type": "t",
                "payload": "{}",
                "at_ms": 5,
                "dedupe_key": "d",
                "caused_by_job": None,
                "caused_by_attempt": None,
            },
            {},
        ),
        ("events.set_outcome", {"outcome": "1", "seq": 1}, {}),
        ("events.by_dedupe_key", {"dedupe_key": "d"}, {}),
        ("events.latest", {"after": 0, "limit": 5, "at_ms": 1}, {"also": ("at_or_after",)}),
        ("events.latest_of_types", {"after": 0, "types": ["t"], "limit": 5}, {"types": 1, "also": ()}),
        ("events.after", {"after": 0, "limit": 5}, {}),
        ("events.after_of_types", {"after": 0, "types": ["t", "u"], "limit": 5}, {"types": 2}),
        ("events.head", {}, {}),
        ("events.boundary", {}, {}),
        ("events.expire_through", {"seq": 1}, {}),
        ("events.set_graph", {"modules": '["m"]', "stamp": 1}, {}),
        ("events.graph", {}, {}),
        ("events.graph_stamp", {}, {}),
        (
            "events.set_materialization",
            {"name": "m.tally", "collection": "tally", "version": 1, "rebuilt_at_ms": 0, "replayed": 0},
            {},
        ),
        ("events.materializations", {}, {}),
        ("events.count_of_types", {"through": 1, "types": ["t"]}, {"types": 1}),
        ("idempotency.claim", {"key": b"k", "fingerprint": b"f"}, {}),
        ("idempotency.lookup", {"key": b"k"}, {}),
        ("idempotency.record", {"result": "1", "key": b"k"}, {}),
        ("idempotency.prune", {"keep": 10}, {}),
        ("pages.get_key", {}, {}),
        ("pages.put_key", {"secret": "s"}, {}),
        ("stats.index_bytes", {"names": json.dumps(["x"])}, {}),
        (
            "migrations.record",
            {
                "at_ms": 1,
                "from_hash": "a",
                "to_hash": "b",
                "from_version": None,
                "to_version": None,
                "steps": "[]",
                "documents": 0,
                "duration_ms": 1.0,
            },
            {},
        ),
        ("migrations.history", {}, {}),
        ("migrations.last", {}, {}),
    ]


def unexercised(catalogues: dict[str, Iterable[str]], ran: set[str]) -> list[str]:
    """The statements of ``catalogues`` (subsystem -> names) that no run reached: not in ``ran``,
    not a table (``create_*``, ``upgrade_*``) or :data:`DDL`, not of a subsystem run :data:`ELSEWHERE`."""
    return [
        f"{subsystem}.{name}"
        for subsystem, names in catalogues.items()
        if subsystem not in ELSEWHERE
        for name in names
        if not name.startswith(("create_", "upgrade_"))
        and f"{subsystem}.{name}" not in ran
        and f"{subsystem}.{name}" not in DDL
    ]


def catalogues(backend: Backend) -> dict[str, Iterable[str]]:
    return {s: backend.catalogue(s).names() for s in SUBSYSTEMS}


def run_all(store: jl.Store, ran: set[str]) -> list[str]:
    """Run :func:`calls` on ``store`` recording into ``ran``; returns the statements that failed."""
    db = store.db
    failed = []
    db.record_statements(ran)
    try:
        for name, params, fill in calls(store.backend):
            try:
                with db.transaction():
                    db.write(name, params, **fill)
            except StoreError as err:
                if name == "stats.index_bytes" and store.backend.name == "sqlite":
                    continue  # a build without the dbstat table: store.stats() says so, not an error
                failed.append(f"{name}: {err}")
    finally:
        db.record_statements(None)
    return failed


def test_every_statement_runs(open_store: Callable[..., jl.Store]) -> None:
    store = open_store(MODEL)
    ran: set[str] = set()
    assert run_all(store, ran) == []
    assert unexercised(catalogues(store.backend), ran) == []


def test_a_statement_no_run_reaches_is_named(open_store: Callable[..., jl.Store]) -> None:
    store = open_store(MODEL)
    ran: set[str] = set()
    run_all(store, ran)
    found = catalogues(store.backend)
    assert unexercised({**found, "events": [*found["events"], "added_later"]}, ran) == ["events.added_later"]
    assert unexercised(found, ran - {"live.read"}) == ["live.read"]


def test_recording_stops_and_sees_fragments(open_store: Callable[..., jl.Store]) -> None:
    store = open_store(MODEL)
    ran: set[str] = set()
    store.db.record_statements(ran)
    store.db.all("events.latest", {"after": 0, "limit": 1, "at_ms": 0}, also=("at_or_after",))
    store.db.record_statements(None)
    store.db.all("events.after", {"after": 0, "limit": 1})
    assert ran == {"events.latest", "events.at_or_after"}


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"after": 0}, "missing ['limit']"),
        ({"after": 0, "limit": 1, "before": 2}, "unexpected ['before']"),
        ((0, 1), "by name"),
    ],
)
def test_a_missing_or_unexpected_parameter_is_refused_before_the_driver(
    open_store: Callable[..., jl.Store], params: Any, says: str
) -> None:
    store = open_store(MODEL)
    with pytest.raises(StoreError) as info:
        store.db.all("events.after", params)
    assert info.value.code == "JD0003"
    assert says in str(info.value)
    assert info.value.__cause__ is None  # refused here, not by the driver


def test_a_list_parameter_has_the_length_of_its_fill(open_store: Callable[..., jl.Store]) -> None:
    store = open_store(MODEL)
    params = {"after": 0, "types": ["a", "b"], "limit": 1}
    assert store.db.all("events.after_of_types", params, types=2) == []
    with pytest.raises(StoreError) as info:
        store.db.all("events.after_of_types", params, types=3)
    assert info.value.code == "JD0003"


def test_parameters_are_named_and_written_as_the_drivers_markers() -> None:
    text = (
        "-- name: due\n"
        "SELECT :at::float8, '50% :not_a_name', \"odd:name\" FROM t -- :nor_this\n"
        "WHERE n % 2 = :n AND k IN ({keys}) AND f = $$ :body % $$ AND g = :at\n"
    )
    qmark = Catalogue.parse("demo", text).prepare("due", quote=str, keys=2)
    fmt = Catalogue.parse("demo", text, style="format").prepare("due", quote=str, keys=2)
    assert qmark.names == fmt.names == {"at", "n", "keys"}
    assert qmark.lists == fmt.lists == (("keys", 2),)
    assert qmark.order == fmt.order == ("at", "n", "keys_0", "keys_1", "at")
    assert qmark.text == (
        "SELECT ?::float8, '50% :not_a_name', \"odd:name\" FROM t -- :nor_this\n"
        "WHERE n % 2 = ? AND k IN (?, ?) AND f = $$ :body % $$ AND g = ?"
    )
    assert fmt.text == (
        "SELECT %s::float8, '50%% :not_a_name', \"odd:name\" FROM t -- :nor_this\n"
        "WHERE n %% 2 = %s AND k IN (%s, %s) AND f = $$ :body %% $$ AND g = %s"
    )
    assert qmark.bind("demo.due", {"at": 1, "n": 0, "keys": ["a", "b"]}) == (1, 0, "a", "b", 1)


def test_a_positional_parameter_is_refused_when_the_file_is_read() -> None:
    with pytest.raises(StoreError) as info:
        Catalogue.parse("demo", "-- name: get\nSELECT doc FROM t WHERE key = ?\n")
    assert info.value.code == "JD0003"
    assert Catalogue.parse("demo", "-- name: get\nSELECT '?' FROM t\n").statement("get").params == ()
    with pytest.raises(StoreError):  # a fragment's own ? is refused too
        Catalogue.parse("demo", "-- name: part\nk = ?\n")
