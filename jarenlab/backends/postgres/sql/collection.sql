-- A collection's table: key, pos (the storage order: the key itself for integer keys, an identity
-- kept through updates for text keys), doc (the exact JSON text the store wrote, handed back to
-- users) and body (jsonb generated from doc: what filters, orders and indexes read).
-- {table} is the collection's name.

-- name: insert
-- One document under an allocated integer key: one past both the largest stored key and the
-- largest key ever deleted (keys_seen), so a deleted key is never handed out again; returns it.
INSERT INTO {table}(key, doc) VALUES (
    greatest(coalesce((SELECT max(key) FROM {table}), 0),
        coalesce((SELECT last FROM _jl_keys WHERE collection = :collection), 0)) + 1,
    :doc) RETURNING key

-- name: insert_keyed
INSERT INTO {table}(key, doc) VALUES (:key, :doc)

-- name: put
INSERT INTO {table}(key, doc) VALUES (:key, :doc) ON CONFLICT (key) DO UPDATE SET doc = excluded.doc

-- name: next_key
-- The first key a batch allocates from: past every stored key and every deleted one.
SELECT greatest(coalesce((SELECT max(key) FROM {table}), 0),
    coalesce((SELECT last FROM _jl_keys WHERE collection = :collection), 0)) + 1

-- name: create_keys
-- Per collection with an allocated integer identity, the largest key ever deleted (a key is
-- allocated past it, so a deleted key is never reused).
CREATE TABLE IF NOT EXISTS _jl_keys (collection TEXT PRIMARY KEY, last bigint NOT NULL)

-- name: keys_seen
-- Remember a deleted key of an allocated identity (the largest one stays).
INSERT INTO _jl_keys(collection, last) VALUES (:collection, :last)
ON CONFLICT (collection) DO UPDATE SET last = greatest(_jl_keys.last, excluded.last)

-- name: get
SELECT doc FROM {table} WHERE key = :key

-- name: get_for_update
-- The document a patch reads and rewrites, locked until the transaction ends (no lost update).
SELECT doc FROM {table} WHERE key = :key FOR UPDATE

-- name: texts_of_for_update
-- The stored documents of these keys, locked until the transaction ends (a bulk put reads what it
-- replaces, so the change log can say what changed): key, document.
SELECT key, doc FROM {table} WHERE key IN ({keys}) FOR UPDATE

-- name: exists
SELECT 1 FROM {table} WHERE key = :key

-- name: update
UPDATE {table} SET doc = :doc WHERE key = :key

-- name: delete
-- Returns the deleted document (none: nothing was stored), so the change log knows what went.
DELETE FROM {table} WHERE key = :key RETURNING doc

-- name: count
SELECT count(*) FROM {table}

-- name: scan
-- Every key and document in storage order.
SELECT key, doc FROM {table} ORDER BY pos

-- name: keys
-- Every key in storage order.
SELECT key FROM {table} ORDER BY pos

-- name: positions
-- Every key's storage position (a live query places rows that writers committed out of order).
SELECT key, pos FROM {table}

-- name: positions_of
-- The storage positions of these keys (those a commit brought).
SELECT key, pos FROM {table} WHERE key IN ({keys})

-- name: page
-- The next documents in storage order after a position (a migration walks a collection in pages):
-- position, key, document.
SELECT pos, key, doc FROM {table} WHERE pos > :after ORDER BY pos LIMIT :limit

-- name: first_page
SELECT pos, key, doc FROM {table} ORDER BY pos LIMIT :limit

-- name: owned_by_string
-- An owned collection's rows of one owner (owner views read through owned_count and owned_scan,
-- whose owned field is one of these fragments): the owner member's JSON :path and the :owner.
-- The member's JSON type is tested first, so owner 1 never matches a stored true, "1" or 1.0.
jsonb_typeof(body #> :path) = 'string' AND (body #>> :path) = :owner

-- name: owned_by_integer
-- The stored lexeme, as written: a number written with a fraction or an exponent (1.0, 1e16) is
-- not an integer owner (jsonb would write 1e16 as 10000000000000000).
jsonb_typeof(body #> :path) = 'number' AND (doc #>> :path) = :owner::text

-- name: owned_count
SELECT count(*) FROM {table} WHERE {owned}

-- name: owned_scan
-- Keys and documents.
SELECT key, doc FROM {table} WHERE {owned} ORDER BY pos

-- name: owner_of
-- The owner member of a stored record (a clash names the other record's owner), as its JSON
-- text (the stored lexeme).
SELECT doc #> :path FROM {table} WHERE key = :key

-- name: save_update
-- A session's write of one changed document, whole (doc keeps the exact text the store wrote, so
-- no jsonb patch of its members); {check} is at_version for a versioned collection (a lost race
-- changes no row) or nothing.
UPDATE {table} SET doc = :doc WHERE key = :key AND {check}

-- name: save_delete
-- A session's delete of one document, checked like save_update; returns the deleted document.
DELETE FROM {table} WHERE key = :key AND {check} RETURNING doc

-- name: at_version
-- The stored document's version member (its path, a text array) is still the :version the
-- session read.
body #> :path = to_jsonb(:version::bigint)
