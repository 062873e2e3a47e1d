-- 0019: what `cmstore show` shows of a tool call, kept in its `tool_calls` row.
--
-- Why: `show` of a session of 50,000 events took 255-280 ms in a 10M-event store after 0017
-- (issue 17's goal: 100 ms). The calls came from the covering index `tool_calls_session_id`,
-- but each call's input and the gate's finding were read from its PreToolUse line: a page of
-- `events` per call when sessions interleave (17,700 pages for that session). Ingest now writes
-- them with the call, in the same transaction as the lines; the index covers them, so a
-- session's calls are read from consecutive index pages.
--
-- What they hold (the same as the story read from the lines, docs/design.md):
--   input            the tool input as one line of text (`queue_line::tool_input`): the first
--                    of its command, file_path, path, pattern, url, prompt that is a string,
--                    else its compact JSON; the PreToolUse's, else the PostToolUse's; cut to
--                    256 characters and `…` (a value of 257 characters is a cut one: `show
--                    --full` and `--format json` read the whole input from the line then);
--   risk, decision   the PreToolUse's `events.risk` and `events.decision` (0018);
--   delegated_agent  the PreToolUse's `events.delegated_agent`.
ALTER TABLE tool_calls ADD COLUMN input TEXT;
ALTER TABLE tool_calls ADD COLUMN risk TEXT;
ALTER TABLE tool_calls ADD COLUMN decision TEXT;
ALTER TABLE tool_calls ADD COLUMN delegated_agent TEXT;

-- Set aside while the rows are filled in: it is rebuilt wider below.
DROP INDEX IF EXISTS tool_calls_session_id;

-- The rows already stored, from their lines, as ingest computes it in Rust: `v` is what
-- `json_extract` gives (what the story read), `t` the text. `json_valid` first: `json_extract`
-- stops the migration on a line SQLite's parser refuses. Each call reads its PreToolUse line
-- through the `events.id` index (and its PostToolUse line when that one has no input).
UPDATE tool_calls SET (input, risk, decision, delegated_agent) = (
    SELECT CASE WHEN length(t) > 256 THEN substr(t, 1, 256) || '…' ELSE t END,
           risk, decision, delegated_agent
    FROM (SELECT CASE WHEN typeof(v) <> 'text' THEN NULL
                      WHEN NOT json_valid(v) THEN v
                      WHEN json_type(v) <> 'object' THEN v
                      ELSE coalesce(
                          CASE WHEN json_type(v, '$.command') = 'text'
                               THEN json_extract(v, '$.command') END,
                          CASE WHEN json_type(v, '$.file_path') = 'text'
                               THEN json_extract(v, '$.file_path') END,
                          CASE WHEN json_type(v, '$.path') = 'text'
                               THEN json_extract(v, '$.path') END,
                          CASE WHEN json_type(v, '$.pattern') = 'text'
                               THEN json_extract(v, '$.pattern') END,
                          CASE WHEN json_type(v, '$.url') = 'text'
                               THEN json_extract(v, '$.url') END,
                          CASE WHEN json_type(v, '$.prompt') = 'text'
                               THEN json_extract(v, '$.prompt') END,
                          v) END AS t,
                 risk, decision, delegated_agent
          FROM (SELECT CASE WHEN json_valid(entry)
                            THEN coalesce(json_extract(entry, '$.toolInput'),
                                          json_extract(entry, '$.tool_input')) END AS v,
                       risk, decision, delegated_agent
                FROM events WHERE id = tool_calls.pre_event_id)))
WHERE pre_event_id IS NOT NULL;

UPDATE tool_calls SET input = (
    SELECT CASE WHEN length(t) > 256 THEN substr(t, 1, 256) || '…' ELSE t END
    FROM (SELECT CASE WHEN typeof(v) <> 'text' THEN NULL
                      WHEN NOT json_valid(v) THEN v
                      WHEN json_type(v) <> 'object' THEN v
                      ELSE coalesce(
                          CASE WHEN json_type(v, '$.command') = 'text'
                               THEN json_extract(v, '$.command') END,
                          CASE WHEN json_type(v, '$.file_path') = 'text'
                               THEN json_extract(v, '$.file_path') END,
                          CASE WHEN json_type(v, '$.path') = 'text'
                               THEN json_extract(v, '$.path') END,
                          CASE WHEN json_type(v, '$.pattern') = 'text'
                               THEN json_extract(v, '$.pattern') END,
                          CASE WHEN json_type(v, '$.url') = 'text'
                               THEN json_extract(v, '$.url') END,
                          CASE WHEN json_type(v, '$.prompt') = 'text'
                               THEN json_extract(v, '$.prompt') END,
                          v) END AS t
          FROM (SELECT CASE WHEN json_valid(entry)
                            THEN coalesce(json_extract(entry, '$.toolInput'),
                                          json_extract(entry, '$.tool_input')) END AS v
                FROM events WHERE id = tool_calls.post_event_id)))
WHERE input IS NULL AND post_event_id IS NOT NULL;

-- What the story reads of a call: the session's calls from consecutive pages of this index
-- alone. 0017's columns first, in their order, so the calls come in the order they came before.
-- Same name, so a bulk load still sets it aside (store/indexes.rs).
CREATE INDEX tool_calls_session_id ON tool_calls(session_id, start_ts, end_ts, tool_name,
    duration_ms, outcome, pre_event_id, post_event_id, input, risk, decision, delegated_agent);

-- `events_story` back to 0016's four kinds: the story no longer reads the PreToolUse lines
-- (0017 added them), and ingest writes a third of the lines into this index no more. `show`'s
-- statement repeats the condition word for word.
DROP INDEX IF EXISTS events_story;
CREATE INDEX events_story ON events(session_id, ts)
    WHERE hook_type IN ('UserPromptSubmit', 'SessionStart', 'SessionEnd', 'PreCompact');
