"""The non-overlap rule on writes: inserts, puts, patches, bulk loads, bounds, rollback, restart, plan.

Every test runs on SQLite and on PostgreSQL, where an exclusion constraint enforces the rule; the
few about one engine's SQL (its plan, its index, its reading of instants) say so.
"""

from __future__ import annotations

import datetime
import random
import uuid
from typing import Any

import orjson
import pytest

import jarenlab as jl
from jarenlab import intervals
from jarenlab.backends.postgres import intervals as pg_intervals
from jarenlab.backends.sqlite import intervals as sqlite_intervals
from jarenlab.errors import IntervalConflict, ModelError, StoreError

from .conftest import booking


def _conflict(call: Any, *args: Any) -> IntervalConflict:
    with pytest.raises(IntervalConflict) as info:
        call(*args)
    assert info.value.code == "JD2090"
    return info.value


def test_touching_intervals_are_allowed_and_overlaps_refused(store: Any) -> None:
    b = store["bookings"]
    b.insert(booking("a", "10", "11"))
    b.insert(booking("b", "11", "12"))
    b.insert(booking("c", "09", "10"))
    err = _conflict(b.insert, booking("x", "10", "12"))
    assert err.key == "x" and err.conflict == {"key": "b", "declaration": 0}
    # one shared millisecond is an overlap, inside and around are overlaps
    for start, end in [
        ("2024-05-01T11:59:59.999Z", "13"),
        ("2024-05-01T10:15:00Z", "2024-05-01T10:45:00Z"),
        ("08", "13"),
    ]:
        _conflict(b.insert, booking("x", start, end))
    assert b.count() == 3 and b.get("x") is None


def test_other_rooms_do_not_clash(store: Any) -> None:
    b = store["bookings"]
    b.insert(booking("a", "10", "12", room="A"))
    b.insert(booking("b", "10", "12", room="B"))
    assert b.count() == 2


def test_the_same_instant_written_two_ways_is_the_same(store: Any) -> None:
    b = store["bookings"]
    b.insert(booking("a", "2024-05-01T10:00:00Z", "2024-05-01T11:00:00.000Z"))
    b.insert(booking("b", "2024-05-01T11:00:00Z", "2024-05-01T12:00:00.5Z"))  # touches a
    err = _conflict(b.insert, booking("c", "2024-05-01T12:00:00.499Z", "2024-05-01T13:00:00Z"))
    assert err.conflict["key"] == "b"
    b.insert(booking("c", "2024-05-01T12:00:00.500000Z", "2024-05-01T13:00:00Z"))  # touches b exactly
    assert b.count() == 3


@pytest.mark.parametrize(
    ("start", "end", "words"),
    [
        ("2024-05-01T10:00:00+01:00", "2024-05-01T12:00:00Z", "offsets are refused"),
        ("2024-05-01T10:00:00z", "2024-05-01T12:00:00Z", "ending in Z"),
        ("2024-05-01 10:00:00Z", "2024-05-01T12:00:00Z", "ending in Z"),
        ("now", "2024-05-01T12:00:00Z", "ending in Z"),
        ("2024-05-01T10:00:00.0001Z", "2024-05-01T12:00:00Z", "millisecond precision"),
        ("2024-02-30T10:00:00Z", "2024-05-01T12:00:00Z", "not a valid date-time"),
        ("2024-05-01T10:00:60Z", "2024-05-01T12:00:00Z", "not a valid date-time"),
        ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00.000Z", "must be before"),
        ("2024-05-01T13:00:00Z", "2024-05-01T12:00:00Z", "must be before"),
    ],
)
def test_invalid_bounds_are_refused_with_jd2091(store: Any, start: str, end: str, words: str) -> None:
    with pytest.raises(StoreError) as info:
        store["bookings"].insert(booking("a", start, end))
    if info.value.code == "JD2003":  # not RFC 3339 at all: the schema's enforced "format" refuses it first
        assert "date-time" in info.value.reason and words in ("ending in Z", "not a valid date-time")
    else:
        assert info.value.code == "JD2091" and words in info.value.reason
        assert (info.value.collection, info.value.key) == ("bookings", "a")
    assert store["bookings"].count() == 0


