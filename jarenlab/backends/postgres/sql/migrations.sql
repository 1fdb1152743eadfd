-- The history of a store's migrations: one row per applied migration, written in its transaction.
-- steps is a JSON array of {kind, collection, detail, how, documents}.

-- name: create_migrations
CREATE TABLE IF NOT EXISTS _jl_migrations (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_ms bigint NOT NULL,
    from_hash text NOT NULL,
    to_hash text NOT NULL,
    from_version bigint,
    to_version bigint,
    steps text NOT NULL,
    documents bigint NOT NULL,
    duration_ms double precision NOT NULL
)

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
