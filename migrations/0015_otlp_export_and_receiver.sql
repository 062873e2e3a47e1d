-- 0015: OpenTelemetry out (an export cursor) and in (the agents' own telemetry).
--
-- Why `export_cursors`: `cmstore export otlp` and ingest's continuous export send events in
-- `seq` order and must resume where the collector last acknowledged, after a crash or a day
-- with the collector down: the backlog is the store itself, never memory. One row per
-- destination (the traces endpoint), advanced with a compare-and-set only after a 2xx.
--
-- Why `otel_logs`, `otel_metrics`, `otel_rejects`: Claude Code exports its own events
-- (`claude_code.api_request` with tokens, cost and duration) over OTLP but keeps nothing
-- locally. `cmstore ingest --otlp-listen` stores each log record and metric data point once,
-- keyed by a hash of its content (OTLP has no record id: a resent identical record is the
-- same row), and joins them to sessions and prompts by the `session.id` and `prompt.id`
-- attributes. A body that cannot be decoded gets a row in `otel_rejects`, never a crash.

CREATE TABLE export_cursors (
    destination TEXT    PRIMARY KEY,  -- the traces endpoint URL
    seq         INTEGER NOT NULL,     -- events.seq of the last event the collector acknowledged
    events      INTEGER NOT NULL DEFAULT 0,  -- events exported so far
    spans       INTEGER NOT NULL DEFAULT 0,  -- spans they became
    updated_at  INTEGER NOT NULL      -- epoch ms
);

-- Why the trigger: `events.seq` is a rowid without AUTOINCREMENT, so once prune deletes the
-- newest events (every event older than the retention: a store idle that long), the next
-- ones ingested get the same seqs again, at or below a cursor, and would never be exported.
-- When the newest event goes, every cursor past what remains comes back to it; prune pays
-- for this (a look at max(seq) per deleted row), ingest does not. The export's own advance
-- never moves a cursor past the newest event either (export/source.rs).
CREATE TRIGGER export_cursors_follow_pruned_top AFTER DELETE ON events
WHEN old.seq > (SELECT coalesce(max(seq), 0) FROM events)
BEGIN
    UPDATE export_cursors SET seq = (SELECT coalesce(max(seq), 0) FROM events)
    WHERE seq > (SELECT coalesce(max(seq), 0) FROM events);
END;

CREATE TABLE otel_logs (
    record_key   TEXT    PRIMARY KEY,  -- 'sha256:<hex>' of resource, scope and record, encoded
    ts           INTEGER,              -- epoch ms: time_unix_nano, else observed_time_unix_nano
    event_name   TEXT,                 -- the record's event_name, else its `event.name` attribute
    session_id   TEXT,                 -- the `session.id` attribute
    prompt_id    TEXT,                 -- the `prompt.id` attribute
    service_name TEXT,                 -- the resource's `service.name`
    severity     TEXT,
    body         TEXT,
    attributes   TEXT    NOT NULL,     -- JSON object of the record's attributes
    resource     TEXT    NOT NULL,     -- JSON object of the resource's attributes
    received_at  INTEGER NOT NULL      -- epoch ms
);
CREATE INDEX otel_logs_session ON otel_logs(session_id);
CREATE INDEX otel_logs_prompt ON otel_logs(prompt_id) WHERE prompt_id IS NOT NULL;
CREATE INDEX otel_logs_ts ON otel_logs(ts);

CREATE TABLE otel_metrics (
    point_key    TEXT    PRIMARY KEY,  -- 'sha256:<hex>' of resource, scope, metric and point
    ts           INTEGER,              -- epoch ms of the data point
    name         TEXT    NOT NULL,
    unit         TEXT,
    kind         TEXT    NOT NULL,     -- gauge, sum, histogram, exponential_histogram, summary
    value        REAL,                 -- gauge and sum points; the sum of a histogram
    count        INTEGER,              -- histogram and summary points
    session_id   TEXT,
    service_name TEXT,
    attributes   TEXT    NOT NULL,
    resource     TEXT    NOT NULL,
    received_at  INTEGER NOT NULL
);
CREATE INDEX otel_metrics_session ON otel_metrics(session_id);
CREATE INDEX otel_metrics_name_ts ON otel_metrics(name, ts);

CREATE TABLE otel_rejects (
    id           INTEGER PRIMARY KEY,
    path         TEXT    NOT NULL,     -- the request path (/v1/logs, /v1/metrics)
    content_type TEXT,
    length       INTEGER NOT NULL,     -- bytes of the body read
    status       INTEGER NOT NULL,     -- the HTTP status answered
    reason       TEXT    NOT NULL,
    raw_prefix   TEXT,                 -- the first bytes, lossily decoded
    received_at  INTEGER NOT NULL
);
