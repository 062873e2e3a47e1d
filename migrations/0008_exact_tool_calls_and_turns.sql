-- 0008: figures that are true. Why (issue 14, "every event recorded once, every figure true"):
--
-- Turns. `turns` counted every row of the turns table, SubagentStop included, so a session
-- whose subagents finished often showed more turns than it had prompts (122 turns for 80
-- prompts on a real log). `turns` now counts the main conversation's turns (Stop, harvested
-- ones included) and `subagent_turns` the turns subagents finished (SubagentStop). The table
-- itself is unchanged: views hold no data, so nothing needs a backfill.
--
-- New view columns come last, so that queries reading the views' columns by position keep
-- working.

DROP VIEW v_sessions;
CREATE VIEW v_sessions AS
SELECT s.session_id,
       s.agent,
       s.model,
       s.cwd,
       s.first_seen,
       s.last_seen,
       s.last_seen - s.first_seen AS duration_ms,
       s.ended,
       s.ended_at,
       s.events,
       s.prompts,
       (SELECT count(*) FROM turns t
         WHERE t.session_id = s.session_id AND t.hook_type IS NOT 'SubagentStop') AS turns,
       s.tool_uses,
       s.tool_failures,
       coalesce((SELECT sum(calls) FROM session_tools st
                  WHERE st.session_id = s.session_id
                    AND st.tool_name IN ('runSubagent', 'Task')), 0) AS delegations,
       s.estimated_tokens,
       coalesce(u.unknown_total, 0) AS unknown_total,
       coalesce(u.unknown_breakdown, '') AS unknown_breakdown,
       (SELECT count(*) FROM turns t
         WHERE t.session_id = s.session_id AND t.hook_type = 'SubagentStop') AS subagent_turns
FROM sessions s
LEFT JOIN v_unknown u ON u.session_id = s.session_id;

DROP VIEW v_session_summary;
CREATE VIEW v_session_summary AS
SELECT s.session_id,
       s.agent,
       s.model,
       s.cwd,
       strftime('%Y-%m-%dT%H:%M:%SZ', s.first_seen / 1000, 'unixepoch') AS start,
       strftime('%Y-%m-%dT%H:%M:%SZ', s.last_seen / 1000, 'unixepoch') AS "end",
       s.last_seen - s.first_seen AS duration_ms,
       s.ended,
       s.prompts,
       (SELECT count(*) FROM turns t
         WHERE t.session_id = s.session_id AND t.hook_type IS NOT 'SubagentStop') AS turns,
       s.tool_uses,
       s.tool_failures,
       coalesce((SELECT group_concat(tool, ';')
                   FROM (SELECT coalesce(tool_name, '?') || '=' || calls || '/' || failed || '/'
                                || coalesce(total_ms, 0) || 'ms' AS tool
                           FROM v_session_tools st
                          WHERE st.session_id = s.session_id
                          ORDER BY tool_name)), '') AS tools,
       coalesce((SELECT sum(calls) FROM v_delegations d
                  WHERE d.session_id = s.session_id), 0) AS delegations,
       coalesce((SELECT group_concat(agent, ';')
                   FROM (SELECT delegated_agent || '=' || calls AS agent
                           FROM v_delegations d
                          WHERE d.session_id = s.session_id
                          ORDER BY delegated_agent)), '') AS delegated_to,
       s.estimated_tokens,
       coalesce(u.unknown_total, 0) AS unknown_total,
       coalesce(u.unknown_breakdown, '') AS unknown_breakdown,
       s.first_seen,
       s.last_seen,
       (SELECT count(*) FROM turns t
         WHERE t.session_id = s.session_id AND t.hook_type = 'SubagentStop') AS subagent_turns
FROM sessions s
LEFT JOIN v_unknown u ON u.session_id = s.session_id;
