-- 0008: figures that are true. Why (issue 14, "every event recorded once, every figure true"):
--
-- Turns. `turns` counted every row of the turns table, SubagentStop included, so a session
-- whose subagents finished often showed more turns than it had prompts (122 turns for 80
-- prompts on a real log). `turns` now counts the main conversation's turns (Stop, harvested
-- ones included) and `subagent_turns` the turns subagents finished (SubagentStop). The table
-- itself is unchanged: views hold no data, so nothing needs a backfill. A small partial index
-- counts the subagent turns without reading the rows (their text makes them large: reading
-- them made `summarize` 50 times slower on 1M events), and the main turns are all the others.
CREATE INDEX turns_subagent ON turns(session_id) WHERE hook_type = 'SubagentStop';
--
-- Tool calls: see each part below (join key, calls without ids, negative durations,
-- outcomes). `session_tools` move by what the backfill changed.
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
       (SELECT count(*) FROM turns t WHERE t.session_id = s.session_id)
         - (SELECT count(*) FROM turns t
             WHERE t.session_id = s.session_id AND t.hook_type = 'SubagentStop') AS turns,
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
       (SELECT count(*) FROM turns t WHERE t.session_id = s.session_id)
         - (SELECT count(*) FROM turns t
             WHERE t.session_id = s.session_id AND t.hook_type = 'SubagentStop') AS turns,
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

-- Tool calls: what every call adds to `session_tools`, before this migration changes any of
-- them. The totals move by the difference at the end (they also count pruned calls, so they
-- cannot simply be summed again).
CREATE TEMP TABLE tool_totals_before_0008 AS
SELECT coalesce(session_id, 'unknown-session') AS s, coalesce(tool_name, '') AS t,
       count(*) AS calls, coalesce(sum(success = 1), 0) AS succeeded,
       coalesce(sum(success = 0), 0) AS failed, coalesce(sum(success IS NULL), 0) AS unfinished,
       CAST(total(duration_ms) AS INTEGER) AS total_ms, count(duration_ms) AS timed
FROM tool_calls
GROUP BY 1, 2;

-- Outcomes. A call that never completed stayed "unfinished" forever: one the safety gate
-- denied (its PreToolUse line says `decision: "deny"`), one the agent's own permission check
-- refused (Copilot CLI's `toolResult.resultType: "denied"`, Claude Code's `PermissionDenied`
-- event), one still open when its session ended. `outcome` says what became of each call:
-- 'succeeded', 'failed', 'denied', 'refused', 'abandoned', or NULL while it is in flight, which
-- is all "unfinished" means now. `success` stays 1 for succeeded and 0 for failed, and is NULL
-- for every other outcome (a refusal used to count as a failure: the tool never ran).
-- `session_tools` gets a counter per new outcome, and `unfinished` counts the calls in flight.
ALTER TABLE tool_calls ADD COLUMN outcome TEXT;
ALTER TABLE session_tools ADD COLUMN denied INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_tools ADD COLUMN refused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_tools ADD COLUMN abandoned INTEGER NOT NULL DEFAULT 0;

-- The PreToolUse lines the gate denied (a substring test first: parsing every line is slow).
CREATE TEMP TABLE denied_0008 AS
SELECT id FROM events
WHERE hook_type = 'PreToolUse' AND instr(entry, '"decision"') > 0 AND json_valid(entry)
  AND json_extract(entry, '$.decision') = 'deny';

-- Join key. The halves of a call were joined on the call id alone, so a PreToolUse could
-- complete another session's open call: agents that number their calls reuse ids across
-- sessions. They are joined on (session, call id) now, and the index that finds an open call
-- is keyed so. A stored call whose halves came from two sessions (their events say which) is
-- split in two, each half in its own session, unless that would leave a session with two open
-- calls of one id (the halves that belong together can no longer be told apart then): those
-- rows stay as they are.
CREATE TEMP TABLE split_0008 AS
SELECT c.rowid AS rid, p.session_id AS pre_session, p.tool_name AS pre_tool,
       p.duration_ms AS pre_ms, q.session_id AS post_session, q.tool_name AS post_tool,
       q.duration_ms AS post_ms
