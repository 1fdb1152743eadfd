-- store.stats(): sizes of a collection's indexes.

-- name: index_bytes
SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind = 'i' AND c.relname = ANY (SELECT jsonb_array_elements_text(:names::jsonb))
