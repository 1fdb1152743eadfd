-- The job queue. _jl_jobs holds one row per job; state is one of pending, leased, done, failed
-- (awaiting retry), dead (attempts exhausted) and cancelled. due_at is the claim key: run_at while
-- the job waits, lease_until while it is leased (an expired lease is claimable again), NULL once
-- settled. seq is the enqueue order (partitions run in it). _jl_job_checkpoints keeps named values a
-- running job saved, stamped with the writing claim's generation.
--
-- The pick (claim_picks, which claim and claim_leases include; claimable without row locks) is
-- the first by (priority DESC, due_at, seq) of the heads of the kinds the worker runs ({kinds}). A kind's head
-- (claim_head) is its first job by (priority DESC, due_at, seq) that is due, not cancelled, and the head of its
-- partition (no earlier job of the partition is waiting, running, retrying, or cancelled but still
-- unwinding); read through _jl_jobs_claim, so jobs of other kinds are never read.
--
-- The fence (complete, fail, release, renew, restart, mark_checkpointed end with it): the job's :seq,
-- the claim's :token, still leased, the lease not expired (:now). A fenced write that matches no row
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
    timeout REAL,
    last_traceback TEXT,
    priority INTEGER NOT NULL DEFAULT 0
)

-- name: upgrade_column_jobs_source_event
-- A queue made before jobs recorded the event that enqueued them: the column, empty for its jobs.
ALTER TABLE _jl_jobs ADD COLUMN source_event INTEGER

-- name: upgrade_column_jobs_timeout
-- A queue made before per-job handler timeouts: the column, empty (the kind's timeout applies).
ALTER TABLE _jl_jobs ADD COLUMN timeout REAL

-- name: upgrade_column_jobs_last_traceback
-- A queue made before failed attempts kept their traceback: the column, empty for its jobs.
ALTER TABLE _jl_jobs ADD COLUMN last_traceback TEXT

-- name: upgrade_column_jobs_priority
-- A queue made before priorities: the column, 0 (the default) for its jobs.
ALTER TABLE _jl_jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0

-- name: upgrade_earlier_jobs_claim
-- The claim index an earlier version made on (kind, due_at, seq): dropped, and made again with
-- the priority by create_jobs_claim (which runs after the upgrade).
DROP INDEX IF EXISTS _jl_jobs_claim

-- name: create_jobs_due
CREATE INDEX IF NOT EXISTS _jl_jobs_due ON _jl_jobs(due_at, seq) WHERE due_at IS NOT NULL

-- name: create_jobs_claim
-- The claim's pick by kind: a claim seeks the due jobs of each kind it runs, in (priority DESC,
-- due_at, seq) order, so jobs of kinds it does not run are never read (behind _jl_jobs_due alone they were).
CREATE INDEX IF NOT EXISTS _jl_jobs_claim ON _jl_jobs(kind, priority DESC, due_at, seq) WHERE due_at IS NOT NULL

-- name: create_jobs_partition
CREATE INDEX IF NOT EXISTS _jl_jobs_partition ON _jl_jobs(kind, partition_key, seq)
WHERE partition_key IS NOT NULL

-- name: create_jobs_source
-- The jobs an event's handlers enqueued (jobs.list(source_event=...)).
CREATE INDEX IF NOT EXISTS _jl_jobs_source ON _jl_jobs(source_event) WHERE source_event IS NOT NULL

-- name: create_jobs_coalescing
CREATE UNIQUE INDEX IF NOT EXISTS _jl_jobs_coalescing ON _jl_jobs(kind, coalescing_key)
WHERE coalescing_key IS NOT NULL AND state = 'pending' AND attempts = 0

-- name: create_jobs_leased
-- The kinds' running jobs, for max_running (jobs.running): leased jobs only, so it stays small.
CREATE INDEX IF NOT EXISTS _jl_jobs_leased ON _jl_jobs(kind, lease_until) WHERE state = 'leased'

-- name: create_job_limits
-- One row per kind with declared limits: a claim of a limited kind takes its row first
-- (lock_limits), so claims of one limited kind take turns and count what the last one committed.
CREATE TABLE IF NOT EXISTS _jl_job_limits (
    kind TEXT PRIMARY KEY
)

-- name: create_job_starts
-- One row per claim of a rate-limited kind, at the claim's time; pruned as it leaves the window.
CREATE TABLE IF NOT EXISTS _jl_job_starts (
    kind TEXT NOT NULL,
    at REAL NOT NULL
)

