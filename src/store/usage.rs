//! The `usage` and `prices` tables (migration 0014): one row per API response, upserted so
//! the final streamed count wins and a response read twice counts once; and the effective
//! price table the `v_usage*` views compute cost from when read.

use rusqlite::{params, Connection, OptionalExtension};

use crate::model::prices::PriceTable;
use crate::model::queue_line::usage::UsageRecord;

/// One response. On a conflict the counts of the line written later (greater `line_offset`)
/// win; what links the row (session, turn, subagent, agent) is kept once known.
const UPSERT_USAGE: &str = "
    INSERT INTO usage(message_id, request_id, session_id, agent, turn_id, subagent_id,
      sidechain, model, ts, input_tokens, output_tokens, cache_write_tokens,
      cache_write_1h_tokens, cache_read_tokens, service_tier, line_offset, origin)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
    ON CONFLICT(message_id, request_id) DO UPDATE SET
      session_id = coalesce(session_id, excluded.session_id),
      agent = coalesce(agent, excluded.agent),
      turn_id = coalesce(turn_id, excluded.turn_id),
      subagent_id = coalesce(subagent_id, excluded.subagent_id),
      sidechain = max(sidechain, excluded.sidechain),
      model = CASE WHEN excluded.line_offset >= line_offset
        THEN coalesce(excluded.model, model) ELSE model END,
      ts = CASE WHEN excluded.line_offset >= line_offset
        THEN coalesce(excluded.ts, ts) ELSE ts END,
      input_tokens = CASE WHEN excluded.line_offset >= line_offset
        THEN excluded.input_tokens ELSE input_tokens END,
      output_tokens = CASE WHEN excluded.line_offset >= line_offset
        THEN excluded.output_tokens ELSE output_tokens END,
      cache_write_tokens = CASE WHEN excluded.line_offset >= line_offset
        THEN excluded.cache_write_tokens ELSE cache_write_tokens END,
      cache_write_1h_tokens = CASE WHEN excluded.line_offset >= line_offset
        THEN excluded.cache_write_1h_tokens ELSE cache_write_1h_tokens END,
      cache_read_tokens = CASE WHEN excluded.line_offset >= line_offset
        THEN excluded.cache_read_tokens ELSE cache_read_tokens END,
      service_tier = CASE WHEN excluded.line_offset >= line_offset
        THEN coalesce(excluded.service_tier, service_tier) ELSE service_tier END,
      line_offset = max(line_offset, excluded.line_offset)";

/// Where a usage row was read, besides its own fields.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The session when the record names none (the queue line's).
    pub session_id: Option<&'a str>,
    /// The coding agent (`claude`, ...).
    pub agent: Option<&'a str>,
    /// The time when the record has none (the queue line's), epoch ms.
    pub ts: Option<i64>,
    /// `hook` or `import`.
    pub origin: &'static str,
}

/// Upserts one response's row.
pub fn upsert(conn: &Connection, r: &UsageRecord, cx: Context<'_>) -> rusqlite::Result<()> {
    let saturate = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    conn.prepare_cached(UPSERT_USAGE)?.execute(params![
        r.message_id,
        r.request_id.as_deref().unwrap_or(""),
        r.session_id.as_deref().or(cx.session_id),
        cx.agent,
        r.turn_id,
        r.agent_id,
        r.sidechain,
        r.model,
        r.ts.or(cx.ts),
        saturate(r.input),
        saturate(r.output),
        saturate(r.cache_write),
        r.cache_write_1h.map(saturate),
        saturate(r.cache_read),
        r.service_tier,
        saturate(r.offset),
        cx.origin,
    ])?;
    Ok(())
}

/// Upserts the records of a queue line's `usage` (its JSON text); returns how many. A
/// value that does not parse as a list of records is passed over (`None`).
pub fn upsert_json(
    conn: &Connection,
    json: &str,
    cx: Context<'_>,
) -> rusqlite::Result<Option<usize>> {
    let Ok(records) = serde_json::from_str::<Vec<UsageRecord>>(json) else {
        return Ok(None);
    };
    for record in &records {
        upsert(conn, record, cx)?;
    }
    Ok(Some(records.len()))
}

