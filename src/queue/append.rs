//! Appending whole lines to the queue: one `write` under an exclusive advisory lock.
//!
//! The lock is taken on a sibling file (`hook-queue.jsonl.lock`), never on the queue itself:
//! queue compaction replaces the queue by rename while holding the lock, and a writer that
//! locked the old inode would append to a file nobody reads any more. Locking a file that is
//! never replaced, then opening the queue by path, always appends to the live queue.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::paths::{create_private_dir, dir_of, private_file_options};

/// How long a hook waits for the queue lock before appending without it.
///
/// Writers hold the lock for one `write`; only queue compaction holds it longer. A hook must
/// never stall its agent, so after this long it appends unlocked: a single `O_APPEND` write
/// of one buffer is still not interleaved with other appends on local file systems.
pub const LOCK_WAIT: Duration = Duration::from_millis(1000);

/// Why lines could not be appended.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("cannot create queue directory {path}: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("cannot open {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot write to {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// What happened while appending, for the debug log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendReport {
    /// Bytes written, newlines included.
    pub bytes: usize,
    /// False when the lock could not be had within [`LOCK_WAIT`] and the write went unlocked.
    pub locked: bool,
}

/// Path of the lock file that guards `queue`: `<queue>.lock` beside the queue file itself, so
/// that capture, ingest and compaction take one lock whichever spelling of the queue each was
/// given (a symlink or its target; [`crate::lock::path_for`]).
pub fn lock_path(queue: &Path) -> PathBuf {
    crate::lock::path_for(queue, ".lock")
}

/// Opens (creating, private) the lock file for `queue` and takes its exclusive lock, waiting at
/// most `wait`. Returns `Ok(None)` when the lock is still held by someone else after `wait`.
pub fn lock_queue(queue: &Path, wait: Duration) -> Result<Option<File>, AppendError> {
    let path = lock_path(queue);
    crate::lock::exclusive(&path, wait).map_err(|source| AppendError::Open { path, source })
}

/// True when the last byte of `file` (of length `len`) is a newline (or cannot be read).
fn ends_with_newline(file: &mut File, len: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))
        .and_then(|_| file.read_exact(&mut last))
        .map_or(true, |()| last[0] == b'\n')
}

/// Appends `lines` (each without its newline) to `queue` in a single write under the lock.
///
/// Creates the queue's directory (0700) and the queue (0600) when missing. Lines must not
/// contain a newline; serialized JSON never does.
pub fn append_lines(queue: &Path, lines: &[String]) -> Result<AppendReport, AppendError> {
    let mut buf = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for line in lines {
        debug_assert!(!line.contains('\n'), "queue lines are single lines");
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
    }
    if buf.is_empty() {
        return Ok(AppendReport {
            bytes: 0,
            locked: true,
        });
    }
    let dir = dir_of(queue);
    create_private_dir(dir).map_err(|source| AppendError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    // The lock is released when `guard` drops, after the queue file is closed. A file system
    // without advisory locks (some network mounts) must not cost the event: append unlocked.
    let guard = lock_queue(queue, LOCK_WAIT).unwrap_or(None);
    let mut file = private_file_options()
        .create(true)
        .read(true)
        .append(true)
        .open(queue)
        .map_err(|source| AppendError::Open {
            path: queue.to_path_buf(),
            source,
        })?;
    let len_before = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut out = Vec::with_capacity(buf.len() + 1);
    if len_before > 0 && !ends_with_newline(&mut file, len_before) {
        // A writer died mid-line (or a full disk cut its write): end that fragment so it
        // becomes one rejected line instead of swallowing ours.
        out.push(b'\n');
    }
    out.extend_from_slice(&buf);
    if let Err(source) = file.write_all(&out) {
        // Leave no torn line behind for the next append to join.
        let _ = file.set_len(len_before);
        return Err(AppendError::Write {
            path: queue.to_path_buf(),
            source,
        });
    }
    drop(file);
    let out_len = out.len();
    let locked = guard.is_some();
    drop(guard);
    Ok(AppendReport {
        bytes: out_len,
        locked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn appends_whole_lines_and_creates_private_files() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("sub").join("q.jsonl");
        append_lines(&queue, &["{\"a\":1}".into()]).unwrap();
        let report = append_lines(&queue, &["{\"b\":2}".into(), "{\"c\":3}".into()]).unwrap();
        assert!(report.locked);
        assert_eq!(report.bytes, 16);
        let text = std::fs::read_to_string(&queue).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&queue).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(lock_path(&queue))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(queue.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn a_torn_last_line_is_ended_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("q.jsonl");
        std::fs::write(&queue, "{\"a\":1}\n{\"cut").unwrap();
        append_lines(&queue, &["{\"b\":2}".into()]).unwrap();
        let text = std::fs::read_to_string(&queue).unwrap();
        assert_eq!(
            text, "{\"a\":1}\n{\"cut\n{\"b\":2}\n",
            "our line stays whole"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_failed_write_leaves_no_partial_line() {
        // A queue that is a link to /dev/full, which fails every write with ENOSPC (the lock
        // file stays in the temp dir).
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("q.jsonl");
        std::os::unix::fs::symlink("/dev/full", &queue).unwrap();
        let err = append_lines(&queue, &["{}".into()]).unwrap_err();
        assert!(matches!(err, AppendError::Write { .. }), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn two_spellings_of_one_queue_take_one_lock() {
        // The queue kept elsewhere and linked from the home directory: capture configured
        // with the link and prune with the target (or the other way round) must exclude each
        // other, or a hook can append to the inode compaction is renaming away.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("elsewhere")).unwrap();
        let real = dir.path().join("elsewhere").join("queue.jsonl");
        std::fs::write(&real, "").unwrap();
        let link = dir.path().join("hook-queue.jsonl");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        for (first, second) in [(&link, &real), (&real, &link)] {
            let held = lock_queue(first, Duration::ZERO)
                .unwrap()
                .expect("free lock");
            assert!(
                lock_queue(second, Duration::ZERO).unwrap().is_none(),
                "{} takes the lock {} holds",
                second.display(),
                first.display()
            );
            drop(held);
        }
        // The lock file sits beside the file itself, not beside the link.
        assert!(!dir.path().join("hook-queue.jsonl.lock").exists());
        assert!(dir
            .path()
            .join("elsewhere")
            .join("queue.jsonl.lock")
            .exists());
    }

    #[test]
    fn a_held_lock_is_waited_for_then_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("q.jsonl");
        let held = lock_queue(&queue, Duration::ZERO)
            .unwrap()
            .expect("free lock");
        let start = Instant::now();
        assert!(lock_queue(&queue, Duration::from_millis(50))
            .unwrap()
            .is_none());
        assert!(start.elapsed() >= Duration::from_millis(50));
        drop(held);
        assert!(lock_queue(&queue, Duration::ZERO).unwrap().is_some());
    }
}
