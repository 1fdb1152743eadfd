-- The change log: one record per commit that wrote documents, appended in the data's own transaction
-- under the store's "live" advisory lock (serialize), so seq = max + 1 is taken in commit order and a
-- rolled-back commit leaves no hole.

-- name: create_changes
CREATE TABLE IF NOT EXISTS _jl_changes (
    seq bigint PRIMARY KEY,
    at_ms bigint NOT NULL,
    source text NOT NULL,
    collections text NOT NULL,
    patch text
)

-- name: upgrade_earlier_changes
-- Records an earlier version wrote hold whole documents (an update as an `add`, a put that changed
-- nothing, a `remove` of a document inserted in the same commit), not the minimal patches the feed
-- serves: they become compact (patch NULL), so the feed asks a reader behind them to reset (JD2128)
-- and live queries re-seed, as for a bulk write.
UPDATE _jl_changes SET patch = NULL WHERE patch IS NOT NULL

-- name: append
-- One record; the caller holds the "live" lock, so max + 1 is the next seq in commit order.
INSERT INTO _jl_changes(seq, at_ms, source, collections, patch)
SELECT coalesce(max(seq), 0) + 1, :at_ms, :source, :collections, :patch FROM _jl_changes RETURNING seq

-- name: prune
-- Forget records at or below a seq (the newest are always kept).
DELETE FROM _jl_changes WHERE seq <= :through

-- name: bounds
-- Two subqueries, so each reads one end of the primary key (min and max together would scan it).
SELECT (SELECT min(seq) FROM _jl_changes), (SELECT max(seq) FROM _jl_changes)

-- name: high_watermark
SELECT coalesce(max(seq), 0) FROM _jl_changes

-- name: read
SELECT seq, at_ms, source, collections, patch FROM _jl_changes WHERE seq > :after ORDER BY seq LIMIT :limit
