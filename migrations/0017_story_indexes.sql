-- 0017: the indexes `cmstore show` reads a session's story through. Why: `show` of a session
-- of 50,000 events took 398 ms in a 10M-event store (issue 17's goal: 100 ms), nearly all of it
-- page reads, three per tool call: its `tool_calls` row (through `tool_calls_session_id`, each
-- on its own page when sessions interleave), a leaf of the `events.id` index to find its
-- PreToolUse line, and that line's page.
--
-- `tool_calls_session_id` becomes a covering index of what the story reads of a call, so a
-- session's calls are read from a few consecutive index pages instead of a table page each.
-- Same name, so a bulk load still sets it aside (store/indexes.rs); ingest keeps as many
-- indexes as before, each entry wider.
DROP INDEX IF EXISTS tool_calls_session_id;
CREATE INDEX tool_calls_session_id ON tool_calls(session_id, start_ts, end_ts, tool_name,
    duration_ms, outcome, pre_event_id, post_event_id);

-- `events_story` (0016) takes the PreToolUse lines too: the story reads a session's prompts,
-- starts, ends, compactions and tool inputs in one pass over its own rows, and finds each
-- call's PreToolUse line among them instead of through the `events.id` index. `show`'s
-- statement repeats this condition word for word (a partial index serves only a statement
-- that names its condition).
DROP INDEX IF EXISTS events_story;
CREATE INDEX events_story ON events(session_id, ts)
    WHERE hook_type IN ('UserPromptSubmit', 'SessionStart', 'SessionEnd', 'PreCompact',
                        'PreToolUse');
