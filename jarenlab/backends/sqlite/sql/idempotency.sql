-- Retry-safe transactions: the results of the newest keys, stored as SHA-256 digests.
-- One call, in one transaction: claim the key; when the claim comes back empty, the key is taken:
-- read the stored call (lookup) and replay it; else run fn, record its result, prune.

-- name: create_results
CREATE TABLE IF NOT EXISTS _jl_transaction_results (seq INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, fingerprint BLOB NOT NULL, result TEXT NOT NULL, claimed_at TEXT NOT NULL) STRICT

-- name: claim
-- (key, fingerprint): a row when this call now holds the key, no row when it was taken before.
-- The result is '' until record fills it in the same transaction; the one writer holds the file
-- meanwhile, so no other call ever reads it.
INSERT INTO _jl_transaction_results(key, fingerprint, result, claimed_at)
VALUES (:key, :fingerprint, '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
ON CONFLICT(key) DO NOTHING RETURNING seq

-- name: lookup
-- (key): the stored call's (fingerprint, result); the result is '' while the call still runs.
SELECT fingerprint, result FROM _jl_transaction_results WHERE key = :key

-- name: record
-- (result, key): the claimed call's result.
UPDATE _jl_transaction_results SET result = :result WHERE key = :key

-- name: prune
-- Keep the newest :keep keys.
DELETE FROM _jl_transaction_results WHERE seq <=
(SELECT seq FROM _jl_transaction_results ORDER BY seq DESC LIMIT 1 OFFSET :keep)
