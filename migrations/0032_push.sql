-- 0032: the team store's push (issue 40). Why: `cmstore push` mirrors this store into a
-- PostgreSQL database that several machines share, exactly once; what it has sent must be
-- remembered here, beside the rows, and move only after the server has committed them.
--
-- The machine's id, made once per store: every row on the server is keyed by it and the row's
-- own key, so two machines never collide and a re-push of the same row is the same row.
CREATE TABLE push_machine (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    machine_id TEXT    NOT NULL,
    created_at INTEGER NOT NULL   -- epoch ms
);

-- Per server: the last event the server committed (events.seq), as export_cursors does for a
-- collector, and the last failure, for `status`.
CREATE TABLE push_cursors (
    destination   TEXT    PRIMARY KEY,  -- the server, without its password
    seq           INTEGER NOT NULL,
    events        INTEGER NOT NULL DEFAULT 0,  -- events pushed so far
    updated_at    INTEGER NOT NULL,     -- epoch ms of the last commit on the server
    last_error    TEXT,
    last_error_at INTEGER
);

-- Per server and session: a digest of the session's derived rows (its `sessions` row and its
-- usage) as last pushed. A session whose digest differs is pushed again: its turns, tool
-- calls and usage change only with its events or an import, which change the digest.
CREATE TABLE push_sessions (
    destination TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    digest      TEXT NOT NULL,
    PRIMARY KEY (destination, session_id)
) WITHOUT ROWID;

-- As for export_cursors (0015): once prune deletes the newest events, the next ones ingested
-- reuse their seqs; a cursor past what remains comes back to it, so nothing is skipped. One
-- trigger moves both kinds of cursor, so that prune, which pays for the look at max(seq) per
-- deleted row, pays for it once, as before this migration.
DROP TRIGGER export_cursors_follow_pruned_top;
CREATE TRIGGER cursors_follow_pruned_top AFTER DELETE ON events
WHEN old.seq > (SELECT coalesce(max(seq), 0) FROM events)
BEGIN
    UPDATE export_cursors SET seq = (SELECT coalesce(max(seq), 0) FROM events)
    WHERE seq > (SELECT coalesce(max(seq), 0) FROM events);
    UPDATE push_cursors SET seq = (SELECT coalesce(max(seq), 0) FROM events)
    WHERE seq > (SELECT coalesce(max(seq), 0) FROM events);
END;
