-- 0036: whole sessions from transcripts (issue 37, second step). Why: `cmstore import` read
-- only token usage, so a session from before the hooks were installed (or one the hooks
-- missed) showed no prompt, no answer and no turn in `show`, `sessions` or `export`; and the
-- agents delete their transcripts (Claude Code after 30 days). Import now writes the turns a
-- transcript shows into `turns`, keyed as the hooks key them (the prompt line's id), so a turn
-- seen by both roads is one row whatever the order. `imported` says where a row came from:
-- 1 while only the transcript showed it, 0 once a hook line recorded it (ingest sets it when
-- it writes the row). A hook's fields win; import fills in only what the hook's row lacks.
ALTER TABLE turns ADD COLUMN imported INTEGER NOT NULL DEFAULT 0;
-- The few imported turns, found without reading the table: a push's digest of a session
-- takes them in (a turn only an import wrote changes no event).
CREATE INDEX turns_imported ON turns(session_id) WHERE imported = 1;

-- The tool calls the hooks missed, brought into `show`: what the transcript says of each,
-- its input (as `tool_calls.input` keeps it: the story's text, redacted, cut to 256
-- characters), when its result came and how it ended by the result's `is_error` ('failed',
-- else 'succeeded'; NULL with no result). Calls imported before this version are filled in by
-- the next import.
ALTER TABLE transcript_items ADD COLUMN input TEXT;
ALTER TABLE transcript_items ADD COLUMN end_ts INTEGER;
ALTER TABLE transcript_items ADD COLUMN outcome TEXT;

-- What the transcripts show, now also each turn (kind 'turn', item_id the prompt line's id):
-- coverage compares turns too. Sessions whose transcript was imported before this version
-- have no turn items yet: their turn columns are NULL until the next import, not a count of
-- "hook-only" turns that would be wrong. New columns come last.
DROP VIEW v_coverage;
CREATE VIEW v_coverage AS
WITH shown AS (
    SELECT session_id, item_id FROM transcript_items WHERE kind = 'tool_call'
),
hooked AS (
    SELECT DISTINCT session_id, tool_call_id AS item_id FROM tool_calls
    WHERE tool_call_id IS NOT NULL
      AND session_id IN (SELECT session_id FROM transcript_items)
),
calls AS (
    SELECT s.session_id, count(*) AS shown, count(h.item_id) AS hooked
    FROM shown s
    LEFT JOIN hooked h ON h.session_id = s.session_id AND h.item_id = s.item_id
    GROUP BY s.session_id
),
turn_items AS (
    SELECT i.session_id, count(*) AS shown,
           count(t.turn_key) AS hooked
    FROM transcript_items i
    LEFT JOIN turns t ON t.session_id = i.session_id AND t.turn_key = i.item_id
                     AND t.imported = 0
    WHERE i.kind = 'turn'
    GROUP BY i.session_id
),
sessions AS (
    SELECT DISTINCT session_id FROM transcript_items
)
SELECT x.session_id,
       coalesce(c.shown, 0) AS transcript_tool_calls,
       coalesce(c.hooked, 0) AS hooked_tool_calls,
       coalesce(c.shown - c.hooked, 0) AS missed_tool_calls,
       (SELECT count(*) FROM hooked o
         WHERE o.session_id = x.session_id
           AND NOT EXISTS (SELECT 1 FROM shown s
                           WHERE s.session_id = o.session_id AND s.item_id = o.item_id))
         AS hook_only_tool_calls,
       ti.shown AS transcript_turns,
       ti.hooked AS hooked_turns,
       ti.shown - ti.hooked AS missed_turns,
       CASE WHEN ti.session_id IS NOT NULL THEN
         (SELECT count(*) FROM turns t
           WHERE t.session_id = x.session_id AND t.imported = 0
             AND NOT EXISTS (SELECT 1 FROM transcript_items i
                             WHERE i.session_id = t.session_id AND i.kind = 'turn'
                               AND i.item_id = t.turn_key))
       END AS hook_only_turns
FROM sessions x
LEFT JOIN calls c ON c.session_id = x.session_id
LEFT JOIN turn_items ti ON ti.session_id = x.session_id;
