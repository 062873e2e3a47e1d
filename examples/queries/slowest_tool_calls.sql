-- Which tool calls took longest (reported durationMs, else PostToolUse time minus PreToolUse
-- time)? The twenty slowest.
SELECT session_id,
       tool_name,
       duration_ms,
       CASE outcome WHEN 'succeeded' THEN 'ok' ELSE coalesce(outcome, 'unfinished') END
         AS outcome,
       strftime('%Y-%m-%dT%H:%M:%SZ', ts / 1000, 'unixepoch') AS at
FROM tool_calls
WHERE duration_ms IS NOT NULL
ORDER BY duration_ms DESC, call_key
LIMIT 20;
