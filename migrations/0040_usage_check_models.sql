-- 0040: v_usage_check as 0039 meant it (issue 36). Why: 0039's view counted a response that
-- names no model under the empty model, which is also how it marks a total over every model,
-- so such responses were shown as the whole session's figures; and it summed with `sum()`,
-- which stops the query with an overflow where a saturated count (a bogus OTLP point) meets
-- another, where the other views use `total()` (0007). The view is made again.
DROP VIEW v_usage_check;

CREATE VIEW v_usage_check AS
WITH reported AS (
    SELECT session_id, source, model, max(agent) AS agent,
           sum(requests) AS requests,
           CAST(total(input_tokens) AS INTEGER) AS input_tokens,
           CAST(total(output_tokens) AS INTEGER) AS output_tokens,
           CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
           CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
           sum(cost_usd) AS cost_usd, max(ts) AS ts
    FROM agent_totals GROUP BY session_id, source, model
),
responses AS (
    SELECT * FROM v_usage
    WHERE NOT (message_id >= 'copilot-total:' AND message_id < 'copilot-total;')
      AND session_id IN (SELECT session_id FROM agent_totals)
),
counted AS (
    -- a response that names no model is counted under '?', apart from the whole session
    SELECT session_id, coalesce(model, '?') AS model, count(*) AS responses,
           CAST(total(input_tokens) AS INTEGER) AS input_tokens,
           CAST(total(output_tokens) AS INTEGER) AS output_tokens,
           CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens,
           CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens,
           sum(cost_usd) AS cost_usd
    FROM responses GROUP BY session_id, coalesce(model, '?')
    UNION ALL
    -- the whole session, for a total over every model
    SELECT session_id, NULL, count(*), CAST(total(input_tokens) AS INTEGER),
           CAST(total(output_tokens) AS INTEGER), CAST(total(cache_read_tokens) AS INTEGER),
           CAST(total(cache_write_tokens) AS INTEGER), sum(cost_usd)
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
