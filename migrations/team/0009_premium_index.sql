-- Team schema 0009: the responses that report premium requests, by time (local migration
-- 0034's `usage_premium`). Why: `summarize --by model --store` sums them beside each model's
-- tokens; few responses report them (Copilot's), and without this index every summary would
-- read the whole `usage` table for them (10M rows at the load test's size).
CREATE INDEX usage_premium ON usage (ts) WHERE premium_requests IS NOT NULL;
