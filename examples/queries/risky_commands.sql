-- Which tool calls did the safety gate flag as risky, with the rule(s) that matched, what it
-- decided (allow in audit mode, deny in enforce mode) and the command?
SELECT strftime('%Y-%m-%dT%H:%M:%SZ', ts / 1000, 'unixepoch') AS at,
       session_id,
       tool_name,
       json_extract(entry, '$.risk') AS risk,
       json_extract(entry, '$.decision') AS decision,
       json_extract(json_extract(entry, '$.toolInput'), '$.command') AS command
FROM events
WHERE hook_type = 'PreToolUse'
  AND json_extract(entry, '$.risk') IS NOT NULL
ORDER BY ts DESC, seq DESC;
