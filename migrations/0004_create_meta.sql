-- 0004: a place for store-wide facts. Why: prune deletes rows by age, but when ingest has to
-- re-read a queue from its start (a replaced or rotated file, a compaction interrupted between
-- its rename and its database update, a queue reached by another path), UNIQUE(id) can no
-- longer tell that a line's event was stored and pruned, so pruned events came back. Prune now
-- records its cutoff as `pruned_before` (epoch ms) and ingest skips lines older than it.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
