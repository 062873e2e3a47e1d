//! Retention: delete rows older than a cutoff in short write transactions, then reclaim space.
//!
//! Each batch is one `BEGIN IMMEDIATE` transaction deleting at most `batch_rows` rows (fewer
//! while batches take longer than [`TARGET_LOCK`]), so the write lock is held for milliseconds
//! and ingest (which waits up to [`super::BUSY_TIMEOUT`]) keeps going in between. `sources` is never touched: offsets stay where they are, so nothing
//! pruned is ever read again from the queue.
//!
//! What is old: events by `ts` (the hourly rollup, `hourly_sessions`, loses what they counted in
//! the same transaction); tool calls by their start (else end) time, except that a call still
//! missing a half goes only with its totals; per-session tool
//! totals whose last call is before the cutoff; turns and `transcript_items` by `ts` (each
//! raising the watermark past what it deleted); rejects by the time of the event
//! line before them (`line_ts`), else of their ingest; sessions whose
//! `last_seen` is before the cutoff, with their `unknown_counts` rows. A session that is still
//! active keeps its row (and its totals) while its old events go.

use std::collections::HashMap;
use std::thread;
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};

use super::functions::TOOL_FAILURE;
use super::write::{apply_hours, hour_key, HourAgg, RollupEvent};
use super::Error;
use crate::model::queue_line::parse::at_file_start;

/// Rows deleted per transaction by default.
pub const DEFAULT_BATCH_ROWS: usize = 2000;

/// Most pages freed per incremental-vacuum transaction.
const VACUUM_PAGES: i64 = 2048;

/// Transactions between two explicit WAL checkpoints.
const CHECKPOINT_EVERY: u64 = 8;

/// Pause between two batches, so that a waiting ingester's busy handler finds the lock free.
const BETWEEN_BATCHES: Duration = Duration::from_millis(2);

/// Write-lock time a batch aims at; batch sizes adapt to stay near it on any machine.
pub const TARGET_LOCK: Duration = Duration::from_millis(25);

/// Rows (or pages) per transaction: starts small, doubles while batches stay well under
/// [`TARGET_LOCK`], halves when one goes over, and never exceeds `max`.
#[derive(Debug, Clone, Copy)]
struct Pace {
    now: i64,
    max: i64,
}

impl Pace {
    fn new(max: i64) -> Pace {
        let max = max.max(1);
        Pace {
            now: max.min(250),
            max,
        }
    }

    fn after(&mut self, held: Duration) {
        if held > TARGET_LOCK {
            self.now = (self.now / 2).max(1);
        } else if held < TARGET_LOCK / 2 {
            self.now = (self.now * 2).min(self.max);
        }
    }
}

/// One table's old rows: how to find them by rowid.
struct Target {
    table: &'static str,
    /// Selects the rowids of old rows; `?1` is the cutoff in epoch ms.
    old: &'static str,
}

const TARGETS: &[Target] = &[
    Target {
        table: "events",
        old: "SELECT seq FROM events WHERE ts < ?1",
    },
    Target {
        table: "tool_calls",
        // A call still missing a half is counted in its totals (`session_tools`), and the half
        // to come joins it there: it stays while they do and goes with them
        // (`delete_totals`), or now if it is counted in none.
        old: "SELECT rowid FROM tool_calls WHERE ts < ?1
              AND (start_ts IS NOT NULL AND end_ts IS NOT NULL
                   OR NOT EXISTS (SELECT 1 FROM session_tools t
                     WHERE t.session_id = coalesce(tool_calls.session_id, 'unknown-session')
                       AND t.tool_name = coalesce(tool_calls.tool_name, '')))",
    },
    Target {
        table: "session_tools",
        old: "SELECT rowid FROM session_tools WHERE last_ts < ?1",
    },
    Target {
        table: "turns",
        old: "SELECT rowid FROM turns WHERE ts < ?1",
    },
    // What transcripts showed (0036: a tool call's input is text), by the time of its line.
    Target {
        table: "transcript_items",
        old: "SELECT ts FROM transcript_items WHERE ts < ?1",
    },
    Target {
        table: "rejects",
        // Dated by the event line before it when that line has a time, else by ingest.
        old: "SELECT id FROM rejects WHERE coalesce(line_ts, ts) < ?1",
    },
    // The agents' own telemetry (migration 0015) holds prompts too when the agent sends them:
    // the same retention applies. Dated by the record, else by its arrival.
    Target {
        table: "otel_logs",
        old: "SELECT rowid FROM otel_logs WHERE coalesce(ts, received_at) < ?1",
    },
    Target {
        table: "otel_metrics",
        old: "SELECT rowid FROM otel_metrics WHERE coalesce(ts, received_at) < ?1",
    },
    Target {
        table: "otel_rejects",
        old: "SELECT id FROM otel_rejects WHERE received_at < ?1",
    },
];