def test_numeric_bounds_and_bad_numeric_intervals(store: Any) -> None:
    shifts = store["shifts"]
    shifts.insert({"owner": "ann", "from": 0.5, "to": 2})
    shifts.insert({"owner": "ann", "from": 2.0, "to": 3})  # touches
    _conflict(shifts.insert, {"owner": "ann", "from": 2.999, "to": 4})
    for bad in ({"owner": "ann", "from": 5, "to": 5}, {"owner": "ann", "from": 6, "to": 5}):
        with pytest.raises(StoreError) as info:
            shifts.insert(bad)
        assert info.value.code == "JD2091"
    assert shifts.count() == 2


def test_a_refused_move_keeps_the_old_slot(store: Any) -> None:
    b = store["bookings"]
    b.insert(booking("a", "10", "11"))
    b.insert(booking("b", "12", "13"))
    _conflict(b.put, booking("a", "12", "14"))
    _conflict(b.patch, "a", {"end": "2024-05-01T12:30:00Z"})
    move = [
        {"op": "replace", "path": "/start", "value": "2024-05-01T11:30:00Z"},
        {"op": "replace", "path": "/end", "value": "2024-05-01T12:30:00Z"},
    ]
    _conflict(b.patch, "a", move)
    assert b.get("a") == booking("a", "10", "11")
    # the old slot is still held: another booking cannot take it
    _conflict(b.insert, booking("c", "10", "11"))
    # moving within its own slot and extending into free time is fine
    assert b.patch("a", {"end": "2024-05-01T12:00:00Z"})["end"] == "2024-05-01T12:00:00Z"
    b.put(booking("a", "09", "10"))
    b.insert(booking("c", "10", "12"))


def test_cancelling_frees_the_slot_and_reopening_into_it_is_refused(store: Any) -> None:
    b = store["bookings"]
    b.insert(booking("a", "10", "12"))
    b.patch("a", {"status": "cancelled"})
    b.insert(booking("b", "11", "13"))
    err = _conflict(b.patch, "a", {"status": "booked"})
    assert err.conflict["key"] == "b"
    assert b.get("a")["status"] == "cancelled"
    # records that do not match `when` never count, whatever their status or its absence
    b.insert({**booking("c", "10", "13"), "status": "tentative"})
    b.insert({k: v for k, v in booking("d", "10", "13").items() if k != "status"})
    b.delete("b")
    b.patch("a", {"status": "booked"})


def test_when_filters_compare_types_exactly(open_store: Any) -> None:
    schema = {
        "type": "object",
        "required": ["s", "e"],
        "properties": {"s": {"type": "integer"}, "e": {"type": "integer"}, "on": {}, "n": {}, "z": {}},
    }
    decls = [{"start": "/s", "end": "/e", "when": {"on": True, "n": 1, "z": None}}]
    model = {
        "$model": "0.1",
        "collections": {"t": {"key": None, "identity": "integer", "schema": schema, "intervals": decls}},
    }
    with open_store(model, name="w") as store:
        t = store["t"]
        t.insert({"s": 0, "e": 10, "on": True, "n": 1.0, "z": None})  # counts (1.0 == 1)
        _conflict(t.insert, {"s": 5, "e": 6, "on": True, "n": 1, "z": None})
        for other in (
            {"on": 1, "n": 1, "z": None},
            {"on": True, "n": True, "z": None},
            {"on": True, "n": 1},
            {"on": True, "n": "1", "z": None},
        ):
            t.insert({"s": 5, "e": 6, **other})  # does not match `when`: not constrained
        assert t.count() == 5


