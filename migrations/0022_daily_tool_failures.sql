-- 0022: the daily rollup's `tool_failures` by the rule `sessions` counts by. Why: 0016 counted
-- only `PostToolUseFailure` lines, so a failed call an agent reports on a `PostToolUse` line
-- (Copilot CLI's `toolResultType: "failure"`, a non-zero `exitCode` from Codex or Gemini,
-- `toolFailed`) was a failure in `summarize --by session`, `--by agent` and `--by tool` but not
-- in `--by day`. Ingest and prune now count a line's failure as `sessions` does; this recounts
-- what is stored. `cmstore_tool_failure(entry)` is that rule itself, registered by cmstore on
-- the connection (src/store/functions.rs), so the backfill cannot drift from it.
UPDATE daily_sessions SET tool_failures = 0 WHERE tool_failures <> 0;

WITH failures AS (
    SELECT (ts / 1000 - ((ts / 1000) % 86400 + 86400) % 86400) / 86400 AS day_n,
           session_id IS NULL AS no_session,
           coalesce(session_id, '') AS session_id,
           count(*) AS n
    FROM events
    WHERE hook_type = 'PostToolUseFailure'
       OR (hook_type = 'PostToolUse' AND cmstore_tool_failure(entry))
    GROUP BY 1, 2, 3
)
UPDATE daily_sessions SET tool_failures = failures.n
FROM failures
WHERE daily_sessions.day_n = failures.day_n
  AND daily_sessions.no_session = failures.no_session
  AND daily_sessions.session_id = failures.session_id;
