//! The `agent_totals` table (migration 0039): what an agent says a session used, kept beside
//! cmstore's own count so that `v_usage_check` (and `cmstore usage --check`) can compare them
//! whenever asked. A total read from an agent's file replaces the one read before (its
//! figures are the session's so far); Claude Code's OpenTelemetry figures add up, one
//! request or one metric point at a time.

use rusqlite::{params, Connection};

use crate::model::queue_line::usage::UsageRecord;

/// Who says so: the `source` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Copilot CLI's `session.shutdown` totals, per model.
    CopilotShutdown,
    /// OpenCode's session totals in its store, over every model.
    OpencodeSession,
    /// Cline's session totals in its session file, over every model.
    ClineSession,
    /// Goose's running totals of a session in its store, over every model.
    GooseSession,
    /// Claude Code's `api_request` events, one per request.
    ClaudeRequests,
    /// Claude Code's `token.usage` and `cost.usage` metrics.
    ClaudeMetrics,
}

impl Source {
    /// The name stored in `source`.
    pub fn name(self) -> &'static str {
        match self {
            Source::CopilotShutdown => "copilot-shutdown",
            Source::OpencodeSession => "opencode-session",
            Source::ClineSession => "cline-session",
            Source::GooseSession => "goose-session",
            Source::ClaudeRequests => "claude-otlp-requests",
            Source::ClaudeMetrics => "claude-otlp-metrics",
        }
    }
}

const REPLACE_TOTAL: &str = "
    INSERT INTO agent_totals (session_id, source, model, series, agent, requests, input_tokens,
      output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, ts, origin)
    VALUES (?1, ?2, ?3, '', ?4, NULL, ?5, ?6, ?7, ?8, NULL, ?9, ?10)
    ON CONFLICT (session_id, source, model, series) DO UPDATE SET
      agent = coalesce(excluded.agent, agent),
      input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
      cache_read_tokens = excluded.cache_read_tokens,
      cache_write_tokens = excluded.cache_write_tokens,
      ts = coalesce(excluded.ts, ts), origin = excluded.origin
    WHERE (excluded.ts IS NULL OR ts IS NULL OR excluded.ts >= ts)
      AND (input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
        IS NOT (excluded.input_tokens, excluded.output_tokens, excluded.cache_read_tokens,
                excluded.cache_write_tokens)";

/// Keeps `total`, an agent's total of `session` (per model, or over every model when it names
/// none), in place of the one read before from the same `source`: not in place of a later one
/// (an older copy of a log read again), and without a write when the figures are the same.
pub fn replace(
    conn: &Connection,
    session: &str,
    agent: Option<&str>,
    source: Source,
    total: &UsageRecord,
    origin: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(REPLACE_TOTAL)?.execute(params![
        session,
        source.name(),
        total.model.as_deref().unwrap_or(""),
        agent,
        saturate(total.input),
        saturate(total.output),
        saturate(total.cache_read),
        saturate(total.cache_write),
        total.ts,
        origin,
    ])?;
    Ok(())
}

/// Figures of Claude Code's OpenTelemetry to add to (or, for a cumulative metric, to raise) a
/// session's total.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Requests (one per `api_request` event; none from metrics).
    pub requests: Option<i64>,
    /// Uncached input tokens.
    pub input: i64,
    /// Output tokens.
    pub output: i64,
    /// Cache reads.
    pub cache_read: i64,
    /// Cache writes.
    pub cache_write: i64,
    /// The agent's cost, USD.
    pub cost_usd: Option<f64>,
}

const ADD_FIGURES: &str = "
    INSERT INTO agent_totals (session_id, source, model, series, agent, requests, input_tokens,
      output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, ts, origin)
    VALUES (?1, ?2, ?3, ?4, 'claude', ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'otlp')
    ON CONFLICT (session_id, source, model, series) DO UPDATE SET
      requests = CASE WHEN excluded.requests IS NULL THEN requests
        ELSE coalesce(requests, 0) + excluded.requests END,
      input_tokens = input_tokens + excluded.input_tokens,
      output_tokens = output_tokens + excluded.output_tokens,
      cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
      cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
      cost_usd = CASE WHEN excluded.cost_usd IS NULL THEN cost_usd
        ELSE coalesce(cost_usd, 0) + excluded.cost_usd END,
      ts = max(coalesce(ts, excluded.ts), coalesce(excluded.ts, ts))";

const RAISE_FIGURES: &str = "
    INSERT INTO agent_totals (session_id, source, model, series, agent, requests, input_tokens,
      output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, ts, origin)
    VALUES (?1, ?2, ?3, ?4, 'claude', ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'otlp')
    ON CONFLICT (session_id, source, model, series) DO UPDATE SET
      input_tokens = max(input_tokens, excluded.input_tokens),
      output_tokens = max(output_tokens, excluded.output_tokens),
      cache_read_tokens = max(cache_read_tokens, excluded.cache_read_tokens),
      cache_write_tokens = max(cache_write_tokens, excluded.cache_write_tokens),
      cost_usd = max(coalesce(cost_usd, excluded.cost_usd), coalesce(excluded.cost_usd, cost_usd)),
      ts = max(coalesce(ts, excluded.ts), coalesce(excluded.ts, ts))";

/// How a figure joins what is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// Added: one request's figures, or a delta metric point's.
    Add,
    /// The larger kept: a cumulative metric's running total within one `series`.
    Raise,
}

