-- 0014: the real token usage of every API response, and what it cost. Why: the only token
-- figure so far was `estimated_tokens`, vstack's payload size / 4, a guess about hook payloads
-- rather than what the model used. Capture now carries the usage of the transcript bytes it
-- reads on its queue line (`usage: [...]`) and `cmstore import` reads existing transcripts;
-- both land here, one row per response (docs/usage.md).

-- One row per API response. The key is (message id, request id), the request id '' when the
-- transcript has none (a NULL would make every such row distinct); never the timestamp. Of the
-- transcript lines of one response, the one written last (greatest `line_offset`) holds the
-- final streamed counts, and an upsert keeps it whatever order the lines arrive in.
CREATE TABLE usage (
    message_id             TEXT NOT NULL,
    request_id             TEXT NOT NULL DEFAULT '',
    session_id             TEXT,
    agent                  TEXT,      -- the coding agent: claude, ...
    turn_id                TEXT,      -- the user prompt's line id, when known
    subagent_id            TEXT,      -- Claude Code `agentId`, for a subagent's response
    sidechain              INTEGER NOT NULL DEFAULT 0,
    model                  TEXT,
    ts                     INTEGER,   -- epoch ms of the transcript line
    input_tokens           INTEGER NOT NULL DEFAULT 0,
    output_tokens          INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens     INTEGER NOT NULL DEFAULT 0,  -- all cache writes
    cache_write_1h_tokens  INTEGER,   -- of those, 1-hour ones, when the transcript says
    cache_read_tokens      INTEGER NOT NULL DEFAULT 0,
    service_tier           TEXT,
    line_offset            INTEGER NOT NULL DEFAULT 0,
    origin                 TEXT NOT NULL,  -- 'hook' (a queue line) or 'import'
    PRIMARY KEY (message_id, request_id)
) WITHOUT ROWID;
CREATE INDEX usage_session ON usage(session_id);
CREATE INDEX usage_ts ON usage(ts);

-- Prices in USD per million tokens: cmstore's shipped table (resources/prices.toml) with the
-- overrides of cmstore.toml, written by every process that writes the store (ingest, import,
-- summarize when it is stale). Cost is computed from it when read, never stored with a row:
-- a changed price applies to all of history at once, and no row ever holds a stale cost.
CREATE TABLE prices (
    model           TEXT PRIMARY KEY,
    input           REAL NOT NULL,
    output          REAL NOT NULL,
    cache_write_5m  REAL NOT NULL,
    cache_write_1h  REAL NOT NULL,
    cache_read      REAL NOT NULL,
    as_of           TEXT,
    origin          TEXT NOT NULL   -- 'shipped' or 'cmstore.toml'
) WITHOUT ROWID;

-- Every response with its cost; NULL when its model has no price (never a guessed one).
-- Cache writes without the 5m/1h split are 5-minute writes: the only kind before the split.
CREATE VIEW v_usage AS
SELECT u.*,
       date(u.ts / 1000, 'unixepoch') AS day,
       u.cache_write_tokens - coalesce(u.cache_write_1h_tokens, 0) AS cache_write_5m_tokens,
       (u.input_tokens * p.input + u.output_tokens * p.output
        + (u.cache_write_tokens - coalesce(u.cache_write_1h_tokens, 0)) * p.cache_write_5m
        + coalesce(u.cache_write_1h_tokens, 0) * p.cache_write_1h
        + u.cache_read_tokens * p.cache_read) / 1000000.0 AS cost_usd
FROM usage u
LEFT JOIN prices p ON p.model = u.model;

-- The same figures per session, day, model, agent and subagent. Sums saturate (0007);
-- `cost_usd` covers the priced responses, `unpriced` counts the others.
CREATE VIEW v_usage_sessions AS
SELECT session_id, count(*) AS responses,
       CAST(total(input_tokens) AS INTEGER) AS input_tokens,
       CAST(total(output_tokens) AS INTEGER) AS output_tokens,
       CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
       CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
       round(sum(cost_usd), 6) AS cost_usd,
       sum(cost_usd IS NULL) AS unpriced,
       sum(sidechain) AS subagent_responses
FROM v_usage GROUP BY session_id;

CREATE VIEW v_usage_daily AS
SELECT day, count(*) AS responses,
       CAST(total(input_tokens) AS INTEGER) AS input_tokens,
       CAST(total(output_tokens) AS INTEGER) AS output_tokens,
       CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
       CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
       round(sum(cost_usd), 6) AS cost_usd,
       sum(cost_usd IS NULL) AS unpriced
