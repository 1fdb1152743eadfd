"""The composition root: the subsystems every store gets, and :func:`open`.

The store knows nothing of its subsystems; each registers itself through a
:class:`~jarenlab.store.Subsystem` (its tables, its statements, its object, its stats section),
and this module lists them. A store opened here has ``store.jobs``, ``store.events``,
``store.changes`` (live queries), retry-safe transactions, owner views, ``store.stats()`` and
``store.migrate`` / ``store.migrations()``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from jarenlab import idempotency, owner, stats
from jarenlab.errors import StoreError
from jarenlab.events.ledger import Events
from jarenlab.events.modules import Module
from jarenlab.jobs.api import Jobs
from jarenlab.jobs.periodic import Schedules
from jarenlab.live.hub import ChangeHub
from jarenlab.migrations.runner import Migrator
from jarenlab.query.columnar.path import Columns
from jarenlab.query.planner.pages import PageKeys
from jarenlab.relations import actions as relations
from jarenlab.store import OPTIONS, Store, Subsystem

#: What :func:`open` registers with every store, in this order.
SUBSYSTEMS: tuple[Subsystem, ...] = (
    Subsystem("live", create=ChangeHub, eager=True, stats=ChangeHub.stats),
    Subsystem("jobs", create=Jobs, stats=lambda jobs: jobs.counts()),
    # The queue's periodic schedules and fan-out batches (their tables, ``store.jobs.schedules``).
    Subsystem("periodic", create=lambda store: Schedules(store.jobs)),
    Subsystem("batches", create=lambda store: store.jobs),
    Subsystem("events", create=Events),
    # Signals' tables (``store.events.signal``; the queue's settlement deletes them).
    Subsystem("signals", create=lambda store: store.events),
    idempotency.SUBSYSTEM,
    owner.SUBSYSTEM,
    relations.SUBSYSTEM,
    Subsystem("pages", PageKeys),
    Subsystem("columns", lambda store: Columns(store, store.column_budget), stats=Columns.stats),
    stats.SUBSYSTEM,
    # Last: the history table (the backend's ``migrations`` catalogue), ``store.migrate`` and
    # ``store.migrations()``, and the guard (a before-commit hook, eager so it is in place from the
    # first write) that rolls back a write made under a model another process has migrated away;
    # it reads what the change hub's hook wrote just before it.
    Subsystem("migrations", Migrator, eager=True),
)


def open(
    path: str | os.PathLike[str] | None = None,
    model: dict[str, Any] | None = None,
    *,
    modules: Sequence[Module] = (),
    **options: Any,
) -> Store:
    """Open (or create) a store.

    ``open("lab.db", model)`` creates the file or verifies it against the model;
    ``open("lab.db")`` opens an existing store with its stored model; ``open(model=model)``
    makes a fresh file in a temporary folder that is removed on ``close()`` (the way to a scratch
    store; ``open(":memory:", model)`` does the same). ``file:`` URIs name the file, with
    ``mode=ro|rw|rwc``.
    Options: ``read_only``, ``busy_timeout`` (seconds), ``queue_timeout``, ``operators``,
    ``profile`` (a :class:`jarenlab.query.planner.profile.Profile`), ``statement_cache`` (entries),
    ``clock`` (epoch seconds for the job queue and the event ledger: a
    :class:`jarenlab.jobs.VirtualClock` runs ``store.jobs`` in virtual time) and ``random`` (the
    retry jitter: a seed, a ``random.Random`` or a function).
    ``checks`` (what schema-aware query findings do: ``"default"`` raises the certain mistakes and
    warns the doubtful ones, ``"strict"`` raises both, ``"off"`` neither; see ``docs/query.md``).
    ``modules`` (handler modules, :class:`jarenlab.events.Module`) are installed as the store opens
    (``store.events.install(*modules)``: checked against those the store records, materializations
    rebuilt); if that fails the store is closed and the error raised.
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise StoreError("JD0006", f"unknown option {unknown[0]!r} (options: {', '.join(OPTIONS)})")
    if modules is not None and not (isinstance(modules, Sequence) and not isinstance(modules, str)):
        shown = f"Module {modules.name!r}" if isinstance(modules, Module) else repr(modules)
        raise StoreError(
            "JD0006", f"modules is a list of jarenlab.events.Module (modules=[flights, ...]), not {shown}"
        )
    store = Store(path, model, subsystems=SUBSYSTEMS, **options)
    if modules:
        try:
            store.events.install(*modules)
        except BaseException:
            store.close()
            raise
    return store
