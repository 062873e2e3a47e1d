-- Which shell commands did the agents run, newest first, and did each call succeed?
-- One row per tool call (PreToolUse carries the command; tool_calls knows the outcome).
SELECT strftime('%Y-%m-%dT%H:%M:%SZ', e.ts / 1000, 'unixepoch') AS at,
       e.session_id,
       e.tool_name,
       json_extract(json_extract(e.entry, '$.toolInput'), '$.command') AS command,
       CASE c.success WHEN 1 THEN 'ok' WHEN 0 THEN 'failed' ELSE 'unfinished' END AS outcome,
       c.duration_ms
FROM events e
LEFT JOIN tool_calls c ON c.pre_event_id = e.id
WHERE e.hook_type = 'PreToolUse'
  AND e.tool_name IN ('Bash', 'bash', 'shell', 'powershell', 'run_in_terminal', 'runInTerminal')
ORDER BY e.ts DESC, e.seq DESC;