-- name: create_job_starts_kind
CREATE INDEX IF NOT EXISTS _jl_job_starts_kind ON _jl_job_starts(kind, at)

-- name: create_checkpoints
CREATE TABLE IF NOT EXISTS _jl_job_checkpoints (
    job_id TEXT NOT NULL,
    node TEXT NOT NULL,
    value TEXT,
    generation INTEGER NOT NULL,
    PRIMARY KEY (job_id, node)
) WITHOUT ROWID


-- name: enqueue
-- One job; an id already stored changes nothing (enqueue is idempotent by id). source_event is
-- the event whose handler enqueued it (or NULL), timeout its handler timeout in seconds (or NULL).
INSERT INTO _jl_jobs(id, kind, payload, state, run_at, due_at, max_attempts, partition_key,
    coalescing_key, created_at, updated_at, source_event, timeout, priority)
VALUES (:id, :kind, :payload, 'pending', :run_at, :due_at, :max_attempts, :partition_key, :coalescing_key, :created_at, :updated_at, :source_event, :timeout, :priority)
ON CONFLICT(id) DO NOTHING

-- name: enqueue_sixteen
-- Sixteen jobs in one statement (enqueue_many inserts in steps of sixteen, the rest one by one):
-- the same rows as sixteen single enqueues, in fewer statements.
INSERT INTO _jl_jobs(id, kind, payload, state, run_at, due_at, max_attempts, partition_key,
    coalescing_key, created_at, updated_at, source_event, timeout, priority)
VALUES (:id_0, :kind_0, :payload_0, 'pending', :run_at_0, :due_at_0, :max_attempts_0, :partition_key_0, :coalescing_key_0, :created_at_0, :updated_at_0, :source_event_0, :timeout_0, :priority_0),
    (:id_1, :kind_1, :payload_1, 'pending', :run_at_1, :due_at_1, :max_attempts_1, :partition_key_1, :coalescing_key_1, :created_at_1, :updated_at_1, :source_event_1, :timeout_1, :priority_1),
    (:id_2, :kind_2, :payload_2, 'pending', :run_at_2, :due_at_2, :max_attempts_2, :partition_key_2, :coalescing_key_2, :created_at_2, :updated_at_2, :source_event_2, :timeout_2, :priority_2),
    (:id_3, :kind_3, :payload_3, 'pending', :run_at_3, :due_at_3, :max_attempts_3, :partition_key_3, :coalescing_key_3, :created_at_3, :updated_at_3, :source_event_3, :timeout_3, :priority_3),
    (:id_4, :kind_4, :payload_4, 'pending', :run_at_4, :due_at_4, :max_attempts_4, :partition_key_4, :coalescing_key_4, :created_at_4, :updated_at_4, :source_event_4, :timeout_4, :priority_4),
    (:id_5, :kind_5, :payload_5, 'pending', :run_at_5, :due_at_5, :max_attempts_5, :partition_key_5, :coalescing_key_5, :created_at_5, :updated_at_5, :source_event_5, :timeout_5, :priority_5),
    (:id_6, :kind_6, :payload_6, 'pending', :run_at_6, :due_at_6, :max_attempts_6, :partition_key_6, :coalescing_key_6, :created_at_6, :updated_at_6, :source_event_6, :timeout_6, :priority_6),
    (:id_7, :kind_7, :payload_7, 'pending', :run_at_7, :due_at_7, :max_attempts_7, :partition_key_7, :coalescing_key_7, :created_at_7, :updated_at_7, :source_event_7, :timeout_7, :priority_7),
    (:id_8, :kind_8, :payload_8, 'pending', :run_at_8, :due_at_8, :max_attempts_8, :partition_key_8, :coalescing_key_8, :created_at_8, :updated_at_8, :source_event_8, :timeout_8, :priority_8),
    (:id_9, :kind_9, :payload_9, 'pending', :run_at_9, :due_at_9, :max_attempts_9, :partition_key_9, :coalescing_key_9, :created_at_9, :updated_at_9, :source_event_9, :timeout_9, :priority_9),
    (:id_10, :kind_10, :payload_10, 'pending', :run_at_10, :due_at_10, :max_attempts_10, :partition_key_10, :coalescing_key_10, :created_at_10, :updated_at_10, :source_event_10, :timeout_10, :priority_10),
    (:id_11, :kind_11, :payload_11, 'pending', :run_at_11, :due_at_11, :max_attempts_11, :partition_key_11, :coalescing_key_11, :created_at_11, :updated_at_11, :source_event_11, :timeout_11, :priority_11),
    (:id_12, :kind_12, :payload_12, 'pending', :run_at_12, :due_at_12, :max_attempts_12, :partition_key_12, :coalescing_key_12, :created_at_12, :updated_at_12, :source_event_12, :timeout_12, :priority_12),
    (:id_13, :kind_13, :payload_13, 'pending', :run_at_13, :due_at_13, :max_attempts_13, :partition_key_13, :coalescing_key_13, :created_at_13, :updated_at_13, :source_event_13, :timeout_13, :priority_13),
    (:id_14, :kind_14, :payload_14, 'pending', :run_at_14, :due_at_14, :max_attempts_14, :partition_key_14, :coalescing_key_14, :created_at_14, :updated_at_14, :source_event_14, :timeout_14, :priority_14),
    (:id_15, :kind_15, :payload_15, 'pending', :run_at_15, :due_at_15, :max_attempts_15, :partition_key_15, :coalescing_key_15, :created_at_15, :updated_at_15, :source_event_15, :timeout_15, :priority_15)