FROM v_usage GROUP BY day;

CREATE VIEW v_usage_models AS
SELECT coalesce(model, '?') AS model,
       count(DISTINCT session_id) AS sessions,
       count(*) AS responses,
       CAST(total(input_tokens) AS INTEGER) AS input_tokens,
       CAST(total(output_tokens) AS INTEGER) AS output_tokens,
       CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
       CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
       round(sum(cost_usd), 6) AS cost_usd,
       sum(cost_usd IS NULL) AS unpriced,
       strftime('%Y-%m-%dT%H:%M:%SZ', min(ts) / 1000, 'unixepoch') AS first_seen,
       strftime('%Y-%m-%dT%H:%M:%SZ', max(ts) / 1000, 'unixepoch') AS last_seen
FROM v_usage GROUP BY coalesce(model, '?');

CREATE VIEW v_usage_agents AS
SELECT coalesce(agent, '?') AS agent, count(*) AS responses,
       CAST(total(input_tokens) AS INTEGER) AS input_tokens,
       CAST(total(output_tokens) AS INTEGER) AS output_tokens,
       CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
       CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
       round(sum(cost_usd), 6) AS cost_usd,
       sum(cost_usd IS NULL) AS unpriced
FROM v_usage GROUP BY coalesce(agent, '?');

CREATE VIEW v_usage_subagents AS
SELECT session_id, subagent_id, count(*) AS responses,
       CAST(total(input_tokens) AS INTEGER) AS input_tokens,
       CAST(total(output_tokens) AS INTEGER) AS output_tokens,
       CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
       CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
       round(sum(cost_usd), 6) AS cost_usd,
       sum(cost_usd IS NULL) AS unpriced
FROM v_usage WHERE sidechain = 1 GROUP BY session_id, subagent_id;

-- The summaries `cmstore summarize` prints, with the usage beside the hook figures (zero
-- tokens and a NULL cost without usage). `estimated_tokens` stays what it was: vstack's
-- payload size / 4, not usage. New views rather than changed ones: 0002-0008's stay as they are.
CREATE VIEW v_session_usage AS
SELECT s.*,
       coalesce(u.responses, 0) AS responses,
       coalesce(u.input_tokens, 0) AS input_tokens,
       coalesce(u.output_tokens, 0) AS output_tokens,
       coalesce(u.cache_write_tokens, 0) AS cache_write_tokens,
       coalesce(u.cache_read_tokens, 0) AS cache_read_tokens,
       u.cost_usd,
       coalesce(u.unpriced, 0) AS unpriced
FROM v_session_summary s
LEFT JOIN v_usage_sessions u ON u.session_id = s.session_id;

-- Days with usage and no event (`cmstore import`) included.
CREATE VIEW v_daily_usage AS
SELECT k.day,
       coalesce(d.events, 0) AS events,
       coalesce(d.sessions, 0) AS sessions,
       coalesce(d.prompts, 0) AS prompts,
       coalesce(d.tool_uses, 0) AS tool_uses,
       coalesce(d.tool_failures, 0) AS tool_failures,
       coalesce(d.stops, 0) AS stops,
       coalesce(d.estimated_tokens, 0) AS estimated_tokens,
       coalesce(u.responses, 0) AS responses,
       coalesce(u.input_tokens, 0) AS input_tokens,
       coalesce(u.output_tokens, 0) AS output_tokens,
       coalesce(u.cache_write_tokens, 0) AS cache_write_tokens,
       coalesce(u.cache_read_tokens, 0) AS cache_read_tokens,
       u.cost_usd,
       coalesce(u.unpriced, 0) AS unpriced
FROM (SELECT day FROM v_daily UNION SELECT day FROM v_usage_daily WHERE day IS NOT NULL) k
LEFT JOIN v_daily d ON d.day = k.day
LEFT JOIN v_usage_daily u ON u.day = k.day;

CREATE VIEW v_agents_usage AS
SELECT a.*,
       coalesce(u.responses, 0) AS responses,
       coalesce(u.input_tokens, 0) AS input_tokens,
       coalesce(u.output_tokens, 0) AS output_tokens,
       coalesce(u.cache_write_tokens, 0) AS cache_write_tokens,
       coalesce(u.cache_read_tokens, 0) AS cache_read_tokens,
       u.cost_usd,
       coalesce(u.unpriced, 0) AS unpriced
FROM v_agents a
LEFT JOIN v_usage_agents u ON u.agent = a.agent;
