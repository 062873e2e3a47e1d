//! What the responses the store holds cost in a time window (in USD, tokens and Copilot's
//! premium requests), for the spend file
//! ([`crate::model::spend`]): one pass over the window's responses on `usage_ts`, each priced
//! as `v_usage` prices it; for the scopes a `[budget]` limit counts (an agent, a project), one
//! more pass that groups them by agent and working directory, each group then matched to the
//! scopes by [`Scope::holds`], the rule capture matches an event by.

use rusqlite::{params, Connection};

use crate::model::budget::Scope;
use crate::model::spend::{ScopeSpend, SpendFile, Spent, Windows};

/// The window's figures: cost of the priced responses, every token, responses, unpriced,
/// premium requests.
const SPENT: &str = "
    SELECT round(sum(cost_usd), 6),
           CAST(total(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens)
                AS INTEGER),
           count(*), sum(cost_usd IS NULL), round(total(premium_requests), 4)
    FROM v_usage WHERE ts >= ?1 AND ts <= ?2";

/// The same figures per agent and working directory (the session's).
const SPENT_BY_AGENT_AND_CWD: &str = "
    SELECT coalesce(u.agent, ''), s.cwd, sum(u.cost_usd),
           CAST(total(u.input_tokens + u.output_tokens + u.cache_read_tokens
                      + u.cache_write_tokens) AS INTEGER),
           count(*), sum(u.cost_usd IS NULL), total(u.premium_requests)
    FROM v_usage u LEFT JOIN sessions s ON s.session_id = u.session_id
    WHERE u.ts >= ?1 AND u.ts <= ?2
    GROUP BY 1, 2";

/// What the responses from `from_ms` to `to_ms` (inclusive) cost.
pub fn spent(conn: &Connection, from_ms: i64, to_ms: i64) -> rusqlite::Result<Spent> {
    conn.prepare_cached(SPENT)?
        .query_row(params![from_ms, to_ms], |r| {
            Ok(Spent {
                from: from_ms,
                usd: r.get(0)?,
                tokens: r.get(1)?,
                responses: r.get(2)?,
                unpriced: r.get::<_, Option<i64>>(3)?.unwrap_or(0),
                premium_requests: Some(r.get(4)?),
            })
        })
}

/// What the responses from `from_ms` to `to_ms` of each of `scopes` cost, in their order.
pub fn spent_by_scope(
    conn: &Connection,
    from_ms: i64,
    to_ms: i64,
    scopes: &[Scope],
) -> rusqlite::Result<Vec<Spent>> {
    let mut figures: Vec<Spent> = scopes
        .iter()
        .map(|_| Spent {
            from: from_ms,
            premium_requests: Some(0.0),
            ..Spent::default()
        })
        .collect();
    if scopes.is_empty() {
        return Ok(figures);
    }
    let mut statement = conn.prepare_cached(SPENT_BY_AGENT_AND_CWD)?;
    let mut rows = statement.query(params![from_ms, to_ms])?;
    while let Some(row) = rows.next()? {
        let agent: String = row.get(0)?;
        let cwd: Option<String> = row.get(1)?;
        let usd: Option<f64> = row.get(2)?;
        let (tokens, responses): (i64, i64) = (row.get(3)?, row.get(4)?);
        let unpriced = row.get::<_, Option<i64>>(5)?.unwrap_or(0);
        let premium: f64 = row.get(6)?;
        for (scope, spent) in scopes.iter().zip(&mut figures) {
            if scope.holds(&agent, cwd.as_deref()) {
                spent.usd = match (spent.usd, usd) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
                spent.tokens = spent.tokens.saturating_add(tokens);
                spent.responses += responses;
                spent.unpriced += unpriced;
                spent.premium_requests = Some(spent.premium_requests.unwrap_or(0.0) + premium);
            }
        }
    }
    for spent in &mut figures {
        spent.usd = spent.usd.map(|usd| (usd * 1e6).round() / 1e6);
        spent.premium_requests = spent.premium_requests.map(|n| (n * 1e4).round() / 1e4);
    }
    Ok(figures)
}

/// The spend file's figures at `now_ms`, its windows starting at `starts` (day, week, month),
/// for everything and for each of `scopes`.
pub fn spend_file(
    conn: &Connection,
    now_ms: i64,
    starts: (i64, i64, i64),
    scopes: &[Scope],
) -> rusqlite::Result<SpendFile> {
    let all = Windows {
        day: spent(conn, starts.0, now_ms)?,
        week: spent(conn, starts.1, now_ms)?,
        month: spent(conn, starts.2, now_ms)?,
    };
    let by_scope = |from| spent_by_scope(conn, from, now_ms, scopes);
    let (days, weeks, months) = (
        by_scope(starts.0)?,
        by_scope(starts.1)?,
        by_scope(starts.2)?,
    );
    let scopes = scopes
        .iter()
        .zip(days.into_iter().zip(weeks).zip(months))
        .map(|(scope, ((day, week), month))| ScopeSpend {
            scope: scope.clone(),
            windows: Windows { day, week, month },
        })
        .collect();
    Ok(SpendFile {
        v: 1,
        at: now_ms,
        all,
        scopes,
    })
}
