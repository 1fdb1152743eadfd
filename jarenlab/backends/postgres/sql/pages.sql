-- Keyset pages: the store's secret that signs page continuations (one row, made on first use),
-- so a continuation altered by hand, or made by another store, is refused.

-- name: create_keys
CREATE TABLE IF NOT EXISTS _jl_page_keys (id integer PRIMARY KEY CHECK (id = 1), secret text NOT NULL)

-- name: put_key
-- (secret): keeps the first secret ever written.
INSERT INTO _jl_page_keys(id, secret) VALUES (1, :secret) ON CONFLICT (id) DO NOTHING

-- name: get_key
SELECT secret FROM _jl_page_keys WHERE id = 1
