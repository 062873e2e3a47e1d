-- Team schema 0007: GitHub Copilot's premium requests per response (local migration 0034).
-- Why: what a Copilot user spends is premium requests (a monthly allowance, a multiplier per
-- model), not the list price of the tokens; Copilot CLI reports them and the team's figures
-- should carry them. NULL for every other agent, and for rows an older cmstore pushed.
ALTER TABLE usage ADD COLUMN premium_requests double precision;

-- Premium requests per UTC day, machine, user, team, agent and model, as the local
-- v_premium_requests with who and where.
CREATE VIEW v_premium_requests AS
SELECT to_char(to_timestamp(ts / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
       machine_id, user_label, team_label,
       coalesce(agent, '?') AS agent,
       coalesce(model, '?') AS model,
       count(DISTINCT session_id) AS sessions,
       count(*) AS responses,
       round(sum(premium_requests)::numeric, 4) AS premium_requests
FROM usage
WHERE premium_requests IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6;
