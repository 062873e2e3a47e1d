-- Which checks (format, markdown, security: docs/checks.md) did not pass, on which files, and
-- what did they find? One row per result, newest first; secrets appear by kind and place only.
SELECT
  strftime('%Y-%m-%dT%H:%M:%SZ', ts / 1000, 'unixepoch') AS at,
  session_id,
  json_extract(entry, '$.check.name') AS "check",
  json_extract(entry, '$.check.status') AS status,
  json_extract(entry, '$.check.mode') AS mode,
  coalesce(json_extract(entry, '$.check.blocked'), 0) AS blocked,
  (SELECT group_concat(value, ', ') FROM json_each(entry, '$.check.files')) AS files,
  (SELECT group_concat(
            json_extract(f.value, '$.rule')
            || coalesce(' ' || json_extract(f.value, '$.file'), '')
            || coalesce(':' || json_extract(f.value, '$.line'), ''),
            '; ')
     FROM json_each(entry, '$.check.findings') AS f) AS findings,
  json_extract(entry, '$.check.exitCode') AS exit_code,
  coalesce(json_extract(entry, '$.check.error'), json_extract(entry, '$.check.output')) AS detail
FROM events
WHERE hook_type = 'CheckResult'
  AND json_extract(entry, '$.check.status') <> 'passed'
ORDER BY ts DESC, seq DESC;