FROM tool_calls c
JOIN events p ON p.id = c.pre_event_id
JOIN events q ON q.id = c.post_event_id
WHERE c.tool_call_id IS NOT NULL AND p.session_id <> q.session_id
  AND NOT EXISTS (SELECT 1 FROM tool_calls o
                   WHERE o.call_key = c.call_key AND (o.start_ts IS NULL OR o.end_ts IS NULL)
                     AND o.session_id IN (p.session_id, q.session_id));
DELETE FROM split_0008 WHERE rid IN (
    SELECT rid FROM split_0008 s JOIN tool_calls c ON c.rowid = s.rid
     WHERE c.call_key IN (SELECT c2.call_key FROM split_0008 s2
                            JOIN tool_calls c2 ON c2.rowid = s2.rid
                           GROUP BY c2.call_key HAVING count(*) > 1));

CREATE INDEX temp.split_0008_rid ON split_0008(rid);
DROP INDEX tool_calls_open;

INSERT INTO tool_calls(call_key, tool_call_id, session_id, tool_name, start_ts, end_ts,
    duration_ms, success, result_type, pre_event_id, post_event_id)
SELECT c.call_key, c.tool_call_id, s.post_session, coalesce(s.post_tool, c.tool_name), NULL,
       c.end_ts, s.post_ms, c.success, c.result_type, NULL, c.post_event_id
FROM split_0008 s JOIN tool_calls c ON c.rowid = s.rid;
UPDATE tool_calls SET
    session_id = (SELECT pre_session FROM split_0008 WHERE rid = tool_calls.rowid),
    tool_name = coalesce((SELECT pre_tool FROM split_0008 WHERE rid = tool_calls.rowid),
                         tool_name),
    end_ts = NULL,
    duration_ms = (SELECT pre_ms FROM split_0008 WHERE rid = tool_calls.rowid),
    success = NULL,
    result_type = NULL,
    post_event_id = NULL
WHERE rowid IN (SELECT rid FROM split_0008);
DROP TABLE split_0008;

-- Incomplete calls by (key, session): how one half finds the other in a later batch.
CREATE UNIQUE INDEX tool_calls_open ON tool_calls(call_key, session_id)
    WHERE start_ts IS NULL OR end_ts IS NULL;

-- Claude Code's PermissionDenied (its auto mode refused a call; the event is not one of the
-- canonical hook types, so it was stored as an event and nothing more): it completes the open
-- call of its session and id as a refusal, as ingest now does, or is a call of its own when
-- none is open (its PreToolUse was never seen). Only the first one of a call counts here.
CREATE TEMP TABLE refusals_0008 AS
SELECT seq, id, ts, session_id, tool_call_id, duration_ms
FROM events
WHERE hook_type = 'PermissionDenied' COLLATE NOCASE AND tool_call_id IS NOT NULL;
DELETE FROM refusals_0008 WHERE seq NOT IN (
    SELECT min(seq) FROM refusals_0008 GROUP BY tool_call_id, session_id);
ALTER TABLE refusals_0008 ADD COLUMN rid INTEGER;
CREATE INDEX temp.refusals_0008_rid ON refusals_0008(rid);
UPDATE refusals_0008 SET rid = (
    SELECT c.rowid FROM tool_calls c
    WHERE c.call_key = refusals_0008.tool_call_id AND c.session_id IS refusals_0008.session_id
      AND c.tool_call_id IS NOT NULL AND (c.start_ts IS NULL OR c.end_ts IS NULL)
      AND c.start_ts IS NOT NULL AND c.end_ts IS NULL);
UPDATE tool_calls SET (end_ts, duration_ms, post_event_id, outcome) = (
    SELECT r.ts, coalesce(r.duration_ms, tool_calls.duration_ms, r.ts - tool_calls.start_ts),
           r.id,
           CASE WHEN tool_calls.pre_event_id IN (SELECT id FROM denied_0008) THEN 'denied'
                ELSE 'refused' END
    FROM refusals_0008 r WHERE r.rid = tool_calls.rowid)
WHERE rowid IN (SELECT rid FROM refusals_0008);
INSERT INTO tool_calls(call_key, tool_call_id, session_id, tool_name, end_ts, duration_ms,
    post_event_id, outcome)
SELECT r.tool_call_id, r.tool_call_id, r.session_id, e.tool_name, r.ts, r.duration_ms, r.id,
       'refused'
