-- 0016: rollups of events per day and session and of usage per session, agent, model and day,
-- and the indexes the readable reports need.
--
-- The daily rollup, so that `summarize --by day` reads a few rows per day instead of every
-- event. Why: `v_daily` grouped all of `events` by date(ts): 0.7-1.0 s at 1M events, and
-- linear in the store's size (issue 17: every report within 50 ms at 1M events).
--
-- One row per UTC day and session with that day's event figures, kept by ingest in the
-- transaction of the events (only for an event row that is new, so a line read again adds
-- nothing) and by prune in the transaction that deletes events (it subtracts what it deletes,
-- and a row whose events are all gone goes), so the rollup always equals a `GROUP BY` over the
-- events still stored. Per session rather than per day: a day's `sessions` is a count of
-- distinct sessions, which only a per-session row can give, and the rows let the report
-- filters (--agent, --project, --session) select days by session.
CREATE TABLE daily_sessions (
    day_n            INTEGER NOT NULL,  -- the UTC day: floor(floor-toward-zero(ts / 1000) / 86400)
    no_session       INTEGER NOT NULL,  -- 1 for the events without a session id
    session_id       TEXT    NOT NULL,  -- '' when no_session = 1
    events           INTEGER NOT NULL DEFAULT 0,
    prompts          INTEGER NOT NULL DEFAULT 0,
    tool_uses        INTEGER NOT NULL DEFAULT 0,  -- PostToolUse + PostToolUseFailure lines
    tool_failures    INTEGER NOT NULL DEFAULT 0,  -- PostToolUseFailure lines
    stops            INTEGER NOT NULL DEFAULT 0,  -- Stop + SubagentStop firings (not synthetic)
    estimated_tokens INTEGER NOT NULL DEFAULT 0,  -- saturating sum (see 0007)
    PRIMARY KEY (day_n, no_session, session_id)
) WITHOUT ROWID;

-- The days of one session (`--by day --session`, `--agent`, `--project`), without a scan.
CREATE INDEX daily_sessions_session ON daily_sessions(session_id);

-- The events already stored. `ts / 1000` truncates toward zero as `date(ts / 1000, ...)` does;
-- the day is that second count floored to a multiple of 86400.
INSERT INTO daily_sessions(day_n, no_session, session_id, events, prompts, tool_uses,
                           tool_failures, stops, estimated_tokens)
SELECT (ts / 1000 - ((ts / 1000) % 86400 + 86400) % 86400) / 86400,
       session_id IS NULL,
       coalesce(session_id, ''),
       count(*),
       sum(hook_type = 'UserPromptSubmit'),
       sum(hook_type IN ('PostToolUse', 'PostToolUseFailure')),
       sum(hook_type = 'PostToolUseFailure'),
       sum(hook_type IN ('Stop', 'SubagentStop') AND coalesce(synthetic, 0) = 0),
       CAST(total(coalesce(estimated_tokens, 0)) AS INTEGER)
FROM events
GROUP BY 1, 2, 3;

-- v_daily (0011) re-created over the rollup: the same columns, in the same order, with the
-- same figures.
DROP VIEW v_daily;
CREATE VIEW v_daily AS
SELECT date(day_n * 86400, 'unixepoch') AS day,
       sum(events) AS events,
       count(DISTINCT CASE WHEN no_session = 0 THEN session_id END) AS sessions,
       sum(prompts) AS prompts,
       sum(tool_uses) AS tool_uses,
       sum(tool_failures) AS tool_failures,
       sum(stops) AS stops,
       CAST(total(estimated_tokens) AS INTEGER) AS estimated_tokens
FROM daily_sessions
GROUP BY date(day_n * 86400, 'unixepoch');

-- `cmstore show` reads a session's prompts, starts, ends and compactions. Through
-- events_session_id that read every event of the session (each on its own page when sessions
-- interleave: 5,000 page reads for a session of 5,000 events); this partial index holds only
-- those four kinds (a few percent of the lines, so ingest hardly writes it) and `show`'s
-- statement repeats its condition.
CREATE INDEX events_story ON events(session_id, ts)
    WHERE hook_type IN ('UserPromptSubmit', 'SessionStart', 'SessionEnd', 'PreCompact');

