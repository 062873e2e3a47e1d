-- 0029: the record's chain, tamper evidence for `events` (docs/verify.md, store/chain.rs).
--
-- Why: compliance users need a record an administrator cannot quietly edit (issue 39). Each
-- ingest batch that stores rows appends a record here, in its own transaction: per row its
-- `seq`, `ts` and a digest of its `id`, `ts` and `entry` (32 bytes a row), and the record's
-- hash over the previous one's. `cmstore verify` recomputes both and names the first row
-- altered, removed or inserted since; `verify --head` prints the last hash, to keep elsewhere.
-- Prune deletes the records whose rows are all gone and chains a `prune` record naming the
-- cutoff and the last record it deleted (the anchor).
--
-- Rows stored before this migration are not covered (nothing can vouch for them now); the
-- chain starts at the first batch after it. Written by ingest in Rust (SHA-256), not here.
CREATE TABLE chain (
    id        INTEGER PRIMARY KEY,
    kind      TEXT    NOT NULL,  -- 'rows' (an ingest batch) or 'prune'
    seq_from  INTEGER,           -- rows: the first and last `events.seq` listed
    seq_to    INTEGER,
    ts_max    INTEGER,           -- rows: the newest `ts` listed
    body      BLOB    NOT NULL,  -- rows: (seq, ts, digest) per row; prune: cutoff, start, anchor
    hash      BLOB    NOT NULL   -- SHA-256(previous hash, kind, body)
);
