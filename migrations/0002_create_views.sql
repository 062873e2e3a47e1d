-- 0002: summary views. Why: `summarize` and users' own `query` must give the same figures, so
-- every summary is a view over the tables of 0001. Views hold no data, so a database ingested
-- before this migration gets them with nothing to backfill.

CREATE VIEW v_unknown AS
SELECT session_id,
       sum(count) AS unknown_total,
       group_concat(reason || '=' || count, ';') AS unknown_breakdown
FROM (SELECT session_id, reason, count FROM unknown_counts ORDER BY session_id, reason)
GROUP BY session_id;

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
       (SELECT count(*) FROM tool_calls c
         WHERE c.session_id = s.session_id AND c.tool_name IN ('runSubagent', 'Task')) AS delegations,
       s.estimated_tokens,
       coalesce(u.unknown_total, 0) AS unknown_total,
       coalesce(u.unknown_breakdown, '') AS unknown_breakdown
FROM sessions s
LEFT JOIN v_unknown u ON u.session_id = s.session_id;

CREATE VIEW v_tools AS
SELECT tool_name,
       count(*) AS calls,
       sum(success = 1) AS succeeded,
       sum(success = 0) AS failed,
       sum(success IS NULL) AS unfinished,
       sum(duration_ms) AS total_ms,
       CAST(avg(duration_ms) AS INTEGER) AS avg_ms,
       max(duration_ms) AS max_ms
FROM tool_calls
GROUP BY tool_name;

CREATE VIEW v_daily AS
SELECT date(ts / 1000, 'unixepoch') AS day,
       count(*) AS events,
       count(DISTINCT session_id) AS sessions,
       sum(hook_type = 'UserPromptSubmit') AS prompts,
       sum(hook_type IN ('PostToolUse', 'PostToolUseFailure')) AS tool_uses,
       sum(hook_type = 'PostToolUseFailure') AS tool_failures,
       sum(hook_type IN ('Stop', 'SubagentStop')) AS stops,
       sum(coalesce(estimated_tokens, 0)) AS estimated_tokens
FROM events
GROUP BY day;