-- Usage by session, agent, model and UTC day, kept by triggers on `usage` in the transaction
-- that writes it (ingest, import): the per-session, per-day, per-model and per-agent usage
-- views read these few rows instead of every response (0.4 s for 100k responses through
-- usage_session, each a lookup of its row). Triggers rather than code: every writer of
-- `usage`, and the upsert's "the last line wins" update, keep it alike. Cost is computed when
-- read, from the sums (it is linear in the counts per model).
CREATE TABLE usage_rollup (
    session_id            TEXT    NOT NULL,  -- '' for responses without one
    agent                 TEXT    NOT NULL,  -- ''
    model                 TEXT    NOT NULL,  -- ''
    day                   TEXT    NOT NULL,  -- date(ts / 1000, 'unixepoch'), '' without a time
    responses             INTEGER NOT NULL DEFAULT 0,
    sidechain             INTEGER NOT NULL DEFAULT 0,  -- responses of subagents
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens    INTEGER NOT NULL DEFAULT 0,
    cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens     INTEGER NOT NULL DEFAULT 0,
    first_ts              INTEGER,
    last_ts               INTEGER,
    PRIMARY KEY (session_id, agent, model, day)
) WITHOUT ROWID;

INSERT INTO usage_rollup
SELECT coalesce(session_id, ''), coalesce(agent, ''), coalesce(model, ''),
       coalesce(date(ts / 1000, 'unixepoch'), ''),
       count(*), sum(sidechain), sum(input_tokens), sum(output_tokens), sum(cache_write_tokens),
       sum(coalesce(cache_write_1h_tokens, 0)), sum(cache_read_tokens), min(ts), max(ts)
FROM usage GROUP BY 1, 2, 3, 4;

CREATE TRIGGER usage_rollup_insert AFTER INSERT ON usage BEGIN
    INSERT INTO usage_rollup VALUES (coalesce(new.session_id, ''), coalesce(new.agent, ''),
        coalesce(new.model, ''), coalesce(date(new.ts / 1000, 'unixepoch'), ''), 1,
        new.sidechain, new.input_tokens, new.output_tokens, new.cache_write_tokens,
        coalesce(new.cache_write_1h_tokens, 0), new.cache_read_tokens, new.ts, new.ts)
    ON CONFLICT DO UPDATE SET responses = responses + 1,
        sidechain = sidechain + excluded.sidechain,
        input_tokens = input_tokens + excluded.input_tokens,
        output_tokens = output_tokens + excluded.output_tokens,
        cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
        cache_write_1h_tokens = cache_write_1h_tokens + excluded.cache_write_1h_tokens,
        cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
        first_ts = min(coalesce(first_ts, excluded.first_ts), coalesce(excluded.first_ts, first_ts)),
        last_ts = max(coalesce(last_ts, excluded.last_ts), coalesce(excluded.last_ts, last_ts));
END;

-- An update (the upsert of a response read again) moves the old figures out and the new in.
CREATE TRIGGER usage_rollup_update AFTER UPDATE ON usage BEGIN
    UPDATE usage_rollup SET responses = responses - 1,
        sidechain = sidechain - old.sidechain,
        input_tokens = input_tokens - old.input_tokens,
        output_tokens = output_tokens - old.output_tokens,
        cache_write_tokens = cache_write_tokens - old.cache_write_tokens,
        cache_write_1h_tokens = cache_write_1h_tokens - coalesce(old.cache_write_1h_tokens, 0),
        cache_read_tokens = cache_read_tokens - old.cache_read_tokens
    WHERE session_id = coalesce(old.session_id, '') AND agent = coalesce(old.agent, '')
      AND model = coalesce(old.model, '') AND day = coalesce(date(old.ts / 1000, 'unixepoch'), '');
    DELETE FROM usage_rollup WHERE responses <= 0
      AND session_id = coalesce(old.session_id, '') AND agent = coalesce(old.agent, '')
      AND model = coalesce(old.model, '') AND day = coalesce(date(old.ts / 1000, 'unixepoch'), '');
    INSERT INTO usage_rollup VALUES (coalesce(new.session_id, ''), coalesce(new.agent, ''),
        coalesce(new.model, ''), coalesce(date(new.ts / 1000, 'unixepoch'), ''), 1,
        new.sidechain, new.input_tokens, new.output_tokens, new.cache_write_tokens,
        coalesce(new.cache_write_1h_tokens, 0), new.cache_read_tokens, new.ts, new.ts)
    ON CONFLICT DO UPDATE SET responses = responses + 1,
        sidechain = sidechain + excluded.sidechain,
        input_tokens = input_tokens + excluded.input_tokens,
        output_tokens = output_tokens + excluded.output_tokens,
        cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
        cache_write_1h_tokens = cache_write_1h_tokens + excluded.cache_write_1h_tokens,
        cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
        first_ts = min(coalesce(first_ts, excluded.first_ts), coalesce(excluded.first_ts, first_ts)),
        last_ts = max(coalesce(last_ts, excluded.last_ts), coalesce(excluded.last_ts, last_ts));
