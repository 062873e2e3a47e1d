-- 0009: rejects keyed by what they are, and the pruned lines a queue may still hold.
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
-- Second, lines that carry no time (their `ts` is the time of ingest) came back after prune
-- when a queue was read again: compaction kept them, and `meta.pruned_before` cannot cover a
-- time taken at ingest. `pruned_lines` holds the keys of what prune deleted that a queue may
-- still hold and that no time covers: the `events.id` of a line without a time, the
-- `rejects.line_key` of a rejected line before any event line of its file. Ingest skips what
-- is in it; compaction drops such lines and their keys.
--
-- Rejects recorded before this migration keep line_key NULL. Ingest gives such a row the key
-- of the first rejected line it meets that can be the same line (same queue path, reason,
-- length and first bytes, at or before the offset the row names) instead of recording it again.
ALTER TABLE rejects ADD COLUMN line_key TEXT;
ALTER TABLE rejects ADD COLUMN line_ts INTEGER;
CREATE UNIQUE INDEX rejects_line_key ON rejects(line_key);

CREATE TABLE pruned_lines (
    key       TEXT PRIMARY KEY,  -- events.id of a line without a time, or a rejects.line_key
    pruned_at INTEGER NOT NULL   -- epoch ms
) WITHOUT ROWID;
