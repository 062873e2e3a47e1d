-- 0039: what each agent says its sessions used, beside what cmstore counted (issue 36). Why:
-- cmstore counts usage response by response from the agents' own files; some agents also
-- report a total of their own (Copilot CLI's `session.shutdown`, OpenCode's and Cline's
-- session totals, Claude Code's OpenTelemetry events and metrics). `cmstore import` compared
-- them and printed the differences once, and a total read by the hooks (Copilot's) was
-- dropped as soon as the session had a response of its own: no one could ask later which
-- sessions disagree. Each total is now kept here, and `v_usage_check` compares it with the
-- count (`cmstore usage --check`, docs/usage.md).
--
-- Not in the chain `verify` checks (migration 0035): these rows are the agents' claims, kept
-- to be compared; what cmstore counted stays in `usage`, which the chain covers.
CREATE TABLE agent_totals (
    session_id         TEXT    NOT NULL,
    -- who says so: copilot-shutdown, opencode-session, cline-session, claude-otlp-requests
    -- (Claude Code's `api_request` events), claude-otlp-metrics (its `token.usage` and
    -- `cost.usage` metrics)
    source             TEXT    NOT NULL,
    model              TEXT    NOT NULL DEFAULT '',  -- '' when the total covers every model
    -- a cumulative metric's series (its start time); '' for everything else. A session's
    -- figure is the sum over its series.
    series             TEXT    NOT NULL DEFAULT '',
    agent              TEXT,
    requests           INTEGER,                      -- responses, where the agent counts them
    input_tokens       INTEGER NOT NULL DEFAULT 0,   -- as `usage` counts them: uncached input
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL,                         -- the agent's own cost, where it says one
    ts                 INTEGER,                      -- epoch ms of the latest figure
    origin             TEXT    NOT NULL,             -- hook, import or otlp
    PRIMARY KEY (session_id, source, model, series)
) WITHOUT ROWID;

-- Claude Code's `api_request` events the receiver stored before this migration: each is one
-- request, so their sums are the session's total. (Its metrics are not: which of them are
-- deltas and which running totals was not stored, so they start counting from here.)
INSERT INTO agent_totals (session_id, source, model, agent, requests, input_tokens,
    output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, ts, origin)
SELECT session_id, 'claude-otlp-requests', coalesce(json_extract(attributes, '$.model'), ''),
       'claude', count(*),
       sum(CAST(coalesce(json_extract(attributes, '$.input_tokens'), 0) AS INTEGER)),
       sum(CAST(coalesce(json_extract(attributes, '$.output_tokens'), 0) AS INTEGER)),
       sum(CAST(coalesce(json_extract(attributes, '$.cache_read_tokens'), 0) AS INTEGER)),
       sum(CAST(coalesce(json_extract(attributes, '$.cache_creation_tokens'), 0) AS INTEGER)),
       total(CAST(json_extract(attributes, '$.cost_usd') AS REAL)), max(ts), 'otlp'
FROM otel_logs
WHERE event_name IN ('api_request', 'claude_code.api_request') AND session_id IS NOT NULL
GROUP BY session_id, coalesce(json_extract(attributes, '$.model'), '');

-- Per session, source and model the agent reports on: its figures beside cmstore's count, and
-- a verdict on the tokens (costs differ by price table and are shown, not judged):
--   equal        every token count agrees;
--   differs      some count does not;
--   not counted  the agent reports a model cmstore has no response of (requests no
--                transcript shows);
--   by total     Copilot's shutdown totals are the count itself: the session's log has no
--                response line (Copilot CLI before 1.0.102);
--   only counted cmstore counted a model the agent's per-model total does not name.
-- A total over every model (`model` NULL here) is compared with the session's whole count.
-- Copilot's shutdown rows in `usage` (`copilot-total:`) stand in for responses and are not
-- a count of their own.
CREATE VIEW v_usage_check AS
WITH reported AS (
    SELECT session_id, source, model, max(agent) AS agent, sum(requests) AS requests,
           sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
           sum(cache_read_tokens) AS cache_read_tokens,
           sum(cache_write_tokens) AS cache_write_tokens, sum(cost_usd) AS cost_usd,
           max(ts) AS ts
    FROM agent_totals GROUP BY session_id, source, model
),
responses AS (
    SELECT * FROM v_usage
    WHERE NOT (message_id >= 'copilot-total:' AND message_id < 'copilot-total;')
      AND session_id IN (SELECT session_id FROM agent_totals)
),
counted AS (
    SELECT session_id, coalesce(model, '') AS model, count(*) AS responses,
           sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
           sum(cache_read_tokens) AS cache_read_tokens,
           sum(cache_write_tokens) AS cache_write_tokens, sum(cost_usd) AS cost_usd
    FROM responses GROUP BY session_id, coalesce(model, '')
    UNION ALL
    -- the whole session, for a total over every model
    SELECT session_id, NULL, count(*), sum(input_tokens), sum(output_tokens),
           sum(cache_read_tokens), sum(cache_write_tokens), sum(cost_usd)
    FROM responses GROUP BY session_id
),
pairs AS (
    SELECT session_id, source, model FROM reported
    UNION
    SELECT c.session_id, r.source, c.model
    FROM counted c JOIN (SELECT DISTINCT session_id, source FROM reported WHERE model <> '') r
      ON r.session_id = c.session_id
    WHERE c.model IS NOT NULL
)
SELECT p.session_id,
       coalesce(r.agent, (SELECT max(agent) FROM reported a WHERE a.session_id = p.session_id))
         AS agent,
       p.source,
       nullif(p.model, '') AS model,
       CASE WHEN r.session_id IS NULL THEN 'only counted'
            WHEN c.responses IS NULL AND EXISTS (SELECT 1 FROM usage u
                 WHERE u.session_id = p.session_id AND u.message_id = 'copilot-total:' || p.model)
              THEN 'by total'
            WHEN c.responses IS NULL THEN 'not counted'
            WHEN c.input_tokens = r.input_tokens AND c.output_tokens = r.output_tokens
             AND c.cache_read_tokens = r.cache_read_tokens
             AND c.cache_write_tokens = r.cache_write_tokens THEN 'equal'
            ELSE 'differs' END AS verdict,
       coalesce(c.responses, 0) AS responses,
       r.requests AS agent_requests,
       coalesce(c.input_tokens, 0) AS input_tokens, r.input_tokens AS agent_input_tokens,
       coalesce(c.output_tokens, 0) AS output_tokens, r.output_tokens AS agent_output_tokens,
       coalesce(c.cache_read_tokens, 0) AS cache_read_tokens,
       r.cache_read_tokens AS agent_cache_read_tokens,
       coalesce(c.cache_write_tokens, 0) AS cache_write_tokens,
       r.cache_write_tokens AS agent_cache_write_tokens,
       c.cost_usd, r.cost_usd AS agent_cost_usd,
       r.ts AS agent_ts
FROM pairs p
LEFT JOIN reported r
  ON r.session_id = p.session_id AND r.source = p.source AND r.model = p.model
LEFT JOIN counted c
  ON c.session_id = p.session_id
 AND (CASE WHEN p.model = '' THEN c.model IS NULL ELSE c.model = p.model END);