/// Adds (or raises) Claude Code's `figures` for `session` and `model`, from `source`, in
/// `series` (a cumulative metric's start time; `""` otherwise).
#[allow(clippy::too_many_arguments)]
pub fn merge(
    conn: &Connection,
    session: &str,
    source: Source,
    model: &str,
    series: &str,
    figures: &Figures,
    merge: Merge,
    ts: Option<i64>,
) -> rusqlite::Result<()> {
    let sql = match merge {
        Merge::Add => ADD_FIGURES,
        Merge::Raise => RAISE_FIGURES,
    };
    conn.prepare_cached(sql)?.execute(params![
        session,
        source.name(),
        model,
        series,
        figures.requests,
        figures.input,
        figures.output,
        figures.cache_read,
        figures.cache_write,
        figures.cost_usd,
        ts,
    ])?;
    Ok(())
}

fn saturate(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, crate::store::Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("t.db")).unwrap();
        (dir, store)
    }

    fn row(conn: &Connection, source: &str) -> (i64, i64, i64, i64, Option<f64>, Option<i64>) {
        conn.query_row(
            "SELECT sum(input_tokens), sum(output_tokens), sum(cache_read_tokens),
                    sum(cache_write_tokens), sum(cost_usd), sum(requests)
             FROM agent_totals WHERE source = ?1",
            [source],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )
        .unwrap()
    }

    /// Claude Code's `api_request` events stored before migration 0039 are its totals from
    /// the start; no other record is.
    #[test]
    fn events_stored_before_the_table_are_counted_by_its_migration() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v38.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            crate::store::migrate(&mut conn, &path, 38).unwrap();
            let insert = "INSERT INTO otel_logs (record_key, ts, event_name, session_id,
                 service_name, attributes, resource, received_at)
               VALUES (?1, ?2, ?3, 's', 'claude-code', ?4, '{}', 0)";
            let request = |output: i64| {
                serde_json::json!({"model": "claude-sonnet-4-5", "input_tokens": "12",
                    "output_tokens": output.to_string(), "cache_read_tokens": "100",
                    "cache_creation_tokens": "7", "cost_usd": 0.5})
                .to_string()
            };
            for (key, ts, name, attributes) in [
                ("k1", 1, "api_request", request(300)),
                ("k2", 5, "api_request", request(45)),
                ("k3", 9, "user_prompt", request(1_000)),
            ] {
                conn.execute(insert, params![key, ts, name, attributes])
                    .unwrap();
            }
        }
        let store = crate::store::open(&path).unwrap();
        let conn = store.conn().unwrap();
        let row: (String, i64, i64, i64, i64, i64, f64, i64) = conn
            .query_row(
                "SELECT model, requests, input_tokens, output_tokens, cache_read_tokens,
                        cache_write_tokens, cost_usd, ts
                 FROM agent_totals WHERE session_id = 's' AND source = 'claude-otlp-requests'",
                [],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                    ))
                },
            )
            .unwrap();
        assert_eq!(
            row,
            ("claude-sonnet-4-5".into(), 2, 24, 345, 200, 14, 1.0, 5)
        );
    }

    #[test]
    fn a_total_read_again_replaces_the_one_before() {
        let (_dir, store) = store();
        let conn = store.conn().unwrap();
        let total = |input| UsageRecord {
            model: Some("gpt-5".into()),
            input,
            output: 7,
            cache_read: 3,
            ..UsageRecord::default()
        };
        for input in [10, 25] {
            replace(
                &conn,
                "s",
                Some("copilot"),
                Source::CopilotShutdown,
                &total(input),
                "import",
            )
            .unwrap();
        }
        assert_eq!(row(&conn, "copilot-shutdown"), (25, 7, 3, 0, None, None));
        // An older total (a copy of the log from before) does not take the later one's place.
        let later = UsageRecord {
            ts: Some(20),
            ..total(40)
        };
        let older = UsageRecord {
            ts: Some(10),
            ..total(30)
        };
        for t in [later, older] {
            replace(&conn, "s", None, Source::CopilotShutdown, &t, "import").unwrap();
        }
        assert_eq!(row(&conn, "copilot-shutdown"), (40, 7, 3, 0, None, None));
    }

    #[test]
    fn requests_and_deltas_add_and_a_cumulative_series_keeps_its_largest_point() {
        let (_dir, store) = store();
        let conn = store.conn().unwrap();
        let request = |input, cost| Figures {
            requests: Some(1),
            input,
            output: 2,
            cost_usd: Some(cost),
            ..Figures::default()
        };
        for (input, cost) in [(10, 0.5), (5, 0.25)] {
            let f = request(input, cost);
            merge(
                &conn,
                "s",
                Source::ClaudeRequests,
                "m",
                "",
                &f,
                Merge::Add,
                Some(1),
            )
            .unwrap();
        }
        assert_eq!(
            row(&conn, "claude-otlp-requests"),
            (15, 4, 0, 0, Some(0.75), Some(2))
        );
        // Two series of one cumulative metric: each keeps its largest point; their sum is
        // the session's.
        let points = [("t0", 100), ("t0", 250), ("t0", 180), ("t9", 40)];
        for (series, output) in points {
            let f = Figures {
                output,
                ..Figures::default()
            };
            merge(
                &conn,
                "s",
                Source::ClaudeMetrics,
                "m",
                series,
                &f,
                Merge::Raise,
                None,
            )
            .unwrap();
        }
        assert_eq!(
            row(&conn, "claude-otlp-metrics"),
            (0, 290, 0, 0, None, None)
        );
    }
}
