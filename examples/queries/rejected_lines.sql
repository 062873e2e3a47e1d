-- Which queue lines could ingest not read, why, and where are they (file and byte offset)?
SELECT reason,
       count(*) AS lines,
       min(source || ':' || offset) AS first_at,
       max(length) AS longest_bytes
FROM rejects
GROUP BY reason
ORDER BY lines DESC, reason;
