-- 0016: a placeholder in the wt-otel branch only. Another branch owns migration 0016; this file keeps
-- user_version counting by position until the merge, which replaces it with the real one.
SELECT 1;