def test_a_when_string_that_looks_like_json_does_not_match_an_array(open_store: Any) -> None:
    schema = {
        "type": "object",
        "required": ["s", "e"],
        "properties": {"s": {"type": "integer"}, "e": {"type": "integer"}, "st": {}},
    }
    model = {
        "$model": "0.1",
        "collections": {
            "t": {
                "key": None,
                "identity": "integer",
                "schema": schema,
                "intervals": [{"start": "/s", "end": "/e", "when": {"st": "['b']"}}],
            }
        },
    }
    with open_store(model, name="j") as store:
        store["t"].insert({"s": 0, "e": 10, "st": ["b"]})
        store["t"].insert({"s": 0, "e": 10, "st": "['b']"})
        _conflict(store["t"].insert, {"s": 0, "e": 10, "st": "['b']"})


def test_insert_many_checks_every_row_and_writes_nothing_on_a_clash(store: Any) -> None:
    b = store["bookings"]
    b.insert(booking("a", "10", "11"))
    rows = [booking(f"r{h}", str(h), str(h + 1)) for h in range(12, 20)]
    err = _conflict(b.insert_many, [*rows, booking("late", "15", "17")])
    assert {err.key, err.conflict["key"]} in ({"late", "r15"}, {"late", "r16"})
    err = _conflict(b.insert_many, [booking("z", "09", "10"), booking("y", "2024-05-01T10:30:00Z", "12")])
    assert {err.key, err.conflict["key"]} == {"y", "a"}
    assert b.count() == 1
    # two clashing rows in one batch, neither clashing with stored data
    err = _conflict(b.insert_many, [booking("p", "20", "22"), booking("q", "21", "23")])
    assert {err.key, err.conflict["key"]} == {"p", "q"}
    assert b.insert_many(rows) == 8 and b.count() == 9


def test_scope_owner_constrains_each_owner_alone_and_collection_scope_blocks_across(store: Any) -> None:
    shifts, b = store["shifts"], store["bookings"]
    shifts.insert({"owner": "ann", "from": 0, "to": 10})
    shifts.insert({"owner": "bob", "from": 0, "to": 10})
    _conflict(shifts.insert, {"owner": "bob", "from": 9, "to": 11})
    b.insert(booking("a", "10", "12", owner="ann"))
    err = _conflict(b.insert, booking("b", "11", "13", owner="bob"))
    assert err.conflict_owner == "ann"


def test_an_injected_failure_rolls_the_booking_back(store: Any) -> None:
    b = store["bookings"]

    def boom(key: Any, doc: Any) -> None:
        if doc and doc.get("room") == "boom":
            raise RuntimeError("injected")

    b.write_checks.append(boom)
    with pytest.raises(RuntimeError):
        b.insert(booking("a", "10", "12", room="boom"))
    with pytest.raises(RuntimeError), store.transaction():
        b.insert(booking("b", "10", "12"))
        raise RuntimeError("later in the same transaction")
    b.write_checks.remove(boom)
    b.insert(booking("c", "10", "12", room="boom"))
    b.insert(booking("d", "10", "12"))
    assert sorted(d["id"] for d in b.to_list()) == ["c", "d"]


def test_a_clash_inside_a_transaction_rolls_back_only_its_savepoint(store: Any) -> None:
    b = store["bookings"]
    with store.transaction():
        b.insert(booking("a", "10", "12"))
        _conflict(b.insert, booking("b", "11", "13"))
        b.insert(booking("c", "12", "13"))
    assert sorted(d["id"] for d in b.to_list()) == ["a", "c"]


def test_the_constraint_survives_a_restart(open_store: Any, model: dict[str, Any]) -> None:
    first = open_store(model, name="restart")
    with first:
        first["bookings"].insert(booking("a", "10", "12"))
    with open_store.reopen(first) as store:
        _conflict(store["bookings"].insert, booking("b", "11", "13"))
    with open_store.reopen(first, model) as store:
        _conflict(store["bookings"].insert, booking("b", "11", "13"))
        store["bookings"].insert(booking("b", "12", "13"))


def _plan(conn: Any, sql: str, params: tuple[Any, ...]) -> str:
    return " | ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params))


