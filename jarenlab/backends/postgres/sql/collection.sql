-- A collection's table: key, pos (the storage order: the key itself for integer keys, an identity
-- kept through updates for text keys), doc (the exact JSON text the store wrote, handed back to
-- users) and body (jsonb generated from doc: what filters, orders and indexes read).
-- {table} is the collection's name. Placeholders are %s.

-- name: insert
-- One document under an allocated integer key (max + 1: the caller holds the collection's
-- key lock, so concurrent inserts cannot take the same key); returns the key.
INSERT INTO {table}(key, doc) SELECT coalesce(max(key), 0) + 1, %s FROM {table} RETURNING key

-- name: insert_keyed
INSERT INTO {table}(key, doc) VALUES (%s, %s)

-- name: put
INSERT INTO {table}(key, doc) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET doc = excluded.doc

-- name: next_key
-- The first key after every stored integer key (a batch allocates from here under the key lock).
SELECT coalesce(max(key), 0) + 1 FROM {table}

-- name: get
SELECT doc FROM {table} WHERE key = %s

-- name: get_for_update
-- The document a patch reads and rewrites, locked until the transaction ends (no lost update).
SELECT doc FROM {table} WHERE key = %s FOR UPDATE

-- name: exists
SELECT 1 FROM {table} WHERE key = %s

-- name: update
UPDATE {table} SET doc = %s WHERE key = %s

-- name: delete
DELETE FROM {table} WHERE key = %s

-- name: count
SELECT count(*) FROM {table}

-- name: scan
-- Every key and document in storage order.
SELECT key, doc FROM {table} ORDER BY pos

-- name: keys
-- Every key in storage order.
SELECT key FROM {table} ORDER BY pos

-- name: page
-- The next documents in storage order after a position (a migration walks a collection in pages):
-- position, key, document.
SELECT pos, key, doc FROM {table} WHERE pos > %s ORDER BY pos LIMIT %s

-- name: first_page
SELECT pos, key, doc FROM {table} ORDER BY pos LIMIT %s
