-- The store's own table: the model document and its hash, written once when the store is created.

-- name: create_meta
CREATE TABLE IF NOT EXISTS _jl_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT

-- name: get_meta
SELECT value FROM _jl_meta WHERE name = :name

-- name: put_meta
INSERT INTO _jl_meta(name, value) VALUES (:name, :value)

-- name: set_meta
-- Replace a value (a migration records the new model and its hash).
INSERT INTO _jl_meta(name, value) VALUES (:name, :value) ON CONFLICT(name) DO UPDATE SET value = excluded.value
