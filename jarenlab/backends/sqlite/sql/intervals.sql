-- The interval constraint. Each declaration's own statements (its partial index, the conflict
-- lookup, the checks of stored data) are built from the declaration by ../intervals.py; these are
-- the fixed ones.

-- name: owner_of
-- The owner member of the record a write clashed with, as its JSON text.
SELECT json_quote(json_extract(doc, :path)) FROM {table} WHERE key = :key
