-- 0037: the transcript files `cmstore import` read, as they were when it read them (issue 37).
-- Why: a running `cmstore ingest` now imports the agents' history as it grows, and `import`
-- is run again and again; a file that has not changed since (same size, same modification
-- time) costs a `stat`, not a read. `cmstore import --again` reads every file regardless.
CREATE TABLE imported_files (
    path        TEXT    PRIMARY KEY,
    size        INTEGER NOT NULL,
    modified_ms INTEGER NOT NULL,
    imported_at INTEGER NOT NULL
) WITHOUT ROWID;
