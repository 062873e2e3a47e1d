//! The receiver's rows into the store: one transaction per request, each record once
//! (`INSERT OR IGNORE` on its content key), and a row per rejected request.

use rusqlite::params;

use super::decode::Decoded;
use super::totals;
use crate::store::agent_totals;
use crate::store::Store;

/// The first bytes of a rejected body kept for a person to look at.
pub(super) const PREFIX_BYTES: usize = 256;

/// A rejected request, for `otel_rejects`.
pub struct Reject<'a> {
    pub path: &'a str,
    pub content_type: Option<&'a str>,
    pub length: usize,
    pub status: u16,
    pub reason: &'a str,
    pub prefix: &'a [u8],
}

/// Stores the rows of one request in one transaction.
pub fn rows(store: &Store, decoded: &Decoded) -> Result<(), crate::store::Error> {
    let mut conn = store.conn()?;
    // Immediate: the chain's record reads the head under the write lock.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let now = crate::support::clock::now_ms();
    {
        let mut logs = tx.prepare_cached(
            "INSERT OR IGNORE INTO otel_logs (record_key, ts, event_name, session_id, prompt_id,
               service_name, severity, body, attributes, resource, received_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?;
        for r in &decoded.logs {
            let stored = logs.execute(params![
                r.key,
                r.ts,
                r.event_name,
                r.session_id,
                r.prompt_id,
                r.service_name,
                r.severity,
                r.body,
                r.attributes,
                r.resource,
                now
            ])?;
            // A record sent again (an SDK's retry) is stored once, and counted once.
            if stored == 1 {
                add_share(&tx, totals::of_log(r))?;
            }
        }
        let mut metrics = tx.prepare_cached(
            "INSERT OR IGNORE INTO otel_metrics (point_key, ts, name, unit, kind, value, count,
               session_id, service_name, attributes, resource, received_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?;
        for m in &decoded.metrics {
            let stored = metrics.execute(params![
                m.key,
                m.ts,
                m.name,
                m.unit,
                m.kind,
                m.value,
                m.count,
                m.session_id,
                m.service_name,
                m.attributes,
                m.resource,
                now
            ])?;
            if stored == 1 {
                add_share(&tx, totals::of_metric(m))?;
            }
        }
    }
    crate::store::chain::keyed::flush(&tx)?;
    tx.commit()?;
    Ok(())
}

/// Adds what a stored row says of its session's usage to the agent's total.
fn add_share(conn: &rusqlite::Connection, share: Option<totals::Share>) -> rusqlite::Result<()> {
    let Some(s) = share else {
        return Ok(());
    };
    agent_totals::merge(
        conn, &s.session, s.source, &s.model, &s.series, &s.figures, s.merge, s.ts,
    )
}

/// Records a rejected request.
pub fn reject(store: &Store, r: &Reject<'_>) -> Result<(), crate::store::Error> {
    let prefix =
        String::from_utf8_lossy(&r.prefix[..r.prefix.len().min(PREFIX_BYTES)]).into_owned();
    store.conn()?.execute(
        "INSERT INTO otel_rejects (path, content_type, length, status, reason, raw_prefix, received_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![r.path, r.content_type, r.length as i64, r.status, r.reason, prefix, crate::support::clock::now_ms()],
    )?;
    Ok(())
}
