-- Which shell commands did the agents run, newest first, and did each call succeed?
-- One row per tool call (PreToolUse carries the command; tool_calls knows the outcome: ok,
-- failed, denied by the safety gate, refused by the agent's permission check, abandoned when
-- its session ended, or unfinished while it runs).
SELECT strftime('%Y-%m-%dT%H:%M:%SZ', e.ts / 1000, 'unixepoch') AS at,
       e.session_id,
       e.tool_name,
       json_extract(json_extract(e.entry, '$.toolInput'), '$.command') AS command,
       CASE c.outcome WHEN 'succeeded' THEN 'ok' ELSE coalesce(c.outcome, 'unfinished') END
         AS outcome,
       c.duration_ms
FROM events e
LEFT JOIN tool_calls c ON c.pre_event_id = e.id
WHERE e.hook_type = 'PreToolUse'
  AND e.tool_name IN ('Bash', 'bash', 'shell', 'powershell', 'run_in_terminal', 'runInTerminal',
                      'run_shell_command')
ORDER BY e.ts DESC, e.seq DESC;
