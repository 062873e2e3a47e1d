-- 0009: rejects keyed by what they are.
--
-- Why: a reject was unique on (source_id, offset) only, so whenever ingest read a queue again
-- from its start under a new `sources` row (copytruncate, a compaction interrupted between its
-- rename and its database update, a remount that changes st_dev) every rejected line in it was
-- recorded once more. A reject is now keyed by its place and its bytes (`line_key`: the id of
-- the closest line before it that is an event, how many lines after it it comes, and a hash of
-- its bytes), which a re-read gives again. It is also dated by that line (`line_ts`, NULL when
-- that line has no time or there is none), so prune and queue compaction drop it together with
-- the line it follows.
--
-- Rejects recorded before this migration keep line_key NULL. Ingest gives such a row the key
-- of the first rejected line it meets that can be the same line (same queue path, reason,
-- length and first bytes, at or before the offset the row names) instead of recording it again.
ALTER TABLE rejects ADD COLUMN line_key TEXT;
ALTER TABLE rejects ADD COLUMN line_ts INTEGER;
CREATE UNIQUE INDEX rejects_line_key ON rejects(line_key);