/// True when the `prices` table holds exactly `table`.
pub fn prices_match(conn: &Connection, table: &PriceTable) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare(
        "SELECT model, input, output, cache_write_5m, cache_write_1h, cache_read, as_of, origin
         FROM prices ORDER BY model",
    )?;
    let stored: Vec<(String, [f64; 5], Option<String>, String)> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?],
                r.get(6)?,
                r.get(7)?,
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(stored.len() == table.len()
        && stored.iter().zip(table).all(|(s, (model, p))| {
            s.0 == *model && s.1 == p.rates && s.2 == p.as_of && s.3 == p.origin
        }))
}

/// Makes the `prices` table hold exactly `table`, in one transaction; false when it did
/// already (nothing written).
pub fn sync_prices(conn: &mut Connection, table: &PriceTable) -> rusqlite::Result<bool> {
    if prices_match(conn, table)? {
        return Ok(false);
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute("DELETE FROM prices", [])?;
    {
        let mut insert = tx.prepare(
            "INSERT INTO prices(model, input, output, cache_write_5m, cache_write_1h, cache_read,
               as_of, origin) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for (model, p) in table {
            let [i, o, w5, w1, r] = p.rates;
            insert.execute(params![model, i, o, w5, w1, r, p.as_of, p.origin])?;
        }
    }
    tx.commit()?;
    Ok(true)
}

/// [`sync_prices`] on a connection of `store`, with cmstore's table and `overrides`.
pub fn sync_store_prices(
    store: &super::Store,
    overrides: &PriceTable,
) -> Result<bool, super::Error> {
    let mut conn = store.conn()?;
    Ok(sync_prices(
        &mut conn,
        &crate::model::prices::effective(overrides),
    )?)
}

/// Responses stored, for tests and status.
pub fn count(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT count(*) FROM usage", [], |r| r.get(0))
        .optional()
        .map(Option::unwrap_or_default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store = crate::store::open(&path).unwrap();
        drop(store);
        let conn = Connection::open(&path).unwrap();
        (dir, conn)
    }

    fn rec(output: u64, offset: u64) -> UsageRecord {
        UsageRecord {
            message_id: "m1".into(),
            model: Some("claude-sonnet-4-20250514".into()),
            input: 10,
            output,
            cache_write: 1_000_000,
            cache_write_1h: Some(0),
            cache_read: 2_000_000,
            offset,
            ..UsageRecord::default()
        }
    }

    const CX: Context<'static> = Context {
        session_id: Some("s1"),
        agent: Some("claude"),
        ts: Some(5),
        origin: "hook",
    };

    #[test]
    fn a_response_counts_once_with_its_last_line_whatever_the_order() {
        let (_dir, conn) = store();
        for (output, offset) in [(3, 100), (1941, 400), (3, 200), (1941, 400)] {
            upsert(&conn, &rec(output, offset), CX).unwrap();
        }
        let (n, out): (i64, i64) = conn
            .query_row("SELECT count(*), sum(output_tokens) FROM usage", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((n, out), (1, 1941));
    }

    #[test]
    fn cost_follows_the_price_table_and_unknown_models_stay_unpriced() {
        let (_dir, mut conn) = store();
        upsert(&conn, &rec(1_000_000, 1), CX).unwrap();
        let mut other = rec(5, 1);
        other.message_id = "m2".into();
        other.model = Some("x-ai/grok-4-fast:free".into());
        upsert(&conn, &other, CX).unwrap();
        let cost = |conn: &Connection| -> (Option<f64>, i64) {
            conn.query_row(
                "SELECT cost_usd, unpriced FROM v_usage_sessions WHERE session_id = 's1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
        };
        assert_eq!(cost(&conn), (None, 2), "no prices synced yet");
        let mut table = crate::model::prices::shipped();
        assert!(sync_prices(&mut conn, &table).unwrap());
        assert!(!sync_prices(&mut conn, &table).unwrap(), "unchanged");
        // 10 input * 3 + 1M output * 15 + 1M 5m-writes * 3.75 + 2M reads * 0.3, per million.
        let expected = (10.0 * 3.0) / 1e6 + 15.0 + 3.75 + 0.6;
        let (got, unpriced) = cost(&conn);
        assert!((got.unwrap() - expected).abs() < 1e-6, "{got:?}");
        assert_eq!(unpriced, 1);
        table.get_mut("claude-sonnet-4-20250514").unwrap().rates = [0.0, 1.0, 0.0, 0.0, 0.0];
        sync_prices(&mut conn, &table).unwrap();
        assert_eq!(
            cost(&conn).0,
            Some(1.0),
            "an override reprices all of history"
        );
        assert_eq!(count(&conn).unwrap(), 2);
    }
}
