-- 0025: one index of events by session and kind, in place of two.
--
-- Why: ingest keeps every secondary index of `events` up to date for every line it stores,
-- and taken apart (issue 34, benches/ingest_parts.py) the indexes were about half of its
-- time on a following ingest's small lines. Two of them began with the session:
-- `events_session_id` (0001: every event by session) and `events_story` (0016/0019: the
-- session's prompts, starts, ends and compactions by time, for `show`). One index on
-- `(session_id, hook_type)` serves both readers and more: with the rowid (`seq`) after its
-- columns, a lookup of one kind of event in a session seeks straight to it in `seq` order
-- (the export's span lookups, Gemini CLI's unanswered prompt at ingest), and the story reads
-- its four kinds and sorts the few rows by time. On 200k small lines ingest spends 6 % less
-- CPU; reports read as fast or faster (`show` on a session of the 1M-event store 0.83x-0.97x).
--
-- Runs once, in the migration's transaction: two DROPs and one CREATE INDEX (about a second
-- at 1M events).

DROP INDEX IF EXISTS events_session_id;
DROP INDEX IF EXISTS events_story;
CREATE INDEX events_session ON events(session_id, hook_type);