/// What [`prune`] deletes of `tool_calls`: [`TARGETS`]' rows, and the calls missing a half
/// whose totals go (`delete_totals`). For a dry run's count.
const OLD_CALLS_WITH_THEIR_TOTALS: &str = "SELECT rowid FROM tool_calls
    WHERE ts < ?1
      AND (start_ts IS NOT NULL AND end_ts IS NOT NULL
           OR NOT EXISTS (SELECT 1 FROM session_tools t
             WHERE t.session_id = coalesce(tool_calls.session_id, 'unknown-session')
               AND t.tool_name = coalesce(tool_calls.tool_name, '') AND t.last_ts >= ?1))";

/// The calls still missing a half that the totals row of session ?1 and tool ?2 counts (a
/// call without a session id counts under `unknown-session`, one without a tool name under
/// ''), through `tool_calls_session_id`.
const INCOMPLETE_CALLS_OF_TOTALS: &str = "DELETE FROM tool_calls WHERE rowid IN (
    SELECT rowid FROM tool_calls WHERE session_id = ?1 AND coalesce(tool_name, '') = ?2
      AND (start_ts IS NULL OR end_ts IS NULL)
    UNION ALL
    SELECT rowid FROM tool_calls WHERE ?1 = 'unknown-session' AND session_id IS NULL
      AND coalesce(tool_name, '') = ?2 AND (start_ts IS NULL OR end_ts IS NULL))";

/// [`TARGETS`]' rejects before migration 0009 (a dry run does not upgrade the database).
const OLD_REJECTS_BEFORE_0009: &str = "SELECT id FROM rejects WHERE ts < ?1";

/// Remembers a pruned line that a queue may still hold and no time covers.
const REMEMBER_PRUNED: &str = "INSERT INTO pruned_lines(key, pruned_at) VALUES (?1, ?2)
     ON CONFLICT(key) DO NOTHING";

const OLD_SESSIONS: &str = "SELECT session_id FROM sessions WHERE last_seen < ?1";

/// Raises `pruned_before` to `?1` (never lowers it).
const RAISE_WATERMARK: &str = "INSERT INTO meta(key, value) VALUES ('pruned_before', ?1)
     ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)";

/// Rows removed (or, for a dry run, that would be) per table, in a fixed order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    /// `(table, rows)`.
    pub tables: Vec<(&'static str, u64)>,
}

impl Removed {
    fn add(&mut self, table: &'static str, n: u64) {
        match self.tables.iter_mut().find(|(t, _)| *t == table) {
            Some((_, total)) => *total += n,
            None => self.tables.push((table, n)),
        }
    }

    /// Rows of every table together.
    pub fn total(&self) -> u64 {
        self.tables.iter().map(|(_, n)| n).sum()
    }
}

/// What a prune did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Rows deleted per table.
    pub removed: Removed,
    /// Write transactions committed (deletes and vacuum steps).
    pub batches: u64,
    /// The longest time one transaction held the write lock.
    pub longest_lock: Duration,
    /// What that transaction did: a table name, or `vacuum`.
    pub longest_what: &'static str,
    /// Pages returned to the file system by incremental vacuum.
    pub vacuumed_pages: i64,
    /// `PRAGMA auto_vacuum`: 0 none, 1 full, 2 incremental.
    pub auto_vacuum: i64,
    /// `PRAGMA wal_checkpoint(TRUNCATE)`: true when a reader kept it from completing.
    pub checkpoint_busy: bool,
}

