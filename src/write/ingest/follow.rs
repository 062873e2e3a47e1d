//! Follow mode: run a pass whenever the queue may have changed, until asked to stop.
//!
//! `notify` watches the queue's directory (so atomic replacement and re-creation are seen, not
//! only writes to one inode), and its target's too when the queue path is a symlink; a short
//! debounce folds a burst of appends into one pass, and a poll covers file systems where
//! notifications never arrive (or one that went missing): every [`FollowOptions::poll`] while
//! notifications work, which can be rare since they do the waking, more often without them.
//! An idle pass costs one `stat` ([`Ingester::pass`]).
//!
//! Between passes, [`Chore`]s run on schedules of their own (the heartbeat, automatic
//! retention): the queue is not read meanwhile, so a chore may change the queue file and its
//! `sources` row, and the next pass finds where it stands as it does after any other change.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher};

use super::{Ingester, Stats};
use crate::files::paths::dir_of;

/// Timing of follow mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowOptions {
    /// Longest wait between passes when no notification arrives.
    pub poll: Duration,
    /// Pause after a notification, so a burst of appends is read in one pass.
    pub debounce: Duration,
}

/// [`FollowOptions::poll`] while file notifications work: they do the waking, the poll only
/// catches one that went missing.
pub const WATCHED_POLL: Duration = Duration::from_secs(10);

/// [`FollowOptions::poll`] without file notifications.
pub const UNWATCHED_POLL: Duration = Duration::from_millis(500);

impl Default for FollowOptions {
    fn default() -> FollowOptions {
        FollowOptions {
            poll: UNWATCHED_POLL,
            debounce: Duration::from_millis(50),
        }
    }
}

/// What follow mode has done so far, as a [`Chore`] sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Totals since follow mode started.
    pub total: Stats,
    /// Time spent in passes that read something (idle waits and idle checks excluded).
    pub busy: Duration,
}

/// What a [`Chore`] runs: the ingester is between passes, nothing reads the queue meanwhile.
pub type ChoreWork<'a> = Box<dyn FnMut(&mut Ingester, &Progress) + 'a>;

/// Work follow mode does between passes, every `every`, first at `next`.
pub struct Chore<'a> {
    /// Time between two runs.
    pub every: Duration,
    /// When it runs next.
    pub next: Instant,
    /// The work: the ingester is between passes, nothing reads the queue meanwhile.
    pub work: ChoreWork<'a>,
}

impl<'a> Chore<'a> {
    /// A chore that runs first `first` from now, then every `every`.
    pub fn new(
        first: Duration,
        every: Duration,
        work: impl FnMut(&mut Ingester, &Progress) + 'a,
    ) -> Chore<'a> {
        Chore {
            every,
            next: Instant::now() + first,
            work: Box::new(work),
        }
    }
}

/// Runs every chore that is due, and returns how long until the next one is.
fn run_due(
    chores: &mut [Chore<'_>],
    ingester: &mut Ingester,
    progress: &Progress,
) -> Option<Duration> {
    for chore in chores.iter_mut() {
        if Instant::now() >= chore.next {
            (chore.work)(ingester, progress);
            // From the end of this run: a long one is not followed at once by the next.
            chore.next = Instant::now() + chore.every;
        }
    }
    let now = Instant::now();
    chores
        .iter()
        .map(|chore| chore.next.saturating_duration_since(now))
        .min()
}

/// A wake-up channel: file notifications and the signal handler both send on it.
pub fn channel() -> (Sender<()>, Receiver<()>) {
    mpsc::channel()
}

/// Watches the directory of `queue` and sends on `wake` when an entry named like the queue
/// changes. When `queue` is a symlink, the directory of the file it leads to is watched too:
/// appends change that file, not the link. `None` (poll only) when the platform refuses the
/// watch; the reason is returned.
pub fn watch(queue: &Path, wake: Sender<()>) -> Result<notify::RecommendedWatcher, String> {
    let mut names = vec![queue.file_name().map(|n| n.to_os_string())];
    // Resolved once: a link pointed elsewhere later is still caught by the poll.
    let target = crate::files::paths::resolve_link(queue)
        .ok()
        .filter(|target| target != queue);
    if let Some(target) = &target {
        names.push(target.file_name().map(|n| n.to_os_string()));
    }
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(event) = res else { return };
        // The database often lives in the same directory: our own commits must not wake us.
        if event
            .paths
            .iter()
            .any(|p| names.contains(&p.file_name().map(|n| n.to_os_string())))
        {
            let _ = wake.send(());
        }
    })
    .map_err(|e| e.to_string())?;
    watcher
        .watch(dir_of(queue), RecursiveMode::NonRecursive)
        .map_err(|e| e.to_string())?;
    if let Some(target) = &target {
        let link_dir = std::fs::canonicalize(dir_of(queue)).ok();
        if link_dir.as_deref() != Some(dir_of(target)) {
            // Best effort: the link's directory is watched and the poll is there.
            let _ = watcher.watch(dir_of(target), RecursiveMode::NonRecursive);
        }
    }
    Ok(watcher)
}

