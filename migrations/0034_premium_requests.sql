-- 0034: GitHub Copilot's premium requests (issue 36). Why: what a Copilot user spends is
-- premium requests (a monthly allowance; each model a multiplier: 1 for most, 0.33 for a
-- light one, 0 for an included model or your own key), not the list price of the tokens the
-- usage table prices. Copilot CLI reports them per response (`usage.cost` of each
-- `session.usage_record`) and per session and model when it shuts down (`requests.cost`),
-- and nothing kept them. NULL where the agent does not report them (every other agent).
ALTER TABLE usage ADD COLUMN premium_requests REAL;

-- The rows that report them, few beside the other agents' responses: the view reads these
-- through the index, not the whole table.
CREATE INDEX usage_premium ON usage(ts) WHERE premium_requests IS NOT NULL;

-- Premium requests per UTC day, agent and model, from the responses (or a session's
-- totals, where it has no response line) that report them.
CREATE VIEW v_premium_requests AS
SELECT date(ts / 1000, 'unixepoch') AS day,
       coalesce(agent, '?') AS agent,
       coalesce(model, '?') AS model,
       count(DISTINCT session_id) AS sessions,
       count(*) AS responses,
       round(total(premium_requests), 4) AS premium_requests
FROM usage
WHERE premium_requests IS NOT NULL
GROUP BY 1, 2, 3;