END;

CREATE TRIGGER usage_rollup_delete AFTER DELETE ON usage BEGIN
    UPDATE usage_rollup SET responses = responses - 1,
        sidechain = sidechain - old.sidechain,
        input_tokens = input_tokens - old.input_tokens,
        output_tokens = output_tokens - old.output_tokens,
        cache_write_tokens = cache_write_tokens - old.cache_write_tokens,
        cache_write_1h_tokens = cache_write_1h_tokens - coalesce(old.cache_write_1h_tokens, 0),
        cache_read_tokens = cache_read_tokens - old.cache_read_tokens
    WHERE session_id = coalesce(old.session_id, '') AND agent = coalesce(old.agent, '')
      AND model = coalesce(old.model, '') AND day = coalesce(date(old.ts / 1000, 'unixepoch'), '');
    DELETE FROM usage_rollup WHERE responses <= 0
      AND session_id = coalesce(old.session_id, '') AND agent = coalesce(old.agent, '')
      AND model = coalesce(old.model, '') AND day = coalesce(date(old.ts / 1000, 'unixepoch'), '');
END;

-- The usage rollup priced: each group's cost from its model's price (NULL without one).
CREATE VIEW v_usage_rollup AS
SELECT nullif(r.session_id, '') AS session_id, nullif(r.agent, '') AS agent,
       nullif(r.model, '') AS model, nullif(r.day, '') AS day,
       r.responses, r.sidechain, r.input_tokens, r.output_tokens, r.cache_write_tokens,
       r.cache_read_tokens, r.first_ts, r.last_ts,
       (r.input_tokens * p.input + r.output_tokens * p.output
        + (r.cache_write_tokens - r.cache_write_1h_tokens) * p.cache_write_5m
        + r.cache_write_1h_tokens * p.cache_write_1h
        + r.cache_read_tokens * p.cache_read) / 1000000.0 AS cost_usd,
       CASE WHEN p.model IS NULL THEN r.responses ELSE 0 END AS unpriced
FROM usage_rollup r
LEFT JOIN prices p ON p.model = nullif(r.model, '');

-- 0014's usage views re-created over the rollup: the same columns and figures.
DROP VIEW v_usage_sessions;
CREATE VIEW v_usage_sessions AS
SELECT session_id, sum(responses) AS responses,
       CAST(total(input_tokens) AS INTEGER) AS input_tokens,
       CAST(total(output_tokens) AS INTEGER) AS output_tokens,
       CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
       CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
       round(sum(cost_usd), 6) AS cost_usd,
       sum(unpriced) AS unpriced,
       sum(sidechain) AS subagent_responses
FROM v_usage_rollup GROUP BY session_id;

DROP VIEW v_usage_daily;
CREATE VIEW v_usage_daily AS
SELECT day, sum(responses) AS responses,
       CAST(total(input_tokens) AS INTEGER) AS input_tokens,
       CAST(total(output_tokens) AS INTEGER) AS output_tokens,
       CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
       CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
       round(sum(cost_usd), 6) AS cost_usd,
       sum(unpriced) AS unpriced
FROM v_usage_rollup GROUP BY day;

DROP VIEW v_usage_models;
CREATE VIEW v_usage_models AS
SELECT coalesce(model, '?') AS model,
       count(DISTINCT session_id) AS sessions,
       sum(responses) AS responses,
       CAST(total(input_tokens) AS INTEGER) AS input_tokens,
       CAST(total(output_tokens) AS INTEGER) AS output_tokens,
       CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
       CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
       round(sum(cost_usd), 6) AS cost_usd,
       sum(unpriced) AS unpriced,
       strftime('%Y-%m-%dT%H:%M:%SZ', min(first_ts) / 1000, 'unixepoch') AS first_seen,
       strftime('%Y-%m-%dT%H:%M:%SZ', max(last_ts) / 1000, 'unixepoch') AS last_seen
FROM v_usage_rollup GROUP BY coalesce(model, '?');

DROP VIEW v_usage_agents;
CREATE VIEW v_usage_agents AS
SELECT coalesce(agent, '?') AS agent, sum(responses) AS responses,
       CAST(total(input_tokens) AS INTEGER) AS input_tokens,
       CAST(total(output_tokens) AS INTEGER) AS output_tokens,
       CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
       CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
       round(sum(cost_usd), 6) AS cost_usd,
       sum(unpriced) AS unpriced
FROM v_usage_rollup GROUP BY coalesce(agent, '?');
