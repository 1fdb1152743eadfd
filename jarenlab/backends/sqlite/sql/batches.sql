-- Fan-out batches. _jl_batches holds one row per batch: the kind of its jobs, the combiner's kind,
-- payload and attempt budget, its size, and how many of its jobs have settled (failed: of those,
-- how many dead or cancelled). _jl_batch_members holds each job's position and, once it settled
-- (done, dead or cancelled), its outcome with its result or error: a member settles once
-- (outcome IS NULL guards it), and the settlement that brings settled to size enqueues the combiner
-- in the same transaction. On SQLite the single writer orders the settlements.

-- name: create_batches
CREATE TABLE IF NOT EXISTS _jl_batches (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    then_kind TEXT NOT NULL,
    then_payload TEXT,
    then_attempts INTEGER NOT NULL,
    size INTEGER NOT NULL,
    settled INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    combiner TEXT,
    created_at REAL NOT NULL,
    completed_at REAL
)

-- name: create_batch_members
CREATE TABLE IF NOT EXISTS _jl_batch_members (
    batch_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    job_id TEXT NOT NULL UNIQUE,
    outcome TEXT CHECK (outcome IN ('done','dead','cancelled')),
    result TEXT,
    error TEXT,
    PRIMARY KEY (batch_id, position)
)

-- name: insert
INSERT INTO _jl_batches(id, kind, then_kind, then_payload, then_attempts, size, created_at)
VALUES (:id, :kind, :then_kind, :then_payload, :then_attempts, :size, :now)
ON CONFLICT(id) DO NOTHING

-- name: insert_member
INSERT INTO _jl_batch_members(batch_id, position, job_id) VALUES (:batch_id, :position, :job_id)

-- name: settle_member
-- In the job's settlement transaction: the member's outcome, once (a job requeued after it settled
-- changes nothing here). Returns the batch when this was the member's first settlement.
UPDATE _jl_batch_members SET outcome = :outcome, result = :result, error = :error
WHERE job_id = :job_id AND outcome IS NULL
RETURNING batch_id

-- name: count_settled
-- One more member settled; the settlement that sees settled = size enqueues the combiner.
UPDATE _jl_batches SET settled = settled + 1, failed = failed + :failed WHERE id = :id
RETURNING settled, size, then_kind, then_payload, then_attempts

-- name: complete
UPDATE _jl_batches SET combiner = :combiner, completed_at = :now WHERE id = :id

-- name: outcomes
SELECT position, job_id, outcome, result, error FROM _jl_batch_members WHERE batch_id = :id ORDER BY position

-- name: get
SELECT id, kind, then_kind, size, settled, failed, combiner, created_at, completed_at FROM _jl_batches
WHERE id = :id

-- name: list
SELECT id, kind, then_kind, size, settled, failed, combiner, created_at, completed_at FROM _jl_batches
ORDER BY created_at DESC, id LIMIT :limit

-- name: members
-- Each member with its job's state and attempts now, in position order.
SELECT m.position, m.job_id, j.state, j.attempts, m.outcome, m.error
FROM _jl_batch_members m LEFT JOIN _jl_jobs j ON j.id = m.job_id
WHERE m.batch_id = :id ORDER BY m.position