ON CONFLICT(id) DO NOTHING

-- name: exists
SELECT 1 FROM _jl_jobs WHERE id = :id

-- name: coalesced
-- The job holding a coalescing key: pending and never attempted (at most one, by the unique index).
SELECT seq, id, payload, run_at, partition_key FROM _jl_jobs
WHERE kind = :kind AND coalescing_key = :coalescing_key AND state = 'pending' AND attempts = 0

-- name: move_earlier
-- A waiting job's new due time (a coalesced repeat or a merged deferral asked for an earlier one).
UPDATE _jl_jobs SET run_at = :run_at, due_at = :due_at, updated_at = :now WHERE seq = :seq


-- name: claim
-- Lease the next claimable job, every kind with the same lease length: count the attempt, bump the
-- generation, store the fencing token; one statement.
UPDATE _jl_jobs SET state = 'leased', attempts = attempts + 1,
    lease_generation = lease_generation + 1, lease_owner = :owner, lease_token = :token,
    lease_until = :now + :seconds, due_at = :now + :seconds, updated_at = :now
WHERE seq = ({@claim_picks})
RETURNING seq, id, kind, payload, attempts, max_attempts, lease_generation, lease_until, checkpointed,
    run_at, created_at, partition_key, coalescing_key, last_error, source_event, timeout, priority

-- name: claim_leases
-- Like claim, when the kinds' leases differ: the seconds are one JSON object, kind -> seconds.
UPDATE _jl_jobs SET state = 'leased', attempts = attempts + 1,
    lease_generation = lease_generation + 1, lease_owner = :owner, lease_token = :token,
    lease_until = :now + (SELECT value FROM json_each(:leases) WHERE key = kind),
    due_at = :now + (SELECT value FROM json_each(:leases) WHERE key = kind), updated_at = :now
WHERE seq = ({@claim_picks})
RETURNING seq, id, kind, payload, attempts, max_attempts, lease_generation, lease_until, checkpointed,
    run_at, created_at, partition_key, coalescing_key, last_error, source_event, timeout, priority

-- name: claimable
-- The job a claim would lease now, if any (its seq): the first of the kinds' heads by (priority
-- DESC, due_at, seq).
SELECT j.seq FROM _jl_jobs j
WHERE j.seq IN (SELECT ({@claim_head}) FROM (SELECT value AS kind FROM json_each(json_array({kinds}))) AS k)
ORDER BY j.priority DESC, j.due_at, j.seq LIMIT 1

-- name: claim_picks
-- The claim's pick: the job claimable names (SQLite's one writer needs no row locks).
{@claimable}

-- name: claim_head
-- The first claimable job of one kind (k.kind) by (priority DESC, due_at, seq), read through
-- _jl_jobs_claim: the jobs of kinds the claim does not run are never read.
SELECT h.seq FROM _jl_jobs h
WHERE h.kind = k.kind AND h.due_at <= :now AND h.state != 'cancelled'
  AND (h.partition_key IS NULL OR NOT EXISTS (
    SELECT 1 FROM _jl_jobs p WHERE p.kind = h.kind AND p.partition_key = h.partition_key
      AND p.seq < h.seq AND (p.due_at IS NOT NULL OR (p.state = 'cancelled' AND p.lease_until > :now))))
ORDER BY h.priority DESC, h.due_at, h.seq LIMIT 1

