-- 0027: every tool call has a time, `tool_calls.ts`: its start, else its end.
--
-- Why: a call whose PreToolUse was never seen (Codex fires none for most tools, a hook
-- installed mid-call, a half pruned) has no `start_ts`, so a question asked of `start_ts`
-- ("the failed shell commands of this week") silently left those calls out: 0 of 21 failures
-- for one new user (issue 35). cmstore itself has always dated a call by its start, else its
-- end (prune, `show`, the dashboard); the column says so once, for every query.
--
-- A VIRTUAL generated column: no row is rewritten. Its index replaces `tool_calls_ts`, an index
-- on the same expression that SQLite's planner does not match to the column (a query on `ts`
-- scanned the table), under the same name; building it reads the table once.
ALTER TABLE tool_calls ADD COLUMN ts INTEGER GENERATED ALWAYS AS (coalesce(start_ts, end_ts)) VIRTUAL;
DROP INDEX IF EXISTS tool_calls_ts;
CREATE INDEX tool_calls_ts ON tool_calls(ts);
