-- 0023: a day's `sessions` in v_daily_usage counts the sessions that used a model that day,
-- not only those that fired a hook. Why: usage backfilled by `cmstore import` (a user's
-- history from before cmstore was installed, or a transcript no hook read) has no events, so
-- its days read "0 sessions" beside their responses and cost. A session counts once a day
-- whether it was seen by its hooks, its responses or both. The columns stay as 0014 made them;
-- `v_daily` (hooks only) is unchanged.
DROP VIEW v_daily_usage;
CREATE VIEW v_daily_usage AS
WITH active AS (
    SELECT date(day_n * 86400, 'unixepoch') AS day, session_id
    FROM daily_sessions WHERE no_session = 0
    UNION
    SELECT day, session_id FROM usage_rollup WHERE session_id <> '' AND day <> ''
),
s AS (SELECT day, count(*) AS sessions FROM active GROUP BY day)
SELECT k.day,
       coalesce(d.events, 0) AS events,
       coalesce(s.sessions, 0) AS sessions,
       coalesce(d.prompts, 0) AS prompts,
       coalesce(d.tool_uses, 0) AS tool_uses,
       coalesce(d.tool_failures, 0) AS tool_failures,
       coalesce(d.stops, 0) AS stops,
       coalesce(d.estimated_tokens, 0) AS estimated_tokens,
       coalesce(u.responses, 0) AS responses,
       coalesce(u.input_tokens, 0) AS input_tokens,
       coalesce(u.output_tokens, 0) AS output_tokens,
       coalesce(u.cache_write_tokens, 0) AS cache_write_tokens,
       coalesce(u.cache_read_tokens, 0) AS cache_read_tokens,
       u.cost_usd,
       coalesce(u.unpriced, 0) AS unpriced
FROM (SELECT day FROM v_daily UNION SELECT day FROM v_usage_daily WHERE day IS NOT NULL) k
LEFT JOIN v_daily d ON d.day = k.day
LEFT JOIN v_usage_daily u ON u.day = k.day
LEFT JOIN s ON s.day = k.day;
