-- 0031: the events' rollup per UTC hour and session instead of per UTC day and session.
--
-- Why: `summarize --by day` and the dashboard count a person's days in their own time zone
-- (or UTC with --utc), and a UTC day holds parts of two local days everywhere but at UTC+0.
-- Hours make any whole-hour zone's days exact from the rollup alone; in a zone half or three
-- quarters of an hour off UTC (India, Nepal, Newfoundland, central Australia), the one hour
-- of each day that a local midnight cuts is read from its events instead (src/read/days.rs).
-- `usage_hourly` (0020) does the same for the responses.
--
-- What it costs: ingest upserts one row per hour and session a batch touches instead of one
-- per day and session (a batch spans minutes to an hour or two, so about as many rows); the
-- table holds one row per hour a session was active (a few thousand rows per million events
-- in BENCHMARKS.md's store, against a few hundred per day before), still far fewer than the
-- events. Kept exactly as `daily_sessions` was (0016): by ingest for a new event row only, by
-- prune for what it deletes, so it always equals a `GROUP BY` over the events still stored.
CREATE TABLE hourly_sessions (
    hour_n           INTEGER NOT NULL,  -- the UTC hour: floor(floor-toward-zero(ts / 1000) / 3600)
    no_session       INTEGER NOT NULL,  -- 1 for the events without a session id
    session_id       TEXT    NOT NULL,  -- '' when no_session = 1
    events           INTEGER NOT NULL DEFAULT 0,
    prompts          INTEGER NOT NULL DEFAULT 0,
    tool_uses        INTEGER NOT NULL DEFAULT 0,  -- PostToolUse + PostToolUseFailure lines
    tool_failures    INTEGER NOT NULL DEFAULT 0,  -- failed calls, by cmstore_tool_failure (0022)
    stops            INTEGER NOT NULL DEFAULT 0,  -- Stop + SubagentStop firings (not synthetic)
    estimated_tokens INTEGER NOT NULL DEFAULT 0,  -- saturating sum (see 0007)
    PRIMARY KEY (hour_n, no_session, session_id)
) WITHOUT ROWID;

-- The hours of one session (`--by day --session`, `--agent`, `--project`), without a scan.
CREATE INDEX hourly_sessions_session ON hourly_sessions(session_id);

-- The days and sessions where a PostToolUse line reported a failed call (Copilot CLI's result
-- type, an exit code: 0022 counts those in `tool_failures` beside the PostToolUseFailure
-- lines): only their PostToolUse lines need parsing to tell which hour the failure was in.
-- Parsing every line instead took 3.7 s of the migration's 4.4 s at 1M events.
CREATE TEMP TABLE failing_days (
    day_n INTEGER NOT NULL, no_session INTEGER NOT NULL, session_id TEXT NOT NULL,
    PRIMARY KEY (day_n, no_session, session_id)
) WITHOUT ROWID;
INSERT INTO failing_days
SELECT d.day_n, d.no_session, d.session_id
FROM daily_sessions d
WHERE d.tool_failures > (
    SELECT count(*) FROM events e
    WHERE e.hook_type = 'PostToolUseFailure'
      AND ((d.no_session = 0 AND e.session_id = d.session_id)
           OR (d.no_session = 1 AND e.session_id IS NULL))
      AND e.ts >= d.day_n * 86400000 AND e.ts < (d.day_n + 1) * 86400000);

-- The events already stored, counted as ingest counts them (0016, 0022).
INSERT INTO hourly_sessions(hour_n, no_session, session_id, events, prompts, tool_uses,
                            tool_failures, stops, estimated_tokens)
SELECT (ts / 1000 - ((ts / 1000) % 3600 + 3600) % 3600) / 3600,
       session_id IS NULL,
       coalesce(session_id, ''),
       count(*),
       sum(hook_type = 'UserPromptSubmit'),
       sum(hook_type IN ('PostToolUse', 'PostToolUseFailure')),
       -- CASE, not AND: SQLite evaluates both sides of an AND that computes a value, and so
       -- would parse every line.
       sum(CASE WHEN hook_type = 'PostToolUseFailure' THEN 1
                WHEN hook_type = 'PostToolUse'
                     AND EXISTS (SELECT 1 FROM failing_days f
                                 WHERE f.day_n = (ts / 1000 - ((ts / 1000) % 86400 + 86400) % 86400) / 86400
                                   AND f.no_session = (events.session_id IS NULL)
                                   AND f.session_id = coalesce(events.session_id, ''))
                THEN cmstore_tool_failure(entry) ELSE 0 END),
       sum(hook_type IN ('Stop', 'SubagentStop') AND coalesce(synthetic, 0) = 0),
       CAST(total(coalesce(estimated_tokens, 0)) AS INTEGER)
FROM events
GROUP BY 1, 2, 3;
DROP TABLE failing_days;

-- The views over the old table, re-created over the new one: the same columns, in the same
-- order, with the same figures (UTC days: a view knows no zone).
DROP VIEW v_daily_usage;
DROP VIEW v_daily;
DROP TABLE daily_sessions;

CREATE VIEW v_daily AS
SELECT date(hour_n * 3600, 'unixepoch') AS day,
       sum(events) AS events,
       count(DISTINCT CASE WHEN no_session = 0 THEN session_id END) AS sessions,
       sum(prompts) AS prompts,
       sum(tool_uses) AS tool_uses,
       sum(tool_failures) AS tool_failures,
       sum(stops) AS stops,
       CAST(total(estimated_tokens) AS INTEGER) AS estimated_tokens
FROM hourly_sessions
GROUP BY date(hour_n * 3600, 'unixepoch');

CREATE VIEW v_daily_usage AS
WITH active AS (
    SELECT date(hour_n * 3600, 'unixepoch') AS day, session_id
    FROM hourly_sessions WHERE no_session = 0
    UNION
    SELECT day, session_id FROM usage_rollup WHERE session_id <> '' AND day <> ''
),
s AS (SELECT day, count(*) AS sessions FROM active GROUP BY day)
SELECT k.day,
       coalesce(d.events, 0) AS events,
       coalesce(s.sessions, 0) AS sessions,
       coalesce(d.prompts, 0) AS prompts,
       coalesce(d.tool_uses, 0) AS tool_uses,
       coalesce(d.tool_failures, 0) AS tool_failures,
       coalesce(d.stops, 0) AS stops,
       coalesce(d.estimated_tokens, 0) AS estimated_tokens,
       coalesce(u.responses, 0) AS responses,
       coalesce(u.input_tokens, 0) AS input_tokens,
       coalesce(u.output_tokens, 0) AS output_tokens,
       coalesce(u.cache_write_tokens, 0) AS cache_write_tokens,
       coalesce(u.cache_read_tokens, 0) AS cache_read_tokens,
       u.cost_usd,
       coalesce(u.unpriced, 0) AS unpriced
FROM (SELECT day FROM v_daily UNION SELECT day FROM v_usage_daily WHERE day IS NOT NULL) k
LEFT JOIN v_daily d ON d.day = k.day
LEFT JOIN v_usage_daily u ON u.day = k.day
LEFT JOIN s ON s.day = k.day;