@pytest.mark.needs("checked_intervals", "reads SQLite's query plan of its own lookup")
def test_the_check_is_one_indexed_lookup(store: Any) -> None:
    conn = store.db.connection()
    for name in ("bookings", "shifts"):
        spec = store[name].spec
        (decl,) = spec.intervals
        index = sqlite_intervals.index_name(spec, decl)
        params = (("A",) if name == "bookings" else ("ann",)) + (5, "k", 1)
        plan = _plan(conn, store.backend.interval_statements(name, decl).conflict, params)
        assert f"SEARCH {name} USING INDEX {index} (" in plan and "<?)" in plan, plan
        assert f"SCAN {name}" not in plan and "TEMP B-TREE" not in plan, plan


@pytest.mark.needs("checked_intervals", "reads SQLite's partial index through sqlite_master and INDEXED BY")
def test_the_partial_index_holds_only_matching_records(store: Any) -> None:
    b = store["bookings"]
    b.insert(booking("a", "10", "12"))
    b.insert(booking("b", "10", "12", status="cancelled"))
    b.insert(booking("c", "10", "12", room="B"))
    conn = store.db.connection()
    stat = dict(
        conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type='index' AND name LIKE '_jl_iv_%'"
        ).fetchall()
    )
    assert set(stat) == {"_jl_iv_bookings_0", "_jl_iv_shifts_0"}
    assert "WHERE json_type" in stat["_jl_iv_bookings_0"] and "WHERE" not in stat["_jl_iv_shifts_0"]
    counted = conn.execute(
        'SELECT count(*) FROM bookings INDEXED BY "_jl_iv_bookings_0" WHERE '
        + sqlite_intervals.when_sql(b.spec.intervals[0])
    ).fetchone()[0]
    assert counted == 2


@pytest.mark.needs(
    "enforced_intervals", "reads PostgreSQL's plan of the lookup that names a refused write's clash"
)
def test_the_lookup_is_served_by_the_constraint_index(store: Any) -> None:
    conn = store.db.connection()
    for name, params in (("bookings", ("A", 5, "k", 1)), ("shifts", ("ann", 5, 0, 1))):
        (decl,) = store[name].spec.intervals
        sql = store.backend.interval_statements(name, decl).conflict
        with store.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")  # a tiny table: ask whether the index can serve
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params).fetchall())
        assert f"_jl_iv_{name}_0" in plan and "Seq Scan" not in plan, plan


@pytest.mark.needs("enforced_intervals", "reads PostgreSQL's catalogue")
def test_each_declaration_is_an_exclusion_constraint_counting_what_when_counts(store: Any) -> None:
    conn = store.db.connection()
    schema = store.backend.schema
    found = dict(
        conn.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE contype = 'x' AND connamespace = %s::regnamespace",
            (schema,),
        ).fetchall()
    )
    assert set(found) == {"_jl_iv_bookings_0", "_jl_iv_shifts_0"}
    assert all(d.startswith("EXCLUDE USING gist (") for d in found.values())
    assert "WHERE" in found["_jl_iv_bookings_0"] and "WHERE" not in found["_jl_iv_shifts_0"]
    assert (
        "int8range(jl_instant_ms(" in found["_jl_iv_bookings_0"] and "numrange(" in found["_jl_iv_shifts_0"]
    )
    (home,) = conn.execute(
        "SELECT pronamespace::regnamespace::text FROM pg_proc WHERE proname = 'jl_instant_ms' AND pronamespace = %s::regnamespace",
        (schema,),
    ).fetchone()
    assert home == schema
    b = store["bookings"]
    b.insert(booking("a", "10", "12"))
    b.insert(booking("b", "10", "12", status="cancelled"))
    b.insert(booking("c", "10", "12", room="B"))
    b.insert({k: v for k, v in booking("d", "10", "12").items() if k != "status"})
    when = pg_intervals.when_sql(b.spec.intervals[0])
    assert conn.execute(f"SELECT count(*) FROM bookings WHERE {when}").fetchone()[0] == 2


