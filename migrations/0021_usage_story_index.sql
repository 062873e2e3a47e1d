-- 0021: `usage_session` covers what `cmstore show` reads of a session's responses.
--
-- Why: `usage` is keyed by (message_id, request_id), ids the API hands out at random, so one
-- session's responses lie all over its B-tree. The old `usage_session(session_id)` found them
-- but each one was then a descent of `usage` by its key: `show`'s usage statement took 43 ms
-- for a session of 5,000 responses in a 10M-event store (1M responses), a sixth of the whole
-- `show` of that session (issue 17's goal: 100 ms), and then sorted them by time. With the
-- columns in the index, in the order `show` reads them (time, then message id), it reads
-- consecutive index pages and sorts nothing: 16 ms (sqlite3).
--
-- Same name, so everything that read a session's responses through it still does (`--session`
-- filters, the per-session usage views). Its entries are wider: 65 MB against 30 MB beside a
-- `usage` of 88 MB for 1M responses. Ingest keeps it row by row, as it kept the index it
-- replaces (neither is among the indexes a bulk load sets aside, store/indexes.rs).
DROP INDEX IF EXISTS usage_session;
CREATE INDEX usage_session ON usage(session_id, ts, message_id, turn_id, sidechain, model,
    input_tokens, output_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens);
