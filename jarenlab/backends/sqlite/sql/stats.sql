-- store.stats(): sizes of a collection's indexes (a build without the dbstat table has none).

-- name: index_bytes
SELECT name, sum(pgsize) FROM dbstat WHERE name IN (SELECT value FROM json_each(:names)) GROUP BY name
