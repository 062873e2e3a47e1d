-- Which files did the agents edit today (UTC), how often, and in how many sessions?
-- Edit-like tools of Claude Code, VS Code Copilot and Copilot CLI; the path is read from the
-- tool input (`toolInput` is JSON text inside the queue line).
SELECT coalesce(json_extract(json_extract(entry, '$.toolInput'), '$.file_path'),
                json_extract(json_extract(entry, '$.toolInput'), '$.filePath'),
                json_extract(json_extract(entry, '$.toolInput'), '$.path')) AS file,
       count(*) AS edits,
       count(DISTINCT session_id) AS sessions,
       strftime('%H:%M:%S', max(ts) / 1000, 'unixepoch') AS last_edit_utc
FROM events
WHERE hook_type = 'PostToolUse'
  AND tool_name IN ('Edit', 'MultiEdit', 'Write', 'NotebookEdit', 'edit', 'create',
                    'editFiles', 'edit_file', 'create_file', 'replace_string_in_file',
                    'insert_edit_into_file', 'str_replace_editor')
  AND ts >= CAST(strftime('%s', 'now', 'start of day') AS INTEGER) * 1000
GROUP BY file
ORDER BY edits DESC, file;
