//! WAL checkpoints on a thread of their own, for a long run of write transactions (ingest).
//!
//! Left to itself, the connection that commits also checkpoints, so copying the WAL into the
//! database stops the writer each time. Here the writer reports every commit instead, and a
//! second connection copies the WAL in the background (`PASSIVE`: it never blocks the writer
//! or readers) while the writer prepares its next batch.
//!
//! The WAL only starts over from its beginning when a write transaction begins with every frame
//! already copied. So once the WAL holds [`RESET_WAL_BYTES`] (or after [`RESET_COMMITS`]
//! commits) the writer waits for the checkpoint to catch up ([`Checkpointer::before_batch`]).
//! Each wait costs the copy and the two `fsync`s of a last checkpoint (10–20 ms), whatever the
//! WAL's size, so waits are made rare rather than short: 8 MiB of queue between them made a
//! bulk load of 1M lines wait 1.2 s in all, a WAL of up to 32–48 MiB about 0.5 s, and a WAL of
//! up to [`BULK_RESET_WAL_BYTES`] (for a large backlog) 0.2 s. The writer keeps SQLite's
//! automatic checkpoint ([`AUTOCHECKPOINT_BYTES`] of WAL, more for a large backlog: see
//! [`super::WalLimits`]) as a backstop: it only fires should the thread fall behind or fail,
//! or for writes the thread is not told about (such as an index rebuild).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

#[cfg(doc)]
use super::AUTOCHECKPOINT_BYTES;
use super::{Error, PooledConnection, Store};

/// Committed queue bytes after which a background checkpoint starts.
pub const CHECKPOINT_BYTES: u64 = 1024 * 1024;

/// Commits after which a background checkpoint starts however few bytes they carried: a
/// commit writes whole pages (four or more 16 KiB ones for even one line), so many small ones
/// (follow mode) make a WAL of their own.
pub const CHECKPOINT_COMMITS: u64 = 16;

/// WAL size (as of the latest background checkpoint) from which the writer lets the checkpoint
/// catch up, so that the WAL starts over. The figure is one or two commits old (a batch can add
/// 10–20 MiB), hence the margin under the 64 MiB backstop, which would checkpoint in the writer.
pub const RESET_WAL_BYTES: i64 = 32 * 1024 * 1024;

/// [`RESET_WAL_BYTES`] while a large backlog loads: each catch-up waits for a last
/// checkpoint and its `fsync`s (10–20 ms), 0.6 s of a 1M-line load at 32 MiB, 0.2 s here. The
/// writer has [`super::BULK_WAL_LIMITS`] meanwhile.
pub const BULK_RESET_WAL_BYTES: i64 = 128 * 1024 * 1024;

/// Commits after which the writer lets the checkpoint catch up, whatever their size.
pub const RESET_COMMITS: u64 = 64;

/// What the thread runs: its result row is (busy, frames in the WAL, frames copied).
const CHECKPOINT: &str = "PRAGMA wal_checkpoint(PASSIVE)";

#[derive(Debug, Default)]
struct State {
    /// Commits reported, and the queue bytes they carried since the last checkpoint started.
    commits: u64,
    pending_bytes: u64,
    pending_commits: u64,
    /// The `commits` value the last finished checkpoint started after.
    checkpointed: u64,
    /// The writer waits for a checkpoint of everything committed so far.
    catch_up: bool,
    /// Bytes of WAL frames when the last checkpoint ran.
    wal_bytes: i64,
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
    /// Commits since the writer last let the checkpoint catch up.
    commits_since_reset: u64,
}

impl Checkpointer {
    /// Starts the thread with a connection of its own from `store`'s pool.
    pub fn start(store: &Store) -> Result<Checkpointer, Error> {
        Checkpointer::start_running(store, CHECKPOINT)
    }

