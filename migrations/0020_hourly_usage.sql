-- 0020: usage per UTC hour, for `summarize --by model` over a window that cuts days.
--
-- Why: a window whose edges cut UTC days took its whole days from `usage_rollup` (0016) but
-- every response of its two edge days from `usage` through `usage_ts`, a row lookup each:
-- 139 ms at 1M events with 100k responses and 1.4 s at 10M with 1M responses, for a window of
-- 42 hours (issue 17: every report within 50 ms at 1M events, 100 ms at 10M). Now only the
-- responses of the two edge hours are read from `usage`; the whole hours of the edge days come
-- from this table, and the whole days still from `usage_rollup`.
--
-- A table beside `usage_rollup` rather than that one re-keyed by hour: the per-session, -day,
-- -model and -agent views read the whole rollup, and an hour key makes it up to 24 times as
-- many rows (33,600 instead of 1,800 in the synthetic store of BENCHMARKS.md: those views went
-- from 5-10 ms to 60-90 ms). The hour first in the key: a window reads a range of hours.
--
-- One row per UTC hour, session, agent and model, kept like `usage_rollup` by triggers on
-- `usage` in the transaction that writes it (ingest, import, the upsert of a response read
-- again, a delete), so it always equals a `GROUP BY` over the responses stored (their sums;
-- `first_ts` and `last_ts` bound them, as in 0016). Prune does not delete responses.
-- A response without a time has no hour and no row here (no window holds it).
CREATE TABLE usage_hourly (
    hour_n                INTEGER NOT NULL,  -- floor(floor-toward-zero(ts / 1000) / 3600)
    session_id            TEXT    NOT NULL,  -- '' for responses without one
    agent                 TEXT    NOT NULL,  -- ''
    model                 TEXT    NOT NULL,  -- ''
    responses             INTEGER NOT NULL DEFAULT 0,
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens    INTEGER NOT NULL DEFAULT 0,
    cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens     INTEGER NOT NULL DEFAULT 0,
    first_ts              INTEGER NOT NULL,
    last_ts               INTEGER NOT NULL,
    PRIMARY KEY (hour_n, session_id, agent, model)
) WITHOUT ROWID;

-- The responses already stored. `ts / 1000` truncates toward zero as `date(ts / 1000, ...)`
-- does (the day of an hour is the day of its responses); the hour is that second count
-- floored to a multiple of 3600.
INSERT INTO usage_hourly
SELECT (ts / 1000 - ((ts / 1000) % 3600 + 3600) % 3600) / 3600,
       coalesce(session_id, ''), coalesce(agent, ''), coalesce(model, ''),
       count(*), sum(input_tokens), sum(output_tokens), sum(cache_write_tokens),
       sum(coalesce(cache_write_1h_tokens, 0)), sum(cache_read_tokens), min(ts), max(ts)
FROM usage WHERE ts IS NOT NULL GROUP BY 1, 2, 3, 4;

CREATE TRIGGER usage_hourly_insert AFTER INSERT ON usage WHEN new.ts IS NOT NULL BEGIN
    INSERT INTO usage_hourly VALUES (
        (new.ts / 1000 - ((new.ts / 1000) % 3600 + 3600) % 3600) / 3600,
        coalesce(new.session_id, ''), coalesce(new.agent, ''), coalesce(new.model, ''), 1,
        new.input_tokens, new.output_tokens, new.cache_write_tokens,
        coalesce(new.cache_write_1h_tokens, 0), new.cache_read_tokens, new.ts, new.ts)
    ON CONFLICT DO UPDATE SET responses = responses + 1,
        input_tokens = input_tokens + excluded.input_tokens,
        output_tokens = output_tokens + excluded.output_tokens,
        cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
        cache_write_1h_tokens = cache_write_1h_tokens + excluded.cache_write_1h_tokens,
        cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
        first_ts = min(first_ts, excluded.first_ts), last_ts = max(last_ts, excluded.last_ts);
END;

