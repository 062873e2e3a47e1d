-- Which tools fail most often, as a share of their finished calls?
SELECT tool_name,
       calls,
       failed,
       round(100.0 * failed / nullif(succeeded + failed, 0), 1) AS failed_pct,
       avg_ms
FROM v_tools
ORDER BY failed_pct DESC, calls DESC, tool_name;
