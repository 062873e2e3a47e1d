//! WAL checkpoints on a thread of their own, for a long run of write transactions (ingest).
//!
//! Left to itself, the connection that commits also checkpoints, so copying the WAL into the
//! database stops the writer each time. Here the writer turns its automatic checkpoint off and
//! reports every commit instead; a second connection copies the WAL in the background
//! (`PASSIVE`: it never blocks the writer or readers) while the writer prepares its next batch.
//!
//! The WAL only starts over from its beginning when a write transaction begins with every frame
//! already copied. So every [`RESET_BYTES`] the writer waits for the checkpoint to catch up
//! ([`Checkpointer::before_batch`]); that wait is short, because the checkpoint has been
//! running all along. Should the thread fail, the writer gets its automatic checkpoint back.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::{Error, PooledConnection, Store, AUTOCHECKPOINT_PAGES};

/// Committed queue bytes after which a background checkpoint starts.
pub const CHECKPOINT_BYTES: u64 = 1024 * 1024;

/// Committed queue bytes after which the writer lets the checkpoint catch up, so that the WAL
/// starts over (a few times these bytes of WAL, well under `journal_size_limit`).
pub const RESET_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Default)]
struct State {
    /// Commits reported, and the queue bytes they carried since the last checkpoint started.
    commits: u64,
    pending_bytes: u64,
    /// The `commits` value the last finished checkpoint started after.
    checkpointed: u64,
    /// The writer waits for a checkpoint of everything committed so far.
    catch_up: bool,
    stop: bool,
    /// Why the thread ended early, if it did.
    failed: Option<String>,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// A background checkpoint thread for one store. Dropping it stops the thread.
#[derive(Debug)]
pub struct Checkpointer {
    shared: Shared,
    thread: Option<JoinHandle<()>>,
    /// Queue bytes committed since the writer last let the checkpoint catch up.
    since_reset: u64,
}

impl Checkpointer {
    /// Starts the thread with a connection of its own from `store`'s pool.
    pub fn start(store: &Store) -> Result<Checkpointer, Error> {
        let conn = store.conn()?;
        let shared: Shared = Arc::default();
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("checkpoint".into())
                .spawn(move || run(conn, &shared))
                .map_err(|e| Error::Thread(e.to_string()))?
        };
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
            since_reset: 0,
        })
    }

    /// Sets the writer's automatic checkpoint for its next transaction: off while the thread
    /// runs, back to the default should it have failed. Before [`RESET_BYTES`] of commits, first
    /// waits until everything committed is copied, so that the transaction restarts the WAL.
    pub fn before_batch(&mut self, writer: &rusqlite::Connection) -> Result<(), Error> {
        let alive = if self.since_reset >= RESET_BYTES {
            self.since_reset = 0;
            self.catch_up()
        } else {
            lock(&self.shared).failed.is_none()
        };
        let pages = if alive { 0 } else { AUTOCHECKPOINT_PAGES };
        writer.pragma_update(None, "wal_autocheckpoint", pages)?;
        Ok(())
    }

    /// Reports a commit that consumed `bytes` of the queue.
    pub fn committed(&mut self, bytes: u64) {
        self.since_reset += bytes;
        let (mutex, wake) = &*self.shared;
        let mut state = lock_mutex(mutex);
        state.commits += 1;
        state.pending_bytes += bytes;
        if state.pending_bytes >= CHECKPOINT_BYTES {
            wake.notify_all();
        }
    }

    /// Waits until a checkpoint that started after the last commit has finished. False when
    /// the thread has failed (the caller checkpoints itself then).
    fn catch_up(&self) -> bool {
        let (mutex, wake) = &*self.shared;
        let mut state = lock_mutex(mutex);
        let target = state.commits;
        state.catch_up = true;
        wake.notify_all();
        while state.checkpointed < target && state.failed.is_none() {
            state = wake.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.catch_up = false;
        state.failed.is_none()
    }

    /// Why the thread stopped early, if it did.
    pub fn failure(&self) -> Option<String> {
        lock(&self.shared).failed.clone()
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        {
            let (mutex, wake) = &*self.shared;
            lock_mutex(mutex).stop = true;
            wake.notify_all();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    lock_mutex(&shared.0)
}

fn lock_mutex(mutex: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic elsewhere cannot leave State inconsistent: every field is a plain value.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(conn: PooledConnection, shared: &Shared) {
    let (mutex, wake) = &**shared;
    loop {
        let target = {
            let mut state = lock_mutex(mutex);
            loop {
                if state.stop {
                    return;
                }
                let behind = state.commits > state.checkpointed;
                if behind && (state.catch_up || state.pending_bytes >= CHECKPOINT_BYTES) {
                    break;
                }
                state = wake.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            state.pending_bytes = 0;
            state.catch_up = false;
            state.commits
        };
        let outcome = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        let mut state = lock_mutex(mutex);
        match outcome {
            Ok(()) => state.checkpointed = target,
            Err(e) => {
                state.failed = Some(e.to_string());
                wake.notify_all();
                return;
            }
        }
        wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wal_frames(conn: &rusqlite::Connection) -> (i64, i64) {
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(1)?, r.get(2)?))
        })
        .unwrap()
    }

    #[test]
    fn the_wal_is_copied_in_the_background_and_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("c.db")).unwrap();
        let mut checkpointer = Checkpointer::start(&store).unwrap();
        let mut writer = store.conn().unwrap();
        let blob = "x".repeat(4000);
        let mut largest_wal = 0;
        for batch in 0..40 {
            checkpointer.before_batch(&writer).unwrap();
            let tx = writer.transaction().unwrap();
            for i in 0..100 {
                tx.execute(
                    "INSERT INTO events(id, ts, entry, ingested_at) VALUES (?1, 0, ?2, 0)",
                    rusqlite::params![format!("{batch}-{i}"), blob],
                )
                .unwrap();
            }
            tx.commit().unwrap();
            // Pretend each batch read 1 MiB of queue: a reset every 16 batches.
            checkpointer.committed(1024 * 1024);
            let wal = std::fs::metadata(dir.path().join("c.db-wal"))
                .unwrap()
                .len();
            largest_wal = largest_wal.max(wal);
        }
        let autocheckpoint: i64 = writer
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            autocheckpoint, 0,
            "the writer leaves checkpoints to the thread"
        );
        assert!(checkpointer.failure().is_none());
        // 40 batches of ~400 KiB of pages: without restarts the WAL would pass 16 MB.
        assert!(largest_wal < 12 * 1024 * 1024, "WAL grew to {largest_wal}");
        drop(checkpointer);
        let (log, copied) = wal_frames(&writer);
        assert_eq!(log, copied);
        let rows: i64 = writer
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 4000);
    }
}
