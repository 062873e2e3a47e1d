-- Team schema 0006: two more rollups, so that what the team's largest reports read stays
-- with the sessions and the days, not the rows. Why: at 20M true events (200 machines,
-- `WAVES=10 benches/push_load.sh`), listing every session took 1,137 ms, counting 1.5M
-- turns for their number per session, and the dashboard's overview 281 ms, reading the
-- 320,000 rows of `rollup_tools` (a row per session, tool and day) twice: for the tools and
-- for the failed calls per day. Kept like the others (0002): a trigger per statement over its
-- own rows, whoever writes.

-- Turns per session, as `v_sessions` counts them (a subagent's `SubagentStop` is no turn):
-- counts added and taken away as turns are written (a push upserts a turn as it ends).
CREATE TABLE rollup_session_turns (
    machine_id text   NOT NULL,
    session_id text   NOT NULL,
    turns      bigint NOT NULL,
    PRIMARY KEY (machine_id, session_id)
);

CREATE FUNCTION rollup_turns_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    part record;
    machines text[] := '{}';
    more text[];
BEGIN
    FOR part IN SELECT * FROM team_changed_rows(TG_OP) LOOP
        EXECUTE format('SELECT coalesce(array_agg(DISTINCT machine_id), ''{}'') FROM %I',
                       part.rows_of) INTO more;
        machines := machines || more;
    END LOOP;
    PERFORM team_lock_machines(machines);
    FOR part IN SELECT * FROM team_changed_rows(TG_OP) LOOP
        EXECUTE format($sql$
            INSERT INTO rollup_session_turns AS r (machine_id, session_id, turns)
            SELECT machine_id, session_id, %s * count(*) FROM %I
            WHERE hook_type IS DISTINCT FROM 'SubagentStop'
            GROUP BY 1, 2
            ON CONFLICT (machine_id, session_id) DO UPDATE SET turns = r.turns + EXCLUDED.turns
            $sql$, part.sign, part.rows_of);
    END LOOP;
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM rollup_session_turns r
        USING (SELECT DISTINCT machine_id, session_id FROM old_rows) AS o
        WHERE r.machine_id = o.machine_id AND r.session_id = o.session_id AND r.turns = 0;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER rollup_on_insert AFTER INSERT ON turns REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_turns_changed();
CREATE TRIGGER rollup_on_update AFTER UPDATE ON turns
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_turns_changed();
CREATE TRIGGER rollup_on_delete AFTER DELETE ON turns REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_turns_changed();
CREATE TRIGGER rollup_on_truncate AFTER TRUNCATE ON turns
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_truncated('rollup_session_turns');

-- The second level of `rollup_tools`: per machine, UTC day and tool ('' stands for NULL in
-- the key), for the questions that choose no session, user or agent. A first-level row is
-- replaced whole when its session is counted again, and a maximum cannot be taken away, so
-- each (machine, day) a statement touched is counted again from the first level.
CREATE TABLE rollup_tools_days (
    machine_id text   NOT NULL,
    day        text   NOT NULL,
    tool_name  text   NOT NULL,
    calls      bigint NOT NULL,
    succeeded  bigint NOT NULL,
    failed     bigint NOT NULL,
    unfinished bigint NOT NULL,
    total_ms   numeric,
    timed      bigint NOT NULL,
    max_ms     bigint,
    denied     bigint NOT NULL,
    refused    bigint NOT NULL,
    abandoned  bigint NOT NULL,
    PRIMARY KEY (machine_id, day, tool_name)
);
CREATE INDEX rollup_tools_day ON rollup_tools (machine_id, day);

-- Counts the (machine, day) pairs `machines[i]`, `days[i]` ('' for NULL) again.
CREATE FUNCTION rollup_tools_days_redo(machines text[], days text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM rollup_tools_days d USING unnest(machines, days) AS t(machine_id, day)
    WHERE d.machine_id = t.machine_id AND d.day = t.day;
    -- Joined by equality, so that `rollup_tools_day` finds each day's rows; the calls with
    -- no time (day NULL) apart.
    INSERT INTO rollup_tools_days
    SELECT r.machine_id, coalesce(r.day, ''), coalesce(r.tool_name, ''),
           sum(r.calls), sum(r.succeeded), sum(r.failed), sum(r.unfinished), sum(r.total_ms),
           sum(r.timed), max(r.max_ms), sum(r.denied), sum(r.refused), sum(r.abandoned)
    FROM rollup_tools r
    JOIN (SELECT DISTINCT * FROM unnest(machines, days)) AS t(machine_id, day)
      ON r.machine_id = t.machine_id AND r.day = t.day
    GROUP BY 1, 2, 3;
    INSERT INTO rollup_tools_days
    SELECT r.machine_id, '', coalesce(r.tool_name, ''),
           sum(r.calls), sum(r.succeeded), sum(r.failed), sum(r.unfinished), sum(r.total_ms),
           sum(r.timed), max(r.max_ms), sum(r.denied), sum(r.refused), sum(r.abandoned)
    FROM rollup_tools r
    JOIN (SELECT DISTINCT * FROM unnest(machines, days)) AS t(machine_id, day)
      ON r.machine_id = t.machine_id AND t.day = '' AND r.day IS NULL
    GROUP BY 1, 2, 3;
END $$;

CREATE FUNCTION rollup_tools_days_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    part record;
    machines text[] := '{}';
    days text[] := '{}';
    more_machines text[];
    more_days text[];
BEGIN
    FOR part IN SELECT * FROM team_changed_rows(TG_OP) LOOP
        EXECUTE format('SELECT coalesce(array_agg(machine_id), ''{}''),
                               coalesce(array_agg(day), ''{}'')
                        FROM (SELECT DISTINCT machine_id, coalesce(day, '''') AS day FROM %I) AS k',
                       part.rows_of)
            INTO more_machines, more_days;
        machines := machines || more_machines;
        days := days || more_days;
    END LOOP;
    PERFORM rollup_tools_days_redo(machines, days);
    RETURN NULL;
END $$;

-- The first level is written only by the triggers of `tool_calls`, under the machines' locks.
CREATE TRIGGER rollup_days_on_insert AFTER INSERT ON rollup_tools
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_tools_days_changed();
CREATE TRIGGER rollup_days_on_update AFTER UPDATE ON rollup_tools
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_tools_days_changed();
CREATE TRIGGER rollup_days_on_delete AFTER DELETE ON rollup_tools
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_tools_days_changed();
CREATE TRIGGER rollup_days_on_truncate AFTER TRUNCATE ON rollup_tools
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_truncated('rollup_tools_days');

-- What the server holds already.
INSERT INTO rollup_session_turns
SELECT machine_id, session_id, count(*) FROM turns
WHERE hook_type IS DISTINCT FROM 'SubagentStop'
GROUP BY 1, 2;
INSERT INTO rollup_tools_days
SELECT machine_id, coalesce(day, ''), coalesce(tool_name, ''),
       sum(calls), sum(succeeded), sum(failed), sum(unfinished), sum(total_ms), sum(timed),
       max(max_ms), sum(denied), sum(refused), sum(abandoned)
FROM rollup_tools GROUP BY 1, 2, 3;

-- `v_sessions` counts a session's turns from the rollup: the same columns and figures.
CREATE OR REPLACE VIEW v_sessions AS
SELECT s.*,
       coalesce((SELECT t.turns FROM rollup_session_turns t
                  WHERE t.machine_id = s.machine_id AND t.session_id = s.session_id), 0)
           AS turns,
       u.responses, u.cost_usd, u.unpriced
FROM sessions s
LEFT JOIN LATERAL (
    SELECT sum(r.responses)::bigint AS responses, round(sum(r.cost_usd)::numeric, 6) AS cost_usd,
           CASE WHEN count(*) > 0
                THEN coalesce(sum(r.responses) FILTER (WHERE r.cost_usd IS NULL), 0)::bigint
           END AS unpriced
    FROM v_usage_rollup r
    WHERE r.machine_id = s.machine_id AND r.session_id = s.session_id
) AS u ON true;

-- `v_tools` sums the second level: the same columns and figures, from a few rows per machine
-- and day.
CREATE OR REPLACE VIEW v_tools AS
SELECT nullif(tool_name, '') AS tool_name,
       sum(calls)::bigint AS calls,
       sum(succeeded)::bigint AS succeeded,
       sum(failed)::bigint AS failed,
       sum(unfinished)::bigint AS unfinished,
       sum(total_ms) AS total_ms,
       sum(total_ms) / nullif(sum(timed), 0) AS avg_ms,
       max(max_ms) AS max_ms,
       sum(denied)::bigint AS denied,
       sum(refused)::bigint AS refused,
       sum(abandoned)::bigint AS abandoned
FROM rollup_tools_days GROUP BY 1;
