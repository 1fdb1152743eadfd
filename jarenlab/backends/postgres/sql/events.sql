-- The event ledger. _jl_events: one row per committed event; seq is the global order (max + 1 under the
-- store's "events" advisory lock, so seq order is commit order). Rows are never deleted.
-- _jl_event_history: at most one row (the expired-history boundary). Placeholders are %s.

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
