//! Who holds a database's ingest lock: the lock file that keeps a second ingester off a
//! database, the file that says who holds it, and a look at both that takes nothing
//! (`cmstore status`). Taking the lock is ingest's ([`crate::write::ingest::lock`]).

use std::io;
use std::path::{Path, PathBuf};

/// Path of the lock file that keeps a second ingester off `db`: `<db>.ingest.lock`, beside the
/// database file itself when `db` is a symlink ([`crate::files::lock::path_for`]).
pub fn lock_path(db: &Path) -> PathBuf {
    crate::files::lock::path_for(db, ".ingest.lock")
}

/// Path of the file that says who holds the ingest lock of `db` ([`Holder`]). Not the lock
/// file itself: on Windows a locked file cannot be read by others.
pub fn holder_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(".ingest.pid");
    PathBuf::from(name)
}

/// Who holds the ingest lock of a database, from its [`holder_path`] file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Holder {
    /// The process id.
    pub pid: u32,
    /// When it took the lock, epoch milliseconds.
    pub started_ms: i64,
    /// Its command line, after the program's name.
    pub command: String,
    /// The queue it reads (absolute, as `sources.path` holds it).
    pub queue: String,
    /// The schema version its cmstore knows (its count of migrations); none from a cmstore
    /// older than this field. An ingest of a cmstore older than the store writes what a newer
    /// one chains by key without a note (docs/verify.md): `status` says to restart it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<i64>,
}

/// Whether an ingest (or `prune --compact-queue`) holds the ingest lock of a database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Liveness {
    /// The lock is held.
    pub running: bool,
    /// What the holder file says: the holder when `running`, else a holder that died without
    /// removing it (stale). `None` when there is none, or it cannot be read.
    pub holder: Option<Holder>,
}

/// Finds out whether the ingest lock of `db` is held, without creating anything: the lock is
/// taken (shared) for an instant, which the ingest lock's taker
/// ([`crate::write::ingest::lock`]) waits out.
pub fn probe(db: &Path) -> io::Result<Liveness> {
    let running = crate::files::lock::is_held(&lock_path(db))?.unwrap_or(false);
    let holder = std::fs::read(holder_path(db))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    Ok(Liveness { running, holder })
}