/// Runs passes until `stop` is set; a pass in progress finishes its current commit first.
/// `chores` run between passes when they are due. Returns the totals and the busy time.
pub fn follow(
    ingester: &mut Ingester,
    options: FollowOptions,
    stop: &Arc<AtomicBool>,
    wake: &Receiver<()>,
    on_batch: &mut dyn FnMut(&Stats),
    chores: &mut [Chore<'_>],
) -> anyhow::Result<Progress> {
    let mut progress = Progress::default();
    loop {
        let started = Instant::now();
        let pass = one_pass(ingester, stop, progress.total, on_batch)?;
        if pass.lines > 0 || pass.restarts > 0 || pass.rebuilt_indexes > 0 {
            progress.busy += started.elapsed();
        }
        progress.total.add(&pass);
        if stop.load(Ordering::SeqCst) {
            return Ok(progress);
        }
        let chore_in = run_due(chores, ingester, &progress);
        if stop.load(Ordering::SeqCst) {
            return Ok(progress);
        }
        let wait = chore_in.map_or(options.poll, |d| d.min(options.poll));
        match wake.recv_timeout(wait) {
            Ok(()) => {
                std::thread::sleep(options.debounce);
                while wake.try_recv().is_ok() {}
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
        }
    }
}

/// One pass of follow mode, with `base` (the totals so far) added to what `on_batch` sees.
/// A busy database is warned about and counts as an empty pass (retried after the wait).
fn one_pass(
    ingester: &mut Ingester,
    stop: &Arc<AtomicBool>,
    base: Stats,
    on_batch: &mut dyn FnMut(&Stats),
) -> anyhow::Result<Stats> {
    let pass = ingester.pass(stop, &mut |s: &Stats| {
        let mut t = base;
        t.add(s);
        on_batch(&t);
    });
    match pass {
        Ok(pass) => Ok(pass),
        Err(err) => {
            // Its batches are committed: count them whatever happens next.
            let committed = err
                .downcast_ref::<super::RebuildFailed>()
                .map(|failed| failed.stats)
                .unwrap_or_default();
            if !is_busy(&err) {
                return Err(err);
            }
            // Another writer (prune, a long query with a write) held the database past the
            // busy timeout: nothing was committed, so waiting and retrying loses nothing.
            ingester.warn(super::Warning::DatabaseBusy {
                error: format!("{err:#}"),
            });
            Ok(committed)
        }
    }
}

/// True when `err` is SQLite's "database is locked/busy".
fn is_busy(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        let sqlite = cause
            .downcast_ref::<rusqlite::Error>()
            .or_else(|| match cause.downcast_ref::<crate::store::Error>() {
                Some(crate::store::Error::Sqlite(e)) => Some(e),
                _ => None,
            });
        matches!(
            sqlite.and_then(rusqlite::Error::sqlite_error_code),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `follow` on a thread with a wake channel nothing sends on (every notification
    /// missed), a 20 ms poll and `chores`; returns what it did once `until` holds.
    fn follow_without_notifications(
        until: impl Fn(&rusqlite::Connection) -> bool,
        during: impl FnOnce(&Path),
    ) -> Progress {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("hook-queue.jsonl");
        let store = crate::store::open(&dir.path().join("cmstore.db")).unwrap();
        let conn = store.conn().unwrap();
        let mut ingester = Ingester::new(store.clone(), &queue, Default::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (_wake_tx, wake_rx) = channel();
        let options = FollowOptions {
            poll: Duration::from_millis(20),
            ..FollowOptions::default()
        };
        std::thread::scope(|scope| {
            let stop_ = Arc::clone(&stop);
            let runner = scope.spawn(move || {
                follow(
                    &mut ingester,
                    options,
                    &stop_,
                    &wake_rx,
                    &mut |_| {},
                    &mut [],
                )
                .unwrap()
            });
            during(&queue);
            let deadline = Instant::now() + Duration::from_secs(15);
            while !until(&conn) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            stop.store(true, Ordering::SeqCst);
            runner.join().unwrap()
        })
    }

    fn line(id: &str) -> String {
        let mut entry = crate::model::queue_line::QueueEntry::new(
            "Notification",
            crate::support::clock::now_ms(),
        );
        entry.id = id.to_string();
        entry.to_line()
    }

    #[test]
    fn chores_run_on_their_own_schedule_between_passes() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("hook-queue.jsonl");
        crate::files::queue::append_lines(&queue, &[line("a"), line("b")]).unwrap();
        let store = crate::store::open(&dir.path().join("cmstore.db")).unwrap();
        let mut ingester = Ingester::new(store, &queue, Default::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (_wake_tx, wake_rx) = channel();
        // A poll of a minute: only the chore's schedule ends the waits.
        let options = FollowOptions {
            poll: Duration::from_secs(60),
            ..FollowOptions::default()
        };
        let mut seen = Vec::new();
        let stop_ = Arc::clone(&stop);
        let mut chores = [Chore::new(
            Duration::ZERO,
            Duration::from_millis(20),
            |_: &mut Ingester, p: &Progress| {
                seen.push(p.total.lines);
                if seen.len() == 4 {
                    stop_.store(true, Ordering::SeqCst);
                }
            },
        )];
        let started = Instant::now();
        let progress = follow(
            &mut ingester,
            options,
            &stop,
            &wake_rx,
            &mut |_| {},
            &mut chores,
        )
        .unwrap();
        drop(chores);
        assert!(started.elapsed() < Duration::from_secs(30));
        // The first run comes after the first pass, which read the backlog.
        assert_eq!(seen, [2, 2, 2, 2]);
        assert_eq!(progress.total.lines, 2);
    }

    #[test]
    fn appends_no_notification_reports_are_caught_by_the_poll() {
        let events = |conn: &rusqlite::Connection| -> i64 {
            conn.query_row("SELECT count(*) FROM events", [], |r| r.get(0))
                .unwrap()
        };
        let progress = follow_without_notifications(
            |conn| events(conn) == 3,
            |queue| {
                crate::files::queue::append_lines(queue, &[line("a")]).unwrap();
                std::thread::sleep(Duration::from_millis(100));
                crate::files::queue::append_lines(queue, &[line("b"), line("c")]).unwrap();
            },
        );
        assert_eq!(progress.total.lines, 3);
        assert_eq!(progress.total.rows, 3);
        assert!(progress.busy > Duration::ZERO);
    }

    #[test]
    fn a_busy_rebuild_is_retried_and_keeps_the_counts_of_its_pass() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("database is locked".into()),
        );
        let stats = Stats {
            lines: 7,
            rows: 7,
            ..Stats::default()
        };
        let err = anyhow::Error::from(super::super::RebuildFailed {
            stats,
            source: crate::store::Error::Sqlite(busy),
        });
        assert!(is_busy(&err));
        let failed = err.downcast_ref::<super::super::RebuildFailed>().unwrap();
        assert_eq!(failed.stats.rows, 7);
        let other = anyhow::anyhow!("disk full");
        assert!(!is_busy(&other));
    }
}
