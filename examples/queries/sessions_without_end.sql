-- Which sessions never reported a SessionEnd, and how long ago was their last event?
SELECT session_id,
       agent,
       start,
       "end" AS last_event,
       (CAST(strftime('%s', 'now') AS INTEGER) * 1000 - last_seen) / 60000 AS idle_minutes,
       prompts,
       tool_uses
FROM v_session_summary
WHERE ended = 0
ORDER BY last_seen DESC, session_id;
