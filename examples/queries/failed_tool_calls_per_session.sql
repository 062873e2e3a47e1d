-- How many tool calls failed in each session, and which tools failed?
SELECT session_id,
       sum(success = 0) AS failed,
       count(*) AS calls,
       group_concat(DISTINCT CASE WHEN success = 0 THEN tool_name END) AS failing_tools
FROM tool_calls
GROUP BY session_id
HAVING failed > 0
ORDER BY failed DESC, session_id;
