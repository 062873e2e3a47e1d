//! Automatic retention: what a running `cmstore ingest` applies by itself, at start and then
//! every hour, when `retention_days` is set explicitly (never for the default: nothing is
//! deleted unasked).
//!
//! The same work as `cmstore prune`, in the same short batches ([`crate::store::prune`]):
//! transcript cursors of sessions idle since the cutoff, the store's old rows and, when
//! `compact_queue` is on, the queue file's ingested old lines ([`super::queue`]). Ingest runs
//! it between two passes, as the holder of the ingest lock: compaction then needs no help
//! from the queue lock beyond what it takes for hooks, and the next pass finds the compacted
//! file and its new `sources` row as after any compaction. What a run did is kept in `meta`
//! (keys [`KEYS`]) for `cmstore status`.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use crate::config::Config;
use crate::store::{prune as store_prune, Store};

/// How often a running ingest applies the retention.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(3600);

/// What the configuration asks of automatic retention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Days kept.
    pub days: u32,
    /// `days` was set explicitly: a running ingest applies it.
    pub automatic: bool,
    /// The queue is compacted too.
    pub compact_queue: bool,
}

impl Policy {
    /// The policy `config` sets.
    pub fn of(config: &Config) -> Policy {
        Policy {
            days: config.retention_days,
            automatic: config.retention_explicit,
            compact_queue: config.compact_queue,
        }
    }

    /// The cutoff at `now_ms`: what is older goes.
    pub fn cutoff(&self, now_ms: i64) -> i64 {
        now_ms - i64::from(self.days) * 86_400_000
    }
}

/// What one automatic run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Run {
    /// When it ran, epoch ms.
    pub at_ms: i64,
    /// Its cutoff, epoch ms.
    pub cutoff_ms: i64,
    /// Rows deleted, every table together.
    pub rows: u64,
    /// Of which events.
    pub events: u64,
    /// Transcript cursors removed.
    pub cursors: u64,
    /// Queue lines dropped by compaction (0 when it is off or did not run).
    pub queue_lines: u64,
    /// Their bytes.
    pub queue_bytes: u64,
    /// How long it took.
    pub took: Duration,
    /// Why the queue was not compacted although the policy asks for it (another compaction
    /// ran, or it failed: the next run tries again).
    pub compaction_skipped: Option<String>,
}

/// The `meta` keys a run is recorded under, in [`Run`]'s order.
pub const KEYS: [&str; 7] = [
    "auto_retention_at",
    "auto_retention_cutoff",
    "auto_retention_rows",
    "auto_retention_events",
    "auto_retention_cursors",
    "auto_retention_queue_lines",
    "auto_retention_ms",
];

/// Applies `policy` at `now_ms` to `store`, the transcript cursors in `state_dir` and (when
/// it says so) `queue`. The queue is rewritten only when this run deleted rows, or when
/// `compact_anyway` (the first run, or the last compaction did not happen): a compaction
/// copies the whole file, which an hourly run must not do for nothing. The caller holds the
/// ingest lock of `store` and reads nothing from the queue meanwhile. The run is recorded in
/// `meta`.
pub fn apply(
    store: &Store,
    queue: &Path,
    state_dir: &Path,
    policy: &Policy,
    now_ms: i64,
    compact_anyway: bool,
) -> anyhow::Result<Run> {
    let started = std::time::Instant::now();
    let cutoff_ms = policy.cutoff(now_ms);
    let cutoff_time =
        std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(cutoff_ms).unwrap_or(0));
    let cursors = crate::files::transcript::remove_stale(state_dir, cutoff_time, false)?;
    let report = {
        let mut conn = store.conn()?;
        store_prune::prune(
            &mut conn,
            cutoff_ms,
            store_prune::DEFAULT_BATCH_ROWS,
            &mut |_| {},
        )?
    };
    let events = report
        .removed
        .tables
        .iter()
        .find(|(table, _)| *table == "events")
        .map_or(0, |(_, n)| *n);
    let mut run = Run {
        at_ms: now_ms,
        cutoff_ms,
        rows: report.removed.total(),
        events,
        cursors: cursors as u64,
        ..Run::default()
    };
    if policy.compact_queue && (compact_anyway || run.rows > 0) {
        compact_queue(store, queue, cutoff_ms, &mut run);
    }
    run.took = started.elapsed();
    record(&*store.conn()?, &run)?;
    Ok(run)
}