FROM refusals_0008 r JOIN events e ON e.id = r.id
WHERE r.rid IS NULL
  AND NOT EXISTS (SELECT 1 FROM tool_calls c
                   WHERE c.call_key = r.tool_call_id AND c.session_id IS r.session_id
                     AND (c.start_ts IS NULL OR c.end_ts IS NULL));
DROP TABLE refusals_0008;

-- Calls without ids. Copilot CLI's payloads (like Gemini CLI's and Claude Code's before 2.0)
-- carry no tool call id, so each half was a call of its own: one real call became two rows,
-- one unfinished and one without a start, and never had a duration. Ingest now pairs them
-- within their session and tool name, in the order they were read: a PostToolUse completes
-- the earliest PreToolUse still waiting for one, or among those the earliest with the same
-- `toolInput` (calls of one tool run in parallel); a PreToolUse never joins an earlier Post.
-- The calls stored before are paired here by the same order (the `seq` of their events),
-- tool name and input, first come first served (below). Where this can differ from ingest:
-- calls the gate denied are left out (ingest lets them take only a PostToolUse that reports a
-- refusal), a call left open by a SessionEnd can still be paired (ingest would have abandoned
-- it first), and a Post's choice among Pres of other inputs is made after all same-input pairs
-- rather than in reading order. Halves whose events were pruned stay as they are.
CREATE TEMP TABLE unpaired_0008 AS
SELECT c.rowid AS rid, c.session_id AS s, c.tool_name AS t, c.start_ts IS NOT NULL AS is_pre,
       e.seq AS ord, CASE WHEN json_valid(e.entry) THEN json_extract(e.entry, '$.toolInput') END
         AS g
FROM tool_calls c
JOIN events e ON e.id = coalesce(c.pre_event_id, c.post_event_id)
WHERE c.tool_call_id IS NULL AND c.session_id IS NOT NULL AND c.tool_name IS NOT NULL
  AND (c.start_ts IS NULL) <> (c.end_ts IS NULL)
  AND (c.pre_event_id IS NULL OR c.pre_event_id NOT IN (SELECT id FROM denied_0008));
-- First come first served, as a queue per session, tool and group g: after the j-th
-- PostToolUse, m_j = min(m_{j-1} + 1, Pres read before it) calls are paired, so
-- m_j = j + min(0, min over k <= j of (Pres before the k-th Post - k)); the j-th Post is paired
-- when m_j grows, with the m_j-th PreToolUse.
CREATE TEMP VIEW first_come_posts_0008 AS
WITH halves AS (
    SELECT * FROM unpaired_0008 WHERE g IS NOT NULL
), posts AS (
    SELECT rid, s, t, g, ord, pres - posts AS x, posts AS j
    FROM (SELECT rid, s, t, g, ord, is_pre,
                 sum(is_pre) OVER w AS pres, sum(1 - is_pre) OVER w AS posts
            FROM halves
          WINDOW w AS (PARTITION BY s, t, g ORDER BY ord ROWS UNBOUNDED PRECEDING))
    WHERE NOT is_pre
), paired AS (
    SELECT rid, s, t, g, ord,
           j + min(0, min(x) OVER (PARTITION BY s, t, g ORDER BY ord
                                   ROWS UNBOUNDED PRECEDING)) AS m
    FROM posts
)
SELECT rid, s, t, g, m
FROM (SELECT rid, s, t, g, m, m - lag(m, 1, 0) OVER (PARTITION BY s, t, g ORDER BY ord) AS grew
        FROM paired)
