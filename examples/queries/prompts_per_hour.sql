-- How many prompts did users submit per UTC hour, and in how many sessions?
SELECT strftime('%Y-%m-%d %H:00', ts / 1000, 'unixepoch') AS hour,
       count(*) AS prompts,
       count(DISTINCT session_id) AS sessions
FROM events
WHERE hook_type = 'UserPromptSubmit'
GROUP BY hour
ORDER BY hour;
