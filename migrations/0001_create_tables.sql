-- 0001: the first schema. Why: ingest needs a place for every queue line (events), the byte
-- offset it has committed per queue file (sources, updated with a compare-and-set in the same
-- transaction as the rows), lines it could not read (rejects), vstack-style unknown counters that
-- stay exact under concurrency (unknown_counts), and the per-session / per-call / per-turn rows
-- derived from events so summaries never rescan the whole table (sessions, tool_calls, turns).
-- Names here are a public interface (DESIGN.md, "Schema contract"): add to them, never rename.

-- One row per queue line that parses as a JSON object, known hookType or not.
CREATE TABLE events (
    seq              INTEGER PRIMARY KEY,
    id               TEXT    NOT NULL UNIQUE,  -- the line's `id`, else 'sha256:<hex of line bytes>'
    ts               INTEGER NOT NULL,         -- epoch ms: `timestamp`, else ingest time
    hook_type        TEXT,
    event            TEXT,
    agent            TEXT,
    session_id       TEXT,
    tool_name        TEXT,
    tool_call_id     TEXT,
    turn_id          TEXT,
    model            TEXT,
    cwd              TEXT,
    origin           TEXT,
    actor_name       TEXT,
    actor_type       TEXT,
    delegated_agent  TEXT,
    synthetic        INTEGER,
    prompt           TEXT,
    response         TEXT,
    tool_result_type TEXT,
    duration_ms      INTEGER,
    size_bytes       INTEGER,
    estimated_tokens INTEGER,
    entry            TEXT    NOT NULL,         -- the whole line
    source_id        INTEGER,                  -- sources.id the line was read from
    source_offset    INTEGER,                  -- byte offset of the line in that source
    ingested_at      INTEGER NOT NULL          -- epoch ms
);
CREATE INDEX events_ts ON events(ts);
CREATE INDEX events_session_id ON events(session_id);
CREATE INDEX events_tool_name ON events(tool_name);

-- One row per queue file generation. A truncated or replaced file gets a new row (the old one
-- is retired), so `offset` always refers to the bytes of one identified file.
CREATE TABLE sources (
    id          INTEGER PRIMARY KEY,
    path        TEXT    NOT NULL,
    offset      INTEGER NOT NULL DEFAULT 0,  -- bytes committed: always just after a '\n'
    device      INTEGER,                     -- NULL where the platform has no device/inode
    inode       INTEGER,
    fingerprint TEXT,                        -- sha256 of the first line (at most 1 KiB), once complete
    marker      TEXT,                        -- sha256 of the (up to) 32 bytes before `offset`
    size        INTEGER,                     -- file size seen by the last batch
    lines       INTEGER NOT NULL DEFAULT 0,  -- complete lines consumed
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    retired_at  INTEGER,                     -- set when the file was truncated or replaced
    retired_why TEXT
);
CREATE UNIQUE INDEX sources_active_path ON sources(path) WHERE retired_at IS NULL;

-- Lines that could not become events: invalid UTF-8, invalid JSON, not an object, too long.
CREATE TABLE rejects (
    id         INTEGER PRIMARY KEY,
    source     TEXT    NOT NULL,  -- path of the queue file
    source_id  INTEGER NOT NULL,
    offset     INTEGER NOT NULL,
    length     INTEGER NOT NULL,  -- bytes, newline excluded
    reason     TEXT    NOT NULL,
    raw_prefix TEXT,              -- first bytes of the line, lossily decoded
    ts         INTEGER NOT NULL,  -- epoch ms of ingest
    UNIQUE (source_id, offset)
);

-- vstack's unknown counters, exact: incremented in the ingest transaction of the event.
CREATE TABLE unknown_counts (
    session_id TEXT    NOT NULL,  -- 'unknown-session' when the line has none
    reason     TEXT    NOT NULL,
    count      INTEGER NOT NULL,
    PRIMARY KEY (session_id, reason)
) WITHOUT ROWID;

CREATE TABLE sessions (
    session_id       TEXT PRIMARY KEY,
    agent            TEXT,
    model            TEXT,
    cwd              TEXT,
    first_seen       INTEGER NOT NULL,
    last_seen        INTEGER NOT NULL,
    events           INTEGER NOT NULL DEFAULT 0,
    prompts          INTEGER NOT NULL DEFAULT 0,
    tool_uses        INTEGER NOT NULL DEFAULT 0,  -- PostToolUse + PostToolUseFailure
    tool_failures    INTEGER NOT NULL DEFAULT 0,
    stops            INTEGER NOT NULL DEFAULT 0,  -- Stop + SubagentStop lines (harvested included)
    estimated_tokens INTEGER NOT NULL DEFAULT 0,
    ended            INTEGER NOT NULL DEFAULT 0,
    ended_at         INTEGER
);
CREATE INDEX sessions_last_seen ON sessions(last_seen);

-- One row per tool call, joining PreToolUse and PostToolUse/PostToolUseFailure.
CREATE TABLE tool_calls (
    call_key      TEXT PRIMARY KEY,  -- toolCallId, else the id of the event that reported the call
    tool_call_id  TEXT,
    session_id    TEXT,
    tool_name     TEXT,
    start_ts      INTEGER,
    end_ts        INTEGER,
    duration_ms   INTEGER,           -- reported durationMs, else end_ts - start_ts
    success       INTEGER,           -- 1 PostToolUse, 0 PostToolUseFailure, NULL not finished
    result_type   TEXT,
    pre_event_id  TEXT,
    post_event_id TEXT
);
CREATE INDEX tool_calls_session_id ON tool_calls(session_id);
CREATE INDEX tool_calls_tool_name ON tool_calls(tool_name);

-- One row per (session, turn): a harvested (synthetic) and a real Stop of one turn share a row,
-- and the real one's fields win.
CREATE TABLE turns (
    session_id      TEXT    NOT NULL,  -- 'unknown-session' when the line has none
    turn_key        TEXT    NOT NULL,  -- turnId, else the event id
    turn_id         TEXT,
    ts              INTEGER NOT NULL,
    hook_type       TEXT,
    prompt          TEXT,
    response        TEXT,
    tool_call_count INTEGER,
    synthetic       INTEGER NOT NULL,
    event_id        TEXT    NOT NULL,
    PRIMARY KEY (session_id, turn_key)
);
CREATE INDEX turns_ts ON turns(ts);
