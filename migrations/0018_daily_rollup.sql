-- 0018: a daily rollup, so that `summarize --by day` reads a few rows per day instead of every
-- event. Why: `v_daily` grouped all of `events` by date(ts): 0.7-1.0 s at 1M events, and
-- linear in the store's size (issue 17: every report within 50 ms at 1M events).
--
-- One row per UTC day and session with that day's event figures, kept by ingest in the
-- transaction of the events (only for an event row that is new, so a line read again adds
-- nothing) and by prune in the transaction that deletes events (it subtracts what it deletes,
-- and a row whose events are all gone goes), so the rollup always equals a `GROUP BY` over the
-- events still stored. Per session rather than per day: a day's `sessions` is a count of
-- distinct sessions, which only a per-session row can give, and the rows let the report
-- filters (--agent, --project, --session) select days by session.
CREATE TABLE daily_sessions (
    day_n            INTEGER NOT NULL,  -- the UTC day: floor(floor-toward-zero(ts / 1000) / 86400)
    no_session       INTEGER NOT NULL,  -- 1 for the events without a session id
    session_id       TEXT    NOT NULL,  -- '' when no_session = 1
    events           INTEGER NOT NULL DEFAULT 0,
    prompts          INTEGER NOT NULL DEFAULT 0,
    tool_uses        INTEGER NOT NULL DEFAULT 0,  -- PostToolUse + PostToolUseFailure lines
    tool_failures    INTEGER NOT NULL DEFAULT 0,  -- PostToolUseFailure lines
    stops            INTEGER NOT NULL DEFAULT 0,  -- Stop + SubagentStop firings (not synthetic)
    estimated_tokens INTEGER NOT NULL DEFAULT 0,  -- saturating sum (see 0007)
    PRIMARY KEY (day_n, no_session, session_id)
) WITHOUT ROWID;

-- The days of one session (`--by day --session`, `--agent`, `--project`), without a scan.
CREATE INDEX daily_sessions_session ON daily_sessions(session_id);

-- The events already stored. `ts / 1000` truncates toward zero as `date(ts / 1000, ...)` does;
-- the day is that second count floored to a multiple of 86400.
INSERT INTO daily_sessions(day_n, no_session, session_id, events, prompts, tool_uses,
                           tool_failures, stops, estimated_tokens)
SELECT (ts / 1000 - ((ts / 1000) % 86400 + 86400) % 86400) / 86400,
       session_id IS NULL,
       coalesce(session_id, ''),
       count(*),
       sum(hook_type = 'UserPromptSubmit'),
       sum(hook_type IN ('PostToolUse', 'PostToolUseFailure')),
       sum(hook_type = 'PostToolUseFailure'),
       sum(hook_type IN ('Stop', 'SubagentStop') AND coalesce(synthetic, 0) = 0),
       CAST(total(coalesce(estimated_tokens, 0)) AS INTEGER)
FROM events
GROUP BY 1, 2, 3;

-- v_daily (0011) re-created over the rollup: the same columns, in the same order, with the
-- same figures.
DROP VIEW v_daily;
CREATE VIEW v_daily AS
SELECT date(day_n * 86400, 'unixepoch') AS day,
       sum(events) AS events,
       count(DISTINCT CASE WHEN no_session = 0 THEN session_id END) AS sessions,
       sum(prompts) AS prompts,
       sum(tool_uses) AS tool_uses,
       sum(tool_failures) AS tool_failures,
       sum(stops) AS stops,
       CAST(total(estimated_tokens) AS INTEGER) AS estimated_tokens
FROM daily_sessions
GROUP BY date(day_n * 86400, 'unixepoch');

-- `cmstore show` reads a session's prompts, starts, ends and compactions. Through
-- events_session_id that read every event of the session (each on its own page when sessions
-- interleave: 5,000 page reads for a session of 5,000 events); this partial index holds only
-- those four kinds (a few percent of the lines, so ingest hardly writes it) and `show`'s
-- statement repeats its condition.
CREATE INDEX events_story ON events(session_id, ts)
    WHERE hook_type IN ('UserPromptSubmit', 'SessionStart', 'SessionEnd', 'PreCompact');
