-- Owner views: the rows of one owner in an owned collection, in storage order. {owned} is one of
-- the owned_by_* fragments: the owner's JSON :path and the :owner.
-- json_type guards the member's type, so owner 1 never matches a stored true or 1.0.

-- name: owned_by_string
json_type(doc, :path) = 'text' AND json_extract(doc, :path) = :owner

-- name: owned_by_integer
json_type(doc, :path) = 'integer' AND json_extract(doc, :path) = :owner

-- name: count
SELECT count(*) FROM {table} WHERE {owned}

-- name: docs
SELECT doc FROM {table} WHERE {owned} ORDER BY rowid

-- name: scan
-- Keys and documents.
SELECT key, doc FROM {table} WHERE {owned} ORDER BY rowid