/// Counts what [`prune`] would delete at `cutoff_ms`, changing nothing. `conn` may be
/// read-only, on a database not upgraded yet.
pub fn count(conn: &Connection, cutoff_ms: i64) -> Result<Removed, Error> {
    let mut removed = Removed::default();
    let keyed_rejects: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('rejects') WHERE name = 'line_ts'",
        [],
        |r| r.get(0),
    )?;
    for t in TARGETS {
        // A database not upgraded yet may lack the newer tables: nothing of theirs to delete.
        let exists: bool = conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [t.table],
            |r| r.get(0),
        )?;
        if !exists {
            continue;
        }
        let old = match t.table {
            "rejects" if !keyed_rejects => OLD_REJECTS_BEFORE_0009,
            "tool_calls" => OLD_CALLS_WITH_THEIR_TOTALS,
            _ => t.old,
        };
        let n: i64 =
            conn.query_row(&format!("SELECT count(*) FROM ({old})"), [cutoff_ms], |r| {
                r.get(0)
            })?;
        removed.add(t.table, n as u64);
    }
    let (sessions, unknown): (i64, i64) = conn.query_row(
        &format!(
            "SELECT (SELECT count(*) FROM ({OLD_SESSIONS})),
                    (SELECT count(*) FROM unknown_counts WHERE session_id IN ({OLD_SESSIONS}))"
        ),
        [cutoff_ms],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    removed.add("sessions", sessions as u64);
    removed.add("unknown_counts", unknown as u64);
    Ok(removed)
}

/// Deletes everything older than `cutoff_ms`, at most `batch_rows` rows per transaction, then frees
/// pages (incremental vacuum, when the database is in that mode) and truncates the WAL.
/// `on_batch` sees the running report after every commit.
pub fn prune(
    conn: &mut Connection,
    cutoff_ms: i64,
    batch_rows: usize,
    on_batch: &mut dyn FnMut(&Report),
) -> Result<Report, Error> {
    let mut report = Report::default();
    let limit = batch_rows.max(1) as i64;
    // An automatic checkpoint runs inside COMMIT and would be timed as lock time although it
    // blocks no writer; `timed` checkpoints explicitly after each commit instead.
    conn.execute_batch("PRAGMA wal_autocheckpoint = 0")?;
    // The chain hears of the cutoff before any row goes (a prune killed midway leaves rows
    // missing that its record explains), and anchors the records it emptied after.
    let chained: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM events WHERE ts < ?1)",
        [cutoff_ms],
        |r| r.get(0),
    )?;
    if chained {
        note_chain(conn, cutoff_ms)?;
    }
    let result = prune_batches(conn, cutoff_ms, limit, &mut report, on_batch);
    conn.execute_batch("PRAGMA wal_autocheckpoint = 1000")?;
    result?;
    if chained {
        note_chain(conn, cutoff_ms)?;
    }
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    report.checkpoint_busy = busy != 0;
    Ok(report)
}

/// Chains a `prune` record for `cutoff_ms` ([`super::chain::note_prune`]) in a transaction of
/// its own.
fn note_chain(conn: &mut Connection, cutoff_ms: i64) -> Result<(), Error> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    super::chain::note_prune(&tx, cutoff_ms)?;
    tx.commit()?;
    Ok(())
}

