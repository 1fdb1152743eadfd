-- The event ledger. _jl_events: one row per committed event; seq is the global order (max + 1 under the
-- store's "events" advisory lock, so seq order is commit order). Rows are never deleted.
-- _jl_event_history: at most one row (the expired-history boundary).

-- name: create_events
CREATE TABLE IF NOT EXISTS _jl_events (
    seq bigint PRIMARY KEY,
    type text COLLATE "C" NOT NULL,
    payload text NOT NULL,
    at_ms bigint NOT NULL,
    dedupe_key text COLLATE "C",
    outcome text,
    caused_by_job text,
    caused_by_attempt bigint
)

-- name: create_events_dedupe
CREATE UNIQUE INDEX IF NOT EXISTS _jl_events_dedupe ON _jl_events(dedupe_key) WHERE dedupe_key IS NOT NULL

-- name: create_history
CREATE TABLE IF NOT EXISTS _jl_event_history (
    singleton integer PRIMARY KEY CHECK (singleton = 1),
    expired_through bigint NOT NULL CHECK (expired_through >= 0)
)

-- name: append
-- One event; returns its seq.
-- The emit's transaction holds the "events" lock (serialize) from before its dedupe lookup to its
-- COMMIT, so max + 1 is the next seq in commit order and a rolled-back emit leaves no hole.
INSERT INTO _jl_events(seq, type, payload, at_ms, dedupe_key, caused_by_job, caused_by_attempt)
SELECT coalesce(max(seq), 0) + 1, :type, :payload, :at_ms, :dedupe_key, :caused_by_job, :caused_by_attempt FROM _jl_events RETURNING seq

-- name: set_outcome
UPDATE _jl_events SET outcome = :outcome WHERE seq = :seq

-- name: by_dedupe_key
SELECT seq, type, payload, at_ms, dedupe_key, outcome, caused_by_job, caused_by_attempt
FROM _jl_events WHERE dedupe_key = :dedupe_key

-- name: latest
-- The newest events after a seq, newest first: (after, ...{also}, limit). {also} is () or
-- ("at_or_after",).
SELECT seq, type, payload, at_ms, dedupe_key, outcome, caused_by_job, caused_by_attempt
FROM _jl_events WHERE seq > :after AND {also} ORDER BY seq DESC LIMIT :limit

-- name: latest_of_types
-- latest, of the given types only: (after, type..., ...{also}, limit).
SELECT seq, type, payload, at_ms, dedupe_key, outcome, caused_by_job, caused_by_attempt
FROM _jl_events WHERE seq > :after AND type IN ({types}) AND {also} ORDER BY seq DESC LIMIT :limit

-- name: at_or_after
-- Events stamped at or after a time in epoch milliseconds.
at_ms >= :at_ms

-- name: after
-- The oldest events after a seq, oldest first: (after, limit).
SELECT seq, type, payload, at_ms, dedupe_key, outcome, caused_by_job, caused_by_attempt
FROM _jl_events WHERE seq > :after ORDER BY seq LIMIT :limit

-- name: after_of_types
-- after, of the given types only: (after, type..., limit).
SELECT seq, type, payload, at_ms, dedupe_key, outcome, caused_by_job, caused_by_attempt
FROM _jl_events WHERE seq > :after AND type IN ({types}) ORDER BY seq LIMIT :limit

-- name: head
-- The latest seq (0 for an empty ledger).
SELECT coalesce(max(seq), 0) FROM _jl_events

-- name: boundary
-- The expired boundary; no row means 0.
SELECT expired_through FROM _jl_event_history WHERE singleton = 1

-- name: expire_through
-- Move the boundary forward to a seq (never back); atomic on the row, so racing calls keep the larger.
INSERT INTO _jl_event_history(singleton, expired_through) VALUES (1, :seq)
ON CONFLICT (singleton) DO UPDATE
SET expired_through = greatest(_jl_event_history.expired_through, excluded.expired_through)

-- Handler modules and versioned materializations (jarenlab/events/modules.py, rebuild.py).
-- _jl_event_graph: at most one row: the installed module names in order (a JSON array) and a stamp
-- that every install changing the graph or a version moves on (emits compare it with their own).
-- _jl_materializations: one row per materialization (module-namespaced name), the version its
-- collection was last rebuilt at.

-- name: create_graph
CREATE TABLE IF NOT EXISTS _jl_event_graph (
    singleton integer PRIMARY KEY CHECK (singleton = 1),
    modules text NOT NULL,
    stamp bigint NOT NULL
)

-- name: create_materializations
CREATE TABLE IF NOT EXISTS _jl_materializations (
    name text COLLATE "C" PRIMARY KEY,
    collection text COLLATE "C" NOT NULL,
    version bigint NOT NULL CHECK (version >= 1),
    rebuilt_at_ms bigint NOT NULL,
    replayed bigint NOT NULL
)

-- name: graph
-- The recorded module names (JSON) and stamp; no row: no module installed yet.
SELECT modules, stamp FROM _jl_event_graph WHERE singleton = 1

-- name: graph_stamp
SELECT stamp FROM _jl_event_graph WHERE singleton = 1

-- name: set_graph
INSERT INTO _jl_event_graph(singleton, modules, stamp) VALUES (1, :modules, :stamp)
ON CONFLICT (singleton) DO UPDATE SET modules = excluded.modules, stamp = excluded.stamp

-- name: materializations
SELECT name, collection, version, rebuilt_at_ms, replayed FROM _jl_materializations ORDER BY name

-- name: set_materialization
INSERT INTO _jl_materializations(name, collection, version, rebuilt_at_ms, replayed)
VALUES (:name, :collection, :version, :rebuilt_at_ms, :replayed)
ON CONFLICT (name) DO UPDATE SET collection = excluded.collection, version = excluded.version,
    rebuilt_at_ms = excluded.rebuilt_at_ms, replayed = excluded.replayed

-- name: count_of_types
-- How many events of the given types there are up to a seq, expired or not: (through, type...).
SELECT count(*) FROM _jl_events WHERE seq <= :through AND type IN ({types})
