-- 0006: where ingest keeps the definitions of secondary indexes it dropped for a bulk load.
-- Why: a large backlog loads faster when the indexes whose keys repeat all over their table
-- (events and tool calls by session and by tool) are built once at the end instead of row by
-- row: on 1M lines their upkeep was about a third of ingest's time. Ingest drops them and records their SQL here in one transaction, loads, then
-- recreates them from this table and empties it in another. Should ingest die in between, the
-- next ingest (or the next migration, before it runs) recreates them, so a database is never
-- left without them. UNIQUE indexes are never dropped: deduplication and joins need them.
CREATE TABLE deferred_indexes (
    name TEXT PRIMARY KEY,
    tbl  TEXT NOT NULL,
    sql  TEXT NOT NULL  -- the CREATE INDEX statement, as sqlite_master had it
) WITHOUT ROWID;
