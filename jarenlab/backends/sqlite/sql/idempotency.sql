-- Retry-safe transactions: the results of the newest keys, stored as SHA-256 digests.

-- name: create_results
CREATE TABLE IF NOT EXISTS _jl_transaction_results (seq INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, fingerprint BLOB NOT NULL, result TEXT NOT NULL, claimed_at TEXT NOT NULL) STRICT

-- name: claim
SELECT fingerprint, result FROM _jl_transaction_results WHERE key = ?

-- name: record
INSERT INTO _jl_transaction_results(key, fingerprint, result, claimed_at)
VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))

-- name: prune
-- Keep the newest ? keys.
DELETE FROM _jl_transaction_results WHERE seq <=
(SELECT seq FROM _jl_transaction_results ORDER BY seq DESC LIMIT 1 OFFSET ?)
