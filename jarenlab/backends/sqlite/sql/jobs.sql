-- The job queue. _jl_jobs holds one row per job; state is one of pending, leased, done, failed
-- (awaiting retry), dead (attempts exhausted) and cancelled. due_at is the claim key: run_at while
-- the job waits, lease_until while it is leased (an expired lease is claimable again), NULL once
-- settled. seq is the enqueue order (partitions run in it). _jl_job_checkpoints keeps named values a
-- running job saved, stamped with the writing claim's generation.
--
-- The pick is claimable, which claim and claim_leases include: due, not cancelled, a kind the
-- worker runs ({kinds} placeholders), and the head of its partition (no earlier job of the partition
-- is waiting, running, retrying, or cancelled but still unwinding); the smallest (due_at, seq).
--
-- The fence (complete, fail, release, renew, restart, mark_checkpointed end with it): the job's seq,
-- the claim's token, still leased, the lease not expired (now). A fenced write that matches no row
-- changes nothing: the lease is no longer this attempt's, and lease_state tells why.
--
-- get, list and failures return the columns of jarenlab.jobs.views.COLUMNS, in that order (never the
-- lease token); {where} is a tuple of where_* fragments (none: every job).

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
    settled_at REAL,
    source_event INTEGER,
    timeout REAL
)

-- name: upgrade_column_jobs_source_event
-- A queue made before jobs recorded the event that enqueued them: the column, empty for its jobs.
ALTER TABLE _jl_jobs ADD COLUMN source_event INTEGER