fn prune_batches(
    conn: &mut Connection,
    cutoff_ms: i64,
    limit: i64,
    report: &mut Report,
    on_batch: &mut dyn FnMut(&Report),
) -> Result<(), Error> {
    for t in TARGETS {
        let sql = format!(
            "DELETE FROM {table} WHERE rowid IN ({old} LIMIT ?2)",
            table = t.table,
            old = t.old
        );
        let mut pace = Pace::new(limit);
        loop {
            let size = pace.now;
            let ((n, calls), held) = timed(conn, report, t.table, |tx| match t.table {
                "events" => Ok((delete_events(tx, &sql, cutoff_ms, size)?, 0)),
                "rejects" => Ok((delete_rejects(tx, &sql, cutoff_ms, size)?, 0)),
                "turns" => Ok((delete_dated(tx, &sql, cutoff_ms, size)?, 0)),
                // A table without rowids: deleted by its key.
                "transcript_items" => Ok((delete_dated(tx, DELETE_ITEMS, cutoff_ms, size)?, 0)),
                "session_tools" => delete_totals(tx, &sql, cutoff_ms, size),
                _ => Ok((
                    tx.execute(&sql, rusqlite::params![cutoff_ms, size])? as u64,
                    0,
                )),
            })?;
            pace.after(held);
            report.removed.add(t.table, n);
            report.removed.add("tool_calls", calls);
            on_batch(report);
            if n < size as u64 {
                break;
            }
            thread::sleep(BETWEEN_BATCHES);
        }
    }
    let mut pace = Pace::new(limit);
    loop {
        let size = pace.now;
        let ((sessions, unknown), held) = timed(conn, report, "sessions", |tx| {
            // The session ids are chosen and deleted in one transaction: an ingest batch that
            // refreshes a session's last_seen either commits before (the row stays) or after.
            tx.execute_batch(
                "CREATE TEMP TABLE IF NOT EXISTS prune_sessions(session_id TEXT PRIMARY KEY);
                 DELETE FROM temp.prune_sessions;",
            )?;
            tx.execute(
                &format!("INSERT INTO temp.prune_sessions {OLD_SESSIONS} LIMIT ?2"),
                rusqlite::params![cutoff_ms, size],
            )?;
            let unknown = tx.execute(
                "DELETE FROM unknown_counts
                  WHERE session_id IN (SELECT session_id FROM temp.prune_sessions)",
                [],
            )? as u64;
            let sessions = tx.execute(
                "DELETE FROM sessions
                  WHERE session_id IN (SELECT session_id FROM temp.prune_sessions)",
                [],
            )? as u64;
            Ok((sessions, unknown))
        })?;
        pace.after(held);
        report.removed.add("sessions", sessions);
        report.removed.add("unknown_counts", unknown);
        on_batch(report);
        if sessions < size as u64 {
            break;
        }
        thread::sleep(BETWEEN_BATCHES);
    }
    conn.execute_batch("DROP TABLE IF EXISTS temp.prune_sessions")?;

    report.auto_vacuum = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
    if report.auto_vacuum == 2 {
        let mut pace = Pace::new(VACUUM_PAGES);
        loop {
            let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
            if free == 0 {
                break;
            }
            let step = free.min(pace.now);
            let ((), held) = timed(conn, report, "vacuum", |tx| {
                // Each step of this pragma frees one page: run it to the end.
                let mut stmt = tx.prepare(&format!("PRAGMA incremental_vacuum({step})"))?;
                let mut rows = stmt.query([])?;
                while rows.next()?.is_some() {}
                Ok(())
            })?;
            pace.after(held);
            report.vacuumed_pages += step;
            thread::sleep(BETWEEN_BATCHES);
        }
    }
    Ok(())
}

/// One batch of old events, deleted so that a queue read again from its start cannot bring
/// them back. Whatever this deletes is covered by the watermark (ingest skips lines older than
/// it), in the same transaction. Just past what was deleted, never the cutoff itself: a clock
/// running ahead, or a cutoff of now, must not make ingest skip lines written afterwards that
/// are newer than every event deleted. A line without a time of its own got the time of
/// ingest (`ts = ingested_at`), which no watermark covers: its id is remembered in
/// `pruned_lines` instead (a dated line that happens to have been ingested in the very
/// millisecond it names is remembered too, which changes nothing).
fn delete_events(
    tx: &rusqlite::Transaction<'_>,
    sql: &str,
    cutoff_ms: i64,
    size: i64,
) -> Result<u64, Error> {
    let mut delete = tx.prepare_cached(&format!(
        "{sql} RETURNING ts, ts = ingested_at, id, session_id, hook_type, synthetic, \
         estimated_tokens, hook_type = 'PostToolUseFailure' \
         OR (hook_type = 'PostToolUse' AND {TOOL_FAILURE}(entry))"
    ))?;
    let mut rows = delete.query(rusqlite::params![cutoff_ms, size])?;
    let (mut n, mut newest) = (0, None);
    let mut undated = Vec::new();
    // What the deleted events counted in the hourly rollup, taken away in this transaction.
    let mut hours: HashMap<(i64, Option<String>), HourAgg> = HashMap::new();
    while let Some(row) = rows.next()? {
        n += 1;
        let ts = row.get::<_, i64>(0)?;
        newest = newest.max(Some(ts));
        if row.get::<_, bool>(1)? {
            undated.push(row.get::<_, String>(2)?);
        }
        let session = row.get::<_, Option<String>>(3)?;
        hours
            .entry(hour_key(ts, session.as_deref()))
            .or_default()
            .add(
                row.get::<_, Option<String>>(4)?.as_deref(),
                RollupEvent {
                    synthetic: row.get::<_, Option<i64>>(5)? == Some(1),
                    // NULL for a line without a type.
                    failure: row.get::<_, Option<bool>>(7)?.unwrap_or(false),
                },
                row.get(6)?,
            );
    }
    drop(rows);
    apply_hours(tx, hours, -1)?;
    if let Some(ts) = newest {
        tx.execute(RAISE_WATERMARK, [ts.saturating_add(1)])?;
    }
    remember_pruned(tx, &undated)?;
    Ok(n)
}