-- An update (the upsert of a response read again) moves the old figures out of their hour
-- and the new ones in; a delete moves them out. As in 0016, `first_ts` and `last_ts`
-- stay when figures leave an hour.
CREATE TRIGGER usage_hourly_update AFTER UPDATE ON usage BEGIN
    UPDATE usage_hourly SET responses = responses - 1,
        input_tokens = input_tokens - old.input_tokens,
        output_tokens = output_tokens - old.output_tokens,
        cache_write_tokens = cache_write_tokens - old.cache_write_tokens,
        cache_write_1h_tokens = cache_write_1h_tokens - coalesce(old.cache_write_1h_tokens, 0),
        cache_read_tokens = cache_read_tokens - old.cache_read_tokens
    WHERE old.ts IS NOT NULL
      AND hour_n = (old.ts / 1000 - ((old.ts / 1000) % 3600 + 3600) % 3600) / 3600
      AND session_id = coalesce(old.session_id, '') AND agent = coalesce(old.agent, '')
      AND model = coalesce(old.model, '');
    DELETE FROM usage_hourly WHERE old.ts IS NOT NULL AND responses <= 0
      AND hour_n = (old.ts / 1000 - ((old.ts / 1000) % 3600 + 3600) % 3600) / 3600
      AND session_id = coalesce(old.session_id, '') AND agent = coalesce(old.agent, '')
      AND model = coalesce(old.model, '');
    INSERT INTO usage_hourly SELECT
        (new.ts / 1000 - ((new.ts / 1000) % 3600 + 3600) % 3600) / 3600,
        coalesce(new.session_id, ''), coalesce(new.agent, ''), coalesce(new.model, ''), 1,
        new.input_tokens, new.output_tokens, new.cache_write_tokens,
        coalesce(new.cache_write_1h_tokens, 0), new.cache_read_tokens, new.ts, new.ts
    WHERE new.ts IS NOT NULL
    ON CONFLICT DO UPDATE SET responses = responses + 1,
        input_tokens = input_tokens + excluded.input_tokens,
        output_tokens = output_tokens + excluded.output_tokens,
        cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
        cache_write_1h_tokens = cache_write_1h_tokens + excluded.cache_write_1h_tokens,
        cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
        first_ts = min(first_ts, excluded.first_ts), last_ts = max(last_ts, excluded.last_ts);
END;

CREATE TRIGGER usage_hourly_delete AFTER DELETE ON usage WHEN old.ts IS NOT NULL BEGIN
    UPDATE usage_hourly SET responses = responses - 1,
        input_tokens = input_tokens - old.input_tokens,
        output_tokens = output_tokens - old.output_tokens,
        cache_write_tokens = cache_write_tokens - old.cache_write_tokens,
        cache_write_1h_tokens = cache_write_1h_tokens - coalesce(old.cache_write_1h_tokens, 0),
        cache_read_tokens = cache_read_tokens - old.cache_read_tokens
    WHERE hour_n = (old.ts / 1000 - ((old.ts / 1000) % 3600 + 3600) % 3600) / 3600
      AND session_id = coalesce(old.session_id, '') AND agent = coalesce(old.agent, '')
      AND model = coalesce(old.model, '');
    DELETE FROM usage_hourly WHERE responses <= 0
      AND hour_n = (old.ts / 1000 - ((old.ts / 1000) % 3600 + 3600) % 3600) / 3600
      AND session_id = coalesce(old.session_id, '') AND agent = coalesce(old.agent, '')
      AND model = coalesce(old.model, '');
END;

-- The hourly usage priced as `v_usage_rollup` prices the daily: each group's cost from its
-- model's price (NULL without one), `unpriced` its responses then.
CREATE VIEW v_usage_hourly AS
SELECT r.hour_n, nullif(r.session_id, '') AS session_id, nullif(r.agent, '') AS agent,
       nullif(r.model, '') AS model,
       r.responses, r.input_tokens, r.output_tokens, r.cache_write_tokens,
       r.cache_read_tokens, r.first_ts, r.last_ts,
       (r.input_tokens * p.input + r.output_tokens * p.output
        + (r.cache_write_tokens - r.cache_write_1h_tokens) * p.cache_write_5m
        + r.cache_write_1h_tokens * p.cache_write_1h
        + r.cache_read_tokens * p.cache_read) / 1000000.0 AS cost_usd,
       CASE WHEN p.model IS NULL THEN r.responses ELSE 0 END AS unpriced
FROM usage_hourly r
LEFT JOIN prices p ON p.model = nullif(r.model, '');
