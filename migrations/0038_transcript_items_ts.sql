-- 0038: what transcripts show is pruned with the rest (issue 37). Why: since 0036 an item
-- holds a tool call's input (text, like a tool call's row), and coverage compares items with
-- the hooks' rows: once retention deleted those rows, old items counted as missed and kept
-- their inputs. Prune now deletes items older than its cutoff, through this index, and an
-- import leaves out items older than what prune deleted.
CREATE INDEX transcript_items_ts ON transcript_items(ts);
