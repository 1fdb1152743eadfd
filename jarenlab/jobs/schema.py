"""The job queue's two internal tables, created on every open with ``CREATE ... IF NOT EXISTS``.

``_jl_jobs`` holds one row per job. ``state`` is one of ``pending``, ``leased``, ``done``,
``failed`` (awaiting retry), ``dead`` (attempts exhausted) and ``cancelled``. ``due_at`` is the
claim key: ``run_at`` while the job waits, ``lease_until`` while it is leased (an expired lease
is claimable again: recovery is the next claim), NULL once the job is settled. ``seq`` is the
enqueue order (partitions run in it). ``_jl_job_checkpoints`` keeps named values a running job
saved (``ctx.checkpoint``, the DAG runner), stamped with the writing claim's generation.

This module imports nothing from the store, so :mod:`jarenlab.internal` can gather it.

>>> any("_jl_jobs" in statement for statement in DDL)
True
"""

from __future__ import annotations

#: Every state a job can be in; the last three are terminal.
STATES = ("pending", "leased", "failed", "done", "dead", "cancelled")

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS _jl_jobs (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    payload TEXT,
    state TEXT NOT NULL CHECK (state IN ('pending','leased','failed','done','dead','cancelled')),
    run_at REAL NOT NULL,
    due_at REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    partition_key TEXT,
    coalescing_key TEXT,
    lease_until REAL,
    lease_owner TEXT,
    lease_token TEXT,
    lease_generation INTEGER NOT NULL DEFAULT 0,
    checkpointed INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    result TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    settled_at REAL
)""",
    "CREATE INDEX IF NOT EXISTS _jl_jobs_due ON _jl_jobs(due_at, seq) WHERE due_at IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS _jl_jobs_partition ON _jl_jobs(kind, partition_key, seq) "
    "WHERE partition_key IS NOT NULL",
    "CREATE UNIQUE INDEX IF NOT EXISTS _jl_jobs_coalescing ON _jl_jobs(kind, coalescing_key) "
    "WHERE coalescing_key IS NOT NULL AND state = 'pending' AND attempts = 0",
    """CREATE TABLE IF NOT EXISTS _jl_job_checkpoints (
    job_id TEXT NOT NULL,
    node TEXT NOT NULL,
    value TEXT,
    generation INTEGER NOT NULL,
    PRIMARY KEY (job_id, node)
) WITHOUT ROWID""",
)