    /// [`Checkpointer::start`] with the statement the thread runs (tests make it fail).
    fn start_running(store: &Store, checkpoint: &'static str) -> Result<Checkpointer, Error> {
        let conn = store.conn()?;
        let shared: Shared = Arc::default();
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("checkpoint".into())
                .spawn(move || run(conn, &shared, checkpoint))
                .map_err(|e| Error::Thread(e.to_string()))?
        };
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
            commits_since_reset: 0,
        })
    }

    /// Call before each write transaction: once the WAL holds `reset_wal_bytes`
    /// ([`RESET_WAL_BYTES`] or [`BULK_RESET_WAL_BYTES`]), or after [`RESET_COMMITS`] commits,
    /// waits until everything committed is copied, so that this transaction restarts the WAL.
    /// Returns false once the thread has failed (the backstop checkpoint does its work then).
    pub fn before_batch(&mut self, reset_wal_bytes: i64) -> bool {
        let wal_bytes = {
            let state = lock(&self.shared);
            if state.failed.is_some() {
                return false;
            }
            state.wal_bytes
        };
        if wal_bytes >= reset_wal_bytes || self.commits_since_reset >= RESET_COMMITS {
            self.commits_since_reset = 0;
            return self.catch_up();
        }
        true
    }

    /// Reports a commit that consumed `bytes` of the queue.
    pub fn committed(&mut self, bytes: u64) {
        self.commits_since_reset += 1;
        let (mutex, wake) = &*self.shared;
        let mut state = lock_mutex(mutex);
        state.commits += 1;
        state.pending_bytes += bytes;
        state.pending_commits += 1;
        if due(&state) {
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
        // The next transaction starts the WAL over (unless a reader still uses it: the next
        // checkpoint will tell).
        state.wal_bytes = 0;
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

/// Whether enough was committed since the last checkpoint started to start another.
fn due(state: &State) -> bool {
    state.pending_bytes >= CHECKPOINT_BYTES || state.pending_commits >= CHECKPOINT_COMMITS
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    lock_mutex(&shared.0)
}

fn lock_mutex(mutex: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic elsewhere cannot leave State inconsistent: every field is a plain value.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(conn: PooledConnection, shared: &Shared, checkpoint: &str) {
    let (mutex, wake) = &**shared;
    loop {
        let target = {
            let mut state = lock_mutex(mutex);
            loop {
                if state.stop {
                    return;
                }
                let behind = state.commits > state.checkpointed;
                if behind && (state.catch_up || due(&state)) {
                    break;
                }
                state = wake.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            state.pending_bytes = 0;
            state.pending_commits = 0;
            state.catch_up = false;
            state.commits
        };
        // The page size cannot change in WAL mode.
        let outcome = conn
            .query_row(checkpoint, [], |r| r.get::<_, i64>(1))
            .and_then(|frames| Ok(frames * super::pragma_int(&conn, "page_size")?));
        let mut state = lock_mutex(mutex);
        match outcome {
            Ok(wal_bytes) => {
                state.checkpointed = target;
                state.wal_bytes = wal_bytes;
            }
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

    /// Waits until the thread has finished a checkpoint that started after the first `commits`
    /// commits, or has failed.
    fn wait_for_checkpoint(checkpointer: &Checkpointer, commits: u64) {
        let (mutex, wake) = &*checkpointer.shared;
        let mut state = lock_mutex(mutex);
        while state.checkpointed < commits && state.failed.is_none() {
            state = wake.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The WAL header's checkpoint sequence number: SQLite adds one each time the WAL starts
    /// over.
    fn wal_sequence(wal: &std::path::Path) -> u32 {
        use std::io::Read;
        let mut header = [0; 16];
        std::fs::File::open(wal)
            .unwrap()
            .read_exact(&mut header)
            .unwrap();
        u32::from_be_bytes(header[12..16].try_into().unwrap())
    }

    fn insert_batch(writer: &mut rusqlite::Connection, batch: u64, blob: &str) {
        let tx = writer.transaction().unwrap();
        for i in 0..100 {
            tx.execute(
                "INSERT INTO events(id, ts, entry, ingested_at) VALUES (?1, 0, ?2, 0)",
                rusqlite::params![format!("{batch}-{i}"), blob],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }

    #[test]
    fn the_wal_is_copied_in_the_background_and_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("c.db-wal");
        let store = crate::store::open(&dir.path().join("c.db")).unwrap();
        let mut checkpointer = Checkpointer::start(&store).unwrap();
        let mut writer = store.conn().unwrap();
        // No backstop here: the copying must be the thread's.
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        let blob = "x".repeat(4000);
        let mut largest_wal = 0;
        let mut first_sequence = None;
        for batch in 0..40 {
            assert!(checkpointer.before_batch(4 * 1024 * 1024));
            insert_batch(&mut writer, batch, &blob);
            // Pretend each batch read 1 MiB of queue: a checkpoint after each.
            checkpointer.committed(1024 * 1024);
            // The thread may still copy this batch while the next one is written, but falls no
            // further behind: on a busy machine it could otherwise go unscheduled for the whole
            // test, and never report the WAL size that makes the writer wait (the backstop,
            // off here, is for that case).
            wait_for_checkpoint(&checkpointer, batch);
            largest_wal = largest_wal.max(std::fs::metadata(&wal).unwrap().len());
            first_sequence.get_or_insert(wal_sequence(&wal));
        }
        assert!(checkpointer.failure().is_none());
        // 40 batches of ~400 KiB of pages: without restarts the WAL would pass 16 MB; it
        // starts over once a checkpoint has seen 4 MiB of it.
        assert!(largest_wal < 8 * 1024 * 1024, "WAL grew to {largest_wal}");
        // And SQLite did start it over: the batches make ~22 MB of frames, twice at least.
        let restarts = wal_sequence(&wal) - first_sequence.unwrap();
        assert!(restarts >= 2, "the WAL started over {restarts} times");
        drop(checkpointer);
        let (log, copied) = wal_frames(&writer);
        assert_eq!(log, copied);
        let rows: i64 = writer
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 4000);
    }

    #[test]
    fn many_small_commits_restart_the_wal_too() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("s.db")).unwrap();
        let mut checkpointer = Checkpointer::start(&store).unwrap();
        let writer = store.conn().unwrap();
        writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        let mut largest_wal = 0;
        for i in 0..1500 {
            assert!(checkpointer.before_batch(RESET_WAL_BYTES));
            writer
                .execute(
                    "INSERT INTO events(id, ts, session_id, entry, ingested_at)
                     VALUES (?1, ?2, 's', '{}', 0)",
                    rusqlite::params![format!("e{i}"), i],
                )
                .unwrap();
            // One short line per commit, as in follow mode.
            checkpointer.committed(200);
            let wal = std::fs::metadata(dir.path().join("s.db-wal"))
                .unwrap()
                .len();
            largest_wal = largest_wal.max(wal);
        }
        // Each commit writes a few whole pages: 1500 of them without a restart pass 20 MB.
        assert!(largest_wal < 10 * 1024 * 1024, "WAL grew to {largest_wal}");
    }

    #[test]
    fn a_failed_checkpoint_is_reported_and_never_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("f.db")).unwrap();
        let mut checkpointer =
            Checkpointer::start_running(&store, "SELECT * FROM no_such_table").unwrap();
        // One small commit: not enough for a checkpoint of the thread's own accord, so the
        // thread fails during the catch-up below, while the writer waits for it.
        checkpointer.committed(0);
        // A restart size of 0 makes the writer wait for a catch-up: it must come back, with
        // false, once the thread has failed, not wait for a checkpoint that never comes.
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let waited = checkpointer.before_batch(0);
            let _ = send.send((waited, checkpointer));
        });
        let (waited, mut checkpointer) = receive
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the writer still waits for a checkpoint thread that has failed");
        assert!(!waited);
        let why = checkpointer.failure().expect("the failure is kept");
        assert!(why.contains("no such table"), "{why}");
        // And from then on without waiting, whatever the WAL holds.
        assert!(!checkpointer.before_batch(i64::MAX));
        drop(checkpointer);
    }
}
