-- Team schema 0003: the results of the checks cmstore runs after an agent's edits and commits
-- (format, markdown, security: docs/checks.md), one row per `CheckResult` event. Why: locally
-- they live in their events' queue line (`entry`), which the `none` profile does not send, so
-- a team could not count its checks; the pusher now reads each result's figures out of the
-- line before the profile applies and sends them beside the event, under every profile (the
-- findings' text and the check's output stay behind: only their count goes). Rows of the
-- events a push sent before this table existed are counted here from the lines that carry
-- them (`content = "full"`).
CREATE TABLE check_results (
    machine_id  text   NOT NULL,
    event_id    text   NOT NULL,           -- the CheckResult event's id
    ts          bigint NOT NULL,
    session_id  text,
    agent       text,
    cwd         text,
    check_name  text,                      -- format, markdown, security
    status      text,                      -- passed, failed, timed_out, error
    mode        text,                      -- audit, enforce
    blocked     bigint NOT NULL,           -- 1 when it blocked the agent (enforce)
    findings    bigint NOT NULL,           -- how many findings (the security scan's secrets)
    duration_ms bigint,
    user_label  text,
    team_label  text,
    PRIMARY KEY (machine_id, event_id)
);
CREATE INDEX check_results_ts ON check_results (ts);

-- A stored line as jsonb; NULL when PostgreSQL does not take it as JSON (a line a redaction
-- pattern cut short, a \u0000 that jsonb refuses): one such line must stop neither this
-- migration, which runs inside a push, nor a story read from the team store.
CREATE FUNCTION team_jsonb(line text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN line::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;

INSERT INTO check_results
SELECT machine_id, id, ts, session_id, agent, cwd, c ->> 'name', c ->> 'status', c ->> 'mode',
       CASE WHEN c -> 'blocked' = 'true'::jsonb THEN 1 ELSE 0 END,
       CASE WHEN jsonb_typeof(c -> 'findings') = 'array'
            THEN jsonb_array_length(c -> 'findings') ELSE 0 END,
       CASE WHEN jsonb_typeof(c -> 'durationMs') = 'number'
            THEN (c ->> 'durationMs')::numeric::bigint END,
       user_label, team_label
FROM (SELECT e.*, team_jsonb(e.entry) -> 'check' AS c FROM events e
      WHERE e.hook_type = 'CheckResult' AND e.entry IS NOT NULL) AS e
WHERE c IS NOT NULL
ON CONFLICT DO NOTHING;

-- Per check, as `cmstore summarize --by check` counts them, per machine and user too.
CREATE VIEW v_checks AS
SELECT check_name AS "check", machine_id, user_label, team_label,
       count(*) AS runs,
       count(*) FILTER (WHERE status = 'passed') AS passed,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       count(*) FILTER (WHERE status = 'timed_out') AS timed_out,
       count(*) FILTER (WHERE status = 'error') AS errors,
       sum(blocked) AS blocked,
       sum(findings) AS findings,
       trunc(avg(duration_ms))::bigint AS avg_ms,
       max(ts) AS last_run
FROM check_results
GROUP BY check_name, machine_id, user_label, team_label;
