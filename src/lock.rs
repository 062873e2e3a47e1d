//! Exclusive advisory locks on lock files, taken with back-off within a caller's time limit.
//!
//! A lock file is never replaced (the files it guards may be, by rename: a lock on a replaced
//! inode guards nothing). The lock is held while the returned [`File`] lives, and released by
//! the system when the process dies, so a killed holder never blocks the next one.

use std::fs::{File, TryLockError};
use std::io;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use crate::paths::private_file_options;

/// The first pause between two tries; each pause doubles, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_micros(200);

/// The longest pause between two tries: a lock freed meanwhile is taken within this long.
const MAX_PAUSE: Duration = Duration::from_millis(20);

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