-- name: upgrade_column_jobs_timeout
-- A queue made before per-job handler timeouts: the column, empty (the kind's timeout applies).
ALTER TABLE _jl_jobs ADD COLUMN timeout REAL

-- name: create_jobs_due
CREATE INDEX IF NOT EXISTS _jl_jobs_due ON _jl_jobs(due_at, seq) WHERE due_at IS NOT NULL

-- name: create_jobs_partition
CREATE INDEX IF NOT EXISTS _jl_jobs_partition ON _jl_jobs(kind, partition_key, seq)
WHERE partition_key IS NOT NULL

-- name: create_jobs_source
-- The jobs an event's handlers enqueued (jobs.list(source_event=...)).
CREATE INDEX IF NOT EXISTS _jl_jobs_source ON _jl_jobs(source_event) WHERE source_event IS NOT NULL

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


-- name: enqueue
-- One job; an id already stored changes nothing (enqueue is idempotent by id). The last two: the
-- event whose handler enqueued it (or NULL) and its handler timeout in seconds (or NULL).
INSERT INTO _jl_jobs(id, kind, payload, state, run_at, due_at, max_attempts, partition_key,
    coalescing_key, created_at, updated_at, source_event, timeout)
VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(id) DO NOTHING

-- name: enqueue_sixteen
-- Sixteen jobs in one statement (enqueue_many inserts in steps of sixteen, the rest one by one):
-- the same rows as sixteen single enqueues, in fewer statements.
INSERT INTO _jl_jobs(id, kind, payload, state, run_at, due_at, max_attempts, partition_key,
    coalescing_key, created_at, updated_at, source_event, timeout)
VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?),
    (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(id) DO NOTHING

-- name: exists
SELECT 1 FROM _jl_jobs WHERE id = ?

-- name: coalesced
-- The job holding a coalescing key: pending and never attempted (at most one, by the unique index).
SELECT seq, id, payload, run_at, partition_key FROM _jl_jobs
WHERE kind = ? AND coalescing_key = ? AND state = 'pending' AND attempts = 0

-- name: move_earlier
-- A waiting job's new due time (a coalesced repeat or a merged deferral asked for an earlier one).
UPDATE _jl_jobs SET run_at = ?, due_at = ?, updated_at = ? WHERE seq = ?


-- name: claim
-- Lease the next claimable job, every kind with the same lease length: count the attempt, bump the
-- generation, store the fencing token; one statement. Parameters: owner, token, now, seconds, now,
-- seconds, now (updated_at), now (due), the kinds, now (unwinding).
UPDATE _jl_jobs SET state = 'leased', attempts = attempts + 1,
    lease_generation = lease_generation + 1, lease_owner = ?, lease_token = ?,
    lease_until = ? + ?, due_at = ? + ?, updated_at = ?
WHERE seq = ({@claimable})
RETURNING seq, id, kind, payload, attempts, max_attempts, lease_generation, lease_until, checkpointed,
    run_at, created_at, partition_key, coalescing_key, last_error, source_event, timeout

-- name: claim_leases
-- Like claim, when the kinds' leases differ: the seconds are one JSON object, kind -> seconds.
UPDATE _jl_jobs SET state = 'leased', attempts = attempts + 1,
    lease_generation = lease_generation + 1, lease_owner = ?, lease_token = ?,
    lease_until = ? + (SELECT value FROM json_each(?) WHERE key = kind),
    due_at = ? + (SELECT value FROM json_each(?) WHERE key = kind), updated_at = ?
WHERE seq = ({@claimable})
RETURNING seq, id, kind, payload, attempts, max_attempts, lease_generation, lease_until, checkpointed,
    run_at, created_at, partition_key, coalescing_key, last_error, source_event, timeout

-- name: claimable
-- The job a claim would lease now, if any (its seq). Parameters: now, the kinds, now.
SELECT j.seq FROM _jl_jobs j
WHERE j.due_at <= ? AND j.state != 'cancelled' AND j.kind IN ({kinds})
  AND (j.partition_key IS NULL OR NOT EXISTS (
    SELECT 1 FROM _jl_jobs p WHERE p.kind = j.kind AND p.partition_key = j.partition_key
      AND p.seq < j.seq AND (p.due_at IS NOT NULL OR (p.state = 'cancelled' AND p.lease_until > ?))))
ORDER BY j.due_at, j.seq LIMIT 1

-- name: next_due
-- When work of the kinds under way (retrying, leased) next falls due; with the last parameter true,
-- pending work scheduled later counts too.
SELECT min(due_at) FROM _jl_jobs
WHERE due_at IS NOT NULL AND kind IN ({kinds}) AND (state IN ('failed', 'leased') OR ?)

-- name: open_count
-- Jobs of the kinds not settled yet (pending, leased, failed).
SELECT count(*) FROM _jl_jobs WHERE due_at IS NOT NULL AND kind IN ({kinds})


-- name: complete
UPDATE _jl_jobs SET state = 'done', result = ?, due_at = NULL, lease_until = NULL, lease_token = NULL,
    settled_at = ?, updated_at = ?
WHERE seq = ? AND lease_token = ? AND state = 'leased' AND lease_until > ?

-- name: fail
-- A failed attempt: 'failed' with the retry time as run_at and due_at, or 'dead' with due_at NULL.
UPDATE _jl_jobs SET state = ?, run_at = ?, due_at = ?, last_error = ?, lease_until = NULL,
    lease_token = NULL, settled_at = ?, updated_at = ?
WHERE seq = ? AND lease_token = ? AND state = 'leased' AND lease_until > ?

-- name: release
-- Give the claim back unsettled: pending and due at once, the attempt stays counted.
UPDATE _jl_jobs SET state = 'pending', run_at = ?, due_at = ?, lease_until = NULL, lease_token = NULL,
    updated_at = ?
WHERE seq = ? AND lease_token = ? AND state = 'leased' AND lease_until > ?

-- name: renew
UPDATE _jl_jobs SET lease_until = ?, due_at = ?, updated_at = ?
WHERE seq = ? AND lease_token = ? AND state = 'leased' AND lease_until > ?

-- name: restart
-- A deferral: pending again as a clean generation (attempts from zero, no last error) due later.
UPDATE _jl_jobs SET state = 'pending', attempts = 0, run_at = ?, due_at = ?, last_error = NULL,
    lease_until = NULL, lease_token = NULL, updated_at = ?
WHERE seq = ? AND lease_token = ? AND state = 'leased' AND lease_until > ?

-- name: mark_checkpointed
UPDATE _jl_jobs SET checkpointed = 1, updated_at = ?
WHERE seq = ? AND lease_token = ? AND state = 'leased' AND lease_until > ?

-- name: hold
-- The fence alone, for a write a lease holder makes beside its job (an event its handler emits): one
-- row while the lease is this attempt's (seq, token, now); the write transaction already keeps
-- every other writer out until it commits.
SELECT 1 FROM _jl_jobs WHERE seq = ? AND lease_token = ? AND state = 'leased' AND lease_until > ?

-- name: lease_state
-- Why a fenced write matched nothing: the job's state, token, generation and lease expiry.
SELECT state, lease_token, lease_generation, lease_until FROM _jl_jobs WHERE seq = ?

-- name: unwind
-- Drop the lease of a job cancelled while it ran (its partition stays blocked until then).
UPDATE _jl_jobs SET lease_until = NULL, lease_token = NULL
WHERE seq = ? AND lease_token = ? AND state = 'cancelled'


-- name: save_checkpoint
INSERT INTO _jl_job_checkpoints(job_id, node, value, generation) VALUES (?, ?, ?, ?)
ON CONFLICT(job_id, node) DO UPDATE SET value = excluded.value, generation = excluded.generation

-- name: checkpoints
SELECT node, value FROM _jl_job_checkpoints WHERE job_id = ? ORDER BY node

-- name: prune_checkpoints
-- A completed job's checkpoints (those of its generation and earlier).
DELETE FROM _jl_job_checkpoints WHERE job_id = ? AND generation <= ?


-- name: state
SELECT state, lease_until FROM _jl_jobs WHERE id = ?

-- name: lock_state
-- The job's state and lease expiry for a change in the same transaction (the write transaction
-- already holds the database; a server backend locks the row).
SELECT state, lease_until FROM _jl_jobs WHERE id = ?