/// Compacts `queue` unless another compaction (`prune --compact-queue`) holds its lock; a
/// skip or a failure is noted in `run`, never an error: the rows are pruned whatever the
/// queue file does, and the next run tries again.
fn compact_queue(store: &Store, queue: &Path, cutoff_ms: i64, run: &mut Run) {
    if !queue.exists() {
        return;
    }
    let _lock = match super::queue::lock(queue) {
        Ok(Some(lock)) => lock,
        Ok(None) => {
            run.compaction_skipped = Some("another compaction of the queue is running".into());
            return;
        }
        Err(err) => {
            run.compaction_skipped = Some(format!("cannot take the compaction lock: {err}"));
            return;
        }
    };
    // Not beside an ingest: this process is the ingest, and it is between passes.
    match super::queue::compact(store, queue, cutoff_ms, false) {
        Ok(compaction) => {
            run.queue_lines = compaction.dropped_lines;
            run.queue_bytes = compaction.dropped_bytes;
            if let Some(why) = compaction.extension_offset_error {
                run.compaction_skipped = Some(format!("the queue was compacted, but {why}"));
            }
        }
        Err(err) => run.compaction_skipped = Some(format!("{err:#}")),
    }
}

/// Keeps `run` in `meta` for `cmstore status`.
fn record(conn: &Connection, run: &Run) -> rusqlite::Result<()> {
    let values = [
        run.at_ms,
        run.cutoff_ms,
        run.rows as i64,
        run.events as i64,
        run.cursors as i64,
        run.queue_lines as i64,
        run.took.as_millis() as i64,
    ];
    let mut stmt = conn.prepare(
        "INSERT INTO meta(key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    )?;
    for (key, value) in KEYS.iter().zip(values) {
        stmt.execute(rusqlite::params![key, value])?;
    }
    Ok(())
}

/// The last automatic run, from `meta`'s `(key, value)` pairs (any order, other keys
/// ignored); `None` when no run was recorded.
pub fn last_run(pairs: impl IntoIterator<Item = (String, i64)>) -> Option<Run> {
    let mut values = [None; KEYS.len()];
    for (key, value) in pairs {
        if let Some(i) = KEYS.iter().position(|k| *k == key) {
            values[i] = Some(value);
        }
    }
    let get = |i: usize| values[i].unwrap_or(0);
    let count = |i: usize| u64::try_from(get(i)).unwrap_or(0);
    values[0]?;
    Some(Run {
        at_ms: get(0),
        cutoff_ms: get(1),
        rows: count(2),
        events: count(3),
        cursors: count(4),
        queue_lines: count(5),
        took: Duration::from_millis(count(6)),
        ..Run::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_retention_is_automatic() {
        let mut config = Config::default();
        assert!(!Policy::of(&config).automatic);
        config.retention_days = 3;
        config.retention_explicit = true;
        let policy = Policy::of(&config);
        assert!(policy.automatic);
        assert_eq!(policy.cutoff(4 * 86_400_000), 86_400_000);
    }

    #[test]
    fn a_recorded_run_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("cmstore.db")).unwrap();
        let conn = store.conn().unwrap();
        let read = |conn: &Connection| {
            let mut stmt = conn.prepare("SELECT key, value FROM meta").unwrap();
            let pairs: Vec<(String, i64)> = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            last_run(pairs)
        };
        assert_eq!(read(&conn), None);
        let run = Run {
            at_ms: 10,
            cutoff_ms: 5,
            rows: 7,
            events: 4,
            cursors: 1,
            queue_lines: 3,
            took: Duration::from_millis(12),
            ..Run::default()
        };
        record(&conn, &run).unwrap();
        assert_eq!(read(&conn), Some(run.clone()));
        record(&conn, &Run { rows: 0, ..run }).unwrap();
        assert_eq!(read(&conn).unwrap().rows, 0);
    }

    #[test]
    fn nothing_old_means_nothing_removed_and_the_run_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("cmstore.db")).unwrap();
        let policy = Policy {
            days: 1,
            automatic: true,
            compact_queue: true,
        };
        let queue = dir.path().join("absent.jsonl");
        let run = apply(
            &store,
            &queue,
            &dir.path().join("state"),
            &policy,
            2 * 86_400_000,
            true,
        )
        .unwrap();
        assert_eq!((run.rows, run.queue_lines, run.cursors), (0, 0, 0));
        assert_eq!(run.cutoff_ms, 86_400_000);
        assert_eq!(run.compaction_skipped, None);
    }

    #[test]
    fn a_compaction_already_running_is_left_alone_and_the_rows_still_go() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("hook-queue.jsonl");
        let mut old = crate::model::queue_line::QueueEntry::new("Notification", 1000);
        old.session_id = Some("s".into());
        crate::files::queue::append_lines(&queue, &[old.to_line()]).unwrap();
        let store = crate::store::open(&dir.path().join("cmstore.db")).unwrap();
        let mut ingester =
            crate::write::ingest::Ingester::new(store.clone(), &queue, Default::default());
        ingester
            .pass(&std::sync::atomic::AtomicBool::new(false), &mut |_| {})
            .unwrap();
        let before = std::fs::read(&queue).unwrap();
        let _manual = super::super::queue::lock(&queue)
            .unwrap()
            .expect("the lock");
        let policy = Policy {
            days: 1,
            automatic: true,
            compact_queue: true,
        };
        let now = 10 * 86_400_000;
        let run = apply(
            &store,
            &queue,
            &dir.path().join("state"),
            &policy,
            now,
            true,
        )
        .unwrap();
        assert_eq!(run.events, 1);
        assert_eq!(run.queue_lines, 0);
        assert_eq!(
            run.compaction_skipped.as_deref(),
            Some("another compaction of the queue is running")
        );
        assert_eq!(std::fs::read(&queue).unwrap(), before);
    }

    #[test]
    fn the_queue_is_rewritten_only_when_the_run_deleted_something() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("hook-queue.jsonl");
        let line = |ts: i64| {
            let mut e = crate::model::queue_line::QueueEntry::new("Notification", ts);
            e.session_id = Some("s".into());
            e.to_line()
        };
        let day = 86_400_000;
        crate::files::queue::append_lines(&queue, &[line(day), line(9 * day)]).unwrap();
        let store = crate::store::open(&dir.path().join("cmstore.db")).unwrap();
        let mut ingester =
            crate::write::ingest::Ingester::new(store.clone(), &queue, Default::default());
        let stop = std::sync::atomic::AtomicBool::new(false);
        ingester.pass(&stop, &mut |_| {}).unwrap();
        let policy = Policy {
            days: 5,
            automatic: true,
            compact_queue: true,
        };
        let state = dir.path().join("state");
        let inode =
            || crate::write::ingest::source::FileId::of(&std::fs::metadata(&queue).unwrap());
        let first = inode();
        let run = apply(&store, &queue, &state, &policy, 10 * day, false).unwrap();
        assert_eq!((run.events, run.queue_lines), (1, 1));
        let compacted = inode();
        assert_ne!(compacted, first, "a new file");
        ingester.pass(&stop, &mut |_| {}).unwrap();
        // Nothing old left: nothing to delete, and the file stays as it is.
        let run = apply(&store, &queue, &state, &policy, 10 * day, false).unwrap();
        assert_eq!((run.rows, run.queue_lines), (0, 0));
        assert_eq!(inode(), compacted);
        // Unless asked (the first run of an ingest, or one after a skipped compaction).
        let run = apply(&store, &queue, &state, &policy, 10 * day, true).unwrap();
        assert_eq!(run.compaction_skipped, None);
        assert_ne!(inode(), compacted);
    }
}