-- name: next_due
-- When work of the kinds under way (retrying, leased) next falls due; with :scheduled true,
-- pending work scheduled later counts too.
SELECT min(due_at) FROM _jl_jobs
WHERE due_at IS NOT NULL AND kind IN ({kinds}) AND (state IN ('failed', 'leased') OR :scheduled)

-- name: open_count
-- Jobs of the kinds not settled yet (pending, leased, failed).
SELECT count(*) FROM _jl_jobs WHERE due_at IS NOT NULL AND kind IN ({kinds})


-- name: add_limit
-- A limited kind's row (once; a kind already there changes nothing).
INSERT INTO _jl_job_limits(kind) VALUES (:kind) ON CONFLICT DO NOTHING

-- name: lock_limits
-- The kinds' limit rows, for the claim's write transaction: SQLite's one writer already holds
-- them (nothing more to take).
SELECT kind FROM _jl_job_limits WHERE kind IN ({kinds}) ORDER BY kind

-- name: running
-- How many jobs of a kind run now (leased, the lease not expired), counted up to :cap, and the
-- first of their leases to end.
SELECT count(*), min(lease_until) FROM (SELECT lease_until FROM _jl_jobs
    WHERE kind = :kind AND state = 'leased' AND lease_until > :now ORDER BY lease_until LIMIT :cap) AS r

-- name: window_start
-- The (:skip + 1)-th latest start of a kind after :since, if any: the rate is full while it is.
SELECT at FROM _jl_job_starts WHERE kind = :kind AND at > :since ORDER BY at DESC LIMIT 1 OFFSET :skip

-- name: record_start
INSERT INTO _jl_job_starts(kind, at) VALUES (:kind, :at)

-- name: prune_starts
-- A kind's starts that left its window (at or before :before).
DELETE FROM _jl_job_starts WHERE kind = :kind AND at <= :before


-- name: complete
UPDATE _jl_jobs SET state = 'done', result = :result, due_at = NULL, lease_until = NULL, lease_token = NULL,
    settled_at = :now, updated_at = :now
WHERE seq = :seq AND lease_token = :token AND state = 'leased' AND lease_until > :now

-- name: fail
-- A failed attempt: 'failed' with the retry time as run_at and due_at, or 'dead' with due_at NULL.
UPDATE _jl_jobs SET state = :state, run_at = :run_at, due_at = :due_at, last_error = :error, last_traceback = :traceback,
    lease_until = NULL,
    lease_token = NULL, settled_at = :settled_at, updated_at = :now
WHERE seq = :seq AND lease_token = :token AND state = 'leased' AND lease_until > :now

-- name: release
-- Give the claim back unsettled: pending and due at once, the attempt stays counted.
UPDATE _jl_jobs SET state = 'pending', run_at = :run_at, due_at = :due_at, lease_until = NULL, lease_token = NULL,
    updated_at = :now
WHERE seq = :seq AND lease_token = :token AND state = 'leased' AND lease_until > :now

-- name: renew
UPDATE _jl_jobs SET lease_until = :lease_until, due_at = :due_at, updated_at = :now
WHERE seq = :seq AND lease_token = :token AND state = 'leased' AND lease_until > :now

-- name: restart
-- A deferral: pending again as a clean generation (attempts from zero, no last error) due later.
UPDATE _jl_jobs SET state = 'pending', attempts = 0, run_at = :run_at, due_at = :due_at, last_error = NULL, last_traceback = NULL,
    lease_until = NULL, lease_token = NULL, updated_at = :now
WHERE seq = :seq AND lease_token = :token AND state = 'leased' AND lease_until > :now

-- name: mark_checkpointed
UPDATE _jl_jobs SET checkpointed = 1, updated_at = :now
WHERE seq = :seq AND lease_token = :token AND state = 'leased' AND lease_until > :now

-- name: hold
-- The fence alone, for a write a lease holder makes beside its job (an event its handler emits): one
-- row while the lease is this attempt's; the write transaction already keeps
-- every other writer out until it commits.
SELECT 1 FROM _jl_jobs WHERE seq = :seq AND lease_token = :token AND state = 'leased' AND lease_until > :now

-- name: lease_state
-- Why a fenced write matched nothing: the job's state, token, generation and lease expiry.
SELECT state, lease_token, lease_generation, lease_until FROM _jl_jobs WHERE seq = :seq

-- name: unwind
-- Drop the lease of a job cancelled while it ran (its partition stays blocked until then).
UPDATE _jl_jobs SET lease_until = NULL, lease_token = NULL
WHERE seq = :seq AND lease_token = :token AND state = 'cancelled'


