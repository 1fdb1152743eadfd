-- The job queue. _jl_jobs holds one row per job; state is one of pending, leased, done, failed
-- (awaiting retry), dead (attempts exhausted) and cancelled. due_at is the claim key: run_at while
-- the job waits, lease_until while it is leased (an expired lease is claimable again), NULL once
-- settled. seq is the enqueue order (partitions run in it). _jl_job_checkpoints keeps named values a
-- running job saved, stamped with the writing claim's generation.

-- name: create_jobs
CREATE TABLE IF NOT EXISTS _jl_jobs (
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
)

-- name: create_jobs_due
CREATE INDEX IF NOT EXISTS _jl_jobs_due ON _jl_jobs(due_at, seq) WHERE due_at IS NOT NULL

-- name: create_jobs_partition
CREATE INDEX IF NOT EXISTS _jl_jobs_partition ON _jl_jobs(kind, partition_key, seq)
WHERE partition_key IS NOT NULL

-- name: create_jobs_coalescing
CREATE UNIQUE INDEX IF NOT EXISTS _jl_jobs_coalescing ON _jl_jobs(kind, coalescing_key)
WHERE coalescing_key IS NOT NULL AND state = 'pending' AND attempts = 0

-- name: create_checkpoints
CREATE TABLE IF NOT EXISTS _jl_job_checkpoints (
    job_id TEXT NOT NULL,
    node TEXT NOT NULL,
    value TEXT,
    generation INTEGER NOT NULL,
    PRIMARY KEY (job_id, node)
) WITHOUT ROWID