DROP = {
    "sqlite": 'DROP INDEX "_jl_iv_bookings_0"',
    "postgresql": 'ALTER TABLE bookings DROP CONSTRAINT "_jl_iv_bookings_0"',
}


def test_a_dropped_interval_index_is_refused_on_reopen(
    open_store: Any, backend: str, model: dict[str, Any]
) -> None:
    store = open_store(model, name="dropped")
    with store.transaction():
        store.db.connection().execute(DROP[backend])
    store.close()
    with pytest.raises(ModelError) as info:
        open_store.reopen(store, model)
    assert info.value.code == "JD0002" and "_jl_iv_bookings_0" in info.value.reason


def test_adding_a_declaration_to_an_existing_store_is_a_model_change(
    open_store: Any, model: dict[str, Any]
) -> None:
    bare = {
        **model,
        "collections": {
            **model["collections"],
            "bookings": {**model["collections"]["bookings"], "intervals": []},
        },
    }
    store = open_store(bare, name="added")
    store.close()
    with pytest.raises(ModelError) as info:
        open_store.reopen(store, model)
    assert info.value.code == "JD0002" and info.value.doc_path.startswith("/collections/bookings/intervals")


#: A record that overlaps booking("b", "12", "14") of room A.
AROUND = '{"id":"z","owner":"bob","room":"A","status":"booked","start":"2024-05-01T13:00:00Z","end":"2024-05-01T15:00:00Z"}'


def _write_around_the_check(store: Any, key: str, text: str) -> None:
    """Store a record the way raw SQL would (an old file, a migration): no validation, no check."""
    with store.transaction():
        store.db.run("collection.insert_keyed", {"key": key, "doc": text}, table="bookings")


@pytest.mark.needs(
    "checked_intervals", "writes an overlap around the check; PostgreSQL's constraint refuses even that"
)
def test_check_existing_names_both_overlapping_records(store: Any) -> None:
    b = store["bookings"]
    b.insert(booking("a", "10", "12"))
    b.insert(booking("b", "12", "14"))
    b.insert(booking("c", "10", "12", room="B"))
    intervals.check_existing(store.db, store["bookings"].spec)
    _write_around_the_check(store, "z", AROUND)
    with pytest.raises(IntervalConflict) as info:
        intervals.check_existing(store.db, store["bookings"].spec)
    assert {info.value.key, info.value.conflict["key"]} == {"b", "z"}
    assert "'b'" in str(info.value) and "'z'" in str(info.value)
    b.patch("z", {"status": "cancelled"})
    intervals.check_existing(store.db, store["bookings"].spec)


@pytest.mark.needs("enforced_intervals", "the database enforces the rule on every write, raw SQL included")
def test_the_database_refuses_an_overlap_written_around_the_check(store: Any) -> None:
    b = store["bookings"]
    b.insert(booking("a", "10", "12"))
    b.insert(booking("b", "12", "14", owner="ann"))
    intervals.check_existing(store.db, store["bookings"].spec)
    with pytest.raises(StoreError) as info:
        _write_around_the_check(store, "z", AROUND)
    assert (info.value.code, info.value.condition) == ("JD2005", "exclusion")
    assert "_jl_iv_bookings_0" in info.value.reason
    other = booking("b", "12", "14")  # the server's DETAIL prints the other record's values
    for value in (
        intervals.instant(other["start"], "date-time"),
        intervals.instant(other["end"], "date-time"),
    ):
        assert str(value) not in str(info.value) + repr(info.value.__dict__), str(info.value)
    assert b.count() == 2
    intervals.check_existing(store.db, store["bookings"].spec)


def test_check_existing_refuses_stored_invalid_bounds(store: Any) -> None:
    _write_around_the_check(
        store,
        "bad",
        '{"id":"bad","owner":"bob","room":"A","status":"booked","start":"2024-05-01T13:00:00+02:00","end":"2024-05-01T15:00:00Z"}',
    )
    with pytest.raises(StoreError) as info:
        intervals.check_existing(store.db, store["bookings"].spec)
    assert info.value.code == "JD2091" and info.value.key == "bad"


