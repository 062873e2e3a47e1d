-- 0007: token totals that saturate instead of failing. Why: `estimatedTokens` comes from the
-- queue line as written, so a line from a broken or hostile writer can carry a value near the
-- 64-bit limit. Summed with SQLite's sum(), two such values raised "integer overflow" and
-- `cmstore summarize --by day` (and `--by agent`) failed on the whole store. total() sums as
-- floating point and CAST brings the result back to an integer, saturating at the limit; for
-- any real count (below 2^53) it is the same exact figure. Views hold no data: an existing
-- database upgrades as it is.

DROP VIEW v_daily;
CREATE VIEW v_daily AS
SELECT date(ts / 1000, 'unixepoch') AS day,
       count(*) AS events,
       count(DISTINCT session_id) AS sessions,
       sum(hook_type = 'UserPromptSubmit') AS prompts,
       sum(hook_type IN ('PostToolUse', 'PostToolUseFailure')) AS tool_uses,
       sum(hook_type = 'PostToolUseFailure') AS tool_failures,
       sum(hook_type IN ('Stop', 'SubagentStop')) AS stops,
       CAST(total(coalesce(estimated_tokens, 0)) AS INTEGER) AS estimated_tokens
FROM events
GROUP BY day;

DROP VIEW v_agents;
CREATE VIEW v_agents AS
SELECT coalesce(agent, '?') AS agent,
       count(*) AS sessions,
       sum(events) AS events,
       sum(prompts) AS prompts,
       sum(tool_uses) AS tool_uses,
       sum(tool_failures) AS tool_failures,
       CAST(total(estimated_tokens) AS INTEGER) AS estimated_tokens,
       strftime('%Y-%m-%dT%H:%M:%SZ', min(first_seen) / 1000, 'unixepoch') AS first_seen,
       strftime('%Y-%m-%dT%H:%M:%SZ', max(last_seen) / 1000, 'unixepoch') AS last_seen
FROM sessions
GROUP BY coalesce(agent, '?');
