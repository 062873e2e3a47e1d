//! What the responses the store holds cost in a time window, for the spend file
//! ([`crate::model::spend`]): one pass over the window's responses on `usage_ts`, each priced
//! as `v_usage` prices it.

use rusqlite::{params, Connection};

use crate::model::spend::{SpendFile, Spent};

/// The window's figures: cost of the priced responses, every token, responses, unpriced.
const SPENT: &str = "
    SELECT round(sum(cost_usd), 6),
           CAST(total(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens)
                AS INTEGER),
           count(*), sum(cost_usd IS NULL)
    FROM v_usage WHERE ts >= ?1 AND ts <= ?2";

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
            })
        })
}

/// The spend file's figures at `now_ms`, its windows starting at `starts` (day, week, month).
pub fn spend_file(
    conn: &Connection,
    now_ms: i64,
    starts: (i64, i64, i64),
) -> rusqlite::Result<SpendFile> {
    Ok(SpendFile {
        v: 1,
        at: now_ms,
        day: spent(conn, starts.0, now_ms)?,
        week: spent(conn, starts.1, now_ms)?,
        month: spent(conn, starts.2, now_ms)?,
    })
}
