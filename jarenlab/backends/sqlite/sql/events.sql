-- The event ledger. _jl_events: one row per committed event; seq is the global order and the basis
-- of cursors. Rows are never deleted (expiry is a logical boundary), so a seq is never reused.
-- caused_by_job has no declared type on purpose: it keeps the job id exactly as the queue gives it.
-- _jl_events_dedupe is partial, so events without a dedupe key cost nothing in it.
-- _jl_event_history: at most one row; a missing row means the boundary is 0 (nothing expired).

-- name: create_events
CREATE TABLE IF NOT EXISTS _jl_events (
    seq INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    dedupe_key TEXT,
    outcome TEXT,
    caused_by_job,
    caused_by_attempt INTEGER
)

-- name: create_events_dedupe
CREATE UNIQUE INDEX IF NOT EXISTS _jl_events_dedupe ON _jl_events(dedupe_key) WHERE dedupe_key IS NOT NULL

-- name: create_history
CREATE TABLE IF NOT EXISTS _jl_event_history (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    expired_through INTEGER NOT NULL CHECK (expired_through >= 0)
)
