-- Team schema 0004: the safety gate's record per machine and UTC day, so that the team's gate
-- figures (the calls checked, each finding) read a few rows per machine and day, not every
-- event. Why: `cmstore serve --store` counted cmstore's own PreToolUse lines in `events`: at
-- 2M events its gate page took 350 ms and its overview 392 ms, growing with the events, against
-- the goal of 200 ms at 20M. Kept like the other rollups (0002): a trigger per statement over
-- its own rows, whoever writes; an insert adds, a delete or an update counts the machine's days
-- it touched again (a first or last time cannot be taken away).

-- cmstore's own PreToolUse lines (the calls its gate checked) per machine, UTC day, agent,
-- working directory, labels and finding ('' stands for NULL in the key: a call without a
-- finding has risk '').
CREATE TABLE rollup_gate (
    machine_id text   NOT NULL,
    day        text   NOT NULL,
    agent      text   NOT NULL,
    cwd        text   NOT NULL,
    user_label text   NOT NULL,
    team_label text   NOT NULL,
    risk       text   NOT NULL,
    decision   text   NOT NULL,
    calls      bigint NOT NULL,
    first_ts   bigint NOT NULL,
    last_ts    bigint NOT NULL,
    PRIMARY KEY (machine_id, day, agent, cwd, user_label, team_label, risk, decision)
);

-- The statement that counts the rollup's rows from the events `rows_of` names (a transition
-- table, `events`, or a subquery of it): cmstore's own PreToolUse lines among them.
CREATE FUNCTION rollup_gate_rows(rows_of text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT format($sql$
        SELECT machine_id, team_day(ts), coalesce(agent, ''), coalesce(cwd, ''),
               coalesce(user_label, ''), coalesce(team_label, ''), coalesce(risk, ''),
               coalesce(decision, ''), count(*), min(ts), max(ts)
        FROM %s
        WHERE hook_type = 'PreToolUse' AND producer = 'cmstore'
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8 $sql$, rows_of)
$$;

CREATE FUNCTION rollup_gate_changed() RETURNS trigger LANGUAGE plpgsql AS $$
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
                        FROM (SELECT DISTINCT machine_id, team_day(ts) AS day FROM %I
                              WHERE hook_type = ''PreToolUse'' AND producer = ''cmstore'') AS k',
                       part.rows_of)
            INTO more_machines, more_days;
        machines := machines || more_machines;
        days := days || more_days;
    END LOOP;
    IF cardinality(machines) = 0 THEN
        RETURN NULL;
    END IF;
    PERFORM team_lock_machines(machines);
    IF TG_OP = 'INSERT' THEN
        EXECUTE 'INSERT INTO rollup_gate AS r ' || rollup_gate_rows('new_rows') || '
            ON CONFLICT (machine_id, day, agent, cwd, user_label, team_label, risk, decision)
            DO UPDATE SET calls = r.calls + EXCLUDED.calls,
                          first_ts = least(r.first_ts, EXCLUDED.first_ts),
                          last_ts = greatest(r.last_ts, EXCLUDED.last_ts)';
        RETURN NULL;
    END IF;
    DELETE FROM rollup_gate r USING unnest(machines, days) AS t(machine_id, day)
    WHERE r.machine_id = t.machine_id AND r.day = t.day;
    -- Each (machine, day) read by its time range (`events_ts`), not all the machine's events.
    EXECUTE 'INSERT INTO rollup_gate ' || rollup_gate_rows(
        '(SELECT e.* FROM events e
          JOIN (SELECT DISTINCT * FROM unnest($1, $2)) AS t(machine_id, day)
            ON e.machine_id = t.machine_id
           AND e.ts >= (extract(epoch FROM (t.day || '' 00:00:00+00'')::timestamptz) * 1000)::bigint
           AND e.ts < (extract(epoch FROM (t.day || '' 00:00:00+00'')::timestamptz) * 1000)::bigint
                      + 86400000) AS e')
        USING machines, days;
    RETURN NULL;
END $$;

-- Fired before the event rollup's triggers (by name); both take the same machines' locks, in
-- the same order.
CREATE TRIGGER rollup_gate_on_insert AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_gate_changed();
CREATE TRIGGER rollup_gate_on_update AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_gate_changed();
CREATE TRIGGER rollup_gate_on_delete AFTER DELETE ON events REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_gate_changed();
CREATE TRIGGER rollup_gate_on_truncate AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION rollup_truncated('rollup_gate');

-- What the server holds already.
DO $$ BEGIN
    EXECUTE 'INSERT INTO rollup_gate ' || rollup_gate_rows('events');
END $$;