def _sql_instants(store: Any, backend: str, texts: list[str]) -> list[Any]:
    """The database's reading of each text as a bound, as the declaration's SQL reads it."""
    conn = store.db.connection()
    if backend == "sqlite":
        expr = sqlite_intervals.bound_sql(store["bookings"].spec.intervals[0], ("v",))
        sql = f"SELECT {expr} FROM (SELECT ? AS doc)"
        return [conn.execute(sql, (orjson.dumps({"v": t}).decode(),)).fetchone()[0] for t in texts]
    # the function, and the same reading inlined (the checks a migration runs before it exists)
    inline = pg_intervals.instant_ms_inline().replace("{t}", "v")
    sql = f"SELECT jl_instant_ms(v), {inline} FROM unnest(%s::text[]) WITH ORDINALITY AS t(v, n) ORDER BY n"
    rows = conn.execute(sql, (texts,)).fetchall()
    assert [r[0] for r in rows] == [r[1] for r in rows]
    return [r[0] for r in rows]


def test_sql_and_python_agree_on_5000_random_instants(store: Any, backend: str) -> None:
    rng = random.Random(20240501)
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    values = []
    for _ in range(5000):
        ms = rng.randrange(-62_135_596_800_000 + 86_400_000, 253_402_300_799_999)
        t = epoch + datetime.timedelta(milliseconds=ms)
        frac = rng.choice(
            ["", f".{ms % 1000:03d}", f".{ms % 1000:03d}000", f".{ms % 1000:03d}".rstrip("0").rstrip(".")]
        )
        whole = ms - ms % 1000 if frac in ("", ".") else ms
        text = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}{frac}Z"
        values.append((text, whole))
    got = _sql_instants(store, backend, [text for text, _ in values])
    for (text, want), sql in zip(values, got, strict=True):
        assert intervals.instant(text, "date-time") == want == sql, text
        fast = intervals._fast_ms(text)  # the write check's fast path: same value, or defers (None)
        assert fast == want or (fast is None and len(text) not in (20, 24)), text


NOT_INSTANTS = [
    "now",
    "2024-02-30T10:00:00Z",
    "2023-02-29T10:00:00Z",
    "1900-02-29T10:00:00Z",
    "2024-04-31T10:00:00Z",
    "2024-13-01T10:00:00Z",
    "2024-05-01T24:00:00Z",
    "2024-05-01T10:60:00Z",
    "2024-05-01T10:00:60Z",
    "0000-01-01T00:00:00Z",
    "2024-05-01T10:00:00.0001Z",
    "2024-05-01T10:00:00.Z",
    "2024-05-01T10:00:00+00:00",
    "2024-05-01T10:00:00z",
    "2024-05-01t10:00:00Z",
    "2024-05-01 10:00:00Z",
    "2024-05-01T10:00:00Z\n",
    " 2024-05-01T10:00:00Z",
    "12024-05-01T10:00:00Z",
    "2024-5-01T10:00:00Z",
    "2024-05-01T10:00:00.5000001Z",
]


@pytest.mark.parametrize(
    "text", ["2000-02-29T00:00:00Z", "2024-05-01T10:00:00.5000Z", "0001-01-01T00:00:00Z"]
)
def test_sql_and_python_accept_the_same_edge_instants(store: Any, backend: str, text: str) -> None:
    assert _sql_instants(store, backend, [text]) == [intervals.instant(text, "date-time")]


@pytest.mark.needs(
    "enforced_intervals",
    "the constraint reads bounds as the row is written, before the write check: it must give no "
    "slot to what Python refuses (SQLite's julianday() reads Feb 30 as Mar 1; its check decides first)",
)
def test_sql_and_python_refuse_the_same_texts(store: Any, backend: str) -> None:
    assert _sql_instants(store, backend, NOT_INSTANTS) == [None] * len(NOT_INSTANTS)
    for text in NOT_INSTANTS:
        with pytest.raises(StoreError) as info:
            intervals.instant(text, "date-time")
        assert info.value.code == "JD2091", text


