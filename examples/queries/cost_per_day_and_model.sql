-- What did each model use and cost per UTC day? The real usage of every API response, read
-- from the agents' transcripts (docs/usage.md), not the payload-size estimate.
-- cost_usd covers the priced responses; unpriced counts those whose model has no price.
SELECT day,
       coalesce(model, '?') AS model,
       count(*) AS responses,
       sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens,
       sum(cache_write_tokens) AS cache_write_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       round(sum(cost_usd), 4) AS cost_usd,
       sum(cost_usd IS NULL) AS unpriced
FROM v_usage
GROUP BY day, coalesce(model, '?')
ORDER BY day, cost_usd IS NULL, cost_usd DESC, model;
