-- Which unknown reasons (vstack's counters: unknown hook types, missing session ids, tool
-- events without a tool name, session events without an actor) are the noisiest?
SELECT reason,
       sum(count) AS total,
       count(*) AS sessions
FROM unknown_counts
GROUP BY reason
ORDER BY total DESC, reason;