/// A batch (`?2` rows) of the transcript items older than `?1`, through their index by time.
const DELETE_ITEMS: &str = "DELETE FROM transcript_items WHERE (session_id, kind, item_id) IN
    (SELECT session_id, kind, item_id FROM transcript_items WHERE ts < ?1 LIMIT ?2)";

/// One batch of old turns (or transcript items: `sql` deletes either, by time), covered by the
/// watermark as events are ([`delete_events`]): an import reading their transcript again does
/// not bring them back (an imported turn has no event, and a turn is often newer than its
/// session's last deleted event).
fn delete_dated(
    tx: &rusqlite::Transaction<'_>,
    sql: &str,
    cutoff_ms: i64,
    size: i64,
) -> Result<u64, Error> {
    let mut delete = tx.prepare_cached(&format!("{sql} RETURNING ts"))?;
    let deleted = delete
        .query_map(rusqlite::params![cutoff_ms, size], |r| {
            r.get::<_, Option<i64>>(0)
        })?
        .collect::<rusqlite::Result<Vec<Option<i64>>>>()?;
    if let Some(newest) = deleted.iter().flatten().max() {
        tx.execute(RAISE_WATERMARK, [newest.saturating_add(1)])?;
    }
    Ok(deleted.len() as u64)
}

/// One batch of old per-session tool totals, with the calls still missing a half that they
/// count, in the same transaction: such a call stays while its totals do, so that the half to
/// come joins it, and once they are gone, that half is a call of its own, counted once in
/// totals of its own. Returns the totals rows and the calls deleted.
fn delete_totals(
    tx: &rusqlite::Transaction<'_>,
    sql: &str,
    cutoff_ms: i64,
    size: i64,
) -> Result<(u64, u64), Error> {
    let mut delete = tx.prepare_cached(&format!("{sql} RETURNING session_id, tool_name"))?;
    let gone = delete
        .query_map(rusqlite::params![cutoff_ms, size], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut calls = tx.prepare_cached(INCOMPLETE_CALLS_OF_TOTALS)?;
    let mut deleted = 0;
    for (session, tool) in &gone {
        deleted += calls.execute(rusqlite::params![session, tool])? as u64;
    }
    Ok((gone.len() as u64, deleted))
}

/// One batch of old rejects. A rejected line goes with the event line before it (dated by it,
/// skipped by ingest when it is); one before any event line of its file has only the time of
/// ingest, so its key is remembered in `pruned_lines`.
fn delete_rejects(
    tx: &rusqlite::Transaction<'_>,
    sql: &str,
    cutoff_ms: i64,
    size: i64,
) -> Result<u64, Error> {
    let mut delete = tx.prepare_cached(&format!("{sql} RETURNING line_key"))?;
    let mut rows = delete.query(rusqlite::params![cutoff_ms, size])?;
    let mut n = 0;
    let mut at_start = Vec::new();
    while let Some(row) = rows.next()? {
        n += 1;
        if let Some(key) = row.get::<_, Option<String>>(0)? {
            if at_file_start(&key) {
                at_start.push(key);
            }
        }
    }
    drop(rows);
    remember_pruned(tx, &at_start)?;
    Ok(n)
}

fn remember_pruned(tx: &rusqlite::Transaction<'_>, keys: &[String]) -> Result<(), Error> {
    if keys.is_empty() {
        return Ok(());
    }
    let now = crate::support::clock::now_ms();
    let mut remember = tx.prepare_cached(REMEMBER_PRUNED)?;
    for key in keys {
        remember.execute(rusqlite::params![key, now])?;
    }
    Ok(())
}

/// Runs `work` in one `BEGIN IMMEDIATE` transaction, counting it; returns its result and how
/// long it held the write lock.
fn timed<T>(
    conn: &mut Connection,
    report: &mut Report,
    what: &'static str,
    work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, Error>,
) -> Result<(T, Duration), Error> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // The lock is ours from here (BEGIN IMMEDIATE waited for it) until the commit returns.
    let held = Instant::now();
    let out = work(&tx)?;
    // What it deleted of the tables chained by key is chained as deleted, in its transaction.
    super::chain::keyed::flush(&tx)?;
    tx.commit()?;
    let held = held.elapsed();
    if held > report.longest_lock {
        report.longest_lock = held;
        report.longest_what = what;
    }
    report.batches += 1;
    if report.batches.is_multiple_of(CHECKPOINT_EVERY) {
        // Outside the transaction (auto-checkpoint is off, see `prune`): a passive checkpoint
        // blocks no writer, and bounds the WAL without an fsync per batch.
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
    }
    Ok((out, held))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(rows: i64) -> (tempfile::TempDir, crate::store::Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("p.db")).unwrap();
        let conn = store.conn().unwrap();
        conn.execute_batch(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})
             INSERT INTO events(id, ts, hook_type, session_id, entry, ingested_at)
               SELECT 'e' || i, i, 'Notification', 's' || (i % 10), '{{}}', 0 FROM n;
             INSERT INTO sessions(session_id, first_seen, last_seen)
               SELECT session_id, min(ts), max(ts) FROM events GROUP BY session_id;
             INSERT INTO unknown_counts SELECT session_id, 'r', 1 FROM sessions;
             INSERT INTO turns(session_id, turn_key, ts, synthetic, event_id)
               SELECT session_id, id, ts, 0, id FROM events WHERE ts % 7 = 0;
             INSERT INTO tool_calls(call_key, session_id, start_ts)
               SELECT id, session_id, ts FROM events WHERE ts % 3 = 0;
             INSERT INTO session_tools(session_id, tool_name, calls, last_ts)
               SELECT session_id, 'Bash', count(*), max(start_ts) FROM tool_calls
               GROUP BY session_id;
             INSERT INTO rejects(source, source_id, offset, length, reason, ts)
               SELECT 'q', 1, seq, 1, 'invalid_json', ts FROM events WHERE ts % 50 = 0;
             INSERT INTO sources(path, offset, created_at, updated_at) VALUES ('q', 99, 0, 0);"
        ))
        .unwrap();
        (dir, store)
    }

    #[test]
    fn the_watermark_stops_at_the_newest_event_whatever_the_clock() {
        let (_dir, store) = store_with(5000);
        let mut conn = store.conn().unwrap();
        let watermark = |conn: &Connection| -> i64 {
            conn.query_row(
                "SELECT value FROM meta WHERE key = 'pruned_before'",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        // A cutoff in the future (a clock running ahead): everything goes, but
        // the lines written afterwards, newer than every event, must still be ingested.
        let ahead = chrono::Utc::now().timestamp_millis() + 30 * 86_400_000;
        prune(&mut conn, ahead, 1000, &mut |_| {}).unwrap();
        assert_eq!(watermark(&conn), 5001);
        // An empty store lowers nothing and raises nothing.
        prune(&mut conn, ahead, 1000, &mut |_| {}).unwrap();
        assert_eq!(watermark(&conn), 5001);
    }

    #[test]
    fn an_event_ingested_while_prune_runs_is_covered_once_deleted() {
        let (_dir, store) = store_with(5000);
        let mut conn = store.conn().unwrap();
        let mut ingested = false;
        prune(&mut conn, 10_000, 300, &mut |_| {
            // After the first batch: newer than every event prune saw, older than its cutoff.
            if !ingested {
                ingested = true;
                store
                    .conn()
                    .unwrap()
                    .execute(
                        "INSERT INTO events(id, ts, entry, ingested_at) VALUES ('late', 6000, '{}', 0)",
                        [],
                    )
                    .unwrap();
            }
        })
        .unwrap();
        let (left, watermark): (i64, i64) = conn
            .query_row(
                "SELECT (SELECT count(*) FROM events),
                        (SELECT value FROM meta WHERE key = 'pruned_before')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(left, 0, "the late event was pruned too");
        assert_eq!(watermark, 6001, "and a re-read cannot bring it back");
    }

    #[test]
    fn the_agents_own_telemetry_goes_by_the_same_retention() {
        let (_dir, store) = store_with(10);
        let mut conn = store.conn().unwrap();
        conn.execute_batch(
            "INSERT INTO otel_logs(record_key, ts, attributes, resource, received_at)
               VALUES ('old', 100, '{}', '{}', 9000), ('new', 9000, '{}', '{}', 9000),
                      ('undated-old', NULL, '{}', '{}', 200);
             INSERT INTO otel_metrics(point_key, ts, name, kind, attributes, resource, received_at)
               VALUES ('old', 100, 'm', 'sum', '{}', '{}', 9000), ('new', 9000, 'm', 'sum', '{}', '{}', 9000);
             INSERT INTO otel_rejects(path, length, status, reason, received_at)
               VALUES ('/v1/logs', 1, 400, 'bad', 100), ('/v1/logs', 1, 400, 'bad', 9000);",
        )
        .unwrap();
        let predicted = count(&conn, 5000).unwrap();
        let report = prune(&mut conn, 5000, 300, &mut |_| {}).unwrap();
        assert_eq!(report.removed, predicted);
        let get = |t: &str| predicted.tables.iter().find(|(n, _)| *n == t).unwrap().1;
        assert_eq!(
            (get("otel_logs"), get("otel_metrics"), get("otel_rejects")),
            (2, 1, 1)
        );
        let left: Vec<String> = conn
            .prepare("SELECT record_key FROM otel_logs")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(left, ["new"]);
        // What prune deleted is chained as deleted: the rows left check, none is missing.
        let v = crate::store::chain::verify(&conn).unwrap();
        assert_eq!(v.problem_count, 0, "{v:?}");
        assert_eq!(
            (v.by_table["otel_logs"], v.by_table["otel_metrics"]),
            (1, 1)
        );
    }

    #[test]
    fn deletes_in_batches_exactly_what_count_predicted() {
        let (_dir, store) = store_with(5000);
        let mut conn = store.conn().unwrap();
        // Sessions s0..s9 have last_seen 4991..5000: a cutoff of 4995 drops s1..s4.
        let predicted = count(&conn, 4995).unwrap();
        let old_totals: i64 = conn
            .query_row(
                "SELECT count(*) FROM session_tools WHERE last_ts < 4995",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(old_totals > 0 && old_totals < 10);
        let mut seen = 0;
        let report = prune(&mut conn, 4995, 300, &mut |_| seen += 1).unwrap();
        assert_eq!(report.removed, predicted);
        let get = |t: &str| predicted.tables.iter().find(|(n, _)| *n == t).unwrap().1;
        assert_eq!(get("events"), 4994);
        assert_eq!(get("sessions"), 4);
        assert_eq!(get("unknown_counts"), 4);
        assert_eq!(get("rejects"), 99);
        // Per-session tool totals go once their last call is before the cutoff.
        assert_eq!(get("session_tools"), old_totals as u64);
        let left_totals: i64 = conn
            .query_row("SELECT count(*) FROM session_tools", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left_totals, 10 - old_totals);
        assert!(report.batches >= 4994 / 300);
        assert!(seen as u64 >= 4994 / 300 && seen as u64 <= report.batches);
        let left: i64 = conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 6);
        let offset: i64 = conn
            .query_row("SELECT offset FROM sources", [], |r| r.get(0))
            .unwrap();
        assert_eq!(offset, 99, "sources are never touched");
        assert_eq!(count(&conn, 4995).unwrap().total(), 0);
        assert_eq!(report.auto_vacuum, 2);
    }
}
