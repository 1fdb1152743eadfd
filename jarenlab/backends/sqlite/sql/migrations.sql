-- The history of a store's migrations: one row per applied migration, written in its transaction.
-- steps is a JSON array of {kind, collection, detail, how, documents}.

-- name: create_migrations
CREATE TABLE IF NOT EXISTS _jl_migrations (
    id INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL,
    from_hash TEXT NOT NULL,
    to_hash TEXT NOT NULL,
    from_version INTEGER,
    to_version INTEGER,
    steps TEXT NOT NULL,
    documents INTEGER NOT NULL,
    duration_ms REAL NOT NULL
) STRICT

-- name: record
INSERT INTO _jl_migrations(at_ms, from_hash, to_hash, from_version, to_version, steps, documents, duration_ms)
VALUES (:at_ms, :from_hash, :to_hash, :from_version, :to_version, :steps, :documents, :duration_ms)

-- name: history
-- Every migration, oldest first.
SELECT id, at_ms, from_hash, to_hash, from_version, to_version, steps, documents, duration_ms
FROM _jl_migrations ORDER BY id

-- name: last
-- The newest migration's target hash (what the stored model must be).
SELECT to_hash FROM _jl_migrations ORDER BY id DESC LIMIT 1
