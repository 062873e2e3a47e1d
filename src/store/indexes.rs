//! Secondary indexes set aside while ingest loads a large backlog, and put back afterwards.
//!
//! Keeping an index up to date row by row costs a B-tree descent per row and rewrites its
//! pages at every commit; building it once from the finished table is a sort. So for a big
//! backlog ingest drops the indexes that only serve queries, recording their SQL in
//! `deferred_indexes` in the same transaction, and recreates them when the backlog is loaded.
//! Queries stay correct meanwhile, only slower. UNIQUE indexes are never touched: ingest's
//! deduplication and tool-call joins rely on them.

use rusqlite::{Connection, TransactionBehavior};

use super::{pragma_int, Error};

/// The indexes set aside. Their keys repeat all over the table (a few hundred sessions, a few
/// dozen tools, a handful of risks), so each new row lands in the middle of the index: a
/// B-tree descent per row and scattered pages rewritten at every commit. Indexes that begin
/// with a time grow at their end and cost little to keep up, less than the table scan a
/// rebuild needs, so they stay; so do UNIQUE indexes and those ingest reads while it loads
/// (deduplication and the tool-call joins rely on them; a Codex `Interrupt` finds its turn's
/// prompt through `events_turn_prompt`), and those of the small tables.
///
/// What each costs (1M events, 684-byte lines; benches/ingest_parts.py and the rebuild
/// timings in benches/HISTORY.md, "Issue 34"): keeping them up row by row costs more than
/// rebuilding them once.
pub const DEFERRABLE: [&str; 6] = [
    "events_session",
    "events_tool_name",
    "events_delegated",
    "events_gate_findings",
    "tool_calls_session_id",
    "tool_calls_tool_name",
];

/// `(name, table, sql)` of the [`DEFERRABLE`] indexes that exist now.
const FIND: &str = "SELECT name, tbl_name, sql FROM sqlite_master
     WHERE type = 'index' AND sql IS NOT NULL AND name IN (SELECT value FROM json_each(?1))
     ORDER BY name";

/// Drops the deferrable indexes, recording them first, in one transaction. Returns how many
/// indexes are deferred afterwards (those of an earlier, interrupted load included).
pub fn defer(conn: &mut Connection) -> Result<usize, Error> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let names = serde_json::to_string(&DEFERRABLE).unwrap_or_default();
    let found: Vec<(String, String, String)> = tx
        .prepare(FIND)?
        .query_map([names], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    for (name, table, sql) in &found {
        tx.execute(
            "INSERT OR REPLACE INTO deferred_indexes(name, tbl, sql) VALUES (?1, ?2, ?3)",
            [name, table, sql],
        )?;
        tx.execute_batch(&format!("DROP INDEX \"{}\"", name.replace('"', "\"\"")))?;
    }
    let deferred = count(&tx)?;
    tx.commit()?;
    Ok(deferred)
}

/// Worker threads that sort while `CREATE INDEX` scans the table (`PRAGMA threads`).
pub const REBUILD_THREADS: i64 = 2;

/// Page cache of the connection while it rebuilds, in KiB. `CREATE INDEX` sorts its keys in
/// runs of this size, but of at least 250 pages (4 MiB with 16 KiB pages): small runs sort in
/// the CPU's cache and keep the worker threads busy, and the rebuild's resident size goes down
/// instead of up. (1M events: 1.3 s with 16 MB runs and no worker, 0.9 s with 4 MiB runs and
/// two; the load's peak RSS 52 MB → 40 MB.)
pub const REBUILD_CACHE_KIB: i64 = 4096;

/// Recreates every deferred index and forgets it, in one transaction. Returns how many.
pub fn restore(conn: &mut Connection) -> Result<usize, Error> {
    if count(conn)? == 0 {
        return Ok(0);
    }
    let threads = pragma_int(conn, "threads")?;
    let cache = pragma_int(conn, "cache_size")?;
    let restored = (|| -> Result<usize, Error> {
        conn.pragma_update(None, "threads", REBUILD_THREADS)?;
        conn.pragma_update(None, "cache_size", -REBUILD_CACHE_KIB)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let restored = restore_in(&tx)?;
        tx.commit()?;
        Ok(restored)
    })();
    // The connection goes back to the pool: back to its own settings, whatever happened. They
    // only change how fast later statements on it run, so failing to put them back (which
    // SQLite does not do for these two) would not make the rebuild's outcome wrong.
    let _ = conn.pragma_update(None, "threads", threads);
    let _ = conn.pragma_update(None, "cache_size", cache);
    restored
}

/// [`restore`] inside a transaction the caller owns (a migration's).
pub fn restore_in(conn: &Connection) -> Result<usize, Error> {
    let saved: Vec<(String, String)> = conn
        .prepare("SELECT name, sql FROM deferred_indexes ORDER BY name")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (name, sql) in &saved {
        let exists: bool = conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'index' AND name = ?1",
            [name],
            |r| r.get(0),
        )?;
        if !exists {
            conn.execute_batch(sql)?;
        }
    }
    conn.execute("DELETE FROM deferred_indexes", [])?;
    Ok(saved.len())
}

/// How many indexes are deferred now.
pub fn count(conn: &Connection) -> Result<usize, Error> {
    let n: i64 = conn.query_row("SELECT count(*) FROM deferred_indexes", [], |r| r.get(0))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_sql(conn: &Connection) -> Vec<(String, String)> {
        conn.prepare(
            "SELECT name, coalesce(sql, '') FROM sqlite_master WHERE type = 'index' ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    }

    fn sorter_settings(conn: &Connection) -> (i64, i64) {
        (
            pragma_int(conn, "threads").unwrap(),
            pragma_int(conn, "cache_size").unwrap(),
        )
    }

    #[test]
    fn deferred_indexes_come_back_exactly_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("i.db")).unwrap();
        let mut conn = store.conn().unwrap();
        let before = index_sql(&conn);
        let n = defer(&mut conn).unwrap();
        assert_eq!(n, DEFERRABLE.len());
        let during = index_sql(&conn);
        for kept in [
            "tool_calls_open",
            "sqlite_autoindex_events_1",
            "events_ts",
            "turns_ts",
        ] {
            assert!(during.iter().any(|(name, _)| name == kept), "{kept} stays");
        }
        for name in DEFERRABLE {
            assert!(
                !during.iter().any(|(n, _)| n == name),
                "{name} is set aside"
            );
        }
        // Deferring again (an interrupted load resumed) changes nothing.
        assert_eq!(defer(&mut conn).unwrap(), n);
        let settings = sorter_settings(&conn);
        assert_eq!(restore(&mut conn).unwrap(), n);
        assert_eq!(index_sql(&conn), before);
        assert_eq!(
            sorter_settings(&conn),
            settings,
            "the rebuild's sorter settings do not outlive it"
        );
        assert_eq!(count(&conn).unwrap(), 0);
        assert_eq!(restore(&mut conn).unwrap(), 0);
    }
}
