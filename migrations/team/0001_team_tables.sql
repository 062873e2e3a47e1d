-- Team schema 0001: the tables `cmstore push` mirrors each machine's store into, and the
-- views that read them. Why: a team's machines share one PostgreSQL database; every row is
-- keyed by the machine it came from plus its own key in that machine's store, so a re-push,
-- a crash or two machines pushing at once never double a row. Migrations only add (columns
-- nullable, tables and views new), so a machine on an older cmstore keeps pushing into a
-- schema a newer one has moved on. Times are epoch milliseconds, as in the local store.

-- One row per machine (per local store), with the labels its configuration sets.
CREATE TABLE machines (
    machine_id      text PRIMARY KEY,
    user_label      text,
    team_label      text,
    host            text,
    cmstore_version text,
    content         text NOT NULL,         -- the profile of its last push: none, redacted, full
    first_push      bigint NOT NULL,
    last_push       bigint NOT NULL
);

-- The queue lines, as the local `events` table holds them. Under the `none` profile, prompt,
-- response and entry (the whole line) are NULL.
CREATE TABLE events (
    machine_id       text   NOT NULL,
    id               text   NOT NULL,
    seq              bigint NOT NULL,      -- the local seq (its order on that machine)
    ts               bigint NOT NULL,
    hook_type        text,
    event            text,
    agent            text,
    session_id       text,
    tool_name        text,
    tool_call_id     text,
    turn_id          text,
    model            text,
    cwd              text,
    origin           text,
    actor_name       text,
    actor_type       text,
    delegated_agent  text,
    synthetic        bigint,
    prompt           text,
    response         text,
    tool_result_type text,
    duration_ms      bigint,
    size_bytes       bigint,
    estimated_tokens bigint,
    producer         text,
    risk             text,
    decision         text,
    entry            text,
    user_label       text,
    team_label       text,
    PRIMARY KEY (machine_id, id)
);
CREATE INDEX events_ts ON events (ts);
CREATE INDEX events_session ON events (machine_id, session_id);

CREATE TABLE sessions (
    machine_id       text   NOT NULL,
    session_id       text   NOT NULL,
    agent            text,
    model            text,
    cwd              text,
    first_seen       bigint,
    last_seen        bigint,
    events           bigint,
    prompts          bigint,
    tool_uses        bigint,
    tool_failures    bigint,
    stops            bigint,
    estimated_tokens bigint,
    ended            bigint,
    ended_at         bigint,
    user_label       text,
    team_label       text,
    PRIMARY KEY (machine_id, session_id)
);
CREATE INDEX sessions_last_seen ON sessions (last_seen);

-- Under `none`, prompt, response, thinking and feedback are NULL.
CREATE TABLE turns (
    machine_id      text   NOT NULL,
    session_id      text   NOT NULL,
    turn_key        text   NOT NULL,
    turn_id         text,
    ts              bigint,
    hook_type       text,
    prompt          text,
    response        text,
    tool_call_count bigint,
    synthetic       bigint,
    event_id        text,
    model           text,
    outcome         text,
    thinking        text,
    feedback        text,
    PRIMARY KEY (machine_id, session_id, turn_key)
);
CREATE INDEX turns_ts ON turns (ts);

-- session_id '' for a call no session named. Under `none`, input is NULL; input_digest (the
-- SHA-256 of the input text, hex) is sent under every profile, so repeated commands can be
-- counted without their text.
CREATE TABLE tool_calls (
    machine_id      text   NOT NULL,
    session_id      text   NOT NULL,
    call_key        text   NOT NULL,
    tool_call_id    text,
    tool_name       text,
    ts              bigint,
    start_ts        bigint,
    end_ts          bigint,
    duration_ms     bigint,
    success         bigint,
    result_type     text,
    pre_event_id    text,
    post_event_id   text,
    outcome         text,
    input           text,
    input_digest    text,
    risk            text,
    decision        text,
    delegated_agent text,
    permission_mode text,
    PRIMARY KEY (machine_id, session_id, call_key)
);
CREATE INDEX tool_calls_ts ON tool_calls (ts);
CREATE INDEX tool_calls_tool_name ON tool_calls (tool_name);

-- One row per API response (docs/usage.md), session_id '' when none is known.
CREATE TABLE usage (
    machine_id            text   NOT NULL,
    message_id            text   NOT NULL,
    request_id            text   NOT NULL,
    session_id            text   NOT NULL,
    agent                 text,
    turn_id               text,
    subagent_id           text,
    sidechain             bigint NOT NULL,
    model                 text,
    ts                    bigint,
    input_tokens          bigint NOT NULL,
    output_tokens         bigint NOT NULL,
    cache_write_tokens    bigint NOT NULL,
    cache_write_1h_tokens bigint,
    cache_read_tokens     bigint NOT NULL,
    reasoning_tokens      bigint,
    service_tier          text,
    origin                text,
    user_label            text,
    team_label            text,
    PRIMARY KEY (machine_id, message_id, request_id)
);
CREATE INDEX usage_session ON usage (machine_id, session_id);
CREATE INDEX usage_ts ON usage (ts);