-- name: save_checkpoint
INSERT INTO _jl_job_checkpoints(job_id, node, value, generation) VALUES (:id, :node, :value, :generation)
ON CONFLICT(job_id, node) DO UPDATE SET value = excluded.value, generation = excluded.generation

-- name: checkpoints
SELECT node, value FROM _jl_job_checkpoints WHERE job_id = :id ORDER BY node

-- name: prune_checkpoints
-- A completed job's checkpoints (those of its generation and earlier).
DELETE FROM _jl_job_checkpoints WHERE job_id = :id AND generation <= :generation


-- name: state
SELECT state, lease_until FROM _jl_jobs WHERE id = :id

-- name: lock_state
-- The job's state and lease expiry for a change in the same transaction (the write transaction
-- already holds the database; a server backend locks the row).
SELECT state, lease_until FROM _jl_jobs WHERE id = :id

-- name: cancel
-- Terminal. A leased job keeps its lease (:leased true) until its handler
-- unwinds, so its partition stays blocked meanwhile.
UPDATE _jl_jobs SET state = 'cancelled', due_at = NULL, settled_at = :now, updated_at = :now,
    last_error = coalesce(last_error, 'cancelled'),
    lease_until = CASE WHEN :leased THEN lease_until END,
    lease_token = CASE WHEN :leased THEN lease_token END
WHERE id = :id

-- name: requeue
-- Due again with more attempts: 'failed' (a retry) when it was attempted before, else 'pending'.
UPDATE _jl_jobs SET state = CASE WHEN attempts > 0 THEN 'failed' ELSE 'pending' END,
    run_at = :run_at, due_at = :due_at, max_attempts = attempts + :attempts, settled_at = NULL, result = NULL,
    lease_until = NULL, lease_token = NULL, updated_at = :now
WHERE id = :id

-- name: sweep_checkpoints
-- The checkpoints of the jobs sweep deletes (run first, in the same transaction, same parameters;
-- :limit NULL is all).
DELETE FROM _jl_job_checkpoints WHERE job_id IN (
    SELECT id FROM _jl_jobs
    WHERE settled_at < :before AND state IN ('done', 'dead', 'cancelled') AND (lease_until IS NULL OR lease_until <= :now)
    ORDER BY settled_at, seq LIMIT coalesce(:limit, -1))

-- name: sweep
-- Settled jobs (done, dead, cancelled and unleased) settled before a time, oldest first.
DELETE FROM _jl_jobs WHERE id IN (
    SELECT id FROM _jl_jobs
    WHERE settled_at < :before AND state IN ('done', 'dead', 'cancelled') AND (lease_until IS NULL OR lease_until <= :now)
    ORDER BY settled_at, seq LIMIT coalesce(:limit, -1))


-- name: get
SELECT id, kind, state, attempts, max_attempts, run_at, partition_key, coalescing_key, lease_until,
    lease_owner, lease_generation, last_error, payload, result, created_at, updated_at, settled_at,
    source_event, timeout, last_traceback, priority
FROM _jl_jobs WHERE id = :id

-- name: list
-- In enqueue order; :limit NULL is no limit.
SELECT id, kind, state, attempts, max_attempts, run_at, partition_key, coalescing_key, lease_until,
    lease_owner, lease_generation, last_error, payload, result, created_at, updated_at, settled_at,
    source_event, timeout, last_traceback, priority
FROM _jl_jobs WHERE {where} ORDER BY seq LIMIT coalesce(:limit, -1)

-- name: failures
-- The latest failed or dead jobs, most recently updated first.
SELECT id, kind, state, attempts, max_attempts, run_at, partition_key, coalescing_key, lease_until,
    lease_owner, lease_generation, last_error, payload, result, created_at, updated_at, settled_at,
    source_event, timeout, last_traceback, priority
FROM _jl_jobs WHERE state IN ('failed', 'dead') ORDER BY updated_at DESC, seq DESC LIMIT :limit

-- name: counts
SELECT state, count(*) FROM _jl_jobs WHERE {where} GROUP BY state

-- name: where_state
state = :state

-- name: where_states
-- One of several states: the states asked for, the first repeated to fill all six places.
state IN (:state1, :state2, :state3, :state4, :state5, :state6)

-- name: where_source_event
-- Enqueued by the handlers of one event (its seq).
source_event = :source_event

-- name: where_kind
kind = :kind

-- name: where_after
-- After a job in enqueue order (the next page of a list).
seq > (SELECT seq FROM _jl_jobs WHERE id = :after)
