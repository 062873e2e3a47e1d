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
//! ([`crate::store::retention`]) for `cmstore status`.

use std::path::Path;
use std::time::Duration;

use crate::config::retention::Policy;
use crate::store::retention::{record, Run};
use crate::store::{prune as store_prune, Store};

/// How often a running ingest applies the retention.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(3600);

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

#[cfg(test)]
mod tests {
    use super::*;

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
        let inode = || crate::files::identity::FileId::of(&std::fs::metadata(&queue).unwrap());
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
