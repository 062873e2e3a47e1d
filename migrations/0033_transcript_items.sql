-- 0033: what the transcripts show, to tell what the hooks missed (issue 37, coverage). Why:
-- hooks miss events (an agent version that stops firing one, a hook killed on exit, tools
-- that fire none), and nothing said so. `cmstore import` now records each tool call a
-- transcript shows by the id the hooks carry too (`tool_use_id`), and v_coverage compares the
-- two per session. Rows are keyed by what they stand for: an import run again adds nothing.
CREATE TABLE transcript_items (
    session_id TEXT    NOT NULL,
    kind       TEXT    NOT NULL,  -- 'tool_call'
    item_id    TEXT    NOT NULL,  -- a tool call's id (Claude Code `tool_use.id`)
    agent      TEXT,
    ts         INTEGER,           -- epoch ms of the transcript line
    name       TEXT,              -- the tool's name
    sidechain  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, kind, item_id)
) WITHOUT ROWID;

-- Per session a transcript was imported for: the tool calls it shows, how many of them a hook
-- recorded (a `tool_calls` row of the session with that id), how many none did, and the
-- calls hooks recorded with an id the transcript does not show.
CREATE VIEW v_coverage AS
WITH shown AS (
    SELECT session_id, item_id FROM transcript_items WHERE kind = 'tool_call'
),
hooked AS (
    SELECT DISTINCT session_id, tool_call_id AS item_id FROM tool_calls
    WHERE tool_call_id IS NOT NULL
      AND session_id IN (SELECT session_id FROM shown)
)
SELECT s.session_id,
       count(*) AS transcript_tool_calls,
       count(h.item_id) AS hooked_tool_calls,
       count(*) - count(h.item_id) AS missed_tool_calls,
       (SELECT count(*) FROM hooked o
         WHERE o.session_id = s.session_id
           AND NOT EXISTS (SELECT 1 FROM shown x
                           WHERE x.session_id = o.session_id AND x.item_id = o.item_id))
         AS hook_only_tool_calls
FROM shown s
LEFT JOIN hooked h ON h.session_id = s.session_id AND h.item_id = s.item_id
GROUP BY s.session_id;