-- The price table, in USD per million tokens: each machine pushes its effective table (the
-- shipped one with its cmstore.toml overrides); for a model two machines price differently,
-- the last push wins, and `machine_id` says whose it is.
CREATE TABLE prices (
    model          text PRIMARY KEY,
    input          double precision NOT NULL,
    output         double precision NOT NULL,
    cache_write_5m double precision NOT NULL,
    cache_write_1h double precision NOT NULL,
    cache_read     double precision NOT NULL,
    as_of          text,
    origin         text NOT NULL,
    machine_id     text NOT NULL
);

-- Every response with its cost (NULL when its model has no price), as the local v_usage.
CREATE VIEW v_usage AS
SELECT u.*,
       to_char(to_timestamp(u.ts / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
       u.cache_write_tokens - coalesce(u.cache_write_1h_tokens, 0) AS cache_write_5m_tokens,
       (u.input_tokens * p.input + u.output_tokens * p.output
        + (u.cache_write_tokens - coalesce(u.cache_write_1h_tokens, 0)) * p.cache_write_5m
        + coalesce(u.cache_write_1h_tokens, 0) * p.cache_write_1h
        + u.cache_read_tokens * p.cache_read) / 1000000.0 AS cost_usd
FROM usage u
LEFT JOIN prices p ON p.model = u.model;

-- Per machine and session, as the local v_usage_sessions.
CREATE VIEW v_usage_sessions AS
SELECT machine_id, session_id, min(user_label) AS user_label, min(team_label) AS team_label,
       count(*) AS responses,
       sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(cache_write_tokens) AS cache_write_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       round(sum(cost_usd)::numeric, 6) AS cost_usd,
       count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced,
       sum(sidechain) AS subagent_responses
FROM v_usage GROUP BY machine_id, session_id;

-- Per UTC day, machine, user, team and agent: the team's daily spend.
CREATE VIEW v_daily_usage AS
SELECT day, machine_id, user_label, team_label, agent,
       count(*) AS responses,
       sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(cache_write_tokens) AS cache_write_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       round(sum(cost_usd)::numeric, 6) AS cost_usd,
       count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced
FROM v_usage GROUP BY day, machine_id, user_label, team_label, agent;

-- Per user and team: who spent what.
CREATE VIEW v_usage_users AS
SELECT user_label, team_label,
       count(DISTINCT machine_id) AS machines,
       count(DISTINCT (machine_id, session_id)) AS sessions,
       count(*) AS responses,
       sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(cache_write_tokens) AS cache_write_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       round(sum(cost_usd)::numeric, 6) AS cost_usd,
       count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced
FROM v_usage GROUP BY user_label, team_label;

-- Per model, as the local v_usage_models.
CREATE VIEW v_usage_models AS
SELECT coalesce(model, '?') AS model,
       count(DISTINCT (machine_id, session_id)) AS sessions,
       count(*) AS responses,
       sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(cache_write_tokens) AS cache_write_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       round(sum(cost_usd)::numeric, 6) AS cost_usd,
       count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced
FROM v_usage GROUP BY coalesce(model, '?');

-- Per tool: calls and outcomes, as the local v_tools counts them.
CREATE VIEW v_tools AS
SELECT tool_name,
       count(*) AS calls,
       count(*) FILTER (WHERE outcome = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE outcome = 'failed') AS failed,
       count(*) FILTER (WHERE outcome IS NULL) AS unfinished,
       sum(duration_ms) AS total_ms,
       sum(duration_ms) / nullif(count(duration_ms), 0) AS avg_ms,
       max(duration_ms) AS max_ms,
       count(*) FILTER (WHERE outcome = 'denied') AS denied,
       count(*) FILTER (WHERE outcome = 'refused') AS refused,
       count(*) FILTER (WHERE outcome = 'abandoned') AS abandoned
FROM tool_calls GROUP BY tool_name;

-- Per machine and session, with the user and the cost.
CREATE VIEW v_sessions AS
SELECT s.*,
       (SELECT count(*) FROM turns t
         WHERE t.machine_id = s.machine_id AND t.session_id = s.session_id
           AND t.hook_type IS DISTINCT FROM 'SubagentStop') AS turns,
       u.responses, u.cost_usd, u.unpriced
FROM sessions s
LEFT JOIN v_usage_sessions u ON u.machine_id = s.machine_id AND u.session_id = s.session_id;
