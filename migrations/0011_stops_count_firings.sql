-- 0011: `stops` counts Stop and SubagentStop firings, not harvested turns. Why: a turn
-- harvested from the transcript is written as a synthetic Stop line; when the turn's real Stop
-- fires later it is written too (every firing is one event), so counting both made a session
-- with one real Stop show two. Turns are counted from `turns`; `stops` is what the agent fired.
--
-- Existing sessions: the synthetic Stops still in `events` are taken off. Those already pruned
-- cannot be told apart any more, so an older session whose events were pruned may still count
-- a few harvested turns; nothing else changes.

UPDATE sessions
SET stops = max(0, stops - (SELECT count(*) FROM events e
                            WHERE e.session_id = sessions.session_id
                              AND e.hook_type IN ('Stop', 'SubagentStop')
                              AND e.synthetic = 1))
WHERE session_id IN (SELECT session_id FROM events
                     WHERE synthetic = 1 AND hook_type IN ('Stop', 'SubagentStop'));

DROP VIEW v_daily;
CREATE VIEW v_daily AS
SELECT date(ts / 1000, 'unixepoch') AS day,
       count(*) AS events,
       count(DISTINCT session_id) AS sessions,
       sum(hook_type = 'UserPromptSubmit') AS prompts,
       sum(hook_type IN ('PostToolUse', 'PostToolUseFailure')) AS tool_uses,
       sum(hook_type = 'PostToolUseFailure') AS tool_failures,
       sum(hook_type IN ('Stop', 'SubagentStop') AND coalesce(synthetic, 0) = 0) AS stops,
       CAST(total(coalesce(estimated_tokens, 0)) AS INTEGER) AS estimated_tokens
FROM events
GROUP BY day;
