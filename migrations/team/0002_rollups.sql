-- Team schema 0002: rollups the server keeps as rows arrive, so that the team's reports read
-- thousands of rows, not millions. Why: at 2M events the views over the base tables took
-- 166 ms (`v_tools`) and 226 ms (events per machine), growing with the rows, against a goal
-- of 200 ms at 20M. Triggers keep them, not the pusher, so they stay exact whoever writes: a
-- machine on an older cmstore, a person with psql. Each trigger runs once per statement over
-- that statement's own rows (its transition table: a re-pushed row that conflicts and is
-- skipped is not in it), so a batch pays one aggregate, not one per row. The views keep their
-- names, columns and types (`CREATE OR REPLACE`): what reads them is unchanged, only where
-- their figures come from moves.

CREATE FUNCTION team_day(ts bigint) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT to_char(to_timestamp(ts / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD') $$;

-- The transition tables a statement-level trigger of `TG_OP` has, with the sign their rows
-- count with: an insert adds its new rows, a delete takes its old ones away, an update both.
CREATE FUNCTION team_changed_rows(op text) RETURNS TABLE (rows_of text, sign bigint)
LANGUAGE sql IMMUTABLE AS $$
    SELECT * FROM (VALUES ('old_rows', -1::bigint), ('new_rows', 1::bigint)) AS v(rows_of, sign)
    WHERE (v.rows_of = 'old_rows' AND op <> 'INSERT') OR (v.rows_of = 'new_rows' AND op <> 'DELETE')
$$;

-- Serialises the rollup work of writers of the same machines (each machine's lock, in one
-- order, so two writers never wait on each other in a circle): a recount deletes and counts
-- again, which two transactions at once would double. cmstore's own pushes of one machine are
-- serialised already by their `machines` row; this holds for anyone else who writes.
CREATE FUNCTION team_lock_machines(machines text[]) RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(k)
    FROM (SELECT DISTINCT hashtext('cmstore_rollup:' || m)::bigint AS k
          FROM unnest(machines) AS m ORDER BY 1) AS keys
$$;

-- Events per machine, UTC day, agent, hook type and labels: counts added and taken away as
-- events are written ('' stands for NULL in the key). Events are only ever inserted by a push.
CREATE TABLE rollup_events (
    machine_id text   NOT NULL,
    day        text   NOT NULL,
    agent      text   NOT NULL,
    hook_type  text   NOT NULL,
    user_label text   NOT NULL,
    team_label text   NOT NULL,
    events     bigint NOT NULL,
    PRIMARY KEY (machine_id, day, agent, hook_type, user_label, team_label)
);

CREATE FUNCTION rollup_events_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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
            INSERT INTO rollup_events AS r
                (machine_id, day, agent, hook_type, user_label, team_label, events)
            SELECT machine_id, team_day(ts), coalesce(agent, ''), coalesce(hook_type, ''),
                   coalesce(user_label, ''), coalesce(team_label, ''), %s * count(*)
            FROM %I GROUP BY 1, 2, 3, 4, 5, 6
            ON CONFLICT (machine_id, day, agent, hook_type, user_label, team_label)
            DO UPDATE SET events = r.events + EXCLUDED.events $sql$, part.sign, part.rows_of);
    END LOOP;
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM rollup_events WHERE events = 0;
    END IF;
    RETURN NULL;
END $$;

-- Tool calls per machine, session, tool and UTC day, as `v_tools` counts them. A push upserts
-- a session's calls as they finish, so a call's row changes: each session a statement touched
-- is counted again from its calls (a maximum cannot be taken away).
CREATE TABLE rollup_tools (
    machine_id text   NOT NULL,
    session_id text   NOT NULL,
    tool_name  text,
    day        text,
    calls      bigint NOT NULL,
    succeeded  bigint NOT NULL,
    failed     bigint NOT NULL,
    unfinished bigint NOT NULL,
    total_ms   numeric,
    timed      bigint NOT NULL,                -- calls with a duration
    max_ms     bigint,
    denied     bigint NOT NULL,
    refused    bigint NOT NULL,
    abandoned  bigint NOT NULL
);
CREATE INDEX rollup_tools_session ON rollup_tools (machine_id, session_id);

-- Usage per machine, session, UTC day, agent, model and labels: the sums `v_usage` adds up,
-- counted again per session a statement touched (a push replaces a session's rows whole).
CREATE TABLE rollup_usage (
    machine_id            text   NOT NULL,
    session_id            text   NOT NULL,
    day                   text,
    agent                 text,
    model                 text,
    user_label            text,
    team_label            text,
    responses             bigint NOT NULL,
    input_tokens          bigint NOT NULL,
    output_tokens         bigint NOT NULL,
    cache_write_tokens    bigint NOT NULL,
    cache_write_1h_tokens bigint NOT NULL,
    cache_read_tokens     bigint NOT NULL,
    subagent_responses    bigint NOT NULL
);
CREATE INDEX rollup_usage_session ON rollup_usage (machine_id, session_id);
CREATE INDEX rollup_usage_day ON rollup_usage (day);

-- The second level, for the whole team's questions, which need no session: usage per machine,
-- UTC day, agent, model and labels (a few rows per machine and day, where the first level has
-- one per session and day), and which sessions have usage of each model and under each label,
-- to count them without a DISTINCT over the first level. They follow the first level's rows
-- as those are counted again: sums added and taken away ('' stands for NULL in their keys).
CREATE TABLE rollup_usage_days (
    machine_id            text   NOT NULL,
    day                   text   NOT NULL,
    agent                 text   NOT NULL,
    model                 text   NOT NULL,
    user_label            text   NOT NULL,
    team_label            text   NOT NULL,
    responses             bigint NOT NULL,
    input_tokens          bigint NOT NULL,
    output_tokens         bigint NOT NULL,
    cache_write_tokens    bigint NOT NULL,
    cache_write_1h_tokens bigint NOT NULL,
    cache_read_tokens     bigint NOT NULL,
    subagent_responses    bigint NOT NULL,
    PRIMARY KEY (machine_id, day, agent, model, user_label, team_label)
);
-- A session with usage of a model: `parts`, its first-level rows of that model.
CREATE TABLE rollup_session_models (
    machine_id text   NOT NULL,
    session_id text   NOT NULL,
    model      text   NOT NULL,
    parts      bigint NOT NULL,
    PRIMARY KEY (machine_id, session_id, model)
);
-- A session with usage under a user and team label.
CREATE TABLE rollup_session_users (
    machine_id text   NOT NULL,
    session_id text   NOT NULL,
    user_label text   NOT NULL,
    team_label text   NOT NULL,
    parts      bigint NOT NULL,
    PRIMARY KEY (machine_id, session_id, user_label, team_label)
);

CREATE FUNCTION rollup_usage_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    part record;
BEGIN
    FOR part IN SELECT * FROM team_changed_rows(TG_OP) LOOP
        EXECUTE format($sql$
            INSERT INTO rollup_usage_days AS d
            SELECT machine_id, coalesce(day, ''), coalesce(agent, ''), coalesce(model, ''),
                   coalesce(user_label, ''), coalesce(team_label, ''),
                   %1$s * sum(responses), %1$s * sum(input_tokens), %1$s * sum(output_tokens),
                   %1$s * sum(cache_write_tokens), %1$s * sum(cache_write_1h_tokens),
                   %1$s * sum(cache_read_tokens), %1$s * sum(subagent_responses)
            FROM %2$I GROUP BY 1, 2, 3, 4, 5, 6
            ON CONFLICT (machine_id, day, agent, model, user_label, team_label) DO UPDATE SET
                responses = d.responses + EXCLUDED.responses,
                input_tokens = d.input_tokens + EXCLUDED.input_tokens,
                output_tokens = d.output_tokens + EXCLUDED.output_tokens,
                cache_write_tokens = d.cache_write_tokens + EXCLUDED.cache_write_tokens,
                cache_write_1h_tokens = d.cache_write_1h_tokens + EXCLUDED.cache_write_1h_tokens,
                cache_read_tokens = d.cache_read_tokens + EXCLUDED.cache_read_tokens,
                subagent_responses = d.subagent_responses + EXCLUDED.subagent_responses
            $sql$, part.sign, part.rows_of);
        EXECUTE format($sql$
            INSERT INTO rollup_session_models AS m
            SELECT machine_id, session_id, coalesce(model, ''), %1$s * count(*)
            FROM %2$I GROUP BY 1, 2, 3
            ON CONFLICT (machine_id, session_id, model) DO UPDATE SET parts = m.parts + EXCLUDED.parts
            $sql$, part.sign, part.rows_of);
        EXECUTE format($sql$
            INSERT INTO rollup_session_users AS u
            SELECT machine_id, session_id, coalesce(user_label, ''), coalesce(team_label, ''),
                   %1$s * count(*)
            FROM %2$I GROUP BY 1, 2, 3, 4
            ON CONFLICT (machine_id, session_id, user_label, team_label)
            DO UPDATE SET parts = u.parts + EXCLUDED.parts
            $sql$, part.sign, part.rows_of);
    END LOOP;
    IF TG_OP <> 'INSERT' THEN
        -- What was taken away to nothing goes, looked for by the keys the statement touched.
        DELETE FROM rollup_usage_days d USING (SELECT DISTINCT machine_id, coalesce(day, '') AS day FROM old_rows) AS o
        WHERE d.machine_id = o.machine_id AND d.day = o.day AND d.responses = 0;
        DELETE FROM rollup_session_models m USING (SELECT DISTINCT machine_id, session_id FROM old_rows) AS o
        WHERE m.machine_id = o.machine_id AND m.session_id = o.session_id AND m.parts = 0;
        DELETE FROM rollup_session_users u USING (SELECT DISTINCT machine_id, session_id FROM old_rows) AS o
        WHERE u.machine_id = o.machine_id AND u.session_id = o.session_id AND u.parts = 0;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER rollup_on_insert AFTER INSERT ON rollup_usage REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_usage_changed();
CREATE TRIGGER rollup_on_update AFTER UPDATE ON rollup_usage
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_usage_changed();
CREATE TRIGGER rollup_on_delete AFTER DELETE ON rollup_usage REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_usage_changed();

-- Counts the sessions named by `machines[i]`, `sessions[i]` again into both rollups.
CREATE FUNCTION rollup_sessions_redo(machines text[], sessions text[], of_tools boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF of_tools THEN
        DELETE FROM rollup_tools r USING unnest(machines, sessions) AS t(machine_id, session_id)
        WHERE r.machine_id = t.machine_id AND r.session_id = t.session_id;
        INSERT INTO rollup_tools
        SELECT c.machine_id, c.session_id, c.tool_name, team_day(c.ts),
               count(*),
               count(*) FILTER (WHERE c.outcome = 'succeeded'),
               count(*) FILTER (WHERE c.outcome = 'failed'),
               count(*) FILTER (WHERE c.outcome IS NULL),
               sum(c.duration_ms), count(c.duration_ms), max(c.duration_ms),
               count(*) FILTER (WHERE c.outcome = 'denied'),
               count(*) FILTER (WHERE c.outcome = 'refused'),
               count(*) FILTER (WHERE c.outcome = 'abandoned')
        FROM tool_calls c
        JOIN (SELECT DISTINCT * FROM unnest(machines, sessions)) AS t(machine_id, session_id)
          ON c.machine_id = t.machine_id AND c.session_id = t.session_id
        GROUP BY c.machine_id, c.session_id, c.tool_name, team_day(c.ts);
    ELSE
        DELETE FROM rollup_usage r USING unnest(machines, sessions) AS t(machine_id, session_id)
        WHERE r.machine_id = t.machine_id AND r.session_id = t.session_id;
        INSERT INTO rollup_usage
        SELECT u.machine_id, u.session_id, team_day(u.ts), u.agent, u.model,
               u.user_label, u.team_label,
               count(*), sum(u.input_tokens), sum(u.output_tokens), sum(u.cache_write_tokens),
               coalesce(sum(u.cache_write_1h_tokens), 0), sum(u.cache_read_tokens),
               sum(u.sidechain)
        FROM usage u
        JOIN (SELECT DISTINCT * FROM unnest(machines, sessions)) AS t(machine_id, session_id)
          ON u.machine_id = t.machine_id AND u.session_id = t.session_id
        GROUP BY u.machine_id, u.session_id, team_day(u.ts), u.agent, u.model,
                 u.user_label, u.team_label;
    END IF;
END $$;

-- The trigger of `tool_calls` and of `usage`: the sessions of the statement's rows, again.
CREATE FUNCTION rollup_sessions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    part record;
    machines text[] := '{}';
    sessions text[] := '{}';
    more_machines text[];
    more_sessions text[];
BEGIN
    FOR part IN SELECT * FROM team_changed_rows(TG_OP) LOOP
        EXECUTE format('SELECT coalesce(array_agg(machine_id), ''{}''),
                               coalesce(array_agg(session_id), ''{}'')
                        FROM (SELECT DISTINCT machine_id, session_id FROM %I) AS s',
                       part.rows_of)
            INTO more_machines, more_sessions;
        machines := machines || more_machines;
        sessions := sessions || more_sessions;
    END LOOP;
    PERFORM team_lock_machines(machines);
    PERFORM rollup_sessions_redo(machines, sessions, TG_TABLE_NAME = 'tool_calls');
    RETURN NULL;
END $$;

-- A transition table belongs to a trigger of one event, so each table has three.
CREATE TRIGGER rollup_on_insert AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_events_changed();
CREATE TRIGGER rollup_on_update AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_events_changed();
CREATE TRIGGER rollup_on_delete AFTER DELETE ON events REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_events_changed();
CREATE TRIGGER rollup_on_insert AFTER INSERT ON tool_calls REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_sessions_changed();
CREATE TRIGGER rollup_on_update AFTER UPDATE ON tool_calls
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_sessions_changed();
CREATE TRIGGER rollup_on_delete AFTER DELETE ON tool_calls REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_sessions_changed();
CREATE TRIGGER rollup_on_insert AFTER INSERT ON usage REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_sessions_changed();
CREATE TRIGGER rollup_on_update AFTER UPDATE ON usage
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_sessions_changed();
CREATE TRIGGER rollup_on_delete AFTER DELETE ON usage REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_sessions_changed();

-- TRUNCATE fires no delete trigger: it empties the rollups with their table.
CREATE FUNCTION rollup_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 0 .. TG_NARGS - 1 LOOP
        EXECUTE format('TRUNCATE %I', TG_ARGV[i]);
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER rollup_on_truncate AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_truncated('rollup_events');
CREATE TRIGGER rollup_on_truncate AFTER TRUNCATE ON tool_calls
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_truncated('rollup_tools');
CREATE TRIGGER rollup_on_truncate AFTER TRUNCATE ON usage
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_truncated('rollup_usage', 'rollup_usage_days',
                                                          'rollup_session_models',
                                                          'rollup_session_users');

-- What the tables already hold.
INSERT INTO rollup_events
SELECT machine_id, team_day(ts), coalesce(agent, ''), coalesce(hook_type, ''),
       coalesce(user_label, ''), coalesce(team_label, ''), count(*)
FROM events GROUP BY 1, 2, 3, 4, 5, 6;
SELECT rollup_sessions_redo(array_agg(machine_id), array_agg(session_id), true)
FROM (SELECT DISTINCT machine_id, session_id FROM tool_calls) AS s;
SELECT rollup_sessions_redo(array_agg(machine_id), array_agg(session_id), false)
FROM (SELECT DISTINCT machine_id, session_id FROM usage) AS s;

-- Events per UTC day, machine, user, team, agent and hook type.
CREATE VIEW v_daily_events AS
SELECT day, machine_id, nullif(user_label, '') AS user_label,
       nullif(team_label, '') AS team_label, nullif(agent, '') AS agent,
       nullif(hook_type, '') AS hook_type, events
FROM rollup_events;

-- The usage rollup with each row's cost (NULL when its model has no price), in the same
-- floating arithmetic as `v_usage`: cost is linear in the tokens, so the cost of a row's sums
-- is the sum of its responses' costs (to far below the six decimals the views round to).
CREATE VIEW v_usage_rollup AS
SELECT r.*,
       (r.input_tokens * p.input + r.output_tokens * p.output
        + (r.cache_write_tokens - r.cache_write_1h_tokens) * p.cache_write_5m
        + r.cache_write_1h_tokens * p.cache_write_1h
        + r.cache_read_tokens * p.cache_read) / 1000000.0 AS cost_usd
FROM rollup_usage r
LEFT JOIN prices p ON p.model = r.model;

CREATE OR REPLACE VIEW v_usage_sessions AS
SELECT machine_id, session_id, min(user_label) AS user_label, min(team_label) AS team_label,
       sum(responses)::bigint AS responses,
       sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(cache_write_tokens) AS cache_write_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       round(sum(cost_usd)::numeric, 6) AS cost_usd,
       coalesce(sum(responses) FILTER (WHERE cost_usd IS NULL), 0)::bigint AS unpriced,
       sum(subagent_responses) AS subagent_responses
FROM v_usage_rollup GROUP BY machine_id, session_id;

-- The second level with each row's cost, as `v_usage_rollup`.
CREATE VIEW v_usage_days AS
SELECT d.machine_id, d.day, d.agent, d.model, d.user_label, d.team_label, d.responses,
       d.input_tokens, d.output_tokens, d.cache_write_tokens, d.cache_write_1h_tokens,
       d.cache_read_tokens, d.subagent_responses,
       (d.input_tokens * p.input + d.output_tokens * p.output
        + (d.cache_write_tokens - d.cache_write_1h_tokens) * p.cache_write_5m
        + d.cache_write_1h_tokens * p.cache_write_1h
        + d.cache_read_tokens * p.cache_read) / 1000000.0 AS cost_usd
FROM rollup_usage_days d
LEFT JOIN prices p ON p.model = d.model;

CREATE OR REPLACE VIEW v_daily_usage AS
SELECT nullif(day, '') AS day, machine_id, nullif(user_label, '') AS user_label,
       nullif(team_label, '') AS team_label, nullif(agent, '') AS agent,
       sum(responses)::bigint AS responses,
       sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(cache_write_tokens) AS cache_write_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       round(sum(cost_usd)::numeric, 6) AS cost_usd,
       coalesce(sum(responses) FILTER (WHERE cost_usd IS NULL), 0)::bigint AS unpriced
FROM v_usage_days GROUP BY day, machine_id, user_label, team_label, agent;

CREATE OR REPLACE VIEW v_usage_users AS
SELECT nullif(u.user_label, '') AS user_label, nullif(u.team_label, '') AS team_label,
       u.machines, coalesce(s.sessions, 0) AS sessions, u.responses, u.input_tokens,
       u.output_tokens, u.cache_write_tokens, u.cache_read_tokens, u.cost_usd, u.unpriced
FROM (SELECT user_label, team_label,
             count(DISTINCT machine_id) AS machines,
             sum(responses)::bigint AS responses,
             sum(input_tokens) AS input_tokens,
             sum(output_tokens) AS output_tokens,
             sum(cache_write_tokens) AS cache_write_tokens,
             sum(cache_read_tokens) AS cache_read_tokens,
             round(sum(cost_usd)::numeric, 6) AS cost_usd,
             coalesce(sum(responses) FILTER (WHERE cost_usd IS NULL), 0)::bigint AS unpriced
      FROM v_usage_days GROUP BY user_label, team_label) AS u
LEFT JOIN (SELECT user_label, team_label, count(*) AS sessions
           FROM rollup_session_users GROUP BY user_label, team_label) AS s
  ON s.user_label = u.user_label AND s.team_label = u.team_label;

CREATE OR REPLACE VIEW v_usage_models AS
SELECT u.model, coalesce(s.sessions, 0) AS sessions,
       u.responses, u.input_tokens, u.output_tokens, u.cache_write_tokens,
       u.cache_read_tokens, u.cost_usd, u.unpriced
FROM (SELECT coalesce(nullif(model, ''), '?') AS model,
             sum(responses)::bigint AS responses,
             sum(input_tokens) AS input_tokens,
             sum(output_tokens) AS output_tokens,
             sum(cache_write_tokens) AS cache_write_tokens,
             sum(cache_read_tokens) AS cache_read_tokens,
             round(sum(cost_usd)::numeric, 6) AS cost_usd,
             coalesce(sum(responses) FILTER (WHERE cost_usd IS NULL), 0)::bigint AS unpriced
      FROM v_usage_days GROUP BY 1) AS u
-- (A session with usage of no model and of a model named `?`, if such a model were, would
-- count twice in the row `?`: no DISTINCT over tens of thousands of sessions for it.)
LEFT JOIN (SELECT coalesce(nullif(model, ''), '?') AS model, count(*) AS sessions
           FROM rollup_session_models GROUP BY 1) AS s
  ON s.model = u.model;

CREATE OR REPLACE VIEW v_tools AS
SELECT tool_name,
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
FROM rollup_tools GROUP BY tool_name;

-- Per machine and session, with the user and the cost: the usage of each session looked up
-- alone, so that the newest fifty sessions read fifty sessions' rollups, not all.
CREATE OR REPLACE VIEW v_sessions AS
SELECT s.*,
       (SELECT count(*) FROM turns t
         WHERE t.machine_id = s.machine_id AND t.session_id = s.session_id
           AND t.hook_type IS DISTINCT FROM 'SubagentStop') AS turns,
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