def test_the_fast_bound_path_defers_everything_not_plainly_valid() -> None:
    for value in [
        "2024-02-30T10:00:00Z",
        "2024-05-01T10:00:60Z",
        "2024-05-01T10:00:00+00:00",
        "2024-05-01T10:00:00.5Z",
        "2024-05-01T10:00:00.0001Z",
        "2024-05-01t10:00:00Z",
        "2024-05-01T10:00:00z",
        "2024-05-01 10:00:00Z",
        "2024-05-01T10:00:00Z\n",
        1,
        None,
    ]:
        assert intervals._fast_ms(value) is None, value
    for value in [True, False, "1", None, 1.5j]:
        assert intervals._fast_number(value) is None, value

    class Int(int):
        pass

    assert intervals._fast_number(Int(3)) is None  # the full check decides
    assert intervals._fast_number(3) == 3 and intervals._fast_number(-2.5) == -2.5
    assert intervals._fast_ms("1970-01-01T00:00:01.500Z") == 1500
    assert intervals._fast_ms("0001-01-01T00:00:00Z") == intervals.instant(
        "0001-01-01T00:00:00Z", "date-time"
    )


def test_nested_bound_pointers(open_store: Any) -> None:
    slot = {
        "type": "object",
        "required": ["from", "to"],
        "properties": {"from": {"type": "integer"}, "to": {"type": "integer"}},
    }
    schema = {
        "type": "object",
        "required": ["slot", "desk"],
        "properties": {"slot": slot, "desk": {"type": "integer"}},
    }
    model = {
        "$model": "0.1",
        "collections": {
            "t": {
                "key": None,
                "identity": "integer",
                "schema": schema,
                "intervals": [{"start": "/slot/from", "end": "/slot/to", "within": ["/desk"]}],
            }
        },
    }
    with open_store(model, name="n") as store:
        store["t"].insert({"slot": {"from": 1, "to": 3}, "desk": 1})
        store["t"].insert({"slot": {"from": 1, "to": 3}, "desk": 2})
        err = _conflict(store["t"].insert, {"slot": {"from": 2, "to": 4}, "desk": 1})
        assert err.conflict["key"] == 1


@pytest.mark.needs("enforced_intervals", "about PostgreSQL's btree_gist extension")
def test_declared_intervals_need_btree_gist_and_say_so(pg_server: Any, model: dict[str, Any]) -> None:
    import psycopg

    # A database without the extension and without the schema it would be installed in.
    name = f"noext_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with psycopg.connect(pg_server.url(name), autocommit=True) as db:
            db.execute("DROP SCHEMA public")
        with pytest.raises(StoreError) as info:
            jl.open(pg_server.url(name), model, schema="lab")
        assert info.value.code == "JD0001" and "btree_gist" in info.value.reason
        bare = {"$model": "0.1", "collections": {"plain": model["collections"]["plain"]}}
        jl.open(pg_server.url(name), bare, schema="lab").close()  # no intervals: not needed
    finally:
        with psycopg.connect(pg_server.url(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.needs("enforced_intervals", "PostgreSQL cuts names longer than 63 bytes without a word")
def test_a_constraint_name_postgresql_would_cut_short_is_refused(
    open_store: Any, model: dict[str, Any]
) -> None:
    name = "b" * 56
    model["collections"] = {name: model["collections"]["bookings"]}
    with pytest.raises(ModelError) as info:
        open_store(model)
    assert info.value.code == "JD0005" and info.value.doc_path == f"/collections/{name}/intervals/0"
    model["collections"] = {name[:50]: model["collections"][name]}
    with open_store(model, name="short") as store:
        store[name[:50]].insert(booking("a", "10", "11"))
