"""The composition root: the subsystems every store gets, and :func:`open`.

The store knows nothing of its subsystems; each registers itself through a
:class:`~jarenlab.store.Subsystem` (its tables, its statements, its object, its stats section),
and this module lists them. A store opened here has ``store.jobs``, ``store.events``,
``store.changes`` (live queries), retry-safe transactions, owner views and ``store.stats()``.
"""

from __future__ import annotations

import os
from typing import Any

from jarenlab import events, idempotency, jobs, live, owner, stats
from jarenlab.errors import StoreError
from jarenlab.pages import PageKeys
from jarenlab.relations import actions as relations
from jarenlab.store import OPTIONS, Store, Subsystem

#: What :func:`open` registers with every store, in this order.
SUBSYSTEMS: tuple[Subsystem, ...] = (
    live.SUBSYSTEM,
    jobs.SUBSYSTEM,
    events.SUBSYSTEM,
    idempotency.SUBSYSTEM,
    owner.SUBSYSTEM,
    relations.SUBSYSTEM,
    Subsystem("pages", PageKeys),
    stats.SUBSYSTEM,
)


def open(
    path: str | os.PathLike[str] | None = None,
    model: dict[str, Any] | None = None,
    **options: Any,
) -> Store:
    """Open (or create) a store.

    ``open("lab.db", model)`` creates the file or verifies it against the model;
    ``open("lab.db")`` opens an existing store with its stored model; ``open(model=model)``
    makes a fresh file in a temporary folder that is removed on ``close()``.
    Options: ``read_only``, ``busy_timeout`` (seconds), ``queue_timeout``, ``operators``,
    ``profile`` (a :class:`jarenlab.query.profile.Profile`), ``statement_cache`` (entries).
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise StoreError("JD0006", f"unknown option {unknown[0]!r} (options: {', '.join(OPTIONS)})")
    return Store(path, model, subsystems=SUBSYSTEMS, **options)