WHERE grew = 1;
CREATE TEMP VIEW first_come_pres_0008 AS
SELECT s, t, g, row_number() OVER (PARTITION BY s, t, g ORDER BY ord) AS i, rid
FROM unpaired_0008
WHERE is_pre AND g IS NOT NULL;
-- The Pres numbered, to be found by number (a join of the two views would compare every Post
-- with every Pre).
CREATE TEMP TABLE pres_0008(s, t, g, i, rid, PRIMARY KEY (s, t, g, i));
CREATE TEMP TABLE pairs_0008(pre_rid INTEGER PRIMARY KEY, post_rid INTEGER NOT NULL);
-- First the halves of the same input (g = the input), then what is left by order alone
-- (g = ''): as ingest, which prefers a PreToolUse of the same input and else takes the
-- earliest. A lost half does not shift every later call of the tool onto the wrong partner.
INSERT INTO pres_0008 SELECT * FROM first_come_pres_0008;
INSERT INTO pairs_0008
SELECT p.rid, q.rid
FROM first_come_posts_0008 q
JOIN pres_0008 p ON p.s = q.s AND p.t = q.t AND p.g = q.g AND p.i = q.m;
DELETE FROM unpaired_0008
WHERE rid IN (SELECT pre_rid FROM pairs_0008) OR rid IN (SELECT post_rid FROM pairs_0008);
UPDATE unpaired_0008 SET g = '';
DELETE FROM pres_0008;
INSERT INTO pres_0008 SELECT * FROM first_come_pres_0008;
INSERT INTO pairs_0008
SELECT p.rid, q.rid
FROM first_come_posts_0008 q
JOIN pres_0008 p ON p.s = q.s AND p.t = q.t AND p.g = q.g AND p.i = q.m;
DROP VIEW first_come_posts_0008;
DROP VIEW first_come_pres_0008;
DROP TABLE pres_0008;
DROP TABLE unpaired_0008;
UPDATE tool_calls SET (end_ts, duration_ms, success, result_type, post_event_id) = (
    SELECT q.end_ts, coalesce(q.duration_ms, tool_calls.duration_ms,
                              q.end_ts - tool_calls.start_ts),
           q.success, q.result_type, q.post_event_id
    FROM pairs_0008 JOIN tool_calls q ON q.rowid = pairs_0008.post_rid
    WHERE pairs_0008.pre_rid = tool_calls.rowid)
WHERE rowid IN (SELECT pre_rid FROM pairs_0008);
DELETE FROM tool_calls WHERE rowid IN (SELECT post_rid FROM pairs_0008);
DROP TABLE pairs_0008;

-- Calls without an id waiting for their PostToolUse, by session and tool.
CREATE INDEX tool_calls_unpaired ON tool_calls(session_id, tool_name)
    WHERE tool_call_id IS NULL AND end_ts IS NULL;

-- Negative durations. A PostToolUse read before its PreToolUse, or clocks that disagree, gave
-- `duration_ms = end_ts - start_ts` below zero, and `v_tools` summed it (`total_ms -150`).
-- Ingest now takes the agent's own figure when the payload has one (Claude Code's
-- `duration_ms`, which capture writes as `durationMs`), else the timestamps, and never stores
-- a negative duration: it counts each one it drops as the unknown reason
-- `negative_tool_duration`. Stored negatives get the same: the timestamps where they give a
-- duration (the negative was the agent's figure), else none; each is counted once.
INSERT INTO unknown_counts(session_id, reason, count)
SELECT coalesce(session_id, 'unknown-session'), 'negative_tool_duration', count(*)
FROM tool_calls
WHERE duration_ms < 0
GROUP BY 1
ON CONFLICT(session_id, reason) DO UPDATE SET count = count + excluded.count;
UPDATE tool_calls
SET duration_ms = CASE WHEN end_ts - start_ts >= 0 THEN end_ts - start_ts END
WHERE duration_ms < 0;
UPDATE session_tools SET max_ms = NULL WHERE max_ms < 0;

-- Outcomes of the other stored calls: what the PostToolUse said (a `denied` result type is the
-- agent's refusal, or the gate's denial reported back when the gate denied the PreToolUse);
-- else the gate's denial; else abandoned if its session had ended (`sessions.ended_at`, the
-- latest SessionEnd) at or after the call started. Which of an ended session's calls were
-- still open at its end is told by time here, not by the order of the lines as ingest does.
UPDATE tool_calls SET outcome = CASE
    WHEN end_ts IS NOT NULL AND success = 1 THEN 'succeeded'
    WHEN pre_event_id IN (SELECT id FROM denied_0008) THEN 'denied'
    WHEN end_ts IS NOT NULL AND result_type = 'denied' THEN 'refused'
    WHEN end_ts IS NOT NULL THEN 'failed'
    WHEN EXISTS (SELECT 1 FROM sessions s
                  WHERE s.session_id = tool_calls.session_id AND s.ended_at >= start_ts)
      THEN 'abandoned'
END
WHERE outcome IS NULL;
UPDATE tool_calls SET success = NULL WHERE outcome IN ('denied', 'refused');
DROP TABLE denied_0008;

-- Calls in flight, by session: what a SessionEnd abandons.
CREATE INDEX tool_calls_in_flight ON tool_calls(session_id) WHERE outcome IS NULL;

