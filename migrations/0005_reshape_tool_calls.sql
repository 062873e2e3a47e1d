-- 0005: tool calls without a random-key index, and per-session tool totals kept by ingest.
-- Why: ingest commits every ~10k lines, and every commit writes each B-tree page it touched
-- to the WAL (and the checkpoint writes it again). `tool_calls` was keyed by the tool call id,
-- which agents make random, and indexed by (session, tool, outcome, duration): a batch touched
-- thousands of scattered pages of those two indexes, which made them half of ingest's time on
-- a large backlog (1M lines: 14.0 s with them, 8.8 s without).
--
-- Now rows are appended in arrival order (rowid) and only *incomplete* calls (one half seen,
-- the other not yet) are indexed by call key, which is all that joining the two halves across
-- batches needs: with both hooks installed that index stays as small as the number of calls
-- in flight. A half whose call is already complete (e.g. a duplicate from a second hook
-- configuration) becomes a row of its own instead of overwriting the first.
--
-- Summaries read per-(session, tool) totals from `session_tools`, which ingest updates in the
-- same transaction as the calls; it replaces the covering index of 0003. Like `sessions`, the
-- totals cover the whole life of a session: `prune` removes a row once its last call is older
-- than the cutoff, not call by call.

-- Keep the rows, rebuild the table. No RENAME, so views that name `tool_calls` stay valid.
CREATE TEMP TABLE tool_calls_0005 AS SELECT * FROM tool_calls;
DROP TABLE tool_calls;

-- One row per tool call, joining PreToolUse and PostToolUse/PostToolUseFailure.
CREATE TABLE tool_calls (
    call_key      TEXT NOT NULL,  -- toolCallId, else the id of the event that reported the call
    tool_call_id  TEXT,
    session_id    TEXT,
    tool_name     TEXT,
    start_ts      INTEGER,
    end_ts        INTEGER,
    duration_ms   INTEGER,        -- reported durationMs, else end_ts - start_ts
    success       INTEGER,        -- 1 PostToolUse, 0 PostToolUseFailure, NULL not finished
    result_type   TEXT,
    pre_event_id  TEXT,
    post_event_id TEXT
);
INSERT INTO tool_calls(call_key, tool_call_id, session_id, tool_name, start_ts, end_ts,
    duration_ms, success, result_type, pre_event_id, post_event_id)
SELECT call_key, tool_call_id, session_id, tool_name, start_ts, end_ts, duration_ms, success,
    result_type, pre_event_id, post_event_id
FROM temp.tool_calls_0005
ORDER BY coalesce(start_ts, end_ts), call_key;
DROP TABLE temp.tool_calls_0005;

-- Incomplete calls by key: how one half finds the other in a later batch.
CREATE UNIQUE INDEX tool_calls_open ON tool_calls(call_key)
    WHERE start_ts IS NULL OR end_ts IS NULL;
CREATE INDEX tool_calls_session_id ON tool_calls(session_id);
CREATE INDEX tool_calls_tool_name ON tool_calls(tool_name);
CREATE INDEX tool_calls_ts ON tool_calls(coalesce(start_ts, end_ts));

-- Per session and tool: the totals of its calls. Calls without a session id count under
-- 'unknown-session' (as in `unknown_counts` and `turns`); '' stands for a missing tool name
-- (the views turn it back into NULL).
CREATE TABLE session_tools (
    session_id TEXT    NOT NULL,
    tool_name  TEXT    NOT NULL,
    calls      INTEGER NOT NULL DEFAULT 0,
    succeeded  INTEGER NOT NULL DEFAULT 0,
    failed     INTEGER NOT NULL DEFAULT 0,
    unfinished INTEGER NOT NULL DEFAULT 0,
    total_ms   INTEGER NOT NULL DEFAULT 0,  -- sum of the known durations
    timed      INTEGER NOT NULL DEFAULT 0,  -- calls with a known duration
    max_ms     INTEGER,
    last_ts    INTEGER NOT NULL,            -- latest start or end time of its calls
    UNIQUE (session_id, tool_name)
);
INSERT INTO session_tools
SELECT coalesce(session_id, 'unknown-session'), coalesce(tool_name, ''), count(*), coalesce(sum(success = 1), 0),
       coalesce(sum(success = 0), 0), coalesce(sum(success IS NULL), 0),
       CAST(total(duration_ms) AS INTEGER), count(duration_ms), max(duration_ms),
       max(max(coalesce(start_ts, end_ts), coalesce(end_ts, start_ts)))
FROM tool_calls
GROUP BY 1, 2;

DROP INDEX IF EXISTS tool_calls_session_tool;

-- The same columns as before, from the totals.
DROP VIEW v_session_tools;
CREATE VIEW v_session_tools AS
SELECT session_id,
       nullif(tool_name, '') AS tool_name,
       calls,
       succeeded,
       failed,
       unfinished,
       CASE WHEN timed > 0 THEN total_ms END AS total_ms,
       timed,
       max_ms
FROM session_tools;

DROP VIEW v_tools;
CREATE VIEW v_tools AS
SELECT nullif(tool_name, '') AS tool_name,
       sum(calls) AS calls,
       sum(succeeded) AS succeeded,
       sum(failed) AS failed,
       sum(unfinished) AS unfinished,
       -- total() and CAST: a sum past the integer range saturates instead of failing.
       CASE WHEN sum(timed) > 0 THEN CAST(total(total_ms) AS INTEGER) END AS total_ms,
       CAST(total(total_ms) / nullif(sum(timed), 0) AS INTEGER) AS avg_ms,
       max(max_ms) AS max_ms
FROM session_tools
GROUP BY tool_name;

DROP VIEW v_sessions;
CREATE VIEW v_sessions AS
SELECT s.session_id,
       s.agent,
       s.model,
       s.cwd,
       s.first_seen,
       s.last_seen,
       s.last_seen - s.first_seen AS duration_ms,
       s.ended,
       s.ended_at,
       s.events,
       s.prompts,
       (SELECT count(*) FROM turns t WHERE t.session_id = s.session_id) AS turns,
       s.tool_uses,
       s.tool_failures,
       coalesce((SELECT sum(calls) FROM session_tools st
                  WHERE st.session_id = s.session_id
                    AND st.tool_name IN ('runSubagent', 'Task')), 0) AS delegations,
       s.estimated_tokens,
       coalesce(u.unknown_total, 0) AS unknown_total,
       coalesce(u.unknown_breakdown, '') AS unknown_breakdown
FROM sessions s
LEFT JOIN v_unknown u ON u.session_id = s.session_id;
