-- Signals: transient messages a queue handler sends. _jl_signals holds one row per live signal
-- (its type, payload, time, the job attempt that sent it and how many of its jobs are unsettled);
-- _jl_signal_work maps each job its handlers enqueued to the signal, until that job settles. A
-- settlement removes its job's row and counts the signal down; the one that reaches zero deletes
-- the signal, in the same transaction. Signals are not events: no stream, frame or cursor reads
-- these tables. On PostgreSQL count_settled locks the signal's row until the settlement commits, so
-- two settlements of one signal take turns: exactly one sees pending reach zero.

-- name: create_signals
CREATE TABLE IF NOT EXISTS _jl_signals (
    id text COLLATE "C" PRIMARY KEY,
    type text NOT NULL,
    payload text NOT NULL,
    at_ms bigint NOT NULL,
    job text NOT NULL,
    attempt integer NOT NULL,
    pending integer NOT NULL
)

-- name: create_signal_work
CREATE TABLE IF NOT EXISTS _jl_signal_work (
    job_id text COLLATE "C" PRIMARY KEY,
    signal_id text NOT NULL
)

-- name: insert
INSERT INTO _jl_signals(id, type, payload, at_ms, job, attempt, pending)
VALUES (:id, :type, :payload, :at_ms, :job, :attempt, :pending)

-- name: insert_work
INSERT INTO _jl_signal_work(job_id, signal_id) VALUES (:job_id, :signal_id)

-- name: settle_work
-- In a job's settlement transaction: the job is no longer the signal's pending work (once: a job
-- requeued after it settled finds nothing). Returns the signal.
DELETE FROM _jl_signal_work WHERE job_id = :job_id RETURNING signal_id

-- name: count_settled
UPDATE _jl_signals SET pending = pending - 1 WHERE id = :id RETURNING pending

-- name: delete
DELETE FROM _jl_signals WHERE id = :id

-- name: live
SELECT s.id, s.type, s.payload, s.at_ms, s.job, s.attempt, s.pending, w.job_id
FROM _jl_signals AS s LEFT JOIN _jl_signal_work AS w ON w.signal_id = s.id
ORDER BY s.at_ms, s.id, w.job_id