-- The totals move by what the changes above made of the calls.
CREATE TEMP TABLE tool_totals_change_0008 AS
SELECT s, t, sum(calls) AS calls, sum(succeeded) AS succeeded, sum(failed) AS failed,
       sum(unfinished) AS unfinished, sum(total_ms) AS total_ms, sum(timed) AS timed,
       max(max_ms) AS max_ms, max(last_ts) AS last_ts, sum(denied) AS denied,
       sum(refused) AS refused, sum(abandoned) AS abandoned
FROM (SELECT s, t, -calls AS calls, -succeeded AS succeeded, -failed AS failed,
             -unfinished AS unfinished, -total_ms AS total_ms, -timed AS timed,
             NULL AS max_ms, NULL AS last_ts, 0 AS denied, 0 AS refused, 0 AS abandoned
        FROM tool_totals_before_0008
      UNION ALL
      SELECT coalesce(session_id, 'unknown-session'), coalesce(tool_name, ''), count(*),
             count(*) FILTER (WHERE outcome = 'succeeded'),
             count(*) FILTER (WHERE outcome = 'failed'),
             count(*) FILTER (WHERE outcome IS NULL), CAST(total(duration_ms) AS INTEGER),
             count(duration_ms), max(duration_ms),
             max(max(coalesce(start_ts, end_ts), coalesce(end_ts, start_ts))),
             count(*) FILTER (WHERE outcome = 'denied'),
             count(*) FILTER (WHERE outcome = 'refused'),
             count(*) FILTER (WHERE outcome = 'abandoned')
        FROM tool_calls
       GROUP BY 1, 2)
GROUP BY s, t;
DROP TABLE tool_totals_before_0008;
INSERT INTO session_tools(session_id, tool_name, calls, succeeded, failed, unfinished, total_ms,
    timed, max_ms, last_ts, denied, refused, abandoned)
SELECT s, t, calls, succeeded, failed, unfinished, total_ms, timed, max_ms, coalesce(last_ts, 0),
       denied, refused, abandoned
FROM tool_totals_change_0008
WHERE calls <> 0 OR succeeded <> 0 OR failed <> 0 OR unfinished <> 0 OR total_ms <> 0
   OR timed <> 0 OR denied <> 0 OR refused <> 0 OR abandoned <> 0
ON CONFLICT(session_id, tool_name) DO UPDATE SET
    calls = calls + excluded.calls,
    succeeded = succeeded + excluded.succeeded,
    failed = failed + excluded.failed,
    unfinished = unfinished + excluded.unfinished,
    total_ms = total_ms + excluded.total_ms,
    timed = timed + excluded.timed,
    max_ms = max(coalesce(max_ms, excluded.max_ms), coalesce(excluded.max_ms, max_ms)),
    last_ts = max(last_ts, excluded.last_ts),
    denied = denied + excluded.denied,
    refused = refused + excluded.refused,
    abandoned = abandoned + excluded.abandoned;
DELETE FROM session_tools WHERE calls <= 0;
DROP TABLE tool_totals_change_0008;

-- The totals by outcome, new columns last.
DROP VIEW v_session_tools;
CREATE VIEW v_session_tools AS
SELECT session_id,
       nullif(tool_name, '') AS tool_name,
       calls,
       succeeded,
       failed,
       unfinished,
       CASE WHEN timed > 0 THEN total_ms END AS total_ms,
       timed,
       max_ms,
       denied,
       refused,
       abandoned
FROM session_tools;

DROP VIEW v_tools;
CREATE VIEW v_tools AS
SELECT nullif(tool_name, '') AS tool_name,
       sum(calls) AS calls,
       sum(succeeded) AS succeeded,
       sum(failed) AS failed,
       sum(unfinished) AS unfinished,
       -- total() and CAST: a sum past the integer range saturates instead of failing.
       CASE WHEN sum(timed) > 0 THEN CAST(total(total_ms) AS INTEGER) END AS total_ms,
       CAST(total(total_ms) / nullif(sum(timed), 0) AS INTEGER) AS avg_ms,
       max(max_ms) AS max_ms,
       sum(denied) AS denied,
       sum(refused) AS refused,
       sum(abandoned) AS abandoned
FROM session_tools
GROUP BY tool_name;
