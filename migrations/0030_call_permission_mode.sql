-- 0030: the PreToolUse's permission mode on its call, `tool_calls.permission_mode`, and
-- `v_tool_call_decisions` (0028) reading it there.
--
-- Why: 0028's view read each call's mode out of its PreToolUse line's JSON, and joined its
-- lines for every call, so `show` of a session of a thousand calls took twice as long (17 ms
-- against 33 ms on the 1M-event benchmark store). Ingest now keeps the mode on the call, as
-- it keeps the gate's finding (0019), and the view looks a line up only where it must: the
-- PostToolUse of a refused call, and the PreToolUse's input of a call its session asked about.
-- Calls stored before have no mode (their lines never had one), so nothing is filled in.
ALTER TABLE tool_calls ADD COLUMN permission_mode TEXT;
DROP VIEW v_tool_call_decisions;
CREATE VIEW v_tool_call_decisions AS
SELECT c.rowid AS call_rowid, c.call_key, c.session_id, c.tool_call_id, c.tool_name, c.ts,
       c.outcome, c.risk, c.decision, c.permission_mode,
       CASE
         WHEN c.outcome = 'denied' THEN 'gate'
         WHEN c.outcome = 'refused'
              AND (SELECT hook_type FROM events WHERE id = c.post_event_id) = 'PermissionDenied'
           THEN 'classifier'
         -- The unary `+` keeps the planner on `events_session` (0025): on `events_tool_name`
         -- it read every call of the tool in the store, for each call (minutes for one
         -- `show` at 1M events).
         WHEN EXISTS (
             SELECT 1 FROM events p
             WHERE p.session_id = c.session_id AND p.hook_type = 'PermissionRequest'
               AND +p.tool_name IS c.tool_name
               AND +p.ts >= coalesce(c.start_ts, c.end_ts) AND +p.ts <= coalesce(c.end_ts, p.ts)
               AND (p.tool_call_id = c.tool_call_id
                    OR (p.tool_call_id IS NULL
                        AND json_extract(p.entry, '$.toolInput') IS
                            (SELECT json_extract(entry, '$.toolInput') FROM events
                             WHERE id = c.pre_event_id))))
           THEN 'user'
         WHEN c.outcome IN ('succeeded', 'failed') THEN
           CASE c.permission_mode
             WHEN 'bypassPermissions' THEN 'mode'
             WHEN 'auto' THEN 'auto'
             WHEN 'default' THEN 'settings'
             WHEN 'acceptEdits' THEN 'settings'
             WHEN 'plan' THEN 'settings'
             WHEN 'dontAsk' THEN 'settings'
             ELSE 'unknown'
           END
         ELSE 'unknown'
       END AS decided_by
FROM tool_calls c;

-- `show` reads a call's mode with the rest of what it shows of the call, from its covering
-- index (0019), and works out who decided it there unless its session holds an event that
-- only the view can pair (a `PermissionRequest`, a `PermissionDenied`): the view costs a
-- lookup per call. Rebuilt whether or not a load had set it aside (`deferred_indexes`), so a
-- restore never brings back the old definition.
DROP INDEX IF EXISTS tool_calls_session_id;
DELETE FROM deferred_indexes WHERE name = 'tool_calls_session_id';
CREATE INDEX tool_calls_session_id ON tool_calls(session_id, start_ts, end_ts, tool_name,
    duration_ms, outcome, pre_event_id, post_event_id, input, risk, decision, delegated_agent,
    permission_mode);
