-- Periodic jobs. _jl_schedules holds one row per declared schedule: its cron expression and zone,
-- the job it enqueues, its missed-period policy, and last_period, the latest period already
-- decided (enqueued or recorded missed; at first the time it was declared). _jl_schedule_periods
-- records each decision once, keyed by (schedule, period): the hard guarantee that a period is
-- enqueued once however many workers tick at once. A run row (outcome enqueued or caught_up) names
-- its job; a missed row stands for a gap of count periods from period through through.

-- name: create_schedules
CREATE TABLE IF NOT EXISTS _jl_schedules (
    name text COLLATE "C" PRIMARY KEY,
    kind text NOT NULL,
    cron text NOT NULL,
    tz text NOT NULL,
    payload text,
    missed text NOT NULL CHECK (missed IN ('latest','skip')),
    grace double precision NOT NULL,
    last_period double precision NOT NULL,
    last_tick double precision,
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL
)

-- name: create_schedule_periods
CREATE TABLE IF NOT EXISTS _jl_schedule_periods (
    schedule text COLLATE "C" NOT NULL,
    period double precision NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('enqueued','caught_up','missed')),
    job_id text,
    through double precision NOT NULL,
    count integer NOT NULL,
    at double precision NOT NULL,
    PRIMARY KEY (schedule, period)
)

-- name: declare
-- A new schedule starts at :now (periods after it are its own); declaring it again changes what it
-- enqueues and keeps where it got to.
INSERT INTO _jl_schedules(name, kind, cron, tz, payload, missed, grace, last_period, created_at, updated_at)
VALUES (:name, :kind, :cron, :tz, :payload, :missed, :grace, :now, :now, :now)
ON CONFLICT(name) DO UPDATE SET kind = excluded.kind, cron = excluded.cron, tz = excluded.tz,
    payload = excluded.payload, missed = excluded.missed, grace = excluded.grace,
    updated_at = excluded.updated_at

-- name: lock
-- The latest decided period, its row locked until the tick's transaction ends: ticks of one schedule
-- take turns, and the second sees the first's decision.
SELECT last_period FROM _jl_schedules WHERE name = :name FOR UPDATE

-- name: advance
UPDATE _jl_schedules SET last_period = :period, last_tick = :now WHERE name = :name AND last_period < :period

-- name: record
-- One decision per (schedule, period): a second ticker's insert changes nothing.
INSERT INTO _jl_schedule_periods(schedule, period, outcome, job_id, through, count, at)
VALUES (:schedule, :period, :outcome, :job_id, :through, :count, :at)
ON CONFLICT(schedule, period) DO NOTHING

-- name: list
-- Each schedule with its latest run, how many periods it missed in all, and its latest run's job state.
SELECT s.name, s.kind, s.cron, s.tz, s.payload, s.missed, s.grace, s.last_period, s.last_tick, s.created_at,
    (SELECT MAX(period) FROM _jl_schedule_periods p WHERE p.schedule = s.name AND p.outcome <> 'missed'),
    (SELECT COALESCE(SUM(count), 0) FROM _jl_schedule_periods p WHERE p.schedule = s.name AND p.outcome = 'missed')
FROM _jl_schedules s ORDER BY s.name

-- name: periods
-- A schedule's decisions, latest first, each run with its job's state now.
SELECT p.period, p.outcome, p.job_id, p.through, p.count, p.at, j.state
FROM _jl_schedule_periods p LEFT JOIN _jl_jobs j ON j.id = p.job_id
WHERE p.schedule = :name ORDER BY p.period DESC LIMIT :limit

-- name: remove_periods
DELETE FROM _jl_schedule_periods WHERE schedule = :name

-- name: remove
DELETE FROM _jl_schedules WHERE name = :name
