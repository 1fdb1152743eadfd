"""The job queue's statements (the backend's ``jobs`` catalogue): every one is used, and every one runs.

Each test runs once per backend in :data:`OPENERS`; a new backend joins by adding how to open a fresh
store on it. The store each statement runs against holds one pending job, ``a`` (seq 1, kind ``work``,
coalescing key ``k``, due a second ago), so each statement's answer is known.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from backend_fixtures import Opened

import jarenlab as jl
from jarenlab.jobs import Jobs, VirtualClock
from jarenlab.jobs.queue import ENQUEUE
from jarenlab.jobs.views import COLUMNS

from .conftest import MODEL

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_900_000_000.0
DUE = NOW - 1


def _opened(backend: str, server: str | None) -> Callable[[pytest.FixtureRequest, Path], jl.Store]:
    def open_fresh(request: pytest.FixtureRequest, tmp_path: Path) -> jl.Store:
        opened = Opened(backend, tmp_path, request.getfixturevalue(server) if server else None)
        request.addfinalizer(opened.close)  # closes the store (on PostgreSQL, drops its schema)
        return opened(MODEL, "statements")

    return open_fresh


#: How to open a fresh, empty store on each backend (closed and removed after the test).
OPENERS: dict[str, Callable[[pytest.FixtureRequest, Path], jl.Store]] = {
    "sqlite": _opened("sqlite", None),
    "postgresql": _opened("postgresql", "pg_server"),
}


def row(job_id: str, key: str | None = None) -> dict[str, Any]:
    """The parameters of ``jobs.enqueue`` for a pending job of kind ``work``."""
    values = (job_id, "work", '{"n":1}', DUE, DUE, 5, None, key, DUE, DUE, 7, None, 0)
    return dict(zip(ENQUEUE, values, strict=True))


@pytest.fixture(params=sorted(OPENERS))
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> jl.Store:
    return OPENERS[request.param](request, tmp_path)


@pytest.fixture
def seeded(fresh: jl.Store) -> jl.Store:
    fresh.db.write("jobs.enqueue", row("a", "k"))
    return fresh


def claimed_a(rows: list[Any]) -> bool:
    return rows[0][:3] == (1, "a", "work") and rows[0][7] == NOW + 10


def record_a(rows: list[Any]) -> bool:
    return len(rows) == 1 and rows[0][0] == "a" and len(rows[0]) == len(COLUMNS)


FENCE = {"seq": 1, "token": "someone else's token", "now": NOW}
LEASES = '{"work":10,"other":99}'
CLAIM = {"owner": "me", "token": "t", "now": NOW}

#: name -> (parameters, fills, what it answers on the seeded store: the rows it returns, a test of
#: them, or how many rows it changed). Fragments (``where_*``) run inside ``jobs.list``.
CALLS: dict[str, tuple[dict[str, Any], dict[str, Any], Any]] = {
    "enqueue": (row("b"), {}, 1),
    "enqueue_sixteen": ({f"{k}_{n}": v for n in range(16) for k, v in row(f"x{n}").items()}, {}, 16),
    "exists": ({"id": "a"}, {}, [(1,)]),
    "coalesced": ({"kind": "work", "coalescing_key": "k"}, {}, [(1, "a", '{"n":1}', DUE, None)]),
    "move_earlier": ({"run_at": DUE - 1, "due_at": DUE - 1, "now": NOW, "seq": 1}, {}, 1),
    "claim": ({**CLAIM, "seconds": 10.0, "kinds": ["work"]}, {"kinds": 1}, claimed_a),
    "claim_leases": ({**CLAIM, "leases": LEASES, "kinds": ["work", "other"]}, {"kinds": 2}, claimed_a),
    "claimable": ({"now": NOW, "kinds": ["work"]}, {"kinds": 1}, [(1,)]),
    "claim_picks": ({"now": NOW, "kinds": ["work", "other"]}, {"kinds": 2}, [(1,)]),
    # a kind's head reads the kind of the statement that includes it (claimable's heads)
    "claim_head": ({"now": NOW, "kinds": ["other", "work"]}, {"kinds": 2}, [(1,)]),
    "next_due": ({"kinds": ["work"], "scheduled": True}, {"kinds": 1}, [(DUE,)]),
    "open_count": ({"kinds": ["work"]}, {"kinds": 1}, [(1,)]),
    # The fenced writes: a job that is not leased, a token that is not the claim's: nothing changes.
    "complete": ({"result": '"r"', **FENCE}, {}, 0),
    "fail": (
        {
            "state": "failed",
            "run_at": NOW,
            "due_at": NOW,
            "error": "boom",
            "traceback": None,
            "settled_at": None,
            **FENCE,
        },
        {},
        0,
    ),
    "release": ({"run_at": NOW, "due_at": NOW, **FENCE}, {}, 0),
    "renew": ({"lease_until": NOW, "due_at": NOW, **FENCE}, {}, 0),
    "restart": ({"run_at": NOW, "due_at": NOW, **FENCE}, {}, 0),
    "mark_checkpointed": (FENCE, {}, 0),
    "hold": (FENCE, {}, []),
    "lease_state": ({"seq": 1}, {}, [("pending", None, 0, None)]),
    "unwind": ({"seq": 1, "token": "t"}, {}, 0),
    "save_checkpoint": ({"id": "a", "node": "node", "value": "1", "generation": 1}, {}, 1),
    "checkpoints": ({"id": "a"}, {}, []),
    "prune_checkpoints": ({"id": "a", "generation": 1}, {}, 0),
    "state": ({"id": "a"}, {}, [("pending", None)]),
    "lock_state": ({"id": "a"}, {}, [("pending", None)]),
    "cancel": ({"now": NOW, "leased": False, "id": "a"}, {}, 1),
    "requeue": ({"run_at": NOW, "due_at": NOW, "attempts": 3, "now": NOW, "id": "a"}, {}, 1),
    "sweep_checkpoints": ({"before": NOW, "now": NOW, "limit": None}, {}, 0),
    "sweep": ({"before": NOW, "now": NOW, "limit": None}, {}, 0),
    "get": ({"id": "a"}, {}, record_a),
    "list": ({"limit": None}, {"where": ()}, record_a),
    "failures": ({"limit": 5}, {}, []),
    "counts": ({}, {"where": ()}, [("pending", 1)]),
    "where_state": ({"state": "done", "limit": None}, {}, []),
    "where_states": (
        {
            **{f"state{i}": s for i, s in enumerate(("done", "pending", "dead", "done", "done", "done"), 1)},
            "limit": None,
        },
        {},
        record_a,
    ),
    "where_source_event": ({"source_event": 7, "limit": None}, {}, record_a),
    "where_kind": ({"kind": "work", "limit": None}, {}, record_a),
    "where_after": ({"after": "a", "limit": None}, {}, []),
    # per-kind limits: no kind's row yet, nothing running, no start recorded
    "add_limit": ({"kind": "work"}, {}, 1),
    "lock_limits": ({"kinds": ["work", "other"]}, {"kinds": 2}, []),
    "running": ({"kind": "work", "now": NOW, "cap": 3}, {}, [(0, None)]),
    "window_start": ({"kind": "work", "since": NOW - 60, "skip": 0}, {}, []),
    "record_start": ({"kind": "work", "at": NOW}, {}, 1),
    "prune_starts": ({"kind": "work", "before": NOW}, {}, 0),
}


def catalogue_names() -> tuple[str, ...]:
    from jarenlab.backends.sqlite.backend import catalogue

    return catalogue("jobs").names()


def test_every_statement_is_used_by_the_code_or_the_tests(fresh: jl.Store) -> None:
    this = Path(__file__).resolve()
    sources = [p for d in ("jarenlab", "tests") for p in (ROOT / d).rglob("*.py") if p.resolve() != this]
    text = "\n".join(p.read_text("utf-8") for p in sources)
    jobs_code = "\n".join(p.read_text("utf-8") for p in (ROOT / "jarenlab" / "jobs").glob("*.py"))
    cat = fresh.backend.catalogue("jobs")
    # a statement another one includes ({@name}) is used where that one is
    included = {f[1:] for name in cat.names() for f in cat.statement(name).fields if f.startswith("@")}
    unused = [
        name
        for name in cat.names()
        if not name.startswith(("create_", "upgrade_"))  # the tables: made or upgraded when a store opens
        and name not in included
        and not re.search(rf"[\"']jobs\.{name}[\"']", text)
        and not (name.startswith("where_") and re.search(rf"[\"']{name}[\"']", jobs_code))
    ]
    assert unused == []


def test_every_statement_has_a_call_here(fresh: jl.Store) -> None:
    names = fresh.backend.catalogue("jobs").names()
    assert sorted(n for n in names if not n.startswith(("create_", "upgrade_"))) == sorted(CALLS)


@pytest.mark.parametrize("name", catalogue_names())
def test_each_statement_runs_on_a_fresh_store(seeded: jl.Store, name: str) -> None:
    db = seeded.db
    if name.startswith("create_"):
        db.write(f"jobs.{name}")  # IF NOT EXISTS: the store made them when it opened
        return
    if name.startswith("upgrade_"):  # a store of this version needs none of them
        assert seeded.backend.internal_upgrades(seeded.db.connection(), ["jobs"]) == []
        return
    params, fill, expected = CALLS[name]
    if name == "claim_head":
        rows, changed = db.write("jobs.claimable", params, **fill)
    elif name.startswith("where_"):
        rows, changed = db.write("jobs.list", params, where=(name,))
    else:
        rows, changed = db.write(f"jobs.{name}", params, **fill)
    if isinstance(expected, int):
        assert changed == expected
    elif callable(expected):
        assert expected(rows), rows
    else:
        assert [tuple(r) for r in rows] == expected


@pytest.mark.parametrize("name", ["get", "list", "failures"])
def test_job_records_are_read_in_the_order_of_their_columns(seeded: jl.Store, name: str) -> None:
    params, fill, _ = CALLS[name]
    db = seeded.db
    prepared = db.backend.catalogue("jobs").prepare(name, quote=db.backend.quote, **fill)
    cursor: Any = db.backend.execute(db.connection(), prepared.text, prepared.bind(name, params))
    assert tuple(d[0] for d in cursor.description) == COLUMNS


def test_kinds_with_different_leases_are_claimed_with_their_own(fresh: jl.Store) -> None:
    clock = VirtualClock(NOW)
    jobs = Jobs(fresh, clock=clock, lease=10.0)
    jobs.handler("short", lease=5)(lambda p, c: p)
    jobs.handler("long", lease=50)(lambda p, c: p)
    jobs.handler("default")(lambda p, c: p)
    for kind in ("long", "short", "default"):
        jobs.enqueue(kind, None, id=kind)
    leases = [jobs.claim() for _ in range(3)]
    assert [(lease.id, lease.until - NOW) for lease in leases if lease] == [
        ("long", 50.0),
        ("short", 5.0),
        ("default", 10.0),
    ]
