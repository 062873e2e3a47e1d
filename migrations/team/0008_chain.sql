-- Team schema 0008: each machine's chain (local migrations 0029 and 0035), pushed as it is.
-- Why: `cmstore verify` proved the local store only; the team store's rows could be altered,
-- removed or inserted on the server without a trace (issue 39). With each machine's chain
-- records beside its events, `cmstore verify --store` checks the links of every record and
-- every event row the records list: by its digest where the row carries its whole line (the
-- `full` profile), by its presence and time otherwise. The records are pushed in their order
-- and never replaced: a machine whose local chain was later rewritten keeps its original on
-- the server. Body and hash as lowercase hex; the records of the tables chained by key
-- (usage, OTLP) are carried for the links only (the server's usage is rewritten per session).
CREATE TABLE chain (
    machine_id text   NOT NULL,
    id         bigint NOT NULL,  -- the record's id in the machine's store
    kind       text   NOT NULL,  -- rows, prune, usage, otel_logs, otel_metrics
    seq_from   bigint,           -- rows: the first and last events.seq listed
    seq_to     bigint,
    ts_max     bigint,
    body       text   NOT NULL,  -- hex
    hash       text   NOT NULL,  -- hex: SHA-256(previous hash, kind, body)
    PRIMARY KEY (machine_id, id)
);
