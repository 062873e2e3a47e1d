-- 0028: who or what decided each tool call, `v_tool_call_decisions.decided_by`, from the
-- events the agents fire around it (issue 39; docs/design.md, "Decision chains").
--
-- Why: an agent's own log never says whether a call ran by a settings rule, a person's click,
-- a hook or an auto-mode classifier (anthropics/claude-code #40634). cmstore sees the events
-- that tell: its own gate's ruling on the PreToolUse, a `PermissionRequest` (Claude Code and
-- Codex fire it when they are about to ask the user), Claude Code's `PermissionDenied` (its
-- auto mode's classifier refused), and the permission mode on the PreToolUse
-- (`permissionMode`, on lines from this version on). Where they do not tell, it says
-- `unknown`; it never guesses.
--
-- A view, computed when read, not a column ingest fills: a `PermissionRequest` names no call
-- id in Claude Code, so it is matched to its call by session, tool, time and input, which
-- would cost every batch a lookup per call; read, it costs one lookup per call shown, on
-- `events_session` (0025). `show` and `gate report` read it for the calls they show.
--
-- decided_by:
--   gate        cmstore's gate (a safety rule, or a [budget] limit) denied it
--   classifier  Claude Code's auto-mode classifier refused it (PermissionDenied)
--   user        the agent asked the user (PermissionRequest): it ran if they allowed it
--   mode        it ran in bypassPermissions mode: nothing was asked
--   auto        it ran in auto mode without asking: a settings rule or the classifier allowed it
--   settings    it ran without asking, in a mode that asks unless a rule allows: a rule (or
--               the mode, for acceptEdits' edits) allowed it
--   unknown     none of these show (an agent that fires no PermissionRequest, a line from
--               before permissionMode was recorded, a call that never ended)
CREATE VIEW v_tool_call_decisions AS
SELECT c.rowid AS call_rowid, c.call_key, c.session_id, c.tool_call_id, c.tool_name, c.ts,
       c.outcome, c.risk, c.decision, pre.agent AS agent,
       json_extract(pre.entry, '$.permissionMode') AS permission_mode,
       asked.id AS permission_request_id,
       CASE
         WHEN c.outcome = 'denied' THEN 'gate'
         WHEN post.hook_type = 'PermissionDenied' THEN 'classifier'
         WHEN asked.id IS NOT NULL THEN 'user'
         WHEN c.outcome IN ('succeeded', 'failed') AND pre.agent IN ('claude', 'codex') THEN
           CASE json_extract(pre.entry, '$.permissionMode')
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
FROM tool_calls c
LEFT JOIN events pre ON pre.id = c.pre_event_id
LEFT JOIN events post ON post.id = c.post_event_id
LEFT JOIN events asked ON asked.seq = (
    SELECT p.seq FROM events p
    WHERE p.session_id = c.session_id AND p.hook_type = 'PermissionRequest'
      AND p.tool_name IS c.tool_name
      AND p.ts >= coalesce(c.start_ts, c.end_ts) AND p.ts <= coalesce(c.end_ts, p.ts)
      AND (p.tool_call_id = c.tool_call_id
           OR (p.tool_call_id IS NULL
               AND json_extract(p.entry, '$.toolInput') IS json_extract(pre.entry, '$.toolInput')))
    ORDER BY p.seq LIMIT 1);

-- The calls the gate flagged, by their PreToolUse line: `gate report` counts the ones it
-- allowed by who then allowed them. Partial: only flagged calls (few) are in it, so ingest
-- writes it for those alone.
CREATE INDEX tool_calls_flagged_pre ON tool_calls(pre_event_id) WHERE risk IS NOT NULL;
