-- Which subagents did each session hand work to, how often, and when first and last?
SELECT session_id,
       delegated_agent,
       calls,
       strftime('%Y-%m-%dT%H:%M:%SZ', first_ts / 1000, 'unixepoch') AS first,
       strftime('%Y-%m-%dT%H:%M:%SZ', last_ts / 1000, 'unixepoch') AS last
FROM v_delegations
ORDER BY calls DESC, session_id, delegated_agent;
