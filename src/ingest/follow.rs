//! Follow mode: run a pass whenever the queue may have changed, until asked to stop.
//!
//! `notify` watches the queue's directory (so atomic replacement and re-creation are seen, not
//! only writes to one inode), and its target's too when the queue path is a symlink; a short
//! debounce folds a burst of appends into one pass, and a poll fallback covers file systems
//! where notifications never arrive.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::{Ingester, Stats};
use crate::paths::dir_of;

/// Timing of follow mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowOptions {
    /// Longest wait between passes when no notification arrives.
    pub poll: Duration,
    /// Pause after a notification, so a burst of appends is read in one pass.
    pub debounce: Duration,
}

impl Default for FollowOptions {
    fn default() -> FollowOptions {
        FollowOptions {
            poll: Duration::from_millis(500),
            debounce: Duration::from_millis(50),
        }
    }
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
    let target = crate::paths::resolve_link(queue)
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
pub fn follow(
    ingester: &mut Ingester,
    options: FollowOptions,
    stop: &Arc<AtomicBool>,
    wake: &Receiver<()>,
    on_batch: &mut dyn FnMut(&Stats),
) -> anyhow::Result<Stats> {
    let mut total = Stats::default();
    loop {
        let base = total;
        let pass = ingester.pass(stop, &mut |s: &Stats| {
            let mut t = base;
            t.add(s);
            on_batch(&t);
        });
        if let Err(err) = &pass {
            if let Some(failed) = err.downcast_ref::<super::RebuildFailed>() {
                // Its batches are committed: count them whatever happens next.
                total.add(&failed.stats);
            }
        }
        match pass {
            Ok(pass) => total.add(&pass),
            // Another writer (prune, a long query with a write) held the database past the
            // busy timeout: nothing was committed, so waiting and retrying loses nothing.
            Err(err) if is_busy(&err) => ingester.warn(super::Warning::DatabaseBusy {
                error: format!("{err:#}"),
            }),
            Err(err) => return Err(err),
        }
        if stop.load(Ordering::SeqCst) {
            return Ok(total);
        }
        match wake.recv_timeout(options.poll) {
            Ok(()) => {
                std::thread::sleep(options.debounce);
                while wake.try_recv().is_ok() {}
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(options.poll),
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
