-- A collection's table: key, the document's JSON text, typed generated columns per indexed path.
-- {table} is the collection's name. Storage order is the rowid (an integer key is the rowid).

-- name: insert
-- One document under an allocated integer key; returns the key.
INSERT INTO {table}(doc) VALUES (?) RETURNING key

-- name: insert_keyed
INSERT INTO {table}(key, doc) VALUES (?, ?)

-- name: put
INSERT INTO {table}(key, doc) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET doc = excluded.doc

-- name: next_key
-- The first key after every stored integer key (a batch allocates from here).
SELECT coalesce(max(key), 0) + 1 FROM {table}

-- name: get
SELECT doc FROM {table} WHERE key = ?

-- name: get_for_update
-- The document a patch reads and rewrites; the write transaction already excludes other writers.
SELECT doc FROM {table} WHERE key = ?

-- name: exists
SELECT 1 FROM {table} WHERE key = ?

-- name: update
UPDATE {table} SET doc = ? WHERE key = ?

-- name: delete
DELETE FROM {table} WHERE key = ?

-- name: count
SELECT count(*) FROM {table}

-- name: scan
-- Every key and document in storage order.
SELECT key, doc FROM {table} ORDER BY rowid

-- name: keys
-- Every key in storage order.
SELECT key FROM {table} ORDER BY rowid

-- name: page
-- The next documents in storage order after a position (a migration walks a collection in pages):
-- position, key, document.
SELECT rowid, key, doc FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?

-- name: first_page
SELECT rowid, key, doc FROM {table} ORDER BY rowid LIMIT ?
