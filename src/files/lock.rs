//! Exclusive advisory locks on lock files, taken with back-off within a caller's time limit.
//!
//! A lock file is never replaced (the files it guards may be, by rename: a lock on a replaced
//! inode guards nothing). The lock is held while the returned [`File`] lives, and released by
//! the system when the process dies, so a killed holder never blocks the next one.
//!
//! A lock file is named after the file it guards and sits beside it ([`path_for`]): beside the
//! file itself, not beside a symlink to it, so that every spelling of one file (a link, its
//! target, another link) takes the one lock.

use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use crate::files::paths::private_file_options;

/// The first pause between two tries; each pause doubles, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_micros(200);

/// The longest pause between two tries: a lock freed meanwhile is taken within this long.
const MAX_PAUSE: Duration = Duration::from_millis(20);

/// The lock file that guards `file`: `<file><suffix>`, beside the file a symlink leads to when
/// `file` is one ([`crate::files::paths::resolve_link`]: one `lstat`, and a `canonicalize` only for a
/// link, so the hook's path stays cheap). A file that is not there yet, or a link that leads
/// nowhere, gets the lock beside the path as given: there is nothing to replace yet.
pub fn path_for(file: &Path, suffix: &str) -> PathBuf {
    let file = crate::files::paths::resolve_link(file).unwrap_or_else(|_| file.to_path_buf());
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    file.with_file_name(name)
}

/// Opens (creating it, private) the lock file at `path` and takes its exclusive lock, trying
/// again with back-off for at most `wait` (`Duration::ZERO`: a single try). `Ok(None)` when
/// someone else still holds it after `wait`.
pub fn exclusive(path: &Path, wait: Duration) -> io::Result<Option<File>> {
    let file = private_file_options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    let deadline = Instant::now() + wait;
    let mut pause = FIRST_PAUSE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(file)),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(source)) => return Err(source),
        }
    }
}

/// Whether someone holds the lock at `path`, found by taking its shared lock for an instant
/// (released at once) without creating the file: `Ok(None)` when there is no lock file.
/// Someone trying to take the lock during that instant is refused, so a holder-to-be that
/// others probe waits a little ([`exclusive`]'s `wait`) rather than make a single try.
pub fn is_held(path: &Path) -> io::Result<Option<bool>> {
    // Read access is enough to lock (Windows: `LockFileEx` needs read or write access).
    let file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    match file.try_lock_shared() {
        // Released when `file` closes, right away.
        Ok(()) => Ok(Some(false)),
        Err(TryLockError::WouldBlock) => Ok(Some(true)),
        Err(TryLockError::Error(source)) => Err(source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_sits_beside_the_file_a_link_leads_to() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cmstore.db");
        // Not there yet: beside the path as given.
        assert_eq!(
            path_for(&file, ".ingest.lock"),
            dir.path().join("cmstore.db.ingest.lock")
        );
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            path_for(&file, ".ingest.lock"),
            dir.path().join("cmstore.db.ingest.lock")
        );
        #[cfg(unix)]
        {
            let link = dir.path().join("link.db");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            let beside_target = std::fs::canonicalize(&file)
                .unwrap()
                .with_file_name("cmstore.db.ingest.lock");
            assert_eq!(path_for(&link, ".ingest.lock"), beside_target);
        }
    }

    #[test]
    fn a_held_lock_is_waited_for_then_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = exclusive(&path, Duration::ZERO)
            .unwrap()
            .expect("free lock");
        assert!(
            exclusive(&path, Duration::ZERO).unwrap().is_none(),
            "one try"
        );
        let start = Instant::now();
        assert!(exclusive(&path, Duration::from_millis(50))
            .unwrap()
            .is_none());
        assert!(start.elapsed() >= Duration::from_millis(50));
        drop(held);
        assert!(exclusive(&path, Duration::ZERO).unwrap().is_some());
    }

    #[test]
    fn a_probe_tells_a_held_lock_from_a_free_one_and_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        assert_eq!(is_held(&path).unwrap(), None);
        assert!(!path.exists());
        let held = exclusive(&path, Duration::ZERO).unwrap().unwrap();
        assert_eq!(is_held(&path).unwrap(), Some(true));
        drop(held);
        assert_eq!(is_held(&path).unwrap(), Some(false));
        assert!(
            exclusive(&path, Duration::ZERO).unwrap().is_some(),
            "the probe let go"
        );
    }
}