-- name: cancel
-- Terminal. A leased job keeps its lease (the third and fourth parameters: true) until its handler
-- unwinds, so its partition stays blocked meanwhile.
UPDATE _jl_jobs SET state = 'cancelled', due_at = NULL, settled_at = ?, updated_at = ?,
    last_error = coalesce(last_error, 'cancelled'),
    lease_until = CASE WHEN ? THEN lease_until END,
    lease_token = CASE WHEN ? THEN lease_token END
WHERE id = ?

-- name: requeue
-- Due again with more attempts: 'failed' (a retry) when it was attempted before, else 'pending'.
UPDATE _jl_jobs SET state = CASE WHEN attempts > 0 THEN 'failed' ELSE 'pending' END,
    run_at = ?, due_at = ?, max_attempts = attempts + ?, settled_at = NULL, result = NULL,
    lease_until = NULL, lease_token = NULL, updated_at = ?
WHERE id = ?

-- name: sweep_checkpoints
-- The checkpoints of the jobs sweep deletes (run first, in the same transaction, same parameters:
-- settled before, now, limit or NULL for all).
DELETE FROM _jl_job_checkpoints WHERE job_id IN (
    SELECT id FROM _jl_jobs
    WHERE settled_at < ? AND state IN ('done', 'dead', 'cancelled') AND (lease_until IS NULL OR lease_until <= ?)
    ORDER BY settled_at, seq LIMIT coalesce(?, -1))

-- name: sweep
-- Settled jobs (done, dead, cancelled and unleased) settled before a time, oldest first.
DELETE FROM _jl_jobs WHERE id IN (
    SELECT id FROM _jl_jobs
    WHERE settled_at < ? AND state IN ('done', 'dead', 'cancelled') AND (lease_until IS NULL OR lease_until <= ?)
    ORDER BY settled_at, seq LIMIT coalesce(?, -1))


-- name: get
SELECT id, kind, state, attempts, max_attempts, run_at, partition_key, coalescing_key, lease_until,
    lease_owner, lease_generation, last_error, payload, result, created_at, updated_at, settled_at,
    source_event, timeout
FROM _jl_jobs WHERE id = ?

-- name: list
-- In enqueue order; the last parameter is the limit (NULL: no limit).
SELECT id, kind, state, attempts, max_attempts, run_at, partition_key, coalescing_key, lease_until,
    lease_owner, lease_generation, last_error, payload, result, created_at, updated_at, settled_at,
    source_event, timeout
FROM _jl_jobs WHERE {where} ORDER BY seq LIMIT coalesce(?, -1)

-- name: failures
-- The latest failed or dead jobs, most recently updated first.
SELECT id, kind, state, attempts, max_attempts, run_at, partition_key, coalescing_key, lease_until,
    lease_owner, lease_generation, last_error, payload, result, created_at, updated_at, settled_at,
    source_event, timeout
FROM _jl_jobs WHERE state IN ('failed', 'dead') ORDER BY updated_at DESC, seq DESC LIMIT ?

-- name: counts
SELECT state, count(*) FROM _jl_jobs WHERE {where} GROUP BY state

-- name: where_state
state = ?

-- name: where_states
-- One of several states: the states asked for, the first repeated to fill all six places.
state IN (?, ?, ?, ?, ?, ?)

-- name: where_source_event
-- Enqueued by the handlers of one event (its seq).
source_event = ?

-- name: where_kind
kind = ?

-- name: where_after
-- After a job in enqueue order (the next page of a list).
seq > (SELECT seq FROM _jl_jobs WHERE id = ?)
