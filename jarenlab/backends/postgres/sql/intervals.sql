-- Declared intervals: the fixed statements (each declaration's exclusion constraint and lookups are
-- built by backends/postgres/intervals.py).

-- name: instant_ms
-- A UTC date-time YYYY-MM-DDTHH:MM:SS[.fraction]Z as epoch milliseconds, NULL for anything else
-- (offsets, a lower-case t or z, Feb 30, second 60, year 0, more than millisecond precision), the
-- reading of jarenlab.intervals.instant. IMMUTABLE, so exclusion constraints may use it (a cast to
-- timestamptz depends on the session's time zone); nothing in it can fail. PL/pgSQL, not SQL: a
-- SQL function in an index expression is parsed again by every statement that writes the table
-- (3 to 7 times slower inserts, measured). Part of the model's DDL.
CREATE OR REPLACE FUNCTION jl_instant_ms(t text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    y int;
    m int;
    d int;
BEGIN
    IF t !~ '^[0-9][0-9][0-9][0-9]-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9][0-9]?[0-9]?0*)?Z$' THEN
        RETURN NULL;
    END IF;
    y := substr(t, 1, 4)::int;
    m := substr(t, 6, 2)::int;
    d := substr(t, 9, 2)::int;
    IF y = 0 OR d > (CASE m
            WHEN 2 THEN (CASE WHEN mod(y, 4) = 0 AND (mod(y, 100) <> 0 OR mod(y, 400) = 0) THEN 29 ELSE 28 END)
            WHEN 4 THEN 30 WHEN 6 THEN 30 WHEN 9 THEN 30 WHEN 11 THEN 30 ELSE 31 END) THEN
        RETURN NULL;
    END IF;
    RETURN (make_date(y, m, d) - DATE '1970-01-01')::bigint * 86400000
        + substr(t, 12, 2)::int * 3600000 + substr(t, 15, 2)::int * 60000 + substr(t, 18, 2)::int * 1000
        + coalesce(rpad(substring(t FROM '\.([0-9][0-9]?[0-9]?)'), 3, '0')::int, 0);
END
$$

-- name: instant_ms_inline
-- jl_instant_ms(t) as one expression over {t} (the member's text), the same reading step for step:
-- for the checks a migration runs on stored records before it creates the function (a dry run reads
-- in a read-only snapshot, where nothing can be created). Each CASE decides before the next casts.
(CASE WHEN {t} ~ '^[0-9][0-9][0-9][0-9]-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9][0-9]?[0-9]?0*)?Z$' THEN
    (CASE WHEN substr({t}, 1, 4)::int = 0 OR substr({t}, 9, 2)::int > (CASE substr({t}, 6, 2)::int
            WHEN 2 THEN (CASE WHEN mod(substr({t}, 1, 4)::int, 4) = 0 AND (mod(substr({t}, 1, 4)::int, 100) <> 0
                OR mod(substr({t}, 1, 4)::int, 400) = 0) THEN 29 ELSE 28 END)
            WHEN 4 THEN 30 WHEN 6 THEN 30 WHEN 9 THEN 30 WHEN 11 THEN 30 ELSE 31 END) THEN NULL
    ELSE (make_date(substr({t}, 1, 4)::int, substr({t}, 6, 2)::int, substr({t}, 9, 2)::int) - DATE '1970-01-01')::bigint * 86400000
        + substr({t}, 12, 2)::int * 3600000 + substr({t}, 15, 2)::int * 60000 + substr({t}, 18, 2)::int * 1000
        + coalesce(rpad(substring({t} FROM '\.([0-9][0-9]?[0-9]?)'), 3, '0')::int, 0) END)
END)
