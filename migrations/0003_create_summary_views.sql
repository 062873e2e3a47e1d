-- 0003: summary views for `cmstore summarize`, and indexes for summarize and `cmstore prune`.
-- Why: summarize prints per-session tool breakdowns, delegations and per-agent totals, and
-- must select them from views so that `cmstore query` gives the very same figures, fast on a
-- large store; prune deletes tool calls by time in small batches, which needs an index on that
-- time. Views hold no data and indexes are derived: an existing database upgrades as it is.

-- Per-session tool figures read the index alone (summarize on 1M events: ~0.7 s -> ~0.1 s).
-- It starts with session_id, so it replaces the narrower index of 0001.
CREATE INDEX tool_calls_session_tool ON tool_calls(session_id, tool_name, success, duration_ms);
DROP INDEX tool_calls_session_id;

-- A tool call's time: when it started, else (only the PostToolUse half was seen) when it ended.
CREATE INDEX tool_calls_ts ON tool_calls(coalesce(start_ts, end_ts));

-- Delegations are rare: a partial index keeps the per-session count cheap on a large store.
CREATE INDEX events_delegated ON events(session_id, delegated_agent)
    WHERE hook_type = 'PreToolUse' AND delegated_agent IS NOT NULL;

-- Per session and tool: calls, outcomes and time spent.
CREATE VIEW v_session_tools AS
SELECT session_id,
       tool_name,
       count(*) AS calls,
       sum(success = 1) AS succeeded,
       sum(success = 0) AS failed,
       sum(success IS NULL) AS unfinished,
       sum(duration_ms) AS total_ms,
       count(duration_ms) AS timed,
       max(duration_ms) AS max_ms
FROM tool_calls
GROUP BY session_id, tool_name;

-- Delegations to subagents: PreToolUse events that name the agent they hand work to.
CREATE VIEW v_delegations AS
SELECT session_id,
       delegated_agent,
       count(*) AS calls,
       min(ts) AS first_ts,
       max(ts) AS last_ts
FROM events
WHERE hook_type = 'PreToolUse' AND delegated_agent IS NOT NULL
GROUP BY session_id, delegated_agent;

-- One row per session with everything `cmstore summarize` prints, times as UTC ISO 8601.
-- `tools` is `tool=calls/failed/ms;…` sorted by tool; `delegated_to` is `agent=n;…`;
-- `unknown_breakdown` is vstack's `reason=n;…` sorted by reason (v_unknown).
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
       (SELECT count(*) FROM turns t WHERE t.session_id = s.session_id) AS turns,
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
       s.last_seen
FROM sessions s
LEFT JOIN v_unknown u ON u.session_id = s.session_id;

-- Per agent: sessions and their totals.
CREATE VIEW v_agents AS
SELECT coalesce(agent, '?') AS agent,
       count(*) AS sessions,
       sum(events) AS events,
       sum(prompts) AS prompts,
       sum(tool_uses) AS tool_uses,
       sum(tool_failures) AS tool_failures,
       sum(estimated_tokens) AS estimated_tokens,
       strftime('%Y-%m-%dT%H:%M:%SZ', min(first_seen) / 1000, 'unixepoch') AS first_seen,
       strftime('%Y-%m-%dT%H:%M:%SZ', max(last_seen) / 1000, 'unixepoch') AS last_seen
FROM sessions
GROUP BY coalesce(agent, '?');
