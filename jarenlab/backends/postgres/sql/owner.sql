-- Owner views: the rows of one owner in an owned collection, in storage order. {owned} is one of
-- the owned_by_* fragments: the owner's JSON :path and the :owner.
-- The member's JSON type is tested first, so owner 1 never matches a stored true, "1" or 1.0.
--

-- name: owned_by_string
jsonb_typeof(body #> :path) = 'string' AND (body #>> :path) = :owner

-- name: owned_by_integer
-- The stored lexeme, as written: a number written with a fraction or an exponent (1.0, 1e16) is
-- not an integer owner (jsonb would write 1e16 as 10000000000000000).
jsonb_typeof(body #> :path) = 'number' AND (doc #>> :path) = :owner::text

-- name: count
SELECT count(*) FROM {table} WHERE {owned}

-- name: docs
SELECT doc FROM {table} WHERE {owned} ORDER BY pos

-- name: scan
-- Keys and documents.
SELECT key, doc FROM {table} WHERE {owned} ORDER BY pos
