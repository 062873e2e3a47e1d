-- How many tokens (estimated as ceil(payload bytes / 4), as vstack does) went through the
-- hooks per UTC day and agent?
SELECT date(ts / 1000, 'unixepoch') AS day,
       coalesce(agent, '?') AS agent,
       sum(coalesce(estimated_tokens, 0)) AS estimated_tokens,
       count(*) AS events
FROM events
GROUP BY day, coalesce(agent, '?')
ORDER BY day, agent;
